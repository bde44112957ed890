use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "articles")]
#[index(keys(title = "text"))]
#[index(keys(lang = 1, body = "text"))]
pub struct Article {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub lang: String,
    pub title: String,
    pub body: String,
}

fn main() {}
