//! `apply` meeting a change it did not plan for, each caused for real on the server: the apply's
//! command is held (driver command monitoring) while another client changes the collection,
//! then released. The server answers 48, 26, 85, 86 or 27; apply observes again, plans again
//! and ends in the schema's state, reporting what it could not do.

use std::sync::mpsc;
use std::time::Duration;

use mongo_schema::bson::{doc, Document as BsonDocument};
use mongo_schema::prelude::*;
use mongo_schema::{Action, ApplyReport, Warning};
use mongodb::Database;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "products")]
#[index(keys(name = 1))]
#[index(keys(sku = 1), unique, name = "sku_unique")]
pub struct Product {
    #[serde(rename = "_id")]
    pub id: String,
    pub name: String,
    pub sku: String,
}

fn schema() -> Schema {
    Schema::new().model::<Product>().version(1).build().unwrap()
}

/// The next release: a bound on `name` and an index on the new `price`.
mod v2 {
    use super::*;

    #[derive(Document, Serialize, Deserialize)]
    #[collection(name = "products")]
    #[index(keys(name = 1))]
    #[index(keys(sku = 1), unique, name = "sku_unique")]
    #[index(keys(price = -1))]
    pub struct Product {
        #[serde(rename = "_id")]
        pub id: String,
        #[schema(max_length = 40)]
        pub name: String,
        pub sku: String,
        pub price: i64,
    }

    pub fn schema() -> Schema {
        Schema::new().model::<Product>().version(2).build().unwrap()
    }
}

/// A database handle whose client holds the first command named `command` until `release`
/// receives, and says so on `held`.
async fn holding(
    db: &str,
    command: &'static str,
) -> (Database, mpsc::Receiver<()>, mpsc::Sender<()>) {
    let uri = tokio::task::spawn_blocking(mongo_schema_testkit::uri)
        .await
        .unwrap();
    let (client, held, release) =
        mongo_schema_testkit::holding_client(&uri, move |started| started.command_name == command)
            .await;
    (client.database(db), held, release)
}

/// Applies `schema` (with `drop_stale` as asked) through a client that holds its first
/// `command`; while it is held, `interfere` changes the database through another client.
async fn race(
    db: &Database,
    command: &'static str,
    drop_stale: bool,
    interfere: impl AsyncFnOnce(Database),
) -> ApplyReport {
    let (held_db, held, release) = holding(db.name(), command).await;
    let apply = tokio::spawn(async move {
        schema()
            .apply(&held_db)
            .drop_stale_indexes(drop_stale)
            .await
    });
    tokio::task::spawn_blocking(move || held.recv_timeout(Duration::from_secs(30)))
        .await
        .unwrap()
        .unwrap_or_else(|_| panic!("apply never sent {command}"));
    interfere(db.clone()).await;
    release.send(()).unwrap();
    let report = tokio::time::timeout(Duration::from_secs(60), apply)
        .await
        .expect("apply returns within 60 s")
        .unwrap()
        .expect("apply re-plans and succeeds");
    println!("after {command} was raced:\n{report}");
    report
}

async fn options(db: &Database) -> BsonDocument {
    use futures_util::TryStreamExt;
    let mut cursor = db
        .run_cursor_command(doc! { "listCollections": 1, "filter": { "name": "products" } })
        .await
        .unwrap();
    let entry = cursor.try_next().await.unwrap().expect("products exists");
    entry.get_document("options").unwrap().clone()
}

async fn index_names(db: &Database) -> Vec<String> {
    let mut names = db
        .collection::<BsonDocument>("products")
        .list_index_names()
        .await
        .unwrap();
    names.sort();
    names
}

