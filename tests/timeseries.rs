//! Time series collections on the real server: `readings` created by `apply` as a time series
//! collection with its options (read back with `listCollections`), before anything else
//! touches it; a declared query returning one sensor's readings of the last hour in time
//! order; `apply` refusing, with nothing written, where a plain collection of the name exists;
//! the options mongod can change planned as a `collMod`, the others reported; and the time
//! series rules of the fit.

mod common;

use common::first_batch;
use mongo_schema::bson::{doc, oid::ObjectId};
use mongo_schema::deploy::{Action, Warning};
use mongo_schema::mongodb;
use mongo_schema::prelude::*;
use mongo_schema::spec::Granularity;
use mongo_schema::Error;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(
    name = "readings",
    timeseries(time = at, meta = sensor, granularity = "minutes"),
    expire_after_secs = 604800
)]
#[query(name = "of_sensor", eq(sensor), range(at), sort(at = 1))]
pub struct Reading {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub at: DateTime,
    pub sensor: String,
    pub celsius: f64,
}

/// A plain collection beside it, to show that a refused apply writes nothing.
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "sensors")]
pub struct Sensor {
    #[serde(rename = "_id")]
    pub id: String,
    pub site: String,
}

fn schema() -> Schema {
    Schema::new()
        .model::<Reading>()
        .model::<Sensor>()
        .build()
        .expect("the readings schema is consistent")
}

async fn collection_names(db: &mongodb::Database) -> Vec<String> {
    let mut names = db.list_collection_names().await.unwrap();
    names.sort();
    names
}

#[tokio::test]
async fn readings_is_created_as_a_time_series_collection_with_its_options() {
    let db = mongo_schema_testkit::database("ts_create").await;
    let schema = schema();
    let report = schema.apply(&db).await.unwrap();
    assert!(
        report
            .to_string()
            .contains("create time series collection `readings`"),
        "{report}"
    );
    let listed = first_batch(
        &db,
        doc! { "listCollections": 1, "filter": { "name": "readings" } },
    )
    .await;
    let options = listed[0].get_document("options").unwrap();
    let ts = options.get_document("timeseries").unwrap();
    assert_eq!(ts.get_str("timeField").unwrap(), "at");
    assert_eq!(ts.get_str("metaField").unwrap(), "sensor");
    assert_eq!(ts.get_str("granularity").unwrap(), "minutes");
    let expiry = match options.get("expireAfterSeconds") {
        Some(mongo_schema::bson::Bson::Int64(n)) => *n,
        Some(mongo_schema::bson::Bson::Int32(n)) => i64::from(*n),
        other => panic!("expireAfterSeconds: {other:?}"),
    };
    assert_eq!(expiry, 604_800);
    // no validator was sent: mongod refuses one on a time series collection
    assert!(!options.contains_key("validator"), "{options}");
    // mongod's `{ meta: 1, time: 1 }`, declared too so that every server has it
    let indexes = first_batch(&db, doc! { "listIndexes": "readings" }).await;
    assert!(
        indexes
            .iter()
            .any(|i| i.get_document("key") == Ok(&doc! { "sensor": 1, "at": 1 })),
        "{indexes:?}"
    );
    // a second apply writes nothing
    let again = schema.apply(&db).await.unwrap();
    assert!(again.is_noop(), "{again}");
}

#[tokio::test]
async fn one_sensors_readings_of_the_last_hour_come_in_time_order() {
    let db = mongo_schema_testkit::database("ts_query").await;
    schema().apply(&db).await.unwrap();
    let now = DateTime::now().timestamp_millis();
    let minute = 60_000;
    // three hours of two sensors, every 7 minutes, inserted out of time order
    let mut readings: Vec<Reading> = (0..26)
        .flat_map(|i| {
            ["s1", "s2"].map(|sensor| Reading {
                id: ObjectId::new(),
                at: DateTime::from_millis(now - i * 7 * minute),
                sensor: sensor.to_owned(),
                celsius: 20.0 + i as f64 / 10.0,
            })
        })
        .collect();
    readings.reverse();
    readings.swap(3, 40);
    Reading::collection(&db)
        .insert_many(&readings)
        .await
        .unwrap();
    let hour_ago = DateTime::from_millis(now - 60 * minute);
    let mut expected: Vec<&Reading> = readings
        .iter()
        .filter(|r| r.sensor == "s1" && r.at >= hour_ago)
        .collect();
    expected.sort_by_key(|r| r.at);
    let expected: Vec<ObjectId> = expected.iter().map(|r| r.id).collect();
    assert!(expected.len() >= 8, "{}", expected.len());
    let found: Vec<ObjectId> = Reading::of_sensor(&db, "s1", hour_ago..)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(found, expected, "one sensor's last hour, oldest first");
}

#[tokio::test]
async fn a_plain_collection_of_the_name_is_refused_and_nothing_is_written() {
    let db = mongo_schema_testkit::database("ts_refused").await;
    db.create_collection("readings").await.unwrap();
    let before = collection_names(&db).await;
    let error = schema().apply(&db).await.unwrap_err();
    let Error::CannotApply {
        collection, reason, ..
    } = &error
    else {
        panic!("{error:?}")
    };
    assert_eq!(collection, "readings");
    // display-text: the refusal tells the operator why
    assert!(reason.contains("cannot turn into one"), "{error}");
    let said = error.to_string();
    // display-text: and that nothing was written
    assert!(said.contains("apply wrote nothing"), "{error}");
    // nothing written: not the other collection, not the version record
    assert_eq!(collection_names(&db).await, before);
    let indexes = first_batch(&db, doc! { "listIndexes": "readings" }).await;
    assert_eq!(indexes.len(), 1, "only `_id_`: {indexes:?}");
    // `plan` reports it as not as declared
    let plan = schema().plan(&db).await.unwrap();
    assert!(plan
        .warnings
        .iter()
        .any(|w| matches!(w, Warning::NotTimeSeries { collection } if collection == "readings")));
    assert!(
        // display-text: `missing` lists what is off the server for the operator
        plan.missing.iter().any(|m| m.contains("readings")),
        "{plan}"
    );
    // display-text: the plan predicts the refusal, not a `partial` record apply never writes
    let shown = plan.to_string();
    assert!(
        shown.contains("apply would refuse and write nothing") && !shown.contains("partial"),
        "{shown}"
    );
}

