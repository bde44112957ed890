//! `apply` when the server goes away in the middle: a dedicated SecantusDB with its data on
//! disk is stopped right when apply's first `createIndexes` starts. Apply returns an error within
//! its deadline; the record says the version's apply did not complete; after the restart the
//! next apply completes it, and the one after that sends no write.

mod common;

use std::time::{Duration, Instant};

use common::WRITES;
use mongo_schema::bson::{doc, Document as BsonDocument};
use mongo_schema::prelude::*;
use mongo_schema::{Action, Error, OnViolations, VersionStatus, Warning, META_COLLECTION};
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "invoices")]
#[index(keys(customer = 1, issued_at = -1))]
#[index(keys(number = 1), unique)]
pub struct Invoice {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub number: String,
    pub customer: String,
    pub issued_at: DateTime,
}

async fn index_names(db: &mongodb::Database) -> Vec<String> {
    let mut names = db
        .collection::<BsonDocument>("invoices")
        .list_index_names()
        .await
        .unwrap();
    names.sort();
    names
}

fn storage_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("mongo-schema-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

async fn start_server(storage: &std::path::Path) -> mongo_schema_testkit::TestServer {
    let storage = storage.to_owned();
    tokio::task::spawn_blocking(move || mongo_schema_testkit::TestServer::start(Some(&storage)))
        .await
        .unwrap()
        .expect("a server")
}

/// A dedicated server with its data in a fresh storage directory named after `name`: the
/// directory, the server and its address (server selection cut to 1 s).
async fn server_on_disk(
    name: &str,
) -> (std::path::PathBuf, mongo_schema_testkit::TestServer, String) {
    let storage = storage_dir(name);
    let server = start_server(&storage).await;
    let uri = format!("{}&serverSelectionTimeoutMS=1000", server.uri());
    (storage, server, uri)
}

/// Starts `schema`'s apply (within `deadline`) to `billing` through a client of `uri` whose
/// first `createIndexes` is held; once it is held, stops `server` and lets the command go on.
/// Returns the apply, running, when it started, and the stopped server.
async fn apply_while_the_server_stops(
    uri: &str,
    schema: &Schema,
    deadline: Duration,
    server: mongo_schema_testkit::TestServer,
) -> (
    tokio::task::JoinHandle<mongo_schema::Result<mongo_schema::ApplyReport>>,
    Instant,
    mongo_schema_testkit::TestServer,
) {
    let (held_client, held, release) = mongo_schema_testkit::holding_client(uri, |started| {
        started.command_name == "createIndexes"
    })
    .await;
    let held_db = held_client.database("billing");
    let started = Instant::now();
    let apply = {
        let schema = schema.clone();
        tokio::spawn(async move { schema.apply(&held_db).deadline(deadline).await })
    };
    let server = tokio::task::spawn_blocking(move || {
        held.recv_timeout(Duration::from_secs(30))
            .expect("apply sent createIndexes");
        let mut server = server;
        server.stop();
        server
    })
    .await
    .unwrap();
    release.send(()).unwrap();
    (apply, started, server)
}

/// Restarts the stopped `server` on its storage.
async fn restart(mut server: mongo_schema_testkit::TestServer) -> mongo_schema_testkit::TestServer {
    tokio::task::spawn_blocking(move || {
        server.restart().expect("restart with the same storage");
        server
    })
    .await
    .unwrap()
}

/// The version record of `db`, if any.
async fn version_record(db: &mongodb::Database) -> Option<BsonDocument> {
    db.collection::<BsonDocument>(META_COLLECTION)
        .find_one(doc! { "_id": "schema" })
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_stopped_mid_apply_gives_an_error_and_the_next_apply_completes_it() {
    let (storage, server, uri) = server_on_disk("deploy-stop").await;
    let schema = Schema::new().model::<Invoice>().version(4).build().unwrap();
    let deadline = Duration::from_secs(8);

    // apply's first createIndexes is held until the server is down
    let (apply, started, server) =
        apply_while_the_server_stops(&uri, &schema, deadline, server).await;
    let outcome = tokio::time::timeout(deadline + Duration::from_secs(30), apply)
        .await
        .expect("apply returns")
        .unwrap();
    let took = started.elapsed();
    let error = outcome.expect_err("the server is down");
    println!("apply with the server stopped: error after {took:?}: {error}");
    assert!(
        took < deadline + Duration::from_secs(6),
        "within its deadline ({deadline:?}, plus the server's stop): {took:?}"
    );
    match &error {
        Error::Timeout {
            operation, last, ..
        } => {
            assert_eq!(operation, "apply");
            let last = last.as_ref().expect("the last transient error");
            assert!(last.as_driver().is_some(), "{last}");
        }
        other => panic!("expected a timeout of the retries, got {other:?}"),
    }

    let server = restart(server).await;
    // a client of the restarted server that logs its command names
    let (client, log) = mongo_schema_testkit::monitored_client_at(&uri).await;
    let db = client.database("billing");

    // what the interrupted apply left: the collection, no index, the record says so
    let record = version_record(&db)
        .await
        .expect("the claim survived the restart");
    println!("record after the restart: {record}");
    assert_eq!(record.get_i64("version").unwrap(), 4);
    assert_eq!(record.get_str("state").unwrap(), "applying");
    assert_eq!(index_names(&db).await, ["_id_"]);
    let plan = schema.plan(&db).await.unwrap();
    println!("plan after the restart:\n{plan}");
    assert_eq!(
        plan.version,
        Some(VersionStatus::Interrupted { version: 4 })
    );
    assert!(
        matches!(&plan.actions[..], [Action::CreateIndexes { indexes, .. }] if indexes.len() == 2)
    );

    // the next apply completes it (after the dead apply's lock lease ran out)
    let started = Instant::now();
    let report = tokio::time::timeout(Duration::from_secs(90), schema.apply(&db))
        .await
        .expect("apply returns within 90 s")
        .expect("apply completes after the restart");
    println!(
        "apply after the restart ({:?}, of which {:?} waiting for the dead apply's lock):\n{report}",
        started.elapsed(),
        report.waited
    );
    assert!(report.recorded);
    assert!(matches!(
        &report.applied[..],
        [a] if matches!(&a.action, Action::CreateIndexes { indexes, .. } if indexes.len() == 2)
    ));
    assert_eq!(
        index_names(&db).await,
        ["_id_", "customer_1_issued_at_-1", "number_1"]
    );
    let record = version_record(&db).await.unwrap();
    assert_eq!(record.get_str("state").unwrap(), "applied");
    assert!(!record.contains_key("locked_by"));

    // and the one after that is a no-op: reads only
    log.clear();
    let again = schema.apply(&db).await.unwrap();
    assert!(again.is_noop(), "{again}");
    let names = log.names();
    println!("the apply after that sent: {names:?}");
    assert!(
        !names.iter().any(|n| WRITES.contains(&n.as_str())),
        "{names:?}"
    );
    assert_eq!(names, ["find", "listCollections", "listIndexes"]);
    let collections: Vec<BsonDocument> = common::all(
        db.run_cursor_command(doc! { "listCollections": 1, "filter": { "name": "invoices" } }),
    )
    .await;
    assert_eq!(
        collections[0]
            .get_document("options")
            .unwrap()
            .get_document("validator")
            .unwrap(),
        &Invoice::validator()
    );
    drop(server);
    let _ = std::fs::remove_dir_all(&storage);
}

/// The server comes back within the deadline: the same apply retries and completes by itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_back_within_the_deadline_lets_the_same_apply_complete() {
    let (storage, server, uri) = server_on_disk("deploy-back").await;
    let schema = Schema::new().model::<Invoice>().version(1).build().unwrap();
    let deadline = Duration::from_secs(60);
    // stop the server while createIndexes is held, let the command fail, then restart
    let (apply, started, server) =
        apply_while_the_server_stops(&uri, &schema, deadline, server).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let server = restart(server).await;
    let report = tokio::time::timeout(deadline + Duration::from_secs(30), apply)
        .await
        .expect("apply returns")
        .unwrap()
        .expect("apply completes once the server is back");
    println!(
        "apply across a restart: {:?}, {} transient fault(s) retried, waited {:?}:\n{report}",
        started.elapsed(),
        report.retried,
        report.waited
    );
    assert!(report.retried >= 1, "{report}");
    assert!(report.recorded);
    let db = mongodb::Client::with_uri_str(&uri)
        .await
        .unwrap()
        .database("billing");
    assert_eq!(
        index_names(&db).await,
        ["_id_", "customer_1_issued_at_-1", "number_1"]
    );
    let record = version_record(&db).await.unwrap();
    assert_eq!(record.get_str("state").unwrap(), "applied");
    assert!(!record.contains_key("locked_by"));
    drop(server);
    let _ = std::fs::remove_dir_all(&storage);
}

/// A release of `widgets` before `color`.
mod widget_v1 {
    use mongo_schema::prelude::*;
    use serde::{Deserialize, Serialize};

    #[derive(Document, Serialize, Deserialize)]
    #[collection(name = "widgets")]
    pub struct Widget {
        #[serde(rename = "_id")]
        pub id: i64,
        pub name: String,
    }
}

/// The release that requires `color` (and no step that fills it in).
mod widget_v2 {
    use mongo_schema::prelude::*;
    use serde::{Deserialize, Serialize};

    #[derive(Document, Serialize, Deserialize)]
    #[collection(name = "widgets")]
    pub struct Widget {
        #[serde(rename = "_id")]
        pub id: i64,
        pub name: String,
        pub color: String,
    }
}

/// Arms (or disarms) mongod's `maxTimeAlwaysTimeOut` failpoint, which SecantusDB implements:
/// every command that carries a `maxTimeMS` fails with MaxTimeMSExpired (50), the others run.
async fn every_time_limit_expires(db: &mongodb::Database, on: bool) {
    db.client()
        .database("admin")
        .run_command(doc! {
            "configureFailPoint": "maxTimeAlwaysTimeOut",
            "mode": if on { "alwaysOn" } else { "off" },
        })
        .await
        .unwrap();
}

/// Every count a start-up, `plan` or `audit` runs over a collection carries a time limit
/// (`maxTimeMS`), the first count of a start-up among them. On a server where every time limit
/// expires (a collection too large to count in time), the start-up's count of the documents a
/// new validator would reject is cut off: the start-up neither hangs nor fails; the validator is
/// refused (not applied over documents nobody counted) and the version recorded `partial` with
/// the count unfinished, so the next start-up sends no count; `plan` says the same (exit 3 from
/// the CLI); `audit` fails, saying so. Once the server counts again, an operator's apply counts.
/// A dedicated server: the failpoint is the whole server's (and a test command).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_up_count_cut_off_by_its_time_limit_refuses_the_validator_and_is_kept() {
    let server = common::failpoint_server().await;
    let v1 = Schema::new()
        .model::<widget_v1::Widget>()
        .version(1)
        .build()
        .unwrap();
    let v2 = Schema::new()
        .model::<widget_v2::Widget>()
        .version(2)
        .build()
        .unwrap();
    let (client, log) = mongo_schema_testkit::monitored_client_at(server.uri()).await;
    let db = client.database("limits");
    v1.apply(&db).await.unwrap();
    db.collection::<BsonDocument>("widgets")
        .insert_many([
            doc! { "_id": 1_i64, "name": "a" },
            doc! { "_id": 2_i64, "name": "b" },
        ])
        .await
        .unwrap();

    every_time_limit_expires(&db, true).await;
    // the control: the failpoint cuts off a count that has a limit, and only such a count
    let widgets = db.collection::<BsonDocument>("widgets");
    let cut = widgets
        .count_documents(doc! {})
        .max_time(Duration::from_secs(60))
        .await
        .expect_err("a limited count times out");
    let code = match *cut.kind {
        mongodb::error::ErrorKind::Command(ref e) => Some(e.code),
        _ => None,
    };
    assert_eq!(code, Some(50), "MaxTimeMSExpired: {cut}");
    assert_eq!(widgets.count_documents(doc! {}).await.unwrap(), 2);

    // the start-up of v2
    log.clear();
    let report = v2.apply(&db).await.expect("the start-up goes on");
    let counts: Vec<_> = log
        .commands()
        .into_iter()
        .filter(|c| c.name == "aggregate" && c.command.get_str("aggregate").ok() == Some("widgets"))
        .collect();
    assert!(
        !counts.is_empty(),
        "the start-up counted: {:?}",
        log.names()
    );
    for count in &counts {
        assert!(
            count.command.contains_key("maxTimeMS"),
            "a count without a time limit: {}",
            count.command
        );
    }
    assert!(!report.is_as_declared(), "{report}");
    assert_eq!(report.missing, ["the validator of `widgets`"], "{report}");
    let unfinished = report.warnings.iter().find_map(|w| match w {
        Warning::ValidatorOverViolations {
            decision: OnViolations::Refuse,
            violations,
            ..
        } => Some(violations.clone()),
        _ => None,
    });
    let unfinished = unfinished.unwrap_or_else(|| panic!("no refusal in {report}"));
    assert_eq!(unfinished.count, 0, "{report}");
    assert_eq!(unfinished.unfinished_after, Some(Duration::from_secs(60)));
    let said = report.to_string();
    // display-text: the report says why the validator was refused
    assert!(said.contains("did not finish within 60 s"), "{said}");
    let validator = |db: mongodb::Database| async move { common::validator(&db, "widgets").await };
    use mongo_schema::Document as _;
    assert_eq!(
        validator(db.clone()).await,
        widget_v1::Widget::validator(),
        "the validator was not tightened over documents nobody counted"
    );
    let record = version_record(&db).await.unwrap();
    assert_eq!(record.get_str("state").unwrap(), "partial", "{record}");
    let kept = record.get_array("violators").unwrap()[0]
        .as_document()
        .unwrap()
        .clone();
    assert_eq!(kept.get_i64("unfinished_after_ms"), Ok(60_000), "{kept}");

    // the next start-up: the record keeps the unfinished count; no scan, no write
    log.clear();
    let again = v2.apply(&db).await.unwrap();
    assert_eq!(again.missing, ["the validator of `widgets`"], "{again}");
    assert_eq!(
        log.count("aggregate"),
        0,
        "a count was sent: {:?}",
        log.names()
    );
    assert_eq!(log.count("collMod"), 0, "{:?}", log.names());

    // plan says what apply would do, within its limits; audit fails, saying so
    let plan = v2.plan(&db).await.expect("plan goes on");
    assert_eq!(plan.missing, ["the validator of `widgets`"], "{plan}");
    let said = plan.to_string();
    // display-text: the plan says why the validator would be refused
    assert!(said.contains("did not finish within 60 s"), "{said}");
    let audit = v2.audit(&db).await.expect_err("audit's scans time out");
    assert_eq!(audit.code(), Some(50), "{audit:?}");

    // the server counts again: an operator's apply counts the two documents
    every_time_limit_expires(&db, false).await;
    let counted = v2.apply(&db).recount_violations(true).await.unwrap();
    let found = counted.warnings.iter().find_map(|w| match w {
        Warning::ValidatorOverViolations { violations, .. } => Some(violations.clone()),
        _ => None,
    });
    let found = found.unwrap_or_else(|| panic!("no refusal in {counted}"));
    assert_eq!(
        (found.count, found.unfinished_after),
        (2, None),
        "{counted}"
    );
    drop(server);
}
