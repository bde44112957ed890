//! `Schema::apply` and `Schema::plan` against a real server (SecantusDB or `MONGODB_URI`).

mod common;

use common::{collection_options, WRITES};
use mongo_schema::bson::{doc, Document as BsonDocument};
use mongo_schema::prelude::*;
use mongo_schema::{Action, Warning, META_COLLECTION};
use serde::{Deserialize, Serialize};

#[derive(BsonSchema, Serialize, Deserialize, Clone)]
pub struct Part {
    #[serde(rename = "partId")]
    pub part_id: String,
    #[schema(max_length = 60)]
    pub name: String,
}

#[derive(Document, Serialize, Deserialize, Clone)]
#[collection(name = "products")]
#[index(keys(name = 1))]
#[index(keys(sku = 1), unique, name = "sku_unique")]
pub struct Product {
    #[serde(rename = "_id")]
    pub id: String,
    pub name: String,
    pub sku: String,
    #[embed(max = 20)]
    pub parts: Vec<Part>,
}

#[derive(Document, Serialize, Deserialize)]
#[collection(
    name = "parts",
    validation_level = "moderate",
    validation_action = "error"
)]
#[index(keys(name = 1), name = "by_name")]
pub struct CatalogPart {
    #[serde(rename = "_id")]
    pub id: String,
    pub name: String,
}

fn schema() -> Schema {
    Schema::new()
        .model::<Product>()
        .model::<CatalogPart>()
        .build()
        .expect("valid schema")
}

async fn index_names(db: &mongodb::Database, name: &str) -> Vec<String> {
    let mut names = db
        .collection::<BsonDocument>(name)
        .list_index_names()
        .await
        .unwrap();
    names.sort();
    names
}

#[tokio::test]
async fn first_apply_creates_everything_and_a_second_writes_nothing() {
    let (client, log) = mongo_schema_testkit::monitored_client().await;
    let db = client.database(mongo_schema_testkit::database("apply_noop").await.name());
    let schema = schema();

    let report = schema.apply(&db).await.unwrap();
    let creates = report
        .applied
        .iter()
        .filter(|a| matches!(a.action, Action::CreateCollection { .. }))
        .count();
    assert_eq!(creates, 2, "{report}");
    assert_eq!(log.count("create"), 2);
    assert_eq!(
        log.count("createIndexes"),
        2,
        "one createIndexes per collection"
    );
    assert!(report.warnings.is_empty(), "{report}");

    let options = collection_options(&db, "products").await;
    assert_eq!(
        options.get_document("validator").unwrap(),
        &Product::validator()
    );
    assert_eq!(options.get_str("validationLevel").unwrap(), "strict");
    let options = collection_options(&db, "parts").await;
    assert_eq!(options.get_str("validationLevel").unwrap(), "moderate");
    assert_eq!(
        index_names(&db, "products").await,
        ["_id_", "name_1", "sku_unique"]
    );
    assert_eq!(index_names(&db, "parts").await, ["_id_", "by_name"]);

    assert!(
        report.recorded,
        "the first apply records its version: {report}"
    );
    let record = db
        .collection::<BsonDocument>(META_COLLECTION)
        .find_one(doc! {})
        .await
        .unwrap()
        .expect("a version record");
    assert_eq!(record.get_str("_id").unwrap(), "schema");
    assert_eq!(record.get_i64("version").unwrap(), 0, "no version declared");
    assert_eq!(record.get_str("fingerprint").unwrap(), schema.fingerprint());
    assert_eq!(record.get_str("state").unwrap(), "applied");
    assert!(record.get_datetime("applied_at").is_ok());
    assert!(!record.contains_key("locked_by"), "the lock is released");

    log.clear();
    let again = schema.apply(&db).await.unwrap();
    assert!(again.applied.is_empty(), "second apply did: {again}");
    assert!(again.is_noop() && !again.recorded);
    let names = log.names();
    assert!(
        !names.iter().any(|n| WRITES.contains(&n.as_str())),
        "a no-op start-up sent a write command: {names:?}"
    );
    // reads only: the version record, then the collections and their indexes
    assert_eq!(
        names,
        ["find", "listCollections", "listIndexes", "listIndexes"]
    );
    assert_eq!(
        log.commands()[0].command.get_str("find").unwrap(),
        META_COLLECTION
    );
    println!("second apply sent only: {names:?}");

    log.clear();
    assert!(schema.plan(&db).await.unwrap().is_empty());
    assert!(!log.names().iter().any(|n| WRITES.contains(&n.as_str())));
}

