use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(BsonSchema, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Priority {
    Low,
    Normal,
    Urgent,
}

fn main() {}
