use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

// `near` reads a GeoJSON point, not a string
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "places")]
#[index(keys(address = "2dsphere"))]
#[query(name = "nearest", near(address))]
pub struct Place {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub address: String,
}

fn main() {}