#[tokio::test]
async fn a_changed_validator_or_level_is_one_coll_mod_and_missing_indexes_are_added() {
    let (client, log) = mongo_schema_testkit::monitored_client().await;
    let db = client.database(mongo_schema_testkit::database("apply_collmod").await.name());
    // an older version of the service: other validator, moderate level, one index missing
    db.run_command(doc! {
        "create": "products",
        "validator": { "$jsonSchema": { "bsonType": "object", "required": ["name"] } },
        "validationLevel": "moderate",
    })
    .await
    .unwrap();
    db.collection::<BsonDocument>("products")
        .create_index(
            mongodb::IndexModel::builder()
                .keys(doc! { "name": 1 })
                .build(),
        )
        .await
        .unwrap();
    log.clear();

    let schema = Schema::new().model::<Product>().build().unwrap();
    let plan = schema.plan(&db).await.unwrap();
    assert_eq!(plan.actions.len(), 2, "{plan}");
    match &plan.actions[0] {
        Action::UpdateValidator { changes, .. } => {
            assert_eq!(changes.len(), 2, "{changes:?}");
        }
        other => panic!("expected collMod, got {other}"),
    }
    match &plan.actions[1] {
        Action::CreateIndexes { indexes, .. } => {
            assert_eq!(
                indexes.iter().map(|i| i.name.as_str()).collect::<Vec<_>>(),
                ["sku_unique"]
            )
        }
        other => panic!("expected createIndexes, got {other}"),
    }
    assert!(
        !log.names().iter().any(|n| WRITES.contains(&n.as_str())),
        "plan wrote"
    );

    let report = schema.apply(&db).await.unwrap();
    assert_eq!(report.applied.len(), 2, "{report}");
    assert_eq!(log.count("collMod"), 1);
    assert_eq!(log.count("create"), 0);
    let options = collection_options(&db, "products").await;
    assert_eq!(
        options.get_document("validator").unwrap(),
        &Product::validator()
    );
    assert_eq!(options.get_str("validationLevel").unwrap(), "strict");
    assert!(schema.plan(&db).await.unwrap().is_empty());
}

#[tokio::test]
async fn an_index_with_other_options_is_reported_and_left_alone() {
    let db = mongo_schema_testkit::database("apply_conflict").await;
    db.run_command(doc! { "create": "products" }).await.unwrap();
    // same keys as the declared `sku_unique`, but not unique and another name
    db.run_command(doc! { "createIndexes": "products", "indexes": [{ "key": { "sku": 1 }, "name": "legacy_sku" }] })
        .await
        .unwrap();

    let schema = Schema::new().model::<Product>().build().unwrap();
    let report = schema.apply(&db).await.unwrap();
    let conflict = report
        .warnings
        .iter()
        .find_map(|w| match w {
            Warning::IndexConflict {
                wanted,
                differences,
                ..
            } => Some((wanted, differences)),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no conflict reported: {report}"));
    assert_eq!(conflict.0.name, "sku_unique");
    assert_eq!(
        conflict.1.len(),
        2,
        "name and unique differ: {:?}",
        conflict.1
    );
    println!("{report}");
    // never dropped nor rebuilt; the other index was created
    assert_eq!(
        index_names(&db, "products").await,
        ["_id_", "legacy_sku", "name_1"]
    );
    // and the warning stays until someone decides
    let plan = schema.plan(&db).await.unwrap();
    assert!(plan.is_empty() && plan.warnings.len() == 1, "{plan}");
}

#[tokio::test]
async fn many_instances_starting_at_once_all_succeed() {
    let db = mongo_schema_testkit::database("apply_race").await;
    let schema = schema();
    let instances = (0..8).map(|_| {
        let (db, schema) = (db.clone(), schema.clone());
        tokio::spawn(async move { schema.apply(&db).await })
    });
    let reports: Vec<_> = tokio::time::timeout(
        std::time::Duration::from_secs(120),
        futures_util::future::join_all(instances),
    )
    .await
    .expect("8 concurrent applies finish within 120 s")
    .into_iter()
    .map(|joined| joined.unwrap().expect("every instance starts"))
    .collect();
    // writes are serialised by the apply lock: one instance creates both collections, the
    // others wait, observe again and find nothing to do
    let creates = reports
        .iter()
        .flat_map(|r| &r.applied)
        .filter(|a| matches!(&a.action, Action::CreateCollection { .. }))
        .count();
    let writers = reports.iter().filter(|r| !r.applied.is_empty()).count();
    let waited: Vec<_> = reports.iter().map(|r| r.waited).collect();
    println!("8 concurrent applies: {creates} creates by {writers} instance(s); waits {waited:?}");
    assert_eq!(creates, 2, "one create per collection");
    assert_eq!(writers, 1);
    assert_eq!(reports.iter().filter(|r| r.recorded).count(), 1);
    let options = collection_options(&db, "products").await;
    assert_eq!(
        options.get_document("validator").unwrap(),
        &Product::validator()
    );
    assert_eq!(
        index_names(&db, "products").await,
        ["_id_", "name_1", "sku_unique"]
    );
    assert!(schema.plan(&db).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_view_with_a_schema_name_is_left_alone() {
    let db = mongo_schema_testkit::database("apply_view").await;
    db.run_command(doc! { "create": "source" }).await.unwrap();
    db.run_command(doc! { "create": "parts", "viewOn": "source", "pipeline": [] })
        .await
        .unwrap();
    let schema = Schema::new().model::<CatalogPart>().build().unwrap();
    let report = schema.apply(&db).await.unwrap();
    assert!(report.applied.is_empty(), "{report}");
    assert!(
        matches!(report.warnings[..], [Warning::NotACollection { .. }]),
        "{report}"
    );
}
