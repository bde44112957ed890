use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(BsonSchema, Serialize, Deserialize)]
#[index(keys(file_name = 1))]
pub struct Attachment {
    pub file_name: String,
    pub size: i64,
}

fn main() {}
