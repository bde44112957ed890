use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "users")]
pub struct User {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub name: String,
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "posts")]
#[query(name = "by_author_quoted", eq("author._id"))]
#[query(name = "by_author_path", eq(author.id))]
#[query(name = "tagged", eq(tags))]
pub struct Post {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[extended_ref(to = User, fields = "name", sync = "async")]
    pub author: PostAuthor,
    #[embed(max = 10)]
    pub tags: Vec<String>,
}

async fn feed(db: &mongodb::Database) {
    // the copy's id is an ObjectId, in both path forms
    let _ = Post::by_author_quoted(db, "ada").await;
    let _ = Post::by_author_path(db, &7).await;
    // `eq` on an array takes one element, not the whole array
    let _ = Post::tagged(db, &vec!["rust".to_owned()]).await;
}

fn main() {}
