use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "sessions")]
#[index(keys(created_at = 1), expire_after_secs = 4000000000)]
pub struct Session {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub created_at: DateTime,
}

fn main() {}
