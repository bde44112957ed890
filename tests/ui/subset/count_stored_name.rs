use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(BsonSchema, Serialize, Deserialize)]
pub struct MessagePreview {
    #[schema(max_length = 40)]
    pub preview: String,
    pub at: DateTime,
}

impl From<&Message> for MessagePreview {
    fn from(message: &Message) -> Self {
        MessagePreview { preview: message.body.chars().take(40).collect(), at: message.at }
    }
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "messages")]
pub struct Message {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[reference]
    pub ticket_id: Ref<Ticket>,
    pub body: String,
    pub at: DateTime,
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "tickets")]
#[serde(rename_all = "camelCase")]
pub struct Ticket {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[subset(of = Message, max = 1, sort = "-at", count = "messageCount")]
    // the stored name: `count` takes the Rust name, `message_count`
    pub last_message: Option<MessagePreview>,
    pub message_count: i64,
}

fn main() {}
