//! Typed field paths and the filter, sort and update builders, without a server: each builds
//! the same document as the hand-written `doc!` it replaces.

use mongo_schema::bson::{doc, oid::ObjectId, DateTime};
use mongo_schema::field;
use mongo_schema::prelude::*;
use mongo_schema::query::{Filter, Sort, Update};
use serde::{Deserialize, Serialize};

#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Open,
    Pending,
    Closed,
}

#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct StatusChange {
    pub status: Status,
    pub at: DateTime,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "q_customers")]
pub struct Customer {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "q_tickets")]
#[serde(rename_all = "camelCase")]
#[query(name = "agent_queue", eq(team, status), sort(priority = -1, updated_at = -1), limit = 50)]
pub struct Ticket {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub team: String,
    pub status: Status,
    pub priority: i32,
    #[extended_ref(to = Customer, fields = "name", sync = "transactional")]
    pub customer: TicketCustomer,
    #[embed(max = 50, cap)]
    pub history: Vec<StatusChange>,
    pub message_count: i64,
    pub updated_at: DateTime,
}

#[test]
fn paths_are_stored_names() {
    assert_eq!(field!(Ticket, id).as_str(), "_id");
    assert_eq!(field!(Ticket, updated_at).as_str(), "updatedAt");
    assert_eq!(field!(Ticket, customer.name).as_str(), "customer.name");
    assert_eq!(field!(Ticket, customer.id).as_str(), "customer._id");
    assert_eq!(field!(Ticket, history.status).as_str(), "history.status");
    assert_eq!(field!(Ticket, history).cap(), Some(50));
}

#[test]
fn filter_is_the_hand_written_document() {
    let filter = Filter::new()
        .eq(field!(Ticket, team), "billing")
        .eq(field!(Ticket, status), &Status::Open)
        .build()
        .unwrap();
    assert_eq!(filter, doc! { "team": "billing", "status": "open" });
    let id = ObjectId::new();
    let at = DateTime::from_millis(5);
    let filter = Filter::new()
        .eq(field!(Ticket, customer.id), &id)
        .range(field!(Ticket, updated_at), at..)
        .is_in(field!(Ticket, status), &[Status::Open, Status::Pending])
        .build()
        .unwrap();
    assert_eq!(
        filter,
        doc! { "customer._id": id, "updatedAt": { "$gte": at }, "status": { "$in": ["open", "pending"] } }
    );
    let sort = Sort::new()
        .desc(field!(Ticket, priority))
        .desc(field!(Ticket, updated_at))
        .build();
    assert_eq!(sort, doc! { "priority": -1, "updatedAt": -1 });
}

#[test]
fn update_is_typed() {
    let change = StatusChange {
        status: Status::Closed,
        at: DateTime::from_millis(1),
    };
    let update = Update::new()
        .set(field!(Ticket, status), &Status::Closed)
        .inc(field!(Ticket, message_count), &1)
        .push(field!(Ticket, history), &change)
        .build()
        .unwrap();
    assert_eq!(
        update,
        doc! {
            "$set": { "status": "closed" },
            "$inc": { "messageCount": 1_i64 },
            "$push": { "history": { "$each": [{ "status": "closed", "at": DateTime::from_millis(1) }], "$slice": -50_i64 } },
        }
    );
}

#[test]
fn declared_query_spec() {
    let spec = Ticket::collection_spec();
    let q = &spec.queries[0];
    assert_eq!(q.name, "agent_queue");
    assert_eq!(q.eq, ["team", "status"]);
    assert_eq!(
        q.sort,
        [("priority".to_owned(), -1), ("updatedAt".to_owned(), -1)]
    );
}

#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Audit {
    pub revision: i32,
    pub editor: String,
}

#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum PaymentState {
    Placed,
    Paid {
        #[serde(rename = "paidAt")]
        paid_at: DateTime,
    },
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "q_payments")]
pub struct Payment {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub status: PaymentState,
    #[serde(flatten)]
    pub audit: Audit,
}

#[test]
fn paths_through_flatten_and_tagged_variants() {
    // a flattened struct's fields are stored beside the others
    assert_eq!(field!(Payment, audit.revision).as_str(), "revision");
    // an internally tagged enum's variant fields sit beside its tag
    assert_eq!(field!(Payment, status.paid_at).as_str(), "status.paidAt");
    let at = DateTime::from_millis(9);
    let filter = Filter::new()
        .gte(field!(Payment, status.paid_at), &at)
        .eq(field!(Payment, audit.editor), "ada")
        .build()
        .unwrap();
    assert_eq!(
        filter,
        doc! { "status.paidAt": { "$gte": at }, "editor": "ada" }
    );
    // and what the driver stores agrees
    let payment = Payment {
        id: ObjectId::new(),
        status: PaymentState::Paid { paid_at: at },
        audit: Audit {
            revision: 1,
            editor: "ada".into(),
        },
    };
    let stored = mongo_schema::bson::to_document(&payment).unwrap();
    assert_eq!(
        stored
            .get_document("status")
            .unwrap()
            .get_datetime("paidAt")
            .unwrap(),
        &at
    );
    assert_eq!(stored.get_str("editor").unwrap(), "ada");
}
