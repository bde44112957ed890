//! The library's deciding reads and guarantee writes ignore the service's URI concerns: with
//! `readPreference=secondaryPreferred&w=1` in the URI, command monitoring shows apply, the sync
//! worker, reconcile and `retry_failures` reading at read concern `majority` from the primary
//! and writing (and committing) with write concern `majority`, while the service's own
//! commands on the same client carry what the URI says.

mod common;

use std::time::Duration;

use common::{eventually, shut_down};
use mongo_schema::bson::{doc, Bson, Document as BsonDocument};
use mongo_schema::prelude::*;

mod model {
    use mongo_schema::prelude::*;
    use serde::{Deserialize, Serialize};

    /// The source.
    pub use crate::common::owners::Owner;

    #[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
    #[collection(name = "items")]
    #[index(keys(n = 1), unique)]
    pub struct Item {
        #[serde(rename = "_id")]
        pub id: ObjectId,
        pub n: i64,
        #[extended_ref(to = Owner, fields = "name", sync = "async")]
        pub owner: Option<ItemOwner>,
    }

    pub fn schema() -> Schema {
        Schema::new()
            .model::<Owner>()
            .model::<Item>()
            .version(1)
            .build()
            .expect("the schema builds")
    }
}

use model::*;

/// The mode of a command's `$readPreference` (`None`: not sent, which is primary).
fn read_mode(command: &BsonDocument) -> Option<String> {
    command
        .get_document("$readPreference")
        .ok()
        .and_then(|p| p.get_str("mode").ok())
        .map(str::to_owned)
}

fn write_w(command: &BsonDocument) -> Option<Bson> {
    command
        .get_document("writeConcern")
        .ok()
        .and_then(|w| w.get("w").cloned())
}

fn read_level(command: &BsonDocument) -> Option<String> {
    command
        .get_document("readConcern")
        .ok()
        .and_then(|r| r.get_str("level").ok())
        .map(str::to_owned)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_librarys_commands_read_the_primary_at_majority_and_write_majority() {
    let plain = mongo_schema_testkit::database("concerns").await;
    let uri = tokio::task::spawn_blocking(mongo_schema_testkit::uri)
        .await
        .unwrap();
    let separator = if uri.contains('?') { '&' } else { '?' };
    let lax = format!("{uri}{separator}readPreference=secondaryPreferred&w=1");
    let (client, log) = mongo_schema_testkit::monitored_client_at(&lax).await;
    let db = client.database(plain.name());
    let schema = schema();

    // the positive control: the service's own commands on this client carry the URI's
    db.collection::<BsonDocument>("service_notes")
        .insert_one(doc! { "n": 1 })
        .await
        .unwrap();
    db.collection::<BsonDocument>("service_notes")
        .find_one(doc! {})
        .await
        .unwrap();
    let own = log.commands();
    let insert = own.iter().find(|c| c.name == "insert").unwrap();
    assert_eq!(
        write_w(&insert.command),
        Some(Bson::Int32(1)),
        "{}",
        insert.command
    );
    let find = own.iter().find(|c| c.name == "find").unwrap();
    println!("the service's own find: {}", find.command);
    assert_eq!(
        read_mode(&find.command).as_deref(),
        Some("secondaryPreferred"),
        "{}",
        find.command
    );
    log.clear();

    // the library's work: apply, a worker following a rename, reconcile, retry_failures
    schema.apply(&db).await.unwrap();
    let owner = common::owners::owner("Ana");
    Owner::collection(&plain).insert_one(&owner).await.unwrap();
    let items: Vec<Item> = (0..5)
        .map(|n| Item {
            id: ObjectId::new(),
            n,
            owner: Some(ItemOwner {
                id: owner.id,
                name: "Ana".into(),
            }),
        })
        .collect();
    Item::collection(&plain).insert_many(&items).await.unwrap();
    let worker = common::ready_worker(&schema, &db, "concerns").await;
    common::owners::rename_owner(&plain, owner.id, "Ana 2").await;
    eventually(Duration::from_secs(30), "the rename converges", || async {
        Item::collection(&plain)
            .count_documents(doc! { "owner.name": "Ana 2" })
            .await
            .unwrap()
            == 5
    })
    .await;
    shut_down(worker).await;
    schema.reconcile(&db).await.unwrap();
    schema.retry_failures(&db).await.unwrap();

    let commands = log.commands();
    // (a retryable write carries a `txnNumber` too: a transaction's statements say
    // `autocommit: false`)
    let in_transaction = |c: &BsonDocument| c.get_bool("autocommit") == Ok(false);
    let mut reads = 0;
    let mut writes = 0;
    let mut commits = 0;
    for started in &commands {
        let command = &started.command;
        if let Some(mode) = read_mode(command) {
            assert_ne!(
                mode, "secondaryPreferred",
                "a library command read where the URI said: {command}"
            );
        }
        match started.name.as_str() {
            "find" | "aggregate" | "count" if !in_transaction(command) => {
                reads += 1;
                // on a direct connection the driver sends a primary read preference as
                // `primaryPreferred` (the server selection spec's rule for a single server)
                assert!(
                    matches!(
                        read_mode(command).as_deref(),
                        None | Some("primary") | Some("primaryPreferred")
                    ),
                    "a deciding read off the primary: {command}"
                );
                assert_eq!(
                    read_level(command).as_deref(),
                    Some("majority"),
                    "a deciding read below majority: {command}"
                );
            }
            "insert" | "update" | "delete" | "findAndModify" | "createIndexes" | "collMod"
            | "create"
                if !in_transaction(command) =>
            {
                writes += 1;
                assert_eq!(
                    write_w(command),
                    Some(Bson::String("majority".into())),
                    "a write acknowledged below a majority: {command}"
                );
            }
            "commitTransaction" => {
                commits += 1;
                assert_eq!(
                    write_w(command),
                    Some(Bson::String("majority".into())),
                    "a commit acknowledged below a majority: {command}"
                );
            }
            _ => {}
        }
    }
    println!(
        "{} library commands: {reads} reads at majority, {writes} writes and {commits} commits \
         acknowledged by a majority",
        commands.len()
    );
    assert!(reads > 0 && writes > 0 && commits > 0);
}
