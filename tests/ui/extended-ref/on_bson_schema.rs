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

// a copy kept in sync compiles inside an embedded struct (its holder declares it under the
// embedding field's path); a tuple struct has no field name to store it under
#[derive(BsonSchema, Serialize, Deserialize)]
pub struct Invoice {
    pub number: String,
    #[extended_ref(to = Customer, fields = "name", sync = "transactional")]
    pub customer: InvoiceCustomer,
}

#[derive(BsonSchema, Serialize, Deserialize)]
pub struct Billed(
    pub String,
    #[extended_ref(to = Customer, fields = "name", sync = "transactional")] pub String,
);

fn main() {}
