//! Repairs that never go back in time: a reconcile repair held (in command monitoring) between
//! its read of the source and its write, while the source changes back to the value the copy
//! holds (x, then y, then x), leaves the copy equal to the source.

mod common;

use std::time::Duration;

use common::{command_on, held_database, within};
use mongo_schema::bson::{doc, oid::ObjectId, Document as BsonDocument};
use mongo_schema::prelude::*;

mod model {
    use mongo_schema::prelude::*;
    use serde::{Deserialize, Serialize};

    /// The source.
    pub use crate::common::owners::Owner;

    #[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
    #[collection(name = "holders")]
    pub struct Holder {
        #[serde(rename = "_id")]
        pub id: ObjectId,
        #[extended_ref(to = Owner, fields = "name", sync = "reconcile")]
        pub owner: Option<HolderOwner>,
    }

    pub fn schema() -> Schema {
        Schema::new()
            .model::<Owner>()
            .model::<Holder>()
            .build()
            .expect("the schema builds")
    }
}

use common::owners::{owner, rename_owner};
use model::*;

/// A fresh database named after `prefix` with the schema applied, the schema, and its owner,
/// named `name`.
async fn with_owner(prefix: &str, name: &str) -> (mongodb::Database, Schema, Owner) {
    let db = mongo_schema_testkit::database(prefix).await;
    let schema = schema();
    schema.apply(&db).await.unwrap();
    let owner = owner(name);
    Owner::collection(&db).insert_one(&owner).await.unwrap();
    (db, schema, owner)
}

/// A holder whose copy of `owner` says `name`; returns its id.
async fn holder_with_copy(db: &mongodb::Database, owner: &Owner, name: &str) -> ObjectId {
    let holder = ObjectId::new();
    db.collection::<BsonDocument>("holders")
        .insert_one(doc! { "_id": holder, "owner": { "_id": owner.id, "name": name } })
        .await
        .unwrap();
    holder
}

/// Starts a reconcile of `db` through a client whose first update of the holders is held, and
/// waits until it is (failing with `what` after 30 s): returns the reconcile, running, and the
/// sender that lets the update go on.
async fn reconcile_held_at_its_update(
    schema: &Schema,
    db: &mongodb::Database,
    what: &str,
) -> (
    tokio::task::JoinHandle<mongo_schema::Result<mongo_schema::ReconcileReport>>,
    std::sync::mpsc::Sender<()>,
) {
    let (held_db, held, release) = held_database(db, command_on("update", "holders")).await;
    let reconciling = {
        let (schema, db) = (schema.clone(), held_db);
        tokio::spawn(async move { schema.reconcile(&db).await })
    };
    tokio::task::spawn_blocking(move || held.recv_timeout(Duration::from_secs(30)))
        .await
        .unwrap()
        .expect(what);
    (reconciling, release)
}

/// The stored holder `id`.
async fn holder(db: &mongodb::Database, id: ObjectId) -> BsonDocument {
    db.collection::<BsonDocument>("holders")
        .find_one(doc! { "_id": id })
        .await
        .unwrap()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_repair_over_an_x_y_x_change_leaves_the_copy_equal_to_the_source() {
    // the source is "y"; its one copy still says "x" (drifted)
    let (db, schema, owner) = with_owner("repairs_xyx", "y").await;
    let holder_id = holder_with_copy(&db, &owner, "x").await;

    // reconcile on a client whose first update of the holders (the repair, written from the
    // source read as "y", on condition that the copy still says "x") is held
    let (repairing, release) =
        reconcile_held_at_its_update(&schema, &db, "the repair's update is held").await;
    // meanwhile the source goes back to "x", the value the copy holds
    rename_owner(&db, owner.id, "x").await;
    release.send(()).unwrap();
    let report = within(Duration::from_secs(60), "the reconcile ends", repairing)
        .await
        .unwrap()
        .unwrap();
    println!("{report}");
    let copy = holder(&db, holder_id).await;
    assert_eq!(
        copy.get_document("owner").unwrap().get_str("name"),
        Ok("x"),
        "the copy equals the source after the repair: {copy}"
    );
    assert_eq!(
        schema.reconcile(&db).dry_run(true).await.unwrap().drifted(),
        0
    );
}

#[tokio::test]
async fn retry_failures_rewrites_and_removes_the_record_in_one_transaction() {
    let (db, schema, owner) = with_owner("repairs_retry", "new").await;
    let holder_id = holder_with_copy(&db, &owner, "old").await;
    // the holder refuses its repair (its validator), so reconcile records it
    db.run_command(doc! {
        "collMod": "holders",
        "validator": { "owner.name": "old" },
        "validationLevel": "strict",
    })
    .await
    .unwrap();
    let report = schema.reconcile(&db).await.unwrap();
    assert_eq!(report.recorded_failures(), 1, "{report}");
    // mended: the validator allows the new name again
    db.run_command(doc! { "collMod": "holders", "validator": {} })
        .await
        .unwrap();
    let (client, log) = mongo_schema_testkit::monitored_client().await;
    let retry = schema
        .retry_failures(&client.database(db.name()))
        .await
        .unwrap();
    assert_eq!((retry.retried, retry.resolved), (1, 1), "{retry}");
    let commands = log.commands();
    let find = |name: &str, collection: &str| {
        commands
            .iter()
            .find(|c| c.name == name && c.command.get_str(name) == Ok(collection))
            .unwrap_or_else(|| panic!("no {name} of {collection}"))
            .command
            .clone()
    };
    let update = find("update", "holders");
    let delete = find("delete", mongo_schema::FAILURES_COLLECTION);
    let transaction = |c: &BsonDocument| {
        assert_eq!(c.get_bool("autocommit"), Ok(false), "{c}");
        (c.get("lsid").cloned(), c.get("txnNumber").cloned())
    };
    assert_eq!(
        transaction(&update),
        transaction(&delete),
        "the rewrite and the record's removal are one transaction"
    );
    assert!(commands.iter().any(|c| c.name == "commitTransaction"));
    let copy = holder(&db, holder_id).await;
    assert_eq!(
        copy.get_document("owner").unwrap().get_str("name"),
        Ok("new")
    );
    assert!(schema.sync_failures(&db).await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fill_held_while_the_source_is_renamed_ends_with_the_new_name() {
    let (db, schema, owner) = with_owner("repairs_fill", "old").await;
    // a holder that still stores the bare id where the copy belongs: a missing copy
    let holder_id = ObjectId::new();
    db.collection::<BsonDocument>("holders")
        .insert_one(doc! { "_id": holder_id, "owner": owner.id })
        .bypass_document_validation(true)
        .await
        .unwrap();
    let (filling, release) = reconcile_held_at_its_update(&schema, &db, "the fill is held").await;
    // renamed meanwhile: a fan-out of the rename cannot reach a holder with no copy yet
    rename_owner(&db, owner.id, "new").await;
    release.send(()).unwrap();
    let report = within(Duration::from_secs(60), "the reconcile ends", filling)
        .await
        .unwrap()
        .unwrap();
    println!("{report}");
    assert_eq!(report.missing_copies(), 1, "{report}");
    let copy = holder(&db, holder_id).await;
    assert_eq!(
        copy.get_document("owner").unwrap().get_str("name"),
        Ok("new"),
        "the fill ends with the new name: {copy}"
    );
}
