use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "sessions")]
#[index(keys(user_id = 1, created_at = 1), expire_after_secs = 3600)]
pub struct Session {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub user_id: ObjectId,
    pub created_at: DateTime,
}

fn main() {}
