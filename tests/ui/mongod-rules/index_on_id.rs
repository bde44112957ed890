use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "customers")]
#[index(keys(id = 1), unique)]
pub struct Customer {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub name: String,
}

fn main() {}
