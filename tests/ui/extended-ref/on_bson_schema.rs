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

// a snapshot compiles inside an embedded value; a copy kept in sync does not (yet)
#[derive(BsonSchema, Serialize, Deserialize)]
pub struct Invoice {
    pub number: String,
    #[extended_ref(to = Customer, fields = "name", sync = "transactional")]
    pub customer: InvoiceCustomer,
}

fn main() {}
