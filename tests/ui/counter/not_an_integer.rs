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
    #[counter(of = Like)]
    pub like_count: String,
}

fn main() {}
