use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "tickets")]
#[index(keys(team = 1, status = 1), background)]
pub struct Ticket {
    pub team: String,
    pub status: String,
}

fn main() {}
