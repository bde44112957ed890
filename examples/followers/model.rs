//! The models of seed 000's followers example, shared with the report tests.
#![allow(dead_code)]

use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "users")]
pub struct User {
    #[serde(rename = "_id")]
    pub id: String,
    pub name: String,
}

/// One follow. `followers: Vec<String>` on the user would be unbounded, and does not compile.
// two indexes on the same fields trip clippy's duplicated_attributes (rust-lang/rust-clippy#13238)
#[allow(clippy::duplicated_attributes)]
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "follows")]
#[index(keys(followed_id = 1, follower_id = 1), unique)]
#[index(keys(follower_id = 1, followed_id = 1))]
// seed 000: "who follows u1" and "whom does u1 follow", 50 at a time, each in its index's order
#[query(
    name = "followers_of",
    eq(followed_id),
    sort(follower_id = 1),
    limit = 50,
    index = "followedId_1_followerId_1"
)]
#[query(
    name = "followed_by",
    eq(follower_id),
    sort(followed_id = 1),
    limit = 50,
    index = "followerId_1_followedId_1"
)]
#[serde(rename_all = "camelCase")]
pub struct Follow {
    #[reference]
    pub followed_id: Ref<User>,
    #[reference]
    pub follower_id: Ref<User>,
}

/// The example's schema.
pub fn schema() -> Schema {
    Schema::new()
        .model::<User>()
        .model::<Follow>()
        .build()
        .expect("a consistent schema")
}
