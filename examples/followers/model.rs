//! The models of seed 000's followers example, shared with the report tests.
#![allow(dead_code)]

use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "users")]
#[serde(rename_all = "camelCase")]
pub struct User {
    #[serde(rename = "_id")]
    pub id: String,
    pub name: String,
    /// How many follow this user: the count alone, kept with each follow and unfollow. A follow
    /// holds two references to `User`; `via` says the count follows `followed_id`.
    #[counter(of = Follow, via = followed_id)]
    pub follower_count: i64,
    /// The three newest followers, for the profile header (seed 000: "introduce a preview only
    /// when a measured access pattern justifies it").
    #[subset(of = Follow, via = followed_id, max = 3, sort = "-at")]
    pub newest_followers: Vec<FollowerPreview>,
}

/// A follower as the profile header shows it.
#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct FollowerPreview {
    pub follower_id: String,
    pub at: DateTime,
}

impl From<&Follow> for FollowerPreview {
    fn from(follow: &Follow) -> Self {
        FollowerPreview {
            follower_id: follow.follower_id.id().clone(),
            at: follow.at,
        }
    }
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
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[reference]
    pub followed_id: Ref<User>,
    #[reference]
    pub follower_id: Ref<User>,
    /// When the follow began: the order of the newest followers.
    pub at: DateTime,
}

/// The example's schema.
pub fn schema() -> Schema {
    Schema::new()
        .model::<User>()
        .model::<Follow>()
        .build()
        .expect("a consistent schema")
}
