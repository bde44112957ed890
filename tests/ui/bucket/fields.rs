//! `#[bucket(...)]` names the fields of a bucket document: a `#[reference]` to the parent, a
//! bounded array of entries, a count and the first and last keys. One mistake a case.
use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "sensors")]
pub struct Sensor {
    #[serde(rename = "_id")]
    pub id: String,
}

#[derive(BsonSchema, Serialize, Deserialize)]
pub struct Reading {
    pub at: i64,
}

/// The fields of a right bucket of `Reading`s, after the derive and attributes the case writes.
macro_rules! reading_bucket {
    ($($head:tt)*) => {
        $($head)* {
            #[embed(max = 100)]
            pub readings: Vec<Reading>,
            #[reference]
            pub sensor_id: Ref<Sensor>,
            pub count: i64,
            pub first_at: i64,
            pub last_at: i64,
        }
    };
}

reading_bucket! {
    /// `key`, the stored sort key of an entry, is required.
    #[derive(Document, Serialize, Deserialize)]
    #[collection(name = "readings")]
    #[bucket(parent = sensor_id, entries = readings, count = count, first = first_at, last = last_at)]
    pub struct MissingKey
}

reading_bucket! {
    /// The options are `parent`, `entries`, `count`, `key`, `first` and `last`.
    #[derive(Document, Serialize, Deserialize)]
    #[collection(name = "readings")]
    #[bucket(parent = sensor_id, entries = readings, count = count, key = "at", first = first_at, last = last_at, size = 100)]
    pub struct UnknownOption
}

/// Each option names a stored field of the bucket (the message names the bucket type).
mod unknown_field {
    use super::*;

    reading_bucket! {
        #[derive(Document, Serialize, Deserialize)]
        #[collection(name = "readings")]
        #[bucket(parent = sensor, entries = readings, count = count, key = "at", first = first_at, last = last_at)]
        pub struct ReadingBucket
    }
}

reading_bucket! {
    /// A bucket is a collection of its own: `#[derive(Document)]`, not `BsonSchema`.
    #[derive(BsonSchema, Serialize, Deserialize)]
    #[bucket(parent = sensor_id, entries = readings, count = count, key = "at", first = first_at, last = last_at)]
    pub struct OnBsonSchema
}

/// `parent` is a `#[reference]` to the parent, not a plain id.
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "readings")]
#[bucket(parent = sensor_id, entries = readings, count = count, key = "at", first = first_at, last = last_at)]
pub struct ParentNotAReference {
    pub sensor_id: String,
    #[embed(max = 100)]
    pub readings: Vec<Reading>,
    pub count: i64,
    pub first_at: i64,
    pub last_at: i64,
}

/// `entries` is an `#[embed(max = N)]` array: a bucket whose array has no bound is the unbounded
/// array again (and the field is one).
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "readings")]
#[bucket(parent = sensor_id, entries = readings, count = count, key = "at", first = first_at, last = last_at)]
pub struct EntriesWithoutBound {
    pub count: i64,
    pub first_at: i64,
    pub last_at: i64,
    #[reference]
    pub sensor_id: Ref<Sensor>,
    #[schema(max_length = 3)]
    pub readings: Vec<String>,
}

/// `count` is an integer the library increments.
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "readings")]
#[bucket(parent = sensor_id, entries = readings, count = count, key = "at", first = first_at, last = last_at)]
pub struct CountNotANumber {
    #[reference]
    pub sensor_id: Ref<Sensor>,
    pub count: String,
    #[embed(max = 100)]
    pub readings: Vec<Reading>,
    pub first_at: i64,
    pub last_at: i64,
}

fn main() {}
