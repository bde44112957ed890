use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

// what mongod refuses on a time series collection, each at its token
#[derive(Document, Serialize, Deserialize)]
#[collection(
    name = "readings",
    timeseries(time = at, meta = sensor, granularity = "days"),
    validation_level = "moderate"
)]
#[index(keys(sensor = 1, at = -1), unique)]
#[index(keys(celsius = "hashed"))]
#[index(keys(at = 1), expire_after_secs = 3600)]
pub struct Reading {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub at: Option<DateTime>,
    pub sensor: String,
    pub celsius: f64,
}

// `expire_after_secs` on a plain collection
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "events", expire_after_secs = 60)]
pub struct Event {
    #[serde(rename = "_id")]
    pub id: ObjectId,
}

fn main() {}
