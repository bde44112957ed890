use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(BsonSchema, Serialize, Deserialize)]
#[collection(name = "attachments")]
pub struct Attachment {
    pub file_name: String,
    pub size: i64,
}

fn main() {}
