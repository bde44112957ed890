use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

// mongod sorts an array by its smallest or largest element: not an order of the documents
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "tickets")]
#[query(name = "by_tags", eq(team), sort(tags = 1), limit = 50)]
pub struct Ticket {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub team: String,
    #[embed(max = 10)]
    pub tags: Vec<String>,
}

fn main() {}
