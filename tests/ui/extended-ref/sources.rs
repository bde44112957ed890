//! What an `#[extended_ref(to = Source)]` asks of its source: a collection root struct that holds
//! an `_id` and stores the fields the copy lists, checked the same on a struct the roots embed.
use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

/// A customer without an `_id` field.
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "customers")]
pub struct Customer {
    pub name: String,
}

/// The copy holds its source's `_id` (`source_without_id`).
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "tickets")]
pub struct Ticket {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[extended_ref(to = Customer, fields = "name", sync = "frozen")]
    pub customer: TicketCustomer,
}

#[derive(BsonSchema, Serialize, Deserialize)]
pub struct Address {
    pub city: String,
}

/// The source is a collection root (`to_not_a_document`).
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "shipments")]
pub struct Shipment {
    #[extended_ref(to = Address, fields = "city", sync = "frozen")]
    pub address: ShipmentAddress,
}

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

/// The source is a struct (`source_is_kinds_enum`).
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "invoices")]
pub struct Invoice {
    #[extended_ref(to = Account, fields = "name", sync = "frozen")]
    pub account: InvoiceAccount,
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "products")]
pub struct Product {
    #[serde(rename = "_id")]
    pub id: String,
    pub title: String, // renamed from `name`
    pub price_cents: i64,
}

/// The snapshot on an order line is checked against the source as at the root.
mod embedded_unknown_field {
    use super::*;

    #[derive(BsonSchema, Serialize, Deserialize)]
    pub struct OrderLine {
        #[extended_ref(to = Product, fields = "name, price_cents", sync = "frozen")]
        pub product: OrderLineProduct,
        pub quantity: i32,
    }
}

/// A copy kept in sync on an order line (which an order embeds) is checked against the source as
/// at the root.
mod embedded_synced_unknown_field {
    use super::*;

    #[derive(BsonSchema, Serialize, Deserialize)]
    pub struct OrderLine {
        #[extended_ref(to = Product, fields = "name, price_cents", sync = "transactional")]
        pub product: OrderLineProduct,
        pub quantity: i32,
    }

    #[derive(Document, Serialize, Deserialize)]
    #[collection(name = "orders")]
    pub struct Order {
        #[embed(max = 50)]
        pub lines: Vec<OrderLine>,
    }
}

fn main() {}
