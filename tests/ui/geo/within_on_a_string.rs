use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

// `within` on a field that is no point: one error, at the field
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "venues")]
#[index(keys(slug = 1))]
#[query(name = "inside", within(slug), limit = 10)]
pub struct Venue {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub slug: String,
}

fn main() {}
