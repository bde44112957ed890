use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "sessions")]
#[index(keys(token = 1), unique, sparse, partial = "{\"revoked\": false}")]
pub struct Session {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub token: String,
    pub revoked: bool,
}

fn main() {}
