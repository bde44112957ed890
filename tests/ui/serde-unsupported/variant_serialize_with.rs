use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize, Serializer};

fn as_text<S: Serializer>(value: &i64, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&value.to_string())
}

#[derive(BsonSchema, Serialize, Deserialize)]
pub enum Amount {
    #[serde(serialize_with = "as_text")]
    Exact(i64),
    Unknown,
}

fn main() {}
