use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(BsonSchema, Serialize, Deserialize)]
pub struct Address {
    #[serde(rename = "geo.lat")]
    pub lat: f64,
    #[serde(rename = "$ref")]
    pub reference: String,
    #[serde(rename(serialize = "zip\0code", deserialize = "zip"))]
    pub zip: String,
}

fn main() {}
