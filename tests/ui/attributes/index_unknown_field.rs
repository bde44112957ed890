use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "tickets")]
#[index(keys(team = 1, state = 1))]
pub struct Ticket {
    pub team: String,
    pub status: String,
}

fn main() {}
