//! Growth and change on the real server: bounded buckets under concurrent appenders, validator
//! changes that never surprise existing data, and the live audit.

mod common;

use std::collections::HashSet;

use futures_util::TryStreamExt;
use mongo_schema::bson::{doc, Bson, Document as BsonDocument};
use mongo_schema::prelude::*;
use mongo_schema::{Action, OnViolations, Warning};
use serde::{Deserialize, Serialize};

// ---- buckets ---------------------------------------------------------------------------------

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "sensors")]
pub struct Sensor {
    #[serde(rename = "_id")]
    pub id: String,
}

#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Reading {
    pub at: i64,
    pub writer: i32,
    pub value: f64,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "readings")]
#[bucket(parent = sensor_id, entries = readings, count = count, key = "at", first = first_at, last = last_at)]
pub struct ReadingBucket {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[reference]
    pub sensor_id: Ref<Sensor>,
    #[embed(max = 25)]
    pub readings: Vec<Reading>,
    pub count: i64,
    pub first_at: i64,
    pub last_at: i64,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_concurrent_appenders_fill_bounded_buckets_and_the_reader_returns_every_entry_in_order(
) {
    let db = mongo_schema_testkit::database("growth_buckets").await;
    let schema = Schema::new()
        .model::<Sensor>()
        .model::<ReadingBucket>()
        .build()
        .unwrap();
    print!("{}", schema.apply(&db).await.unwrap());
    let keys: Vec<_> = ReadingBucket::collection_spec()
        .indexes
        .iter()
        .map(|i| i.keys.clone())
        .collect();
    assert_eq!(
        keys,
        [
            doc! { "sensor_id": 1, "count": 1 },
            doc! { "sensor_id": 1, "last_at": 1 }
        ]
    );
    let sensor = Sensor { id: "s1".into() };
    Sensor::collection(&db).insert_one(&sensor).await.unwrap();

    const PER_WRITER: i64 = 60;
    let writers = (0..8).map(|w| {
        let (db, sensor) = (db.clone(), sensor.to_ref());
        tokio::spawn(async move {
            for i in 0..PER_WRITER {
                let reading = Reading {
                    at: i * 8 + w as i64,
                    writer: w,
                    value: i as f64,
                };
                ReadingBucket::BUCKET
                    .append(&db, &sensor, &reading)
                    .await
                    .unwrap();
            }
        })
    });
    for writer in writers {
        tokio::time::timeout(std::time::Duration::from_secs(120), writer)
            .await
            .expect("an appender finishes within 120 s")
            .unwrap();
    }

    let buckets: Vec<ReadingBucket> =
        common::all(ReadingBucket::collection(&db).find(doc! {})).await;
    let mut seen = HashSet::new();
    let mut partial = 0;
    for bucket in &buckets {
        assert!(
            bucket.readings.len() <= 25,
            "a bucket was overfilled: {}",
            bucket.readings.len()
        );
        assert_eq!(
            bucket.count as usize,
            bucket.readings.len(),
            "count matches the array"
        );
        assert_eq!(
            bucket.first_at,
            bucket.readings.iter().map(|r| r.at).min().unwrap()
        );
        assert_eq!(
            bucket.last_at,
            bucket.readings.iter().map(|r| r.at).max().unwrap()
        );
        if bucket.readings.len() < 25 {
            partial += 1;
        }
        for reading in &bucket.readings {
            assert!(seen.insert(reading.at), "duplicate entry {}", reading.at);
        }
    }
    assert_eq!(seen.len(), 480, "no entry lost");
    assert!(partial <= 8, "{partial} partly filled buckets");
    println!(
        "480 entries from 8 concurrent appenders in {} buckets of at most 25 ({partial} not full)",
        buckets.len()
    );

    // the reader: pages of 50 in key order across buckets
    let mut read = Vec::new();
    let mut after = None;
    loop {
        let page = ReadingBucket::BUCKET
            .entries(&db, &sensor.to_ref())
            .after(after.clone())
            .limit(50)
            .await
            .unwrap();
        read.extend(page.items.iter().map(|r| r.at));
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    assert_eq!(
        read,
        (0..480).collect::<Vec<i64>>(),
        "every entry once, in key order"
    );

    // the array bound is the validator's too
    let first = &buckets[0];
    let error = ReadingBucket::collection(&db)
        .update_one(doc! { "_id": first.id }, doc! { "$push": { "readings": { "$each": (0..26).map(|i| doc! { "at": 10_000 + i, "writer": 0, "value": 0.0 }).collect::<Vec<_>>() } } })
        .await
        .in_collection(ReadingBucket::COLLECTION)
        .unwrap_err();
    assert!(
        error
            .as_validation()
            .is_some_and(|v| v.at("readings").any(|f| f.rule == "maxItems")),
        "{error}"
    );
}

// ---- validator migrations ----------------------------------------------------------------------

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "accounts")]
pub struct Account {
    #[serde(rename = "_id")]
    pub id: i64,
    #[schema(max_length = 8)]
    pub handle: String,
}

