use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "comments")]
pub struct Comment {
    #[serde(rename = "_id")]
    pub id: Option<ObjectId>,
    pub body: String,
}

fn main() {}
