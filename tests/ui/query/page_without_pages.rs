use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "tickets")]
#[query(name = "agent_queue", eq(team), sort(priority = -1), limit = 50)]
pub struct Ticket {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub team: String,
    pub priority: i32,
}

async fn second_page(db: &mongo_schema::mongodb::Database) {
    let first = Ticket::agent_queue(db, "billing").page().await;
}

fn main() {}
