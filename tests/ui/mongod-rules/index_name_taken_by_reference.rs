use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

// The reference needs `{ticket_id: 1}`, named `ticket_id_1`; no declared index starts with it.
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "messages")]
#[index(keys(at = -1), name = "ticket_id_1")]
pub struct Message {
    #[reference]
    pub ticket_id: Ref<Ticket>,
    pub at: DateTime,
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "tickets")]
pub struct Ticket {
    #[serde(rename = "_id")]
    pub id: ObjectId,
}

fn main() {}
