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

#[derive(BsonSchema, Serialize, Deserialize)]
pub struct Invoice {
    pub number: String,
    #[extended_ref(to = Customer, fields = "name", sync = "frozen")]
    pub customer: InvoiceCustomer,
}

fn main() {}