async fn stored(db: &mongodb::Database) -> Vec<BsonDocument> {
    common::all(
        db.collection::<BsonDocument>("accounts")
            .find(doc! {})
            .sort(doc! { "_id": 1 }),
    )
    .await
}

async fn server_options(db: &mongodb::Database) -> BsonDocument {
    let mut cursor = db
        .run_cursor_command(doc! { "listCollections": 1, "filter": { "name": "accounts" } })
        .await
        .unwrap();
    cursor
        .try_next()
        .await
        .unwrap()
        .unwrap()
        .get_document("options")
        .unwrap()
        .clone()
}

#[tokio::test]
async fn a_tighter_validator_is_not_applied_over_violating_data_until_the_caller_chooses() {
    let db = mongo_schema_testkit::database("growth_migrate").await;
    // the previous version of the service: no length limit
    db.run_command(doc! { "create": "accounts", "validator": { "$jsonSchema": { "bsonType": "object", "required": ["handle"] } } })
        .await
        .unwrap();
    let accounts = db.collection::<BsonDocument>("accounts");
    accounts
        .insert_many([
            doc! { "_id": 1_i64, "handle": "ana" },
            doc! { "_id": 2_i64, "handle": "bartholomew" },
            doc! { "_id": 3_i64, "handle": "chi" },
            doc! { "_id": 4_i64, "handle": "desdemona-of-venice" },
            doc! { "_id": 5_i64, "handle": "evangeline" },
        ])
        .await
        .unwrap();
    let before = stored(&db).await;
    let schema = Schema::new().model::<Account>().build().unwrap();

    let plan = schema.plan(&db).await.unwrap();
    println!("{plan}");
    match &plan.actions[..] {
        [Action::UpdateValidator {
            violations: Some(v),
            ..
        }] => {
            assert_eq!(v.count, 3);
            assert_eq!(
                v.sample_ids,
                [Bson::Int64(2), Bson::Int64(4), Bson::Int64(5)]
            );
        }
        other => panic!("{other:?}"),
    }

    // default: refused, reported, nothing changed
    let report = schema.apply(&db).await.unwrap();
    println!("{report}");
    assert!(report.applied.is_empty());
    assert!(
        matches!(&report.warnings[..], [Warning::ValidatorOverViolations { decision: OnViolations::Refuse, violations, .. }] if violations.count == 3)
    );
    assert!(report
        .to_string()
        .contains("was NOT applied: 3 existing document(s) violate it"));
    assert_ne!(
        server_options(&db).await.get_document("validator").unwrap(),
        &Account::validator()
    );
    assert_eq!(stored(&db).await, before);

    // chosen path: moderate while a migration runs
    let report = schema
        .apply(&db)
        .on_violations(OnViolations::Moderate)
        .await
        .unwrap();
    println!("{report}");
    let options = server_options(&db).await;
    assert_eq!(
        options.get_document("validator").unwrap(),
        &Account::validator()
    );
    assert_eq!(options.get_str("validationLevel").unwrap(), "moderate");
    assert_eq!(stored(&db).await, before, "apply never rewrites documents");
    // existing invalid documents can still be updated under moderate
    accounts
        .update_one(doc! { "_id": 2_i64 }, doc! { "$set": { "note": 1 } })
        .await
        .unwrap();
    accounts
        .update_one(doc! { "_id": 2_i64 }, doc! { "$unset": { "note": "" } })
        .await
        .unwrap();

    // the migration: shorten the handles; then the declared level applies
    for (id, handle) in [(2_i64, "bart"), (4, "desi"), (5, "eva")] {
        accounts
            .update_one(doc! { "_id": id }, doc! { "$set": { "handle": handle } })
            .await
            .unwrap();
    }
    let plan = schema.plan(&db).await.unwrap();
    assert!(
        matches!(&plan.actions[..], [Action::UpdateValidator { violations: Some(v), .. }] if v.count == 0),
        "{plan}"
    );
    // a start-up of the same version does not scan the collection again (the record keeps the
    // count of the moderate apply); the caller that migrated the data asks for a recount
    let report = schema.apply(&db).recount_violations(true).await.unwrap();
    assert!(report.warnings.is_empty(), "{report}");
    assert_eq!(
        server_options(&db)
            .await
            .get_str("validationLevel")
            .unwrap(),
        "strict"
    );
    assert!(schema.plan(&db).await.unwrap().is_empty());
}

