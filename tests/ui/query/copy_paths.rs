//! A declared query through a copy (`#[extended_ref]`): its quoted paths name fields the copy
//! stores, and its function takes values of the copied fields' types, in both path forms.
use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "users")]
pub struct User {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub name: String,
}

/// `author` is stored, `nmae` is not a stored field of its copy type
/// (`quoted_path_unknown_field`).
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "comments")]
#[query(name = "by_author_name", eq("author.nmae"))]
pub struct Comment {
    #[extended_ref(to = User, fields = "name", sync = "async")]
    pub author: CommentAuthor,
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

/// Values of the fields' types, through the copy too (`wrong_type_through_paths`).
async fn feed(db: &mongodb::Database) {
    // the copy's id is an ObjectId, in both path forms
    let _ = Post::by_author_quoted(db, "ada").await;
    let _ = Post::by_author_path(db, &7).await;
    // `eq` on an array takes one element, not the whole array
    let _ = Post::tagged(db, &vec!["rust".to_owned()]).await;
}

fn main() {}
