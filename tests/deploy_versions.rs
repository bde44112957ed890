//! Schema versions against a real server: the record in `mongo_schema_meta`, refused
//! downgrades that send no write (command monitoring), `allow_downgrade`, the development loop
//! (same version, other models), the version status of `plan`, and 8 concurrent applies of
//! versions 1 and 2 that end in version 2.

mod common;

use std::sync::Arc;
use std::time::Duration;

use mongo_schema::bson::{doc, Document as BsonDocument};
use mongo_schema::prelude::*;
use mongo_schema::{Action, Error, SchemaBuilder, VersionStatus, Warning, META_COLLECTION};
use serde::{Deserialize, Serialize};

/// Version 1 of the orders service.
mod v1 {
    use super::*;

    #[derive(Document, Serialize, Deserialize)]
    #[collection(name = "orders")]
    #[index(keys(customer = 1))]
    pub struct Order {
        #[serde(rename = "_id")]
        pub id: ObjectId,
        pub customer: String,
        #[schema(max_length = 200)]
        pub note: String,
    }
}

/// Version 2: a tighter note and an index on the new `placed_at`.
mod v2 {
    use super::*;

    #[derive(Document, Serialize, Deserialize)]
    #[collection(name = "orders")]
    #[index(keys(customer = 1))]
    #[index(keys(placed_at = -1))]
    pub struct Order {
        #[serde(rename = "_id")]
        pub id: ObjectId,
        pub customer: String,
        #[schema(max_length = 100)]
        pub note: String,
        pub placed_at: DateTime,
    }
}

/// The recorded and the applying version of a refused downgrade, `None` for any other outcome.
fn downgrade<T>(outcome: Result<T, Error>) -> Option<(u64, u64)> {
    match outcome {
        Err(Error::Downgrade {
            recorded, applying, ..
        }) => Some((recorded, applying)),
        _ => None,
    }
}

/// Version `version` of a schema of the one model `T`.
fn versioned<T: mongo_schema::Document>(version: u64) -> Schema {
    Schema::new().model::<T>().version(version).build().unwrap()
}

fn v1_schema() -> Schema {
    versioned::<v1::Order>(1)
}

fn v2_schema() -> Schema {
    versioned::<v2::Order>(2)
}

/// Whether the command `name` writes (the version record's too, and `shardCollection`).
fn writes(name: &str) -> bool {
    common::WRITES.contains(&name) || name == "shardCollection"
}

async fn validator(db: &mongodb::Database) -> BsonDocument {
    common::validator(db, "orders").await
}

async fn index_names(db: &mongodb::Database) -> Vec<String> {
    let mut names = db
        .collection::<BsonDocument>("orders")
        .list_index_names()
        .await
        .unwrap();
    names.sort();
    names
}

async fn record(db: &mongodb::Database) -> BsonDocument {
    db.collection::<BsonDocument>(META_COLLECTION)
        .find_one(doc! { "_id": "schema" })
        .await
        .unwrap()
        .expect("a version record")
}

