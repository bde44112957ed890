//! What rustc checks of a reference: the referenced type is a collection root of the right `_id`
//! type, a `Ref<T>` refers to `T` alone, and a relation read in pages has an index that orders it.
use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "customers")]
pub struct Customer {
    #[serde(rename = "_id")]
    pub id: ObjectId,
}

/// Customers are keyed by `ObjectId`, not by a string (`to_with_wrong_id_type`).
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "tickets")]
pub struct Ticket {
    #[reference(to = Customer)]
    pub customer_id: String,
}

#[derive(BsonSchema)]
pub struct Address {
    pub city: String,
}

/// The referenced type is a collection root (`ref_to_non_document`; without serde's derives, whose
/// bounds on `Ref<Address>` would say it again).
#[derive(Document)]
#[collection(name = "contacts")]
pub struct Contact {
    #[reference]
    pub address: Ref<Address>,
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "parts")]
pub struct Part {
    pub name: String,
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "orders")]
pub struct Order {
    #[reference]
    pub customer: Ref<Customer>,
}

/// A `Ref<Part>` is not a `Ref<Customer>`.
fn wrong_target_type() {
    let part: Ref<Part> = Ref::new(ObjectId::new());
    let _order = Order { customer: part };
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "members")]
pub struct Member {
    pub name: String,
}

// no index orders a member's loans: `Loan::MEMBER_ID` has no pages
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "loans")]
pub struct Loan {
    #[reference]
    pub member_id: Ref<Member>,
    pub loaned_at: DateTime,
}

/// A relation is read in pages along an index (`page_without_index`).
fn page_without_index() {
    let member: Ref<Member> = Ref::new(ObjectId::new());
    let _page = Loan::MEMBER_ID.page(&member);
}

fn main() {
    wrong_target_type();
    page_without_index();
}
