use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "parts")]
pub struct Part {
    #[serde(rename = "_id")]
    pub id: String,
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "products")]
pub struct Product {
    #[serde(rename = "_id")]
    pub id: String,
    #[reference]
    pub part_ids: Vec<Ref<Part>>,
}

fn main() {}
