//! `#[reference]` on a field: a typed id `Ref<T>` (or a plain id with the referenced type given by
//! `to = T`), bounded with `max` when it is an array, and no other options.
use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "tickets")]
pub struct Ticket {
    #[serde(rename = "_id")]
    pub id: ObjectId,
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "parts")]
pub struct Part {
    pub name: String,
}

/// `max` bounds an array of references, not a single one (`max_on_single`).
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "messages")]
pub struct MaxOnSingle {
    #[reference(max = 5)]
    pub ticket_id: Ref<Ticket>,
}

/// The options are `max` and `to` (`unknown_option`).
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "messages")]
pub struct UnknownOption {
    #[reference(target = Ticket)]
    pub ticket_id: Ref<Ticket>,
}

/// A plain id says which type it refers to, with `to` (`plain_id_without_to`).
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "messages")]
pub struct PlainIdWithoutTo {
    #[reference]
    pub ticket_id: ObjectId,
}

/// An array of references is bounded, with `max` (`array_without_max`).
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "products")]
pub struct ArrayWithoutMax {
    #[reference]
    pub part_ids: Vec<Ref<Part>>,
}

fn main() {}
