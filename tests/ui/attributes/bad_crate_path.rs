use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

// `crate` takes the path of the mongo-schema crate as a string
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "customers")]
#[schema(crate = "not a path")]
pub struct Customer {
    #[serde(rename = "_id")]
    pub id: ObjectId,
}

#[derive(BsonSchema, Serialize, Deserialize)]
#[schema(crate = ms)]
pub struct Address {
    pub city: String,
}

#[derive(BsonSchema, Serialize, Deserialize)]
#[schema(crate = "::mongo_schema", crate = "mongo_schema")]
pub struct Line {
    pub sku: String,
}

fn main() {}
