//! The `mongo-schema` binary with SPEC §12's command line, on the test server: it writes the
//! module and the report and exits 0; on a database with nothing to pull it writes nothing and
//! exits 1 with the reason.

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use mongodb::bson::{doc, Document};

const DEADLINE: Duration = Duration::from_secs(300);

fn run(args: &[&str]) -> Output {
    let child = Command::new(env!("CARGO_BIN_EXE_mongo-schema"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let id = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(DEADLINE) {
        Ok(output) => output.expect("its output"),
        Err(_) => {
            let _ = Command::new("kill").arg(id.to_string()).status();
            panic!(
                "`mongo-schema {}` took more than {DEADLINE:?}",
                args.join(" ")
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn pull_writes_the_module_and_the_report() {
    let db = mongo_schema_testkit::database("pull_binary").await;
    let docs: Vec<Document> = (0..200)
        .map(|i| {
            doc! {
                "_id": i,
                "title": format!("note {i}"),
                "state": (["draft", "published"][(i % 2) as usize]),
                "tags": (0..(i % 3)).map(|t| format!("t{}", i * 3 + t)).collect::<Vec<_>>(),
            }
        })
        .collect();
    db.collection::<Document>("notes")
        .insert_many(docs)
        .await
        .unwrap();
    let dir = std::env::temp_dir().join(format!("mongo-schema-pull-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("model.rs");
    let report = dir.join("pull.json");
    let uri = mongo_schema_testkit::uri();
    let output = run(&[
        "pull",
        "--uri",
        &uri,
        "--db",
        db.name(),
        "--out",
        out.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
        "--sample",
        "50",
        "--facts-chunk",
        "50",
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains("notes: 200 documents (52 sampled) -> Note; violators: server 0, local 0"),
        "{stderr}"
    );
    // each pass said as it starts, before the summary (a long pass is one server command)
    let said: Vec<&str> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("mongo-schema pull: "))
        .collect();
    assert!(said.len() >= 8, "{stderr}");
    assert!(said[0].starts_with("sampling `"), "{said:?}");
    assert!(
        said[1].starts_with("sampled `notes`: 200 documents, 52 read"),
        "{said:?}"
    );
    assert!(
        said[2].starts_with("facts of `notes`: 200 documents, counted in runs of 50"),
        "{said:?}"
    );
    // then a line after each run of 50, the last run ending at the last document said once
    let runs: Vec<&str> = said
        .iter()
        .filter(|l| l.contains(" documents counted"))
        .map(|l| l.split(" documents counted").next().unwrap_or(l))
        .collect();
    assert_eq!(
        runs,
        [
            "facts of `notes`: 50 of 200",
            "facts of `notes`: 100 of 200",
            "facts of `notes`: 150 of 200",
            "facts of `notes`: 200 of 200"
        ],
        "{said:?}"
    );
    assert!(
        said.iter().any(|l| l.starts_with("gate, round 1")),
        "{said:?}"
    );
    assert!(
        said.iter().any(|l| l.starts_with("references and copies")),
        "{said:?}"
    );
    let module = std::fs::read_to_string(&out).unwrap();
    for needle in [
        "#[collection(name = \"notes\", additional_properties = false)]",
        "pub struct Note {",
        "pub state: NoteState,",
        "#[embed(max = 4)]\n    pub tags: Vec<String>,",
        "pub fn schema() -> Schema {",
    ] {
        assert!(module.contains(needle), "`{needle}` is not in:\n{module}");
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(json["collections"][0]["server_violators"], 0);
    assert_eq!(json["collections"][0]["local_violators"], 0);
    assert_eq!(json["arrays"][0]["observed_max"], 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn nothing_to_pull_writes_nothing_and_fails() {
    let db = mongo_schema_testkit::database("pull_empty").await;
    let out = std::env::temp_dir().join(format!("mongo-schema-empty-{}.rs", std::process::id()));
    let uri = mongo_schema_testkit::uri();
    let output = run(&[
        "pull",
        "--uri",
        &uri,
        "--db",
        db.name(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("holds no collection to pull"), "{stderr}");
    assert!(!out.exists());

    // a misspelt name of a database that exists: said, with the near miss
    let library = mongo_schema_testkit::database("library").await;
    library
        .collection::<mongo_schema::bson::Document>("books")
        .insert_one(mongo_schema::bson::doc! { "_id": 1 })
        .await
        .unwrap();
    let misspelt = library.name().replacen("library", "librray", 1);
    let output = run(&[
        "pull",
        "--uri",
        &uri,
        "--db",
        &misspelt,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    // display-text: the message is the operator's
    assert!(
        stderr.contains(&format!("did you mean `{}`?", library.name())),
        "{stderr}"
    );
    assert!(!out.exists());
}
