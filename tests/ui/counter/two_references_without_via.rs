use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

/// A follow holds two references to `User`: which one the count follows is not known.
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "follows")]
pub struct Follow {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[reference]
    pub follower: Ref<User>,
    #[reference]
    pub followed: Ref<User>,
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "users")]
pub struct User {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[counter(of = Follow)]
    pub follower_count: i64,
}

fn main() {}
