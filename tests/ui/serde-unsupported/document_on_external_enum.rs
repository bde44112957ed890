use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "events")]
pub enum Event {
    Login {
        #[serde(rename = "_id")]
        id: ObjectId,
        user: String,
    },
    Logout {
        #[serde(rename = "_id")]
        id: ObjectId,
    },
}

fn main() {}
