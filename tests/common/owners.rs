//! An owner whose name holders copy: the source of the repair, concern and scale tests (each
//! declares its own holders).
#![allow(dead_code)]

use mongo_schema::bson::doc;
use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

/// The source.
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "owners")]
pub struct Owner {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub name: String,
}

pub fn owner(name: &str) -> Owner {
    Owner {
        id: ObjectId::new(),
        name: name.into(),
    }
}

/// Renames the owner `id` with the driver.
pub async fn rename_owner(db: &mongodb::Database, id: ObjectId, name: &str) {
    Owner::collection(db)
        .update_one(doc! { "_id": id }, doc! { "$set": { "name": name } })
        .await
        .unwrap();
}
