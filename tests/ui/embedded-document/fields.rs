//! A collection root (`#[derive(Document)]`) has its own collection: another document holds its
//! id (`#[reference]`) or a copy (`#[extended_ref]`), never the document itself, whatever the field
//! wraps it in.
use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "customers")]
pub struct Customer {
    pub name: String,
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "agents")]
pub struct Agent {
    pub name: String,
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "parts")]
pub struct Part {
    #[serde(rename = "_id")]
    pub id: String,
}

#[derive(BsonSchema, Serialize, Deserialize)]
pub struct Versioned<T> {
    pub version: i32,
    pub value: T,
}

/// In a plain field (`plain_field`).
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "tickets")]
pub struct Ticket {
    pub customer: Customer,
}

/// In an `Option` (`option_field`).
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "tickets")]
pub struct AssignedTicket {
    pub assignee: Option<Agent>,
}

/// In a bounded array (`embedded_vec`).
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "products")]
pub struct Product {
    #[embed(max = 50)]
    pub parts: Vec<Part>,
}

/// In a generic struct that embeds its parameter (`generic_wrapper`).
#[derive(Document)]
#[collection(name = "tickets")]
pub struct VersionedTicket {
    pub customer: Versioned<Customer>,
}

fn main() {}
