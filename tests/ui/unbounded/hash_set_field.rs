use std::collections::HashSet;

use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "users")]
pub struct User {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub follower_ids: HashSet<ObjectId>,
}

fn main() {}
