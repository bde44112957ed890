use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(BsonSchema, Serialize, Deserialize)]
pub struct Customer {
    pub name: String,
    pub email: String,
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "tickets")]
pub struct Ticket {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub customer: Customer,
}

fn main() {
    // the second segment misspelt: one error, at `nmae`
    let _ = field!(Ticket, customer.nmae);
}
