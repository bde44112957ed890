use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

// mongod refuses a measurement whose time field is not a BSON date
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "readings", timeseries(time = at, meta = sensor))]
pub struct Reading {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub at: String,
    pub sensor: String,
}

fn main() {}
