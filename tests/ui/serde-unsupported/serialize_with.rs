use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize, Serializer};

fn cents_as_string<S: Serializer>(cents: &i64, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&format!("{}.{:02}", cents / 100, cents % 100))
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "products")]
pub struct Product {
    #[serde(rename = "_id")]
    pub id: String,
    #[serde(serialize_with = "cents_as_string")]
    pub price_cents: i64,
}

fn main() {}
