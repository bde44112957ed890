use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

// The nested value's own derive catches its unbounded array, even though the parent bounds
// how many of them it holds.
#[derive(BsonSchema, Serialize, Deserialize)]
pub struct Part {
    pub sku: String,
    pub suppliers: Vec<String>,
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "products")]
pub struct Product {
    #[serde(rename = "_id")]
    pub id: String,
    #[embed(max = 50)]
    pub parts: Vec<Part>,
}

fn main() {}
