use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

// the field is no point: rustc's error alone, not an index to declare on a string
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "places")]
#[query(name = "nearest", near(address), limit = 10)]
pub struct Place {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub address: String,
}

fn main() {}
