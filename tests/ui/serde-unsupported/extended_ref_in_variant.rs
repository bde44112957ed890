use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "users")]
pub struct User {
    pub name: String,
    #[serde(rename = "_id")]
    pub id: ObjectId,
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "events")]
#[serde(tag = "kind")]
pub enum Event {
    Login {
        #[extended_ref(to = User, fields = "name", sync = "async")]
        user: String,
    },
}

fn main() {}
