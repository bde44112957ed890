use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "tickets")]
#[query(name = "agent_queue", eq(tema), sort(priority = -1), limit = 50)]
pub struct Ticket {
    pub team: String,
    pub priority: i32,
}

fn main() {}
