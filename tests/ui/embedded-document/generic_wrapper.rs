use mongo_schema::prelude::*;

#[derive(Document)]
#[collection(name = "customers")]
pub struct Customer {
    pub name: String,
}

#[derive(BsonSchema)]
pub struct Versioned<T> {
    pub version: i32,
    pub value: T,
}

#[derive(Document)]
#[collection(name = "tickets")]
pub struct Ticket {
    pub customer: Versioned<Customer>,
}

fn main() {}
