//! Commit outcomes: a transaction whose `commitTransaction` is still in flight at its deadline
//! (held in command monitoring, then let through) is `Error::CommitUnknown`, not a timeout to
//! retry; the commit lands, and the library sent the update and the commit once. A commit that
//! meets a stopped server fails with `UnknownTransactionCommitResult` after the driver's own
//! retry: `Error::CommitUnknown` too, and the transaction is not run again (a body of the
//! test's own, run by the library's transaction loop, counts its runs: one).

mod common;

use std::time::Duration;

use common::gate::{Gate, Phase};
use mongo_schema::bson::{doc, Document as BsonDocument};
use mongo_schema::error::CommitUnknownCause;
use mongo_schema::prelude::*;
use mongo_schema::Error;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "accounts")]
pub struct Account {
    #[serde(rename = "_id")]
    pub id: i64,
    pub name: String,
    pub visits: i64,
}

/// The schema of the accounts, with the transaction deadline `deadline`.
fn schema_with_deadline(deadline: Duration) -> Schema {
    Schema::new()
        .model::<Account>()
        .transaction_deadline(deadline)
        .build()
        .unwrap()
}

/// Applies `schema` to `db` and inserts the account 1, Ana's, with no visit yet.
async fn apply_with_ana(schema: &Schema, db: &mongodb::Database) {
    schema.apply(db).await.unwrap();
    Account::collection(db)
        .insert_one(Account {
            id: 1,
            name: "ana".into(),
            visits: 0,
        })
        .await
        .unwrap();
}

async fn visits(db: &mongodb::Database) -> i64 {
    db.collection::<BsonDocument>("accounts")
        .find_one(doc! { "_id": 1_i64 })
        .await
        .unwrap()
        .expect("the account")
        .get_i64("visits")
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn a_commit_held_past_the_deadline_is_commit_unknown_and_lands_once() {
    let uri = tokio::task::spawn_blocking(mongo_schema_testkit::uri)
        .await
        .unwrap();
    let (client, gate) = Gate::client(&uri).await;
    let db = client.database(
        mongo_schema_testkit::database("commit_unknown")
            .await
            .name(),
    );
    let deadline = Duration::from_secs(2);
    let schema = schema_with_deadline(deadline);
    assert_eq!(schema.transaction_deadline(), deadline);
    apply_with_ana(&schema, &db).await;
    let increment = doc! { "$inc": { "visits": 1_i64 } };

    // the control: the same update, not held, commits within the deadline
    schema
        .update_source::<Account>(&db, &1, increment.clone())
        .await
        .expect("an update that is not held commits");
    assert_eq!(visits(&db).await, 1);
    let (updates, commits) = (
        gate.count(Phase::Started, "findAndModify"),
        gate.count(Phase::Started, "commitTransaction"),
    );
    assert_eq!(commits, 1, "one commit for the control");

    gate.hold(Phase::Started, "commitTransaction");
    let update = {
        let (schema, db, increment) = (schema.clone(), db.clone(), increment.clone());
        tokio::spawn(async move { schema.update_source::<Account>(&db, &1, increment).await })
    };
    gate.held(Phase::Started, "commitTransaction", Duration::from_secs(30))
        .await;
    // the process stands still past the transaction's deadline, then sends its commit
    tokio::time::sleep(deadline + Duration::from_secs(1)).await;
    assert!(!update.is_finished(), "the update is paused in its commit");
    gate.release(Phase::Started, "commitTransaction");
    let outcome = tokio::time::timeout(Duration::from_secs(30), update)
        .await
        .expect("the update returns within 30 s")
        .unwrap();
    println!("{outcome:?}");
    match &outcome {
        Err(Error::CommitUnknown {
            cause: CommitUnknownCause::Deadline { after },
            ..
        }) => assert_eq!(*after, deadline),
        other => panic!("expected CommitUnknown cut at the deadline, got {other:?}"),
    }
    let error = outcome.unwrap_err();
    assert!(!error.is_transient(), "{error}");
    // the commit that was in flight lands
    common::eventually(Duration::from_secs(10), "the held commit lands", || {
        let db = db.clone();
        async move { visits(&db).await == 2 }
    })
    .await;
    // and nothing ran it again: one more update and one more commit, and no third increment
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(visits(&db).await, 2);
    assert_eq!(gate.count(Phase::Started, "findAndModify"), updates + 1);
    assert_eq!(gate.count(Phase::Started, "commitTransaction"), commits + 1);
}

/// A server of the test's own, a gated client of it, and the account to update.
async fn own_server(
    name: &str,
) -> (
    mongo_schema_testkit::TestServer,
    Gate,
    mongodb::Database,
    Schema,
) {
    let server = tokio::task::spawn_blocking(|| mongo_schema_testkit::TestServer::start(None))
        .await
        .unwrap()
        .expect("a server of this test's own");
    let uri = format!("{}&serverSelectionTimeoutMS=1000", server.uri());
    let (client, gate) = Gate::client(&uri).await;
    let db = client.database(name);
    let schema = schema_with_deadline(Duration::from_secs(30));
    apply_with_ana(&schema, &db).await;
    (server, gate, db, schema)
}

/// Holds the next commit, stops `server` under it, lets it go and returns what `run` returned
/// (within 30 s).
async fn commit_meets_stopped_server<R: Send + 'static>(
    mut server: mongo_schema_testkit::TestServer,
    gate: &Gate,
    run: tokio::task::JoinHandle<mongo_schema::Result<R>>,
) -> (mongo_schema::Result<R>, mongo_schema_testkit::TestServer) {
    gate.held(Phase::Started, "commitTransaction", Duration::from_secs(30))
        .await;
    // the server goes away while the commit is about to be sent
    let server = tokio::task::spawn_blocking(move || {
        server.stop();
        server
    })
    .await
    .unwrap();
    gate.release(Phase::Started, "commitTransaction");
    let outcome = tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("the transaction returns within 30 s")
        .unwrap();
    (outcome, server)
}

