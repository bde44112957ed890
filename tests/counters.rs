//! Counts declared `i32` or `i64` keep their BSON type through every library write: the `$inc`
//! of a subset's `add`, `add_then_update` and `rebuild`, and of a bucket's `append`, so the
//! validator (`bsonType: "int"` or `"long"`) accepts every one of them.

mod common;

use mongo_schema::bson::{doc, Bson, Document as BsonDocument};
use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "boards")]
pub struct Board {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[subset(of = Pin, max = 2, sort = "-at", count = "pins")]
    pub newest: Vec<PinPreview>,
    pub pins: i32,
    #[subset(of = Pin, max = 1, sort = "-at", count = "pins_long")]
    pub last: Option<PinPreview>,
    pub pins_long: i64,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "pins")]
#[index(keys(board_id = 1, at = -1))]
pub struct Pin {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[reference]
    pub board_id: Ref<Board>,
    pub at: i64,
}

#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct PinPreview {
    pub at: i64,
}

impl From<&Pin> for PinPreview {
    fn from(pin: &Pin) -> Self {
        PinPreview { at: pin.at }
    }
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "meters")]
pub struct Meter {
    #[serde(rename = "_id")]
    pub id: i64,
}

#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Tick {
    pub at: i64,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "ticks32")]
#[bucket(parent = meter_id, entries = ticks, count = count, key = "at", first = first_at, last = last_at)]
pub struct Ticks32 {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[reference]
    pub meter_id: Ref<Meter>,
    #[embed(max = 5)]
    pub ticks: Vec<Tick>,
    pub count: i32,
    pub first_at: i64,
    pub last_at: i64,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "ticks64")]
#[bucket(parent = meter_id, entries = ticks, count = count, key = "at", first = first_at, last = last_at)]
pub struct Ticks64 {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[reference]
    pub meter_id: Ref<Meter>,
    #[embed(max = 5)]
    pub ticks: Vec<Tick>,
    pub count: i64,
    pub first_at: i64,
    pub last_at: i64,
}

/// The BSON type name of each value of `field` in `collection`.
async fn types_of(db: &mongodb::Database, collection: &str, field: &str) -> Vec<&'static str> {
    common::all(db.collection::<BsonDocument>(collection).find(doc! {}))
        .await
        .iter()
        .map(|d| match d.get(field) {
            Some(Bson::Int32(_)) => "int",
            Some(Bson::Int64(_)) => "long",
            Some(Bson::Double(_)) => "double",
            _ => "other",
        })
        .collect()
}

#[tokio::test]
async fn subset_counts_keep_their_declared_integer_type() {
    let db = mongo_schema_testkit::database("counters_subset").await;
    let schema = Schema::new()
        .model::<Board>()
        .model::<Pin>()
        .build()
        .unwrap();
    schema.apply(&db).await.unwrap();
    let validator = Board::validator();
    println!("{validator}");
    let board = Board {
        id: ObjectId::new(),
        newest: vec![],
        pins: 0,
        last: None,
        pins_long: 0,
    };
    Board::collection(&db).insert_one(&board).await.unwrap();
    for at in 0..12 {
        let pin = Pin {
            id: ObjectId::new(),
            board_id: board.to_ref(),
            at,
        };
        // both subsets of one child in one transaction; each `$inc` passes the validator
        Board::NEWEST
            .add_with(&db, &pin, &[&Board::LAST])
            .await
            .unwrap_or_else(|e| panic!("add #{at}: {e}"));
    }
    // an older child: the subset of one keeps its preview and only counts
    let old = Pin {
        id: ObjectId::new(),
        board_id: board.to_ref(),
        at: -1,
    };
    Board::LAST.add_then_update(&db, &old).await.unwrap();
    assert_eq!(types_of(&db, "boards", "pins").await, ["int"]);
    assert_eq!(types_of(&db, "boards", "pins_long").await, ["long"]);
    let stored = Board::collection(&db)
        .find_one(doc! { "_id": board.id })
        .await
        .unwrap()
        .unwrap();
    assert_eq!((stored.pins, stored.pins_long), (12, 13));
    assert_eq!(stored.last.unwrap().at, 11);
    // the rebuilt counts too
    Board::NEWEST.rebuild(&db, &board.to_ref()).await.unwrap();
    Board::LAST.rebuild(&db, &board.to_ref()).await.unwrap();
    assert_eq!(types_of(&db, "boards", "pins").await, ["int"]);
    assert_eq!(types_of(&db, "boards", "pins_long").await, ["long"]);
    let stored = Board::collection(&db)
        .find_one(doc! { "_id": board.id })
        .await
        .unwrap()
        .unwrap();
    assert_eq!((stored.pins, stored.pins_long), (13, 13));
}

#[tokio::test]
async fn bucket_counts_keep_their_declared_integer_type() {
    // command monitoring: an append is one upsert
    let (client, log) = mongo_schema_testkit::monitored_client().await;
    let plain = mongo_schema_testkit::database("counters_bucket").await;
    let db = client.database(plain.name());
    let schema = Schema::new()
        .model::<Meter>()
        .model::<Ticks32>()
        .model::<Ticks64>()
        .build()
        .unwrap();
    schema.apply(&db).await.unwrap();
    let meter = Meter { id: 7 };
    Meter::collection(&db).insert_one(&meter).await.unwrap();
    for at in 0..12 {
        log.clear();
        Ticks32::BUCKET
            .append(&db, &meter.to_ref(), &Tick { at })
            .await
            .unwrap_or_else(|e| panic!("append #{at} to the i32 bucket: {e}"));
        assert_eq!(log.names(), ["update"], "Bucket::append is one command");
        Ticks64::BUCKET
            .append(&db, &meter.to_ref(), &Tick { at })
            .await
            .unwrap_or_else(|e| panic!("append #{at} to the i64 bucket: {e}"));
    }
    // the append's filter (parent, count below the bound) is served by the bucket's
    // `{ parent, count }` index; shown with a find of the same filter, since SecantusDB explains
    // every update as a COLLSCAN (SPEC 10)
    let (filter, _) = Ticks64::BUCKET
        .append_update(Bson::Int64(meter.id), &Tick { at: 99 })
        .unwrap();
    let summary = mongo_schema::explain(&db, doc! { "find": "ticks64", "filter": filter })
        .await
        .unwrap();
    assert_eq!(summary.indexes, ["meter_id_1_count_1"], "{summary}");
    assert_eq!(types_of(&db, "ticks32", "count").await, ["int"; 3]);
    assert_eq!(types_of(&db, "ticks64", "count").await, ["long"; 3]);
    let read = Ticks32::BUCKET
        .entries(&db, &meter.to_ref())
        .limit(50)
        .await
        .unwrap();
    assert_eq!(read.items.len(), 12);
}