#[tokio::test]
async fn what_collmod_can_change_is_planned_and_the_rest_reported() {
    let db = mongo_schema_testkit::database("ts_diff").await;
    db.run_command(doc! {
        "create": "readings",
        "timeseries": { "timeField": "at", "metaField": "sensor", "granularity": "seconds" },
        "expireAfterSeconds": 3600_i64,
    })
    .await
    .unwrap();
    let plan = schema().plan(&db).await.unwrap();
    let modify = plan
        .actions
        .iter()
        .find(|a| matches!(a, Action::ModifyTimeSeries { .. }))
        .unwrap_or_else(|| panic!("{plan}"));
    let Action::ModifyTimeSeries {
        granularity,
        expire_after_secs,
        ..
    } = modify
    else {
        unreachable!()
    };
    assert_eq!(*granularity, Some(Granularity::Minutes));
    assert_eq!(*expire_after_secs, Some(Some(604_800)));
    assert!(
        modify
            .to_string()
            .contains("granularity seconds -> minutes; expireAfterSeconds 3600 s -> 604800 s"),
        "{modify}"
    );
    assert!(
        !plan.actions.iter().any(
            |a| matches!(a, Action::UpdateValidator { collection, .. } if collection == "readings")
        ),
        "no validator for a time series collection: {plan}"
    );
    // a granularity above the declared one cannot be lowered, nor a meta field changed
    let db = mongo_schema_testkit::database("ts_diff_hours").await;
    db.run_command(doc! {
        "create": "readings",
        "timeseries": { "timeField": "at", "metaField": "site", "granularity": "hours" },
        "expireAfterSeconds": 604_800_i64,
    })
    .await
    .unwrap();
    let plan = schema().plan(&db).await.unwrap();
    assert!(
        !plan
            .actions
            .iter()
            .any(|a| matches!(a, Action::ModifyTimeSeries { .. })),
        "{plan}"
    );
    let differs = plan
        .warnings
        .iter()
        .find(|w| matches!(w, Warning::TimeSeriesDiffers { .. }))
        .unwrap_or_else(|| panic!("{plan}"))
        .to_string();
    assert!(
        differs.contains("meta field `site` on the server, `sensor` declared")
            && differs.contains("mongod raises a granularity, never lowers it"),
        "{differs}"
    );
}

#[test]
fn the_fit_follows_mongods_time_series_rules() {
    let schema = schema();
    let readings = schema.collection("readings").unwrap();
    // the query is served by mongod's own `{ sensor: 1, at: 1 }`: no index derived
    let fit = readings.queries[0].fit.clone().unwrap();
    assert_eq!(fit.index.as_deref(), Some("sensor_1_at_1"), "{fit:?}");
    assert!(!fit.derived);
    assert_eq!(readings.indexes.len(), 1, "{:?}", readings.indexes);
    // an equality on a measurement is bounded by bucket, never a point: an index with the
    // measurement before the time gives no order, `{ sensor, at }` serves the query
    let spec = mongo_schema::spec::CollectionSpec::new("readings", Reading::validator())
        .timeseries(mongo_schema::spec::TimeSeries::new("at").meta("sensor"))
        .index(
            mongo_schema::spec::IndexSpec::new(doc! { "sensor": 1, "celsius": 1, "at": 1 })
                .name("by_celsius"),
        )
        .query(
            mongo_schema::query::QuerySpec::new("hot")
                .eq("sensor")
                .eq("celsius")
                .sort("at", 1),
        );
    let schema = Schema::new().collection(spec.clone()).build().unwrap();
    let hot = schema.collection("readings").unwrap().queries[0]
        .fit
        .clone()
        .unwrap();
    assert_eq!(hot.index.as_deref(), Some("sensor_1_at_1"), "{hot:?}");
    // control: pinned to the index with the measurement first, the build says why not
    let pinned = spec.query(
        mongo_schema::query::QuerySpec::new("hot_pinned")
            .eq("sensor")
            .eq("celsius")
            .sort("at", 1)
            .index("by_celsius"),
    );
    let error = Schema::new().collection(pinned).build().unwrap_err();
    assert!(
        // display-text: the build error names the key and the rule for the reader
        error.to_string().contains(
            "key `celsius` of index `by_celsius` is a measurement of a time series collection"
        ),
        "{error}"
    );
    // and no query is served by an `_id` index, which a time series collection has not
    let spec = mongo_schema::spec::CollectionSpec::new("readings", Reading::validator())
        .timeseries(mongo_schema::spec::TimeSeries::new("at").meta("sensor"))
        .query(mongo_schema::query::QuerySpec::new("by_id").eq("_id"));
    let schema = Schema::new().collection(spec).build().unwrap();
    let by_id = schema.collection("readings").unwrap().queries[0]
        .fit
        .clone()
        .unwrap();
    assert_ne!(by_id.index.as_deref(), Some("_id_"), "{by_id:?}");
}
