use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "events")]
#[index(keys(tenant = "hashed", device = "hashed", at = 1))]
pub struct Event {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub tenant: String,
    pub device: String,
    pub at: DateTime,
}

fn main() {}
