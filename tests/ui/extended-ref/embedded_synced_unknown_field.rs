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

// a copy kept in sync on an order line is checked against the source as at the root
#[derive(BsonSchema, Serialize, Deserialize)]
pub struct OrderLine {
    #[extended_ref(to = Product, fields = "name, price_cents", sync = "transactional")]
    pub product: OrderLineProduct,
    pub quantity: i32,
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "orders")]
pub struct Order {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[embed(max = 50)]
    pub lines: Vec<OrderLine>,
}

fn main() {}
