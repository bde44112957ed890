use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(BsonSchema, Serialize, Deserialize)]
pub struct FollowerPreview {
    pub follower_name: String,
}

impl From<&Follow> for FollowerPreview {
    fn from(follow: &Follow) -> Self {
        FollowerPreview { follower_name: follow.follower_name.clone() }
    }
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "follows")]
pub struct Follow {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[reference]
    pub follower: Ref<Person>,
    #[reference]
    pub followed: Ref<Person>,
    pub follower_name: String,
    pub at: DateTime,
}

// `via` names the child's reference to this type: `follower_name` is a string
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "people")]
pub struct Person {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[subset(of = Follow, via = follower_name, max = 1, sort = "-at")]
    pub newest_follower: Option<FollowerPreview>,
}

fn main() {}
