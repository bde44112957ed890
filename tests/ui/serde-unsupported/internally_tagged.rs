use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(BsonSchema, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum Channel {
    Email,
    Phone,
    Chat,
}

fn main() {}
