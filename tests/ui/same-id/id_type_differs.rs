use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "products")]
pub struct Product {
    #[serde(rename = "_id")]
    pub id: String,
    pub name: String,
}

/// The spec sheet of a product, under the product's `_id`: a `String`, not an `i64`.
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "product_specs", same_id_as = Product)]
pub struct ProductSpec {
    #[serde(rename = "_id")]
    pub id: i64,
    pub sheet: String,
}

fn main() {}
