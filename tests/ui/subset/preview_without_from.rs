use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(BsonSchema, Serialize, Deserialize)]
pub struct MessagePreview {
    pub preview: String,
    pub at: DateTime,
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
pub struct Ticket {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[subset(of = Message, max = 1, sort = "-at")]
    pub last_message: Option<MessagePreview>,
}

fn main() {}
