use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "tickets")]
pub struct Ticket {
    #[serde(rename = "_id")]
    pub id: ObjectId,
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "messages")]
pub struct Message {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[reference(target = Ticket)]
    pub ticket_id: Ref<Ticket>,
}

fn main() {}
