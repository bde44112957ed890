use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

// `name = "team_1"` is the name mongod derives for the unnamed index on `{team: 1}`.
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "tickets")]
#[index(keys(team = 1))]
#[index(keys(status = 1, team = 1), name = "team_1")]
pub struct Ticket {
    pub team: String,
    pub status: String,
}

fn main() {}
