use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "messages", shard_key(ticket_id = 1, at = 1))]
#[index(keys(client_message_id = 1), unique, name = "dedup")]
pub struct Message {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub ticket_id: ObjectId,
    pub client_message_id: String,
    pub body: String,
    pub at: DateTime,
}

fn main() {}
