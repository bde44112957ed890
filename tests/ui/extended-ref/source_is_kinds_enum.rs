use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

// a whole-document enum: its fields belong to its kinds, so none is a copy's source field
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "accounts")]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Account {
    Person {
        #[serde(rename = "_id")]
        id: ObjectId,
        name: String,
    },
    Company {
        #[serde(rename = "_id")]
        id: ObjectId,
        name: String,
    },
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "invoices")]
pub struct Invoice {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[extended_ref(to = Account, fields = "name", sync = "frozen")]
    pub account: InvoiceAccount,
}

fn main() {}
