use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "messages")]
pub struct Message {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub body: String,
    #[embed(max = 20, max = 30)]
    pub attachments: Vec<String>,
}

fn main() {}
