use mongo_schema::prelude::*;

// Every malformed value is reported once, on the value, and the options after it are still
// checked (`capped`, `limit`): no false "missing" error follows.
#[derive(Document)]
#[collection(name = 5, capped = true)]
#[index(keys(team = 1, priority = 2), name = "by_priority")]
#[index(keys(updated_at = 1), expire_after_secs = -5, unique = "yes")]
pub struct Ticket {
    pub team: String,
    pub priority: i32,
    pub updated_at: DateTime,
    #[embed(max = "ten", limit = 5)]
    pub tags: Vec<String>,
    #[schema(minimum = "zero")]
    pub score: i64,
}

fn main() {}
