//! The round trip of issue 50 for every example's schema: each example (`examples/`) applies its
//! schema and fills its database on the test server (`cargo run --example`, `MONGODB_URI` set
//! to the test server), the database is pulled, the pulled module is compiled as a crate of its
//! own whose program plans and applies it, and every stored document is counted against every
//! installed validator by the server. What each example gives back is printed; the examples
//! whose validators the models can say are asserted to plan nothing to do.

#[path = "common/scratch.rs"]
mod scratch;

use std::process::Command;

use mongo_schema_cli::pull::{pull, PullConfig};

/// `(example, its database, whether its pulled schema plans nothing to do)`.
const EXAMPLES: &[(&str, &str, bool)] = &[
    ("quickstart", "mongo_schema_quickstart", true),
    ("products", "mongo_schema_products", true),
    ("followers", "mongo_schema_followers", true),
    ("helpdesk", "mongo_schema_helpdesk", true),
    // a whole-document enum: its validator is a `oneOf` of the kinds, which the pull does not
    // read (the kinds are inferred from the documents): the pulled validator is another one
    ("events", "mongo_schema_events", false),
];

#[tokio::test(flavor = "multi_thread")]
async fn every_example_pulls_into_a_module_that_applies() {
    let uri = mongo_schema_testkit::uri();
    let client = mongodb::Client::with_uri_str(&uri).await.unwrap();
    let mut failures = Vec::new();
    for &(example, database, nothing_to_do) in EXAMPLES {
        let db = client.database(database);
        db.drop().await.unwrap();
        let output = scratch::run_with_deadline(
            Command::new(env!("CARGO"))
                .args(["run", "--quiet", "--example", example])
                .current_dir(scratch::workspace_root())
                .env("CARGO_TARGET_DIR", scratch::scratch_target())
                .env("MONGODB_URI", &uri),
            scratch::BUILD_DEADLINE,
        );
        assert!(
            output.status.success(),
            "the example `{example}` failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let pulled = pull(&db, &PullConfig::default())
            .await
            .unwrap_or_else(|e| panic!("`{example}`: pull: {e}"));
        for c in &pulled.report.collections {
            assert_eq!(
                (c.server_violators, c.local_violators),
                (0, 0),
                "`{example}`: {c:?}"
            );
        }
        let dir = scratch::scratch_crate(
            &format!("pulled-example-{example}"),
            &pulled.module,
            scratch::PLAN_APPLY,
        );
        let output = scratch::run_scratch(&dir, database);
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        eprintln!(
            "== {example}\n{}{}\n{stdout}",
            pulled.report.summary(),
            pulled.module
        );
        assert!(
            output.status.success(),
            "`{example}`: the pulled crate failed:\n{stdout}\n{stderr}"
        );
        assert!(
            stdout.contains("apply: as declared true"),
            "`{example}`: {stdout}"
        );
        assert!(stdout.contains("violators: 0"), "`{example}`: {stdout}");
        let planned_nothing = stdout.contains("plan: 0 actions, 0 warnings, 0 missing");
        if planned_nothing != nothing_to_do {
            failures.push(format!(
                "`{example}`: plan of the pulled schema found {}:\n{stdout}",
                if planned_nothing {
                    "nothing to do (update EXAMPLES)"
                } else {
                    "something to do"
                }
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
