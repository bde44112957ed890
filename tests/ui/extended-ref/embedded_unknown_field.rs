use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "products")]
pub struct Product {
    #[serde(rename = "_id")]
    pub id: String,
    pub title: String, // renamed from `name`
    pub price_cents: i64,
}

// the snapshot on an order line is checked against the source as at the root
#[derive(BsonSchema, Serialize, Deserialize)]
pub struct OrderLine {
    #[extended_ref(to = Product, fields = "name, price_cents", sync = "frozen")]
    pub product: OrderLineProduct,
    pub quantity: i32,
}

fn main() {}
