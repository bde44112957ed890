use mongo_schema::prelude::*;
use serde::Serialize;

// Only `Serialize`: serde's `Deserialize` would add an "unreachable pattern" warning for the
// duplicate name after the error.
#[derive(Document, Serialize)]
#[collection(name = "customers")]
#[serde(rename_all = "camelCase")]
pub struct Customer {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub display_name: String,
    #[serde(rename = "displayName")]
    pub name: String,
}

fn main() {}
