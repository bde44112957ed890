use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

// Every mistake of a type is reported in the same compile, not only the first.
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "tickets", validation_action = "reject", capped = true)]
#[index(keys(team = 1, state = 1), sparce)]
pub struct Ticket {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub team: String,
    pub status: String,
    #[embed(max = 10, max = 20)]
    pub tags: Vec<String>,
    pub watchers: Vec<ObjectId>,
    #[schema(maxlength = 200)]
    pub subject: String,
}

fn main() {}
