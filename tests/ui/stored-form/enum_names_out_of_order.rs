use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

// stored as "booked", "checked_in", "done", "cancelled": "cancelled" sorts before "checked_in"
// as text, so a range `Booked..Done` would also match cancelled visits
#[derive(BsonSchema, Serialize, Deserialize, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Booked,
    CheckedIn,
    Done,
    Cancelled,
}

// stored names in declaration order: a range or sort on it is the Rust order
#[derive(BsonSchema, Serialize, Deserialize, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    A1Low,
    B2Normal,
    C3High,
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "visits")]
#[query(name = "by_status", range(status))]
#[query(name = "by_priority", range(priority), sort(priority = -1))]
pub struct Visit {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub status: Status,
    pub priority: Priority,
}

fn main() {}
