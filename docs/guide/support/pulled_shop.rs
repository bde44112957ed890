// What the guide's excerpt of a pulled module (`docs/guide/pull.md`) leaves out: the other
// collections and types of the shop of `mongo-schema-cli/tests/pull_shop.rs`, reduced to what the excerpt's
// `Order` and `schema()` name. Included by that doc test (`include!`: no inner attributes or
// `//!` comments here).

use mongo_schema::bson::Document as BsonDocument;
use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[collection(name = "customers")]
pub struct Customer {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[collection(name = "products")]
pub struct Product {
    #[serde(rename = "_id")]
    pub id: ObjectId,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[collection(name = "reviews")]
pub struct Review {
    #[serde(rename = "_id")]
    pub id: ObjectId,
}

#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone)]
pub struct OrderItem {
    #[serde(rename = "productId")]
    #[reference]
    pub product_id: Ref<Product>,
    pub qty: i32,
}

#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone)]
#[serde(rename_all = "snake_case")]
pub enum OrderStatus {
    Placed,
    Paid,
    Shipped,
    Delivered,
}

#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum OrderPayment {
    Card { last4: String },
    Cod {},
    Paypal { email: String },
}

/// Stored as `int` or `double`: the documents hold each of these kinds.
pub struct IntOrDouble;

impl BsonSchema for IntOrDouble {
    fn bson_schema() -> BsonDocument {
        doc! { "bsonType": ["int", "double"] }
    }
}
