//! Models of a service that depends on mongo-schema under another name
//! (`ms = { package = "mongo-schema" }` in its `Cargo.toml`): each derive names the crate with
//! `#[schema(crate = "ms")]`. The models use what the derives generate paths for: the hidden
//! module, typed field paths (with a serde helper's encoder), embedded values, an extended
//! reference's copy type and its checks, and a reference.
//!
//! Without the attribute the same model does not compile here: the derive's paths name
//! `::mongo_schema`, which this crate does not have.
//!
//! ```compile_fail,E0433
//! use ms::prelude::*;
//!
//! #[derive(ms::Document, serde::Serialize, serde::Deserialize)]
//! #[collection(name = "customers")]
//! pub struct Customer {
//!     #[serde(rename = "_id")]
//!     pub id: ObjectId,
//!     pub name: String,
//! }
//! ```
//!
//! With it, it does:
//!
//! ```
//! use ms::prelude::*;
//!
//! #[derive(ms::Document, serde::Serialize, serde::Deserialize)]
//! #[collection(name = "customers")]
//! #[schema(crate = "ms")]
//! pub struct Customer {
//!     #[serde(rename = "_id")]
//!     pub id: ObjectId,
//!     pub name: String,
//! }
//! assert_eq!(Customer::COLLECTION, "customers");
//! ```

use ms::prelude::*;
use serde::{Deserialize, Serialize};

/// A customer, copied into tickets.
#[derive(ms::Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "customers")]
#[schema(crate = "ms")]
pub struct Customer {
    /// The id.
    #[serde(rename = "_id")]
    pub id: ObjectId,
    /// The name, copied into tickets.
    #[schema(min_length = 1, max_length = 80)]
    pub name: String,
    /// A code stored as a number, through a serde helper (a typed path encodes through it).
    #[serde(with = "ms::bson::serde_helpers::u32_as_f64")]
    pub code: u32,
}

/// A ticket's status, stored as a string.
#[derive(ms::BsonSchema, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "snake_case")]
#[schema(crate = "ms")]
pub enum Status {
    /// Open.
    Open,
    /// Closed.
    Closed,
}

/// A change of status, embedded in a ticket.
#[derive(ms::BsonSchema, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[schema(crate = "::ms")]
pub struct StatusChange {
    /// The new status.
    pub status: Status,
    /// When.
    pub at: DateTime,
}

/// A ticket: an extended reference to its customer, a bounded history.
#[derive(ms::Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "tickets")]
#[index(keys(status = 1))]
#[schema(crate = "ms")]
pub struct Ticket {
    /// The id.
    #[serde(rename = "_id")]
    pub id: ObjectId,
    /// The status.
    pub status: Status,
    /// The customer's name, kept in sync.
    #[extended_ref(to = Customer, fields = "name", sync = "transactional")]
    pub customer: TicketCustomer,
    /// The last changes.
    #[embed(max = 5, cap)]
    pub history: Vec<StatusChange>,
}

/// A note on a ticket.
#[derive(ms::Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "notes")]
#[schema(crate = "ms")]
pub struct Note {
    /// The id.
    #[serde(rename = "_id")]
    pub id: ObjectId,
    /// The ticket.
    #[reference]
    pub ticket_id: Ref<Ticket>,
}

/// The schema of these models.
///
/// # Errors
/// The models do not fit together (see [`ms::SchemaBuilder::build`]).
pub fn schema() -> Result<ms::Schema, ms::SchemaError> {
    ms::Schema::new()
        .model::<Customer>()
        .model::<Ticket>()
        .model::<Note>()
        .build()
}
