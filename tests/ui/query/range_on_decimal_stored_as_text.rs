use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

// serde stores a `rust_decimal::Decimal` as text: one error, at the field, saying so and naming
// the helper that stores it as a BSON decimal
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "products")]
#[query(name = "priced_between", eq(tag), range(price), limit = 20)]
pub struct Product {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub tag: String,
    pub price: rust_decimal::Decimal,
}

// the same in an index key
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "offers")]
#[index(keys(price = 1))]
pub struct Offer {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub price: Option<rust_decimal::Decimal>,
}

fn main() {}
