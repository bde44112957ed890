use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(BsonSchema, Serialize, Deserialize)]
pub struct Address {
    pub city: String,
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "customers")]
pub struct Customer {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[extended_ref(to = Address, fields = "city", sync = "frozen")]
    pub address: CustomerAddress,
}

fn main() {}
