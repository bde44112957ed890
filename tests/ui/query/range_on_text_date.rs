use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

// serde stores chrono's `DateTime<Utc>` as RFC 3339 text with a variable number of fractional
// digits: "…:00.5Z" sorts after "…:00.25Z" but also after "…:01Z"
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "orders")]
#[query(name = "placed_between", eq(status), range(placed_at), limit = 50)]
pub struct Order {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub status: String,
    pub placed_at: chrono::DateTime<chrono::Utc>,
}

fn main() {}
