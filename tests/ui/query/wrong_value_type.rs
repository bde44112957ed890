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

async fn queue(db: &mongodb::Database) {
    // `team` is a String: an integer is refused by the declared query's function...
    let _ = Ticket::agent_queue(db, &7).await;
    // ...and by the typed filter builder
    let _ = mongo_schema::query::Filter::<Ticket>::new().eq(field!(Ticket, priority), "high");
}

fn main() {}
