use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "messages", shard_key(ticket = 1, at = 1))]
pub struct Message {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub ticket_id: ObjectId,
    pub body: String,
    pub at: DateTime,
}

fn main() {}
