use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "likes")]
pub struct Like {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[reference]
    pub post_id: Ref<Post>,
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "posts")]
pub struct Post {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    // the likes of a post are unbounded: an i32 could overflow
    #[counter(of = Like)]
    pub like_count: i32,
}

fn main() {}
