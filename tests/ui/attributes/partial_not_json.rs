use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "tickets")]
#[index(keys(status = 1), partial = "{status: 'open'}")]
pub struct Ticket {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub status: String,
}

fn main() {}
