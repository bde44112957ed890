use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "customers")]
pub struct Customer {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub name: String,
    pub email: String,
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "groups")]
pub struct Group {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[extended_ref(to = Customer, fields = "name", sync = "async", max = 20, on_delete = "unset")]
    pub members: Vec<GroupMembers>,
}

fn main() {}
