use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "events")]
#[serde(tag = "kind")]
pub enum Event {
    Login {
        #[serde(rename = "_id")]
        id: ObjectId,
        user: String,
    },
    Import {
        #[serde(rename = "_id")]
        id: String,
        rows: i64,
    },
}

fn main() {}
