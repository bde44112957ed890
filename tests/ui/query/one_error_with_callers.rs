use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

// one mistake in the model (an unbounded array), one error: the declared query's function is
// still emitted, so its callers compile against it
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "posts")]
#[query(name = "by_author", eq(author), sort(at = -1), limit = 20)]
#[query(name = "tagged", eq(tags))]
pub struct Post {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub author: String,
    pub tags: Vec<String>,
    pub at: DateTime,
}

async fn feed(db: &mongodb::Database) {
    let _ = Post::by_author(db, "ada").await;
    let _ = Post::by_author(db, "bo").limit(5).await;
    // the array whose bound is missing still takes one element
    let _ = Post::tagged(db, "rust").count().await;
}

fn main() {}
