use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(BsonSchema, Serialize, Deserialize)]
pub struct Line {
    pub sku: String,
    pub qty: i32,
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "products")]
#[index(keys(tags = 1, categories = 1))]
#[index(keys(tags = 1, "lines.sku" = 1))]
// one array: both keys under `lines`
#[index(keys("lines.sku" = 1, "lines.qty" = -1))]
pub struct Product {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[embed(max = 20)]
    pub tags: Vec<String>,
    #[embed(max = 5)]
    pub categories: Vec<String>,
    #[embed(max = 50)]
    pub lines: Vec<Line>,
}

fn main() {}
