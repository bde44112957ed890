//! One source with an async copy held by posts: the model of the sync liveness tests (a
//! fan-out of any size is a matter of how many posts hold the author).

use mongo_schema::bson::doc;
use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

/// The source.
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "authors")]
pub struct Author {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub name: String,
}

/// A holder of an async copy.
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "posts")]
pub struct Post {
    #[serde(rename = "_id")]
    pub id: i64,
    #[extended_ref(to = Author, fields = "name", sync = "async")]
    pub author: PostAuthor,
}

/// The schema of the two models.
#[allow(dead_code)]
pub fn schema() -> Schema {
    Schema::new()
        .model::<Author>()
        .model::<Post>()
        .build()
        .expect("the schema builds")
}

/// Renames author `id` with the driver (the worker applies the copy).
#[allow(dead_code)]
pub async fn rename_author(db: &mongodb::Database, id: ObjectId, name: &str) {
    Author::collection(db)
        .update_one(doc! { "_id": id }, doc! { "$set": { "name": name } })
        .await
        .unwrap();
}
