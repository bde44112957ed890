use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "users")]
pub struct User {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub name: String,
}

// `author` is stored, `nmae` is not a stored field of its copy type
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "posts")]
#[query(name = "by_author_name", eq("author.nmae"))]
pub struct Post {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[extended_ref(to = User, fields = "name", sync = "async")]
    pub author: PostAuthor,
}

fn main() {}
