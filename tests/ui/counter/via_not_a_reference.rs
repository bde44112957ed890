use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "follows")]
pub struct Follow {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[reference]
    pub follower: Ref<User>,
    #[reference]
    pub followed: Ref<User>,
    pub note: String,
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "users")]
pub struct User {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[counter(of = Follow, via = note)]
    pub follower_count: i64,
}

fn main() {}
