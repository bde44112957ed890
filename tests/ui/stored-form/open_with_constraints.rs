use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

// `open` leaves the value unchecked by the validator: a constraint or `not_null` beside it would
// check nothing
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "articles")]
pub struct Article {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[schema(open, max_length = 20)]
    pub kicker: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(open, not_null)]
    pub word_count: Option<i32>,
}

fn main() {}
