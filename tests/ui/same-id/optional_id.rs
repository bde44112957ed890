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
#[collection(name = "product_specs", same_id_as = Product)]
pub struct ProductSpec {
    #[serde(rename = "_id", skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub sheet: String,
}

fn main() {}