/// The commit's error: `CommitUnknown` after the driver's retry, labelled
/// `UnknownTransactionCommitResult`.
fn assert_commit_unknown<R: std::fmt::Debug>(outcome: &mongo_schema::Result<R>) {
    match outcome {
        Err(Error::CommitUnknown {
            cause: CommitUnknownCause::UnknownCommitResult,
            last,
            ..
        }) => {
            let last = last.as_ref().expect("the commit's error");
            assert!(
                last.contains_label("UnknownTransactionCommitResult"),
                "{last:?}"
            );
        }
        other => panic!("expected CommitUnknown, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn a_commit_that_meets_a_stopped_server_is_commit_unknown_and_not_run_again() {
    let (server, gate, db, schema) = own_server("commit_network").await;
    gate.hold(Phase::Started, "commitTransaction");
    let update = tokio::spawn(async move {
        schema
            .update_source::<Account>(&db, &1, doc! { "$inc": { "visits": 1_i64 } })
            .await
    });
    let (outcome, server) = commit_meets_stopped_server(server, &gate, update).await;
    println!("{outcome:?}");
    assert_commit_unknown(&outcome);
    // (a run again would send nothing to count here: the server is gone; the body's runs are
    // counted by the next test)
    drop(server);
}

/// A body that counts its runs in `runs` and increments the account's visits; with
/// `conflict_first`, its first run meets a write conflict.
fn counting_body(
    db: mongodb::Database,
    runs: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    conflict_first: bool,
) -> impl for<'s> FnMut(
    &'s mut mongodb::ClientSession,
) -> futures_util::future::BoxFuture<'s, mongo_schema::Result<()>> {
    move |session| {
        let (db, runs) = (db.clone(), runs.clone());
        Box::pin(async move {
            let run = runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let accounts = db.collection::<BsonDocument>("accounts");
            if conflict_first && run == 0 {
                // a write conflict: the snapshot is taken, then another writer changes the
                // document before this transaction writes it
                accounts
                    .find_one(doc! { "_id": 1_i64 })
                    .session(&mut *session)
                    .await?;
                accounts
                    .update_one(doc! { "_id": 1_i64 }, doc! { "$set": { "name": "bo" } })
                    .await?;
            }
            accounts
                .find_one_and_update(doc! { "_id": 1_i64 }, doc! { "$inc": { "visits": 1_i64 } })
                .session(&mut *session)
                .await?;
            Ok(())
        })
    }
}

/// The same transaction loop with a body of the test's own, which counts its runs: one, the
/// unknown commit is not run again. The control: a body whose first run meets a write conflict
/// (`TransientTransactionError`) runs twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn a_body_whose_commit_meets_a_stopped_server_runs_once() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    let (server, gate, db, _schema) = own_server("commit_network_runs").await;
    // the control: a write conflict runs the body again, and it commits once
    let runs = Arc::new(AtomicUsize::new(0));
    let ((), attempts) = mongo_schema::__private::in_transaction(
        &db,
        Duration::from_secs(30),
        counting_body(db.clone(), runs.clone(), true),
    )
    .await
    .unwrap();
    assert_eq!((runs.load(Ordering::SeqCst), attempts), (2, 2));
    assert_eq!(visits(&db).await, 1, "the aborted first run wrote nothing");

    let runs = Arc::new(AtomicUsize::new(0));
    gate.hold(Phase::Started, "commitTransaction");
    let run = {
        let body = counting_body(db.clone(), runs.clone(), false);
        let db = db.clone();
        tokio::spawn(async move {
            mongo_schema::__private::in_transaction(&db, Duration::from_secs(30), body).await
        })
    };
    let (outcome, server) = commit_meets_stopped_server(server, &gate, run).await;
    println!("{outcome:?}");
    assert_commit_unknown(&outcome);
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the body ran once");
    drop(server);
}
