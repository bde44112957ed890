use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "orders")]
#[index(keys(status = 1, placed_at = -1, priority = -1), name = "by_placed")]
#[query(name = "urgent", eq(status), sort(priority = -1), limit = 20, index = "by_placed")]
pub struct Order {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub status: String,
    pub placed_at: DateTime,
    pub priority: i32,
}

fn main() {}