#[tokio::test]
async fn an_older_version_writes_nothing_and_names_both_versions() {
    let (client, log) = mongo_schema_testkit::monitored_client().await;
    let db = client.database(mongo_schema_testkit::database("ver_down").await.name());

    let first = v1_schema().apply(&db).await.unwrap();
    assert_eq!(
        first.version,
        Some(VersionStatus::Unrecorded { applying: 1 })
    );
    assert!(first.recorded);
    assert_eq!(record(&db).await.get_i64("version").unwrap(), 1);

    let upgrade = v2_schema().apply(&db).await.unwrap();
    println!("v1 -> v2:\n{upgrade}");
    assert_eq!(
        upgrade.version,
        Some(VersionStatus::Upgrade {
            recorded: 1,
            applying: 2
        })
    );
    let kinds: Vec<&str> = upgrade
        .applied
        .iter()
        .map(|a| match &a.action {
            Action::UpdateValidator { .. } => "collMod",
            Action::CreateIndexes { .. } => "createIndexes",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, ["collMod", "createIndexes"]);
    let v2_record = record(&db).await;
    assert_eq!(v2_record.get_i64("version").unwrap(), 2);
    assert_eq!(
        v2_record.get_str("fingerprint").unwrap(),
        v2_schema().fingerprint()
    );
    assert_eq!(v2_record.get_str("state").unwrap(), "applied");

    // an instance of the previous release starts: refused before any write
    log.clear();
    let error = v1_schema().apply(&db).await.unwrap_err();
    println!("v1 after v2: {error}");
    assert!(
        matches!(
            error,
            Error::Downgrade {
                recorded: 2,
                applying: 1,
                ..
            }
        ),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(
        // display-text: the variant is matched above; this is the sentence a person reads
        message.contains("schema version 1") && message.contains("newer version 2"),
        "{message}"
    );
    let names = log.names();
    println!("the refused apply sent: {names:?}");
    assert!(
        !names.iter().any(|n| writes(n)),
        "a refused downgrade sent a write: {names:?}"
    );
    assert_eq!(names, ["find"], "it reads the record and stops");
    assert_eq!(validator(&db).await, v2::Order::validator());
    assert_eq!(
        index_names(&db).await,
        ["_id_", "customer_1", "placed_at_-1"]
    );
    assert_eq!(record(&db).await, v2_record, "the record is untouched");

    // a schema without a declared version is version 0: older than 2 too
    let unversioned = Schema::new().model::<v1::Order>().build().unwrap();
    assert_eq!(downgrade(unversioned.apply(&db).await), Some((2, 0)));

    // plan shows it, and reads only
    log.clear();
    let plan = v1_schema().plan(&db).await.unwrap();
    println!("plan of v1 over v2:\n{plan}");
    assert!(plan.version.as_ref().unwrap().is_downgrade());
    assert!(plan
        .to_string()
        .contains("schema version 1 is OLDER than the recorded version 2"));
    assert!(!log.names().iter().any(|n| writes(n)));
}

#[tokio::test]
async fn an_allowed_downgrade_applies_the_older_validator_and_drops_no_newer_index() {
    let db = mongo_schema_testkit::database("ver_allow").await;
    v2_schema().apply(&db).await.unwrap();

    let report = v1_schema()
        .apply(&db)
        .allow_downgrade(true)
        .drop_stale_indexes(true)
        .await
        .unwrap();
    println!("v1 over v2, allowed:\n{report}");
    assert_eq!(validator(&db).await, v1::Order::validator());
    assert_eq!(
        index_names(&db).await,
        ["_id_", "customer_1", "placed_at_-1"],
        "the newer version's index stays"
    );
    assert!(report.warnings.iter().any(|w| matches!(
        w,
        Warning::DropsHeldBack { recorded: 2, applying: 1, indexes } if indexes == &["orders.placed_at_-1"]
    )));
    assert!(report.warnings.iter().any(|w| matches!(
        w,
        Warning::Downgraded {
            recorded: 2,
            applying: 1
        }
    )));
    assert!(!report
        .applied
        .iter()
        .any(|a| matches!(a.action, Action::DropIndex { .. })));
    let record = record(&db).await;
    assert_eq!(record.get_i64("version").unwrap(), 1);
    assert_eq!(
        record.get_str("fingerprint").unwrap(),
        v1_schema().fingerprint()
    );
    // the record now says 1, so version 2 is an upgrade again
    let plan = v2_schema().plan(&db).await.unwrap();
    assert_eq!(
        plan.version,
        Some(VersionStatus::Upgrade {
            recorded: 1,
            applying: 2
        })
    );
}

#[tokio::test]
async fn the_same_version_with_other_models_applies_with_a_warning() {
    let db = mongo_schema_testkit::database("ver_dev").await;
    v1_schema().apply(&db).await.unwrap();
    // the development loop: the models changed, the version number did not
    let edited = versioned::<v2::Order>(1);
    assert_ne!(edited.fingerprint(), v1_schema().fingerprint());
    let plan = edited.plan(&db).await.unwrap();
    assert!(
        matches!(
            plan.version,
            Some(VersionStatus::Changed { version: 1, .. })
        ),
        "{plan}"
    );
    let report = edited.apply(&db).await.unwrap();
    println!("{report}");
    assert!(report.warnings.iter().any(|w| matches!(
        w,
        Warning::SameVersionChanged { version: 1, fingerprint, .. } if *fingerprint == edited.fingerprint()
    )));
    assert_eq!(validator(&db).await, v2::Order::validator());
    assert_eq!(
        record(&db).await.get_str("fingerprint").unwrap(),
        edited.fingerprint()
    );
    let again = edited.apply(&db).await.unwrap();
    assert!(again.is_noop() && again.warnings.is_empty(), "{again}");
}

#[tokio::test]
async fn an_interrupted_apply_is_shown_and_completed() {
    let db = mongo_schema_testkit::database("ver_interrupted").await;
    v2_schema().apply(&db).await.unwrap();
    // what an apply that died after claiming version 3 leaves: the record says so, the index
    // it was about to build is missing
    let v3 = versioned::<v2::Order>(3);
    db.collection::<BsonDocument>(META_COLLECTION)
        .update_one(
            doc! { "_id": "schema" },
            doc! { "$set": { "version": 3_i64, "fingerprint": v3.fingerprint(), "state": "applying" } },
        )
        .await
        .unwrap();
    db.collection::<BsonDocument>("orders")
        .drop_index("placed_at_-1")
        .await
        .unwrap();
    let plan = v3.plan(&db).await.unwrap();
    println!("{plan}");
    assert_eq!(
        plan.version,
        Some(VersionStatus::Interrupted { version: 3 })
    );
    // display-text: the plan's sentence, read by a person
    assert!(plan.to_string().contains("apply completes it"));
    // version 2 may not undo what 3 started
    assert_eq!(downgrade(v2_schema().apply(&db).await), Some((3, 2)));
    let report = v3.apply(&db).await.unwrap();
    assert!(report.recorded);
    assert_eq!(
        index_names(&db).await,
        ["_id_", "customer_1", "placed_at_-1"]
    );
    assert_eq!(record(&db).await.get_str("state").unwrap(), "applied");
    assert!(v3.plan(&db).await.unwrap().version.unwrap().is_current());
}

#[tokio::test]
async fn a_version_beyond_int64_is_refused_before_any_write() {
    let (client, log) = mongo_schema_testkit::monitored_client().await;
    let db = client.database(mongo_schema_testkit::database("ver_huge").await.name());
    let schema = Schema::new()
        .model::<v1::Order>()
        .version(u64::MAX)
        .build()
        .unwrap();
    let error = schema.apply(&db).await.unwrap_err();
    assert!(
        matches!(&error, Error::InvalidArgument { argument, .. } if argument == "version"),
        "{error:#?}"
    );
    assert!(log.names().is_empty(), "{:?}", log.names());
}

/// Eight instances, four of each version, released together; repeated on fresh databases, and
/// on databases where version 1 was already applied (the rolling deploy).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_concurrent_applies_of_v1_and_v2_end_in_the_v2_state() {
    let (v1, v2) = (Arc::new(v1_schema()), Arc::new(v2_schema()));
    let mut v1_applied = 0;
    let mut v1_refused = 0;
    const ROUNDS: usize = 6;
    for round in 0..ROUNDS {
        let db = mongo_schema_testkit::database(&format!("ver_race_{round}")).await;
        if round % 2 == 1 {
            v1.apply(&db).await.unwrap();
        }
        let barrier = Arc::new(tokio::sync::Barrier::new(8));
        let instances: Vec<_> = (0..8)
            .map(|i| {
                let schema = if i % 2 == 0 { v1.clone() } else { v2.clone() };
                let (db, barrier) = (db.clone(), barrier.clone());
                tokio::spawn(async move {
                    barrier.wait().await;
                    (schema.version(), schema.apply(&db).await)
                })
            })
            .collect();
        let outcomes = tokio::time::timeout(
            Duration::from_secs(120),
            futures_util::future::join_all(instances),
        )
        .await
        .expect("8 concurrent applies finish within 120 s");
        for outcome in outcomes {
            match outcome.unwrap() {
                (Some(2), Ok(_)) => {}
                (Some(2), Err(error)) => panic!("a v2 apply failed: {error}"),
                (_, Ok(_)) => v1_applied += 1,
                (
                    _,
                    Err(Error::Downgrade {
                        recorded: 2,
                        applying: 1,
                        ..
                    }),
                ) => v1_refused += 1,
                (_, Err(error)) => panic!("a v1 apply failed otherwise: {error}"),
            }
        }
        assert_eq!(
            validator(&db).await,
            v2::Order::validator(),
            "round {round}"
        );
        assert_eq!(
            index_names(&db).await,
            ["_id_", "customer_1", "placed_at_-1"]
        );
        let record = record(&db).await;
        assert_eq!(record.get_i64("version").unwrap(), 2);
        assert_eq!(record.get_str("state").unwrap(), "applied");
        assert!(!record.contains_key("locked_by"), "the lock is released");
        let plan = v2.plan(&db).await.unwrap();
        assert!(plan.is_empty() && plan.version.unwrap().is_current());
        // and an instance of version 1 starting now is refused
        assert_eq!(downgrade(v1.apply(&db).await), Some((2, 1)));
    }
    println!(
        "{ROUNDS} rounds of 4 v1 + 4 v2 applies: every v2 apply succeeded; v1 applies: {v1_applied} succeeded (before v2 was recorded), {v1_refused} refused (Downgrade 2 > 1); every round ends in the v2 state"
    );
    assert_eq!(v1_applied + v1_refused, ROUNDS * 4);
}

/// Another service's model, sharing the database with the orders service.
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "invoices")]
#[index(keys(number = 1), unique)]
pub struct Invoice {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub number: String,
}

