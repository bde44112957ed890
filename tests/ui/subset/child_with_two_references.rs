use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(BsonSchema, Serialize, Deserialize)]
pub struct MessagePreview {
    pub body: String,
    pub at: DateTime,
}

impl From<&Message> for MessagePreview {
    fn from(message: &Message) -> Self {
        MessagePreview { body: message.body.clone(), at: message.at }
    }
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "messages")]
pub struct Message {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[reference]
    pub ticket_id: Ref<Ticket>,
    #[reference]
    pub merged_into: Option<Ref<Ticket>>,
    pub body: String,
    pub status: String,
    pub at: DateTime,
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "tickets")]
pub struct Ticket {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[subset(of = Message, max = 1, sort = "-at", count = "message_count")]
    pub last_message: Option<MessagePreview>,
    pub message_count: i64,
}

fn main() {}
