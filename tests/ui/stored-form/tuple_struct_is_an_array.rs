use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

// serde stores a tuple struct as an array, `[3, 14]`: mongod sorts an array by its smallest
// element and matches a range on any element, so `(3, 14)..(3, 20)` is not what it would mean
#[derive(BsonSchema, Serialize, Deserialize, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version(pub u32, pub u32);

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "releases")]
#[query(name = "since", range(version))]
pub struct Release {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub version: Version,
}

fn main() {}