fn kinds(report: &ApplyReport) -> Vec<String> {
    report
        .applied
        .iter()
        .map(|a| {
            let kind = match &a.action {
                Action::CreateCollection { .. } => "create",
                Action::UpdateValidator { .. } => "collMod",
                Action::CreateIndexes { .. } => "createIndexes",
                Action::DropIndex { .. } => "dropIndexes",
                _ => "other",
            };
            if a.done_concurrently {
                format!("{kind} (done concurrently)")
            } else {
                kind.to_owned()
            }
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collection_created_with_other_options_meanwhile_is_coll_modded_48() {
    let db = mongo_schema_testkit::database("race_48").await;
    let report = race(&db, "create", false, async |db: Database| {
        db.run_command(
            doc! { "create": "products", "validator": { "legacy": { "$exists": true } } },
        )
        .await
        .unwrap();
    })
    .await;
    assert_eq!(report.replanned_after, [48]);
    assert_eq!(
        kinds(&report),
        ["create (done concurrently)", "collMod", "createIndexes"]
    );
    assert_eq!(
        options(&db).await.get_document("validator").unwrap(),
        &Product::validator()
    );
    assert_eq!(index_names(&db).await, ["_id_", "name_1", "sku_unique"]);
    assert!(schema().plan(&db).await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collection_dropped_meanwhile_is_created_again_26() {
    let db = mongo_schema_testkit::database("race_26").await;
    // the previous release: another validator, the indexes already there
    db.run_command(doc! { "create": "products", "validator": { "name": { "$type": "string" } } })
        .await
        .unwrap();
    for index in Product::indexes() {
        db.collection::<BsonDocument>("products")
            .create_index(index)
            .await
            .unwrap();
    }
    let report = race(&db, "collMod", false, async |db: Database| {
        db.collection::<BsonDocument>("products")
            .drop()
            .await
            .unwrap();
    })
    .await;
    assert_eq!(report.replanned_after, [26]);
    assert_eq!(kinds(&report), ["create", "createIndexes"]);
    assert_eq!(
        options(&db).await.get_document("validator").unwrap(),
        &Product::validator()
    );
    assert_eq!(index_names(&db).await, ["_id_", "name_1", "sku_unique"]);
}

/// Another writer creates `index` on `products` while apply's `createIndexes` is held: apply
/// re-plans after the server's `code` and reports the conflict with its `sku_unique`; the
/// indexes end as `names`.
async fn an_index_created_meanwhile(
    prefix: &str,
    index: BsonDocument,
    code: i32,
    names: [&str; 3],
) {
    let db = mongo_schema_testkit::database(prefix).await;
    let report = race(&db, "createIndexes", false, async |db: Database| {
        db.run_command(doc! { "createIndexes": "products", "indexes": [index] })
            .await
            .unwrap();
    })
    .await;
    assert_eq!(report.replanned_after, [code]);
    // SecantusDB builds the indexes of a `createIndexes` before the one that fails, mongod
    // refuses the whole command: `name_1` is created by the first command or the re-planned one
    assert_eq!(kinds(&report)[0], "create");
    assert!(
        matches!(&report.warnings[..], [Warning::IndexConflict { wanted, .. }] if wanted.name == "sku_unique"),
        "{report}"
    );
    assert_eq!(index_names(&db).await, names);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_index_on_the_same_keys_created_meanwhile_is_reported_85() {
    // the declared index under another name: same keys, same options
    an_index_created_meanwhile(
        "race_85",
        doc! { "key": { "sku": 1 }, "name": "legacy_sku", "unique": true },
        85,
        ["_id_", "legacy_sku", "name_1"],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_index_name_taken_meanwhile_is_reported_86() {
    an_index_created_meanwhile(
        "race_86",
        doc! { "key": { "name": -1 }, "name": "sku_unique" },
        86,
        ["_id_", "name_1", "sku_unique"],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_index_dropped_meanwhile_is_not_an_error_27() {
    let db = mongo_schema_testkit::database("race_27").await;
    schema().apply(&db).await.unwrap();
    db.collection::<BsonDocument>("products")
        .create_index(
            mongodb::IndexModel::builder()
                .keys(doc! { "legacy": 1 })
                .build(),
        )
        .await
        .unwrap();
    let report = race(&db, "dropIndexes", true, async |db: Database| {
        db.collection::<BsonDocument>("products")
            .drop_index("legacy_1")
            .await
            .unwrap();
    })
    .await;
    assert_eq!(report.replanned_after, [27]);
    assert!(report.applied.is_empty(), "{report}");
    assert_eq!(index_names(&db).await, ["_id_", "name_1", "sku_unique"]);
}

/// The interleaving a lock-free design gets wrong: version 1's `collMod` is in flight when
/// version 2 starts. Without the lock, version 2 would set its validator and version 1's late
/// `collMod` would put the old one back. With it, version 2 waits for version 1 to finish, then
/// applies over it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newer_apply_waits_for_an_older_one_in_flight_and_wins() {
    let db = mongo_schema_testkit::database("race_v1_v2").await;
    // the release before version 1: another validator, no indexes
    db.run_command(doc! { "create": "products", "validator": { "name": { "$type": "string" } } })
        .await
        .unwrap();
    let (held_db, held, release) = holding(db.name(), "collMod").await;
    let v1 = tokio::spawn(async move { schema().apply(&held_db).await });
    tokio::task::spawn_blocking(move || held.recv_timeout(Duration::from_secs(30)))
        .await
        .unwrap()
        .expect("version 1 sent its collMod");
    let v2 = {
        let db = db.clone();
        tokio::spawn(async move { v2::schema().apply(&db).await })
    };
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(
        !v2.is_finished(),
        "version 2 waits while version 1 holds the lock"
    );
    release.send(()).unwrap();
    let v1 = tokio::time::timeout(Duration::from_secs(60), v1)
        .await
        .expect("version 1 returns")
        .unwrap()
        .expect("version 1 completes");
    let v2 = tokio::time::timeout(Duration::from_secs(60), v2)
        .await
        .expect("version 2 returns")
        .unwrap()
        .expect("version 2 completes");
    println!(
        "version 1:\n{v1}\nversion 2 (waited {:?}):\n{v2}",
        v2.waited
    );
    assert!(v2.waited >= Duration::from_millis(900), "{:?}", v2.waited);
    assert_eq!(
        options(&db).await.get_document("validator").unwrap(),
        &v2::Product::validator()
    );
    assert_eq!(
        index_names(&db).await,
        ["_id_", "name_1", "price_-1", "sku_unique"]
    );
    assert!(v2::schema()
        .plan(&db)
        .await
        .unwrap()
        .version
        .unwrap()
        .is_current());
}