#[tokio::test]
async fn services_sharing_a_database_keep_a_version_record_each() {
    let db = mongo_schema_testkit::database("ver_shared").await;
    let named = |schema: SchemaBuilder, name: Option<&str>| {
        match name {
            Some(name) => schema.name(name),
            None => schema,
        }
        .build()
        .unwrap()
    };
    let billing = |name| named(Schema::new().model::<Invoice>().version(5), name);
    let orders = |name| named(Schema::new().model::<v1::Order>().version(1), name);

    // the control: two services under the default name share one record, and the lower
    // version is refused as a downgrade
    billing(None).apply(&db).await.unwrap();
    match orders(None).apply(&db).await {
        Err(Error::Downgrade {
            recorded, applying, ..
        }) => assert_eq!((recorded, applying), (5, 1)),
        other => panic!("expected a refused downgrade, got {other:?}"),
    }
    db.drop().await.unwrap();

    // named, each has its own record, lock and version
    let (billing, orders) = (billing(Some("billing")), orders(Some("orders")));
    assert_eq!((billing.name(), orders.name()), ("billing", "orders"));
    billing.apply(&db).await.unwrap();
    let report = orders.apply(&db).await.unwrap();
    assert_eq!(
        report.version,
        Some(VersionStatus::Unrecorded { applying: 1 })
    );
    let records: Vec<BsonDocument> = common::all(
        db.collection::<BsonDocument>(META_COLLECTION)
            .find(doc! {})
            .sort(doc! { "_id": 1 }),
    )
    .await;
    let versions: Vec<(&str, i64, &str)> = records
        .iter()
        .map(|r| {
            (
                r.get_str("_id").unwrap(),
                r.get_i64("version").unwrap(),
                r.get_str("state").unwrap(),
            )
        })
        .collect();
    assert_eq!(
        versions,
        [("billing", 5, "applied"), ("orders", 1, "applied")]
    );
    // each sees its own version as current, and a restart of either writes nothing
    for schema in [&billing, &orders] {
        let plan = schema.plan(&db).await.unwrap();
        assert!(plan.version.unwrap().is_current(), "{}", schema.name());
        let restart = schema.apply(&db).await.unwrap();
        assert!(
            restart.applied.is_empty() && !restart.recorded,
            "{}: {restart:?}",
            schema.name()
        );
    }
    assert!(orders
        .mongosh_script()
        .contains(r#"findOne({ _id: "orders" })"#));

    let empty = Schema::new()
        .model::<Invoice>()
        .name("")
        .build()
        .unwrap_err();
    assert!(
        empty.problems.iter().any(|p| p.contains("name is empty")),
        "{empty:?}"
    );
}

/// Version 2 of a deploy that cannot apply over the data: a tighter note, then a unique index
/// on it, and two orders share a note.
mod v2_unique {
    use super::*;

    #[derive(Document, Serialize, Deserialize)]
    #[collection(name = "orders")]
    #[index(keys(customer = 1))]
    #[index(keys(note = 1), unique)]
    pub struct Order {
        #[serde(rename = "_id")]
        pub id: ObjectId,
        pub customer: String,
        #[schema(max_length = 100)]
        pub note: String,
    }

    pub fn schema() -> Schema {
        super::versioned::<Order>(2)
    }
}

#[tokio::test]
async fn a_failed_deploy_is_recorded_and_the_previous_version_rolls_back_without_allow_downgrade() {
    let db = mongo_schema_testkit::database("ver_failed").await;
    v1_schema().apply(&db).await.unwrap();
    for customer in ["ana", "bo"] {
        db.collection::<BsonDocument>("orders")
            .insert_one(doc! { "_id": ObjectId::new(), "customer": customer, "note": "same" })
            .await
            .unwrap();
    }
    let failed = v2_unique::schema().apply(&db).await.unwrap_err();
    println!("version 2: {failed}");
    assert!(matches!(failed, Error::Apply { .. }), "{failed:?}");
    assert_eq!(failed.code(), Some(11000), "{failed}");
    // its validator was applied before the index failed: the server is half way
    assert_eq!(validator(&db).await, v2_unique::Order::validator());
    let record = record(&db).await;
    assert_eq!(record.get_i64("version").unwrap(), 2);
    assert_eq!(record.get_str("state").unwrap(), "failed");
    assert!(
        record.get_str("error").unwrap().contains("duplicate"),
        "{record}"
    );
    assert!(!record.contains_key("locked_by"), "the lock is released");
    let plan = v2_unique::schema().plan(&db).await.unwrap();
    assert!(
        matches!(
            &plan.version,
            Some(VersionStatus::Failed { version: 2, .. })
        ),
        "{plan}"
    );

    // the previous binary starts again: no `allow_downgrade`, its own state comes back
    let plan = v1_schema().plan(&db).await.unwrap();
    println!("{plan}");
    assert!(
        matches!(
            &plan.version,
            Some(VersionStatus::Rollback {
                failed: 2,
                applying: 1,
                ..
            })
        ),
        "{plan}"
    );
    let rollback = v1_schema().apply(&db).await.unwrap();
    println!("version 1 after the failed 2:\n{rollback}");
    assert!(common::rolled_back(&rollback, 2, 1), "{rollback}");
    // display-text: the report's sentence, read by a person
    assert!(rollback.to_string().contains("rolled back"), "{rollback}");
    assert_eq!(validator(&db).await, v1::Order::validator());
    let record = self::record(&db).await;
    assert_eq!(record.get_i64("version").unwrap(), 1);
    assert_eq!(record.get_str("state").unwrap(), "applied");
    assert!(
        !record.contains_key("error"),
        "the claim clears the error: {record}"
    );
    let again = v1_schema().apply(&db).await.unwrap();
    assert!(again.is_noop(), "{again}");
    // the control: over version 2 applied (not failed), version 1 is refused
    let db = mongo_schema_testkit::database("ver_failed_control").await;
    v2_unique::schema().apply(&db).await.unwrap();
    assert_eq!(downgrade(v1_schema().apply(&db).await), Some((2, 1)));
}

#[tokio::test]
async fn naming_an_unnamed_schema_adopts_its_record_and_keeps_the_fence() {
    let db = mongo_schema_testkit::database("ver_rename").await;
    v1_schema().apply(&db).await.unwrap();
    // a rename and nothing else: plan sees the adopted record as current, writes nothing
    let renamed_v1 = Schema::new()
        .model::<v1::Order>()
        .version(1)
        .name("orders")
        .build()
        .unwrap();
    let plan = renamed_v1.plan(&db).await.unwrap();
    println!("{plan}");
    assert!(plan.version.as_ref().unwrap().is_current(), "{plan}");
    assert!(
        plan.warnings.iter().any(
            |w| matches!(w, Warning::RecordAdopted { from, to } if from == "schema" && to == "orders")
        ),
        "{plan}"
    );
    // version 2 under the new name continues the unnamed record's history
    let renamed_v2 = Schema::new()
        .model::<v2::Order>()
        .version(2)
        .name("orders")
        .build()
        .unwrap();
    let report = renamed_v2.apply(&db).await.unwrap();
    println!("{report}");
    assert_eq!(
        report.version,
        Some(VersionStatus::Upgrade {
            recorded: 1,
            applying: 2
        })
    );
    assert!(report
        .warnings
        .iter()
        .any(|w| matches!(w, Warning::RecordAdopted { .. })));
    let meta = db.collection::<BsonDocument>(META_COLLECTION);
    let named = meta
        .find_one(doc! { "_id": "orders" })
        .await
        .unwrap()
        .expect("the named record");
    assert_eq!(named.get_i64("version").unwrap(), 2);
    assert_eq!(named.get_str("adopted_from").unwrap(), "schema");
    assert_eq!(record(&db).await.get_str("renamed_to").unwrap(), "orders");
    // an unnamed instance of version 1 still meets the fence
    assert_eq!(downgrade(v1_schema().apply(&db).await), Some((2, 1)));
    assert_eq!(validator(&db).await, v2::Order::validator());
    assert!(renamed_v2.apply(&db).await.unwrap().is_noop());

    // the control: another service's unnamed record is not adopted
    let db = mongo_schema_testkit::database("ver_rename_other").await;
    versioned::<Invoice>(5).apply(&db).await.unwrap();
    let report = renamed_v2.apply(&db).await.unwrap();
    assert_eq!(
        report.version,
        Some(VersionStatus::Unrecorded { applying: 2 })
    );
    assert!(record(&db).await.get_str("renamed_to").is_err());
}
