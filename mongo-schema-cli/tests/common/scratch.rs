//! A generated module built as a crate of its own, with a program that checks it against the
//! database: the crate depends on this workspace's `mongo-schema` by path and is built in the
//! workspace's target directory, with its lock file and features, so it reuses the
//! dependencies the suite built and builds only itself and the library.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// A program that applies the pulled module's `schema()` to the database it was pulled from:
/// its `plan` first (`plan: N actions, N warnings, N missing`), then `apply` (`apply: as
/// declared true`), then the documents each installed validator refuses, counted by the server
/// (`violators: N`).
// `pull_shop` checks its module with its own program
#[allow(dead_code)]
pub const PLAN_APPLY: &str = r#"//! Applies the pulled module's `schema()` to the database it was pulled from: its plan first.

mod model;

use futures_util::TryStreamExt;
use mongo_schema::bson::{doc, Document};
use mongo_schema::mongodb::Client;

#[tokio::main]
async fn main() {
    let uri = std::env::var("PULLED_URI").expect("PULLED_URI");
    let client = Client::with_uri_str(&uri).await.unwrap();
    let db = client.database(&std::env::var("PULLED_DB").expect("PULLED_DB"));
    let schema = model::schema();
    let plan = schema.plan(&db).await.expect("plan");
    println!("plan: {} actions, {} warnings, {} missing", plan.actions.len(), plan.warnings.len(), plan.missing.len());
    println!("{plan}");
    let report = schema.apply(&db).await.expect("apply");
    println!("apply: as declared {}", report.is_as_declared());
    println!("{report}");
    let listed: Vec<Document> = db
        .run_cursor_command(doc! { "listCollections": 1 })
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let mut violators = 0;
    for c in &listed {
        let Ok(validator) = c.get_document("options").and_then(|o| o.get_document("validator")) else {
            continue;
        };
        let name = c.get_str("name").unwrap();
        let n = db
            .collection::<Document>(name)
            .count_documents(doc! { "$nor": [validator.clone()] })
            .await
            .unwrap();
        println!("{name}: {n} documents its validator refuses");
        violators += n;
    }
    println!("violators: {violators}");
}
"#;

/// The scratch crate's build and run (a cold target directory builds the driver too).
pub const BUILD_DEADLINE: Duration = Duration::from_secs(1500);

/// The workspace's root directory.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("mongo-schema-cli/ is in the workspace")
        .to_path_buf()
}

/// The workspace's own target directory (`cargo test` holds no lock on it while the tests run):
/// with the workspace's lock file and the features its test build unifies (below), the scratch
/// crate reuses every dependency the suite built, and builds only itself and the library.
pub fn scratch_target() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("CARGO_TARGET_TMPDIR is <target>/tmp")
        .to_path_buf()
}

/// A crate `name` holding `module` as `src/model.rs` and `main` as `src/main.rs`.
pub fn scratch_crate(name: &str, module: &str, main: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let root = workspace_root();
    let manifest = format!(
        "[package]\nname = {name:?}\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n\
         [workspace]\n\n[dependencies]\n\
         mongo-schema = {{ path = {:?}, features = [\"chrono-0_4\", \"time-0_3\", \"uuid-1\", \"rust_decimal-1\", \"cli\"] }}\n\
         serde = {{ version = \"1\", features = [\"derive\"] }}\n\
         tokio = {{ version = \"1\", features = [\"macros\", \"rt-multi-thread\", \"time\", \"sync\", \"signal\"] }}\n\
         futures-util = \"0.3\"\n\
         # as the workspace's tests unify them, so that the driver is not built again\n\
         bson = {{ version = \"2.15\", features = [\"serde_with-3\"] }}\n",
        root.display().to_string()
    );
    write_if_changed(&dir.join("Cargo.toml"), &manifest);
    // the workspace's versions, so the build reuses what it resolved
    let lock = std::fs::read_to_string(root.join("Cargo.lock")).unwrap();
    if !dir.join("Cargo.lock").exists() {
        std::fs::write(dir.join("Cargo.lock"), lock).unwrap();
    }
    write_if_changed(&dir.join("src/model.rs"), module);
    write_if_changed(&dir.join("src/main.rs"), main);
    dir
}

/// Builds and runs the scratch crate in `dir` against database `db` (`PULLED_URI`,
/// `PULLED_DB`), within [`BUILD_DEADLINE`].
pub fn run_scratch(dir: &Path, db: &str) -> std::process::Output {
    run_with_deadline(
        Command::new(env!("CARGO"))
            .args(["run", "--quiet", "--manifest-path"])
            .arg(dir.join("Cargo.toml"))
            .env("CARGO_TARGET_DIR", scratch_target())
            .env("PULLED_URI", mongo_schema_testkit::uri())
            .env("PULLED_DB", db),
        BUILD_DEADLINE,
    )
}

fn write_if_changed(path: &Path, text: &str) {
    if std::fs::read_to_string(path).ok().as_deref() != Some(text) {
        std::fs::write(path, text).unwrap();
    }
}

/// Runs `command`, killed (and the test failed) past `deadline`.
pub fn run_with_deadline(command: &mut Command, deadline: Duration) -> std::process::Output {
    let child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cargo runs");
    let id = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(deadline) {
        Ok(output) => output.expect("cargo's output"),
        Err(_) => {
            let _ = Command::new("kill").arg(id.to_string()).status();
            panic!("building and running the pulled crate took more than {deadline:?}");
        }
    }
}

/// Builds `module` as the crate `name` with [`PLAN_APPLY`], runs it on the database `db`, fails
/// the test unless it exits 0 and applies as declared with no violator, and returns what it
/// printed (its plan first).
#[allow(dead_code)] // each test binary uses part of this module
pub fn applies_as_declared(name: &str, module: &str, db: &str) -> String {
    let dir = scratch_crate(name, module, PLAN_APPLY);
    let output = run_scratch(&dir, db);
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the pulled crate failed:\n{stdout}\n{stderr}"
    );
    eprintln!("{stdout}");
    // display-text: the scratch binary's own lines
    assert!(stdout.contains("apply: as declared true"), "{stdout}");
    // display-text: as above
    assert!(stdout.contains("violators: 0"), "{stdout}");
    stdout
}

/// [`applies_as_declared`], whose plan had nothing to do: the pulled relationships, indexes and
/// validators are the ones on the server.
#[allow(dead_code)] // each test binary uses part of this module
pub fn plans_nothing(name: &str, module: &str, db: &str) {
    let stdout = applies_as_declared(name, module, db);
    // display-text: the scratch binary's own line
    assert!(
        stdout.contains("plan: 0 actions, 0 warnings, 0 missing"),
        "{stdout}"
    );
}
