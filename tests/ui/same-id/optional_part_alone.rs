use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "products")]
pub struct Product {
    #[serde(rename = "_id")]
    pub id: String,
    pub name: String,
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "product_specs", optional_part)]
pub struct ProductSpec {
    #[serde(rename = "_id")]
    pub id: String,
    pub sheet: String,
}

fn main() {}
