use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

// The operators inside `$and` and `$or` are checked too; `$in`, `$gte` and `$exists: true` pass.
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "tickets")]
#[index(
    keys(team = 1),
    partial = r#"{"$and": [{"status": {"$in": ["open", "pending"]}}, {"$or": [{"priority": {"$gte": 2}}, {"assignee": {"$exists": false}}]}]}"#
)]
#[index(keys(priority = 1), partial = r#"{"assignee": {"$exists": true}, "opened": {"$gt": {"$date": "2024-01-01T00:00:00Z"}}}"#)]
pub struct Ticket {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub team: String,
    pub status: String,
    pub priority: i32,
    pub assignee: Option<String>,
    pub opened: DateTime,
}

fn main() {}
