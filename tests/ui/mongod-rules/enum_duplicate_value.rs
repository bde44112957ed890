use mongo_schema::prelude::*;
use serde::Serialize;

// Only `Serialize`: serde's `Deserialize` would add an "unreachable pattern" warning for the
// duplicate name after the error.
#[derive(BsonSchema, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Open,
    #[serde(rename = "open")]
    Reopened,
    Closed,
}

fn main() {}
