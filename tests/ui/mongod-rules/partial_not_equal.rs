use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "tickets")]
#[index(keys(team = 1), partial = "{\"status\": {\"$ne\": \"closed\"}}")]
pub struct Ticket {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub team: String,
    pub status: String,
}

fn main() {}
