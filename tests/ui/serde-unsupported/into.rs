use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, BsonSchema, Serialize, Deserialize)]
#[serde(into = "String")]
pub struct Sku {
    pub vendor: String,
    pub code: String,
}

impl From<Sku> for String {
    fn from(sku: Sku) -> String {
        format!("{}-{}", sku.vendor, sku.code)
    }
}

fn main() {}
