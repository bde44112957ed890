use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "tickets")]
pub struct Ticket {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    // `max` misspelt: one error, at `maxx`, not also "needs `max`"
    #[embed(maxx = 8)]
    pub tags: Vec<String>,
}

fn main() {}
