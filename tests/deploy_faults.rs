//! `apply` when the server goes away in the middle: a dedicated SecantusDB with its data on
//! disk is stopped right when apply's first `createIndexes` starts. Apply returns an error within
//! its deadline; the record says the version's apply did not complete; after the restart the
//! next apply completes it, and the one after that sends no write.

use std::time::{Duration, Instant};

use futures_util::TryStreamExt;
use mongo_schema::bson::{doc, Document as BsonDocument};
use mongo_schema::prelude::*;
use mongo_schema::{Action, Error, VersionStatus, META_COLLECTION};
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

const WRITES: [&str; 8] = [
    "create",
    "collMod",
    "createIndexes",
    "dropIndexes",
    "insert",
    "update",
    "delete",
    "findAndModify",
];

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_stopped_mid_apply_gives_an_error_and_the_next_apply_completes_it() {
    let storage = storage_dir("deploy-stop");
    let server = start_server(&storage).await;
    let uri = format!("{}&serverSelectionTimeoutMS=1000", server.uri());
    let schema = Schema::new().model::<Invoice>().version(4).build().unwrap();
    let deadline = Duration::from_secs(8);

    // apply's first createIndexes is held until the server is down
    let (held_client, held, release) = mongo_schema_testkit::holding_client(&uri, |started| {
        started.command_name == "createIndexes"
    })
    .await;
    let held_db = held_client.database("billing");
    let started = Instant::now();
    let apply = {
        let schema = schema.clone();
        tokio::spawn(async move { schema.apply(&held_db).deadline(deadline).await })
    };
    let mut server = tokio::task::spawn_blocking(move || {
        held.recv_timeout(Duration::from_secs(30))
            .expect("apply sent createIndexes");
        let mut server = server;
        server.stop();
        server
    })
    .await
    .unwrap();
    release.send(()).unwrap();
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

    let server = tokio::task::spawn_blocking(move || {
        server.restart().expect("restart with the same storage");
        server
    })
    .await
    .unwrap();
    // a client of the restarted server that logs its command names
    let (client, log) = mongo_schema_testkit::monitored_client_at(&uri).await;
    let db = client.database("billing");

    // what the interrupted apply left: the collection, no index, the record says so
    let record = db
        .collection::<BsonDocument>(META_COLLECTION)
        .find_one(doc! { "_id": "schema" })
        .await
        .unwrap()
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
    let record = db
        .collection::<BsonDocument>(META_COLLECTION)
        .find_one(doc! { "_id": "schema" })
        .await
        .unwrap()
        .unwrap();
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
    let collections: Vec<BsonDocument> = db
        .run_cursor_command(doc! { "listCollections": 1, "filter": { "name": "invoices" } })
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
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
    let storage = storage_dir("deploy-back");
    let server = start_server(&storage).await;
    let uri = format!("{}&serverSelectionTimeoutMS=1000", server.uri());
    let schema = Schema::new().model::<Invoice>().version(1).build().unwrap();
    let deadline = Duration::from_secs(60);
    let (held_client, held, release) = mongo_schema_testkit::holding_client(&uri, |started| {
        started.command_name == "createIndexes"
    })
    .await;
    let held_db = held_client.database("billing");
    let started = Instant::now();
    let apply = {
        let schema = schema.clone();
        tokio::spawn(async move { schema.apply(&held_db).deadline(deadline).await })
    };
    // stop the server while createIndexes is held, let the command fail, then restart
    let mut server = tokio::task::spawn_blocking(move || {
        held.recv_timeout(Duration::from_secs(30))
            .expect("apply sent createIndexes");
        let mut server = server;
        server.stop();
        server
    })
    .await
    .unwrap();
    release.send(()).unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let server = tokio::task::spawn_blocking(move || {
        server.restart().expect("restart with the same storage");
        server
    })
    .await
    .unwrap();
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
    let record = db
        .collection::<BsonDocument>(META_COLLECTION)
        .find_one(doc! { "_id": "schema" })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.get_str("state").unwrap(), "applied");
    assert!(!record.contains_key("locked_by"));
    drop(server);
    let _ = std::fs::remove_dir_all(&storage);
}
