use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

// `#[schema(stored_as = String)]` keeps the count as text: "10" sorts before "9"
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "products")]
#[query(name = "by_stock", eq(tag), sort(stock = -1), limit = 20)]
pub struct Product {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub tag: String,
    #[schema(stored_as = String)]
    #[serde(with = "stock_as_text")]
    pub stock: u64,
}

mod stock_as_text {
    pub fn serialize<S: serde::Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&v.to_string())
    }
    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        let text = <String as serde::Deserialize>::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

fn main() {}
