use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

// serde stores a `rust_decimal::Decimal` as a string: "103.99" sorts before "6.99"
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "products")]
#[query(name = "cheapest", eq(tag), sort(price = 1), limit = 20)]
pub struct Product {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub tag: String,
    pub price: rust_decimal::Decimal,
}

fn main() {}
