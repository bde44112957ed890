//! Commit outcomes: a transaction whose `commitTransaction` is still in flight at its deadline
//! (held in command monitoring, then let through) is `Error::CommitUnknown`, not a timeout to
//! retry; the commit lands, and the library sent the update and the commit once. A commit that
//! meets a stopped server fails with `UnknownTransactionCommitResult` after the driver's own
//! retry: `Error::CommitUnknown` too, and the transaction is not run again.

mod common;

use std::time::Duration;

use common::gate::{Gate, Phase};
use mongo_schema::bson::{doc, Document as BsonDocument};
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
    let schema = Schema::new()
        .model::<Account>()
        .transaction_deadline(deadline)
        .build()
        .unwrap();
    assert_eq!(schema.transaction_deadline(), deadline);
    schema.apply(&db).await.unwrap();
    Account::collection(&db)
        .insert_one(Account {
            id: 1,
            name: "ana".into(),
            visits: 0,
        })
        .await
        .unwrap();
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
        Err(Error::CommitUnknown { reason, .. }) => {
            assert!(reason.contains("deadline"), "{reason}")
        }
        other => panic!("expected CommitUnknown, got {other:?}"),
    }
    let error = outcome.unwrap_err();
    assert!(error.to_string().contains("may have committed"), "{error}");
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

#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn a_commit_that_meets_a_stopped_server_is_commit_unknown_and_not_run_again() {
    let mut server = tokio::task::spawn_blocking(|| mongo_schema_testkit::TestServer::start(None))
        .await
        .unwrap()
        .expect("a server of this test's own");
    let uri = format!("{}&serverSelectionTimeoutMS=1000", server.uri());
    let (client, gate) = Gate::client(&uri).await;
    let db = client.database("commit_network");
    let schema = Schema::new()
        .model::<Account>()
        .transaction_deadline(Duration::from_secs(30))
        .build()
        .unwrap();
    schema.apply(&db).await.unwrap();
    Account::collection(&db)
        .insert_one(Account {
            id: 1,
            name: "ana".into(),
            visits: 0,
        })
        .await
        .unwrap();
    // apply's version claim is a findAndModify too
    let updates = gate.count(Phase::Started, "findAndModify");
    gate.hold(Phase::Started, "commitTransaction");
    let update = {
        let (schema, db) = (schema.clone(), db.clone());
        tokio::spawn(async move {
            schema
                .update_source::<Account>(&db, &1, doc! { "$inc": { "visits": 1_i64 } })
                .await
        })
    };
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
    let outcome = tokio::time::timeout(Duration::from_secs(30), update)
        .await
        .expect("the update returns within 30 s")
        .unwrap();
    println!("{outcome:?}");
    match &outcome {
        Err(Error::CommitUnknown { reason, last, .. }) => {
            assert!(reason.contains("driver's retry"), "{reason}");
            let last = last.as_ref().expect("the commit's error");
            assert!(
                last.contains_label("UnknownTransactionCommitResult"),
                "{last:?}"
            );
        }
        other => panic!("expected CommitUnknown, got {other:?}"),
    }
    // the library did not run the transaction again
    assert_eq!(gate.count(Phase::Started, "findAndModify"), updates + 1);
    drop(server);
}