#[tokio::test]
async fn override_applies_the_validator_and_still_rewrites_nothing() {
    let db = mongo_schema_testkit::database("growth_override").await;
    db.run_command(doc! { "create": "accounts" }).await.unwrap();
    db.collection::<BsonDocument>("accounts")
        .insert_one(doc! { "_id": 1_i64, "handle": "much-too-long-handle" })
        .await
        .unwrap();
    let before = stored(&db).await;
    let schema = Schema::new().model::<Account>().build().unwrap();
    let report = schema
        .apply(&db)
        .on_violations(OnViolations::Override)
        .await
        .unwrap();
    assert!(matches!(
        &report.warnings[..],
        [Warning::ValidatorOverViolations {
            decision: OnViolations::Override,
            ..
        }]
    ));
    assert_eq!(
        server_options(&db)
            .await
            .get_str("validationLevel")
            .unwrap(),
        "strict"
    );
    assert_eq!(stored(&db).await, before);
}

// ---- the live audit ------------------------------------------------------------------------------

#[tokio::test]
async fn the_audit_finds_a_filling_array_an_oversized_document_a_drifted_copy_and_a_missing_index()
{
    use common::helpdesk::*;
    let db = mongo_schema_testkit::database("growth_audit").await;
    let schema = schema();
    schema.apply(&db).await.unwrap();
    let ana = customer("Ana");
    Customer::collection(&db).insert_one(&ana).await.unwrap();
    let mut tickets: Vec<Ticket> = (0..10).map(|i| ticket(&ana, None, i)).collect();
    // arrays near their bound: a history full at 5 of 5, and a product with 45 of 50 parts (90%)
    tickets[3].history = (0..5)
        .map(|i| StatusChange {
            status: Status::Open,
            at: DateTime::from_millis(i),
        })
        .collect();
    let parts: Vec<Part> = (0..45)
        .map(|i| Part {
            id: format!("p{i}"),
            name: format!("part {i}"),
        })
        .collect();
    Part::collection(&db).insert_many(&parts).await.unwrap();
    let bike = Product {
        id: "bike".into(),
        name: "Bike".into(),
        parts: parts.iter().map(Into::into).collect(),
    };
    Product::collection(&db).insert_one(&bike).await.unwrap();
    // an oversized document: a 200 KiB subject (no max_length on it)
    tickets[6].subject = "x".repeat(200 * 1024);
    Ticket::collection(&db).insert_many(&tickets).await.unwrap();
    // a drifted copy
    db.collection::<BsonDocument>("tickets")
        .update_one(
            doc! { "_id": tickets[1].id },
            doc! { "$set": { "customer.name": "Anna" } },
        )
        .await
        .unwrap();
    // a missing index and a collection the schema does not know
    db.collection::<BsonDocument>("tickets")
        .drop_index("customer._id_1__id_1")
        .await
        .unwrap();
    db.run_command(doc! { "create": "legacy_tickets" })
        .await
        .unwrap();

    let report = schema.audit_with_threshold(&db, 100 * 1024).await.unwrap();
    println!("{report}");
    let tickets_audit = report.collection("tickets").unwrap();
    assert_eq!(tickets_audit.documents, 10);
    assert_eq!(tickets_audit.largest[0].0, Bson::ObjectId(tickets[6].id));
    assert_eq!(tickets_audit.oversized.len(), 1);
    assert_eq!(tickets_audit.oversized[0].0, Bson::ObjectId(tickets[6].id));
    let history = tickets_audit
        .arrays_near_bound
        .iter()
        .find(|a| a.path == "history")
        .expect("history near its bound");
    assert_eq!((history.max, history.documents), (5, 1));
    assert_eq!(history.fullest[0], (Bson::ObjectId(tickets[3].id), 5));
    assert_eq!(tickets_audit.missing_indexes, ["customer._id_1__id_1"]);
    let parts_audit = &report
        .collection("productsHybrid")
        .unwrap()
        .arrays_near_bound;
    assert_eq!(parts_audit.len(), 1);
    assert_eq!(
        (
            parts_audit[0].path.as_str(),
            parts_audit[0].max,
            parts_audit[0].documents
        ),
        ("parts", 50, 1)
    );
    assert_eq!(parts_audit[0].fullest[0], (Bson::String("bike".into()), 45));
    assert_eq!(report.unknown_collections, ["legacy_tickets"]);
    assert_eq!(report.drift.drifted(), 1);
    assert!(!report.is_clean());
    // nothing was written by the audit
    assert_eq!(
        Ticket::collection(&db)
            .count_documents(doc! { "customer.name": "Anna" })
            .await
            .unwrap(),
        1
    );

    // a database that matches the schema audits clean
    let clean = mongo_schema_testkit::database("growth_audit_clean").await;
    schema.apply(&clean).await.unwrap();
    let report = schema.audit(&clean).await.unwrap();
    assert!(report.is_clean(), "{report}");
}
