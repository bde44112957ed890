use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(BsonSchema, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Open,
    Closed,
}

// a projection row is a struct of the fields it reads, not an enum
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "tickets")]
#[query(name = "by_team", eq(team), limit = 50, project = Status)]
pub struct Ticket {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub team: String,
    pub status: Status,
}

fn main() {}
