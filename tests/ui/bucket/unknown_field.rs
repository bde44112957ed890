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

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "readings")]
#[bucket(parent = sensor, entries = readings, count = count, key = "at", first = first_at, last = last_at)]
pub struct ReadingBucket {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[reference]
    pub sensor_id: Ref<Sensor>,
    #[embed(max = 100)]
    pub readings: Vec<Reading>,
    pub count: i64,
    pub first_at: i64,
    pub last_at: i64,
}

fn main() {}
