use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(BsonSchema, Serialize, Deserialize)]
pub struct Revision<T> {
    pub number: i32,
    pub value: T,
}

// The generic struct is fine; this instantiation stores an unbounded array (type-level check).
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "products")]
pub struct Product {
    #[serde(rename = "_id")]
    pub id: String,
    pub current_tags: Revision<Vec<String>>,
}

fn main() {}
