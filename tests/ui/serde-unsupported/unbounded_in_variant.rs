use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(BsonSchema, Serialize, Deserialize)]
#[serde(tag = "status")]
pub enum Order {
    Open { lines: Vec<String> },
    Closed,
}

fn main() {}
