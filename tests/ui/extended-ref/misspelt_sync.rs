use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "authors")]
pub struct Author {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub name: String,
}

// a transposed `sync`: one error, which names the option meant (not also "needs `sync`")
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "articles")]
pub struct Article {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[extended_ref(to = Author, fields = "name", snyc = "async")]
    pub author: ArticleAuthor,
}

fn main() {}
