//! `#[reference]`: validators use the target's id type, single references get an index unless a
//! declared index or the shard key starts with them, arrays are bounded, and each reference has a
//! typed `Relation` constant (ordered when an index gives the children an order).

use mongo_schema::bson::doc;
use mongo_schema::prelude::*;
use mongo_schema::{IndexReason, RefKind};
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "parts")]
pub struct Part {
    #[serde(rename = "_id")]
    pub id: String,
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "customers")]
pub struct Customer {
    #[serde(rename = "_id")]
    pub id: i64,
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "agents")]
pub struct Agent {
    #[serde(rename = "_id")]
    pub id: ObjectId,
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "tickets")]
#[index(keys(assignee_id = 1, updated_at = -1), name = "by_assignee")]
#[serde(rename_all = "camelCase")]
pub struct Ticket {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[reference(to = Customer)]
    pub customer_id: i64,
    #[reference]
    pub assignee_id: Option<Ref<Agent>>,
    #[reference(max = 20)]
    pub part_ids: Vec<Ref<Part>>,
    pub updated_at: DateTime,
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "messages", shard_key(ticket_id = 1, at = 1))]
pub struct Message {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[reference]
    pub ticket_id: Ref<Ticket>,
    pub at: DateTime,
}

pub fn main() {
    let schema = Ticket::bson_schema();
    let properties = schema.get_document("properties").unwrap();
    assert_eq!(
        properties.get_document("customerId").unwrap(),
        &doc! { "bsonType": "long" }
    );
    assert_eq!(
        properties.get_document("assigneeId").unwrap(),
        &doc! { "bsonType": ["objectId", "null"] }
    );
    assert_eq!(
        properties.get_document("partIds").unwrap(),
        &doc! { "bsonType": "array", "maxItems": 20_i64, "items": { "bsonType": "string" } }
    );

    // customerId gets an index; assigneeId pages by the declared `by_assignee` order, which is
    // also the pages' index: it gets the `_id` tie-break and keeps its name (one index, not two);
    // partIds (resolved through parts._id) needs none
    let spec = Ticket::collection_spec();
    let keys: Vec<_> = spec.indexes.iter().map(|i| i.keys.clone()).collect();
    assert_eq!(
        keys,
        [
            doc! { "assigneeId": 1, "updatedAt": -1, "_id": -1 },
            doc! { "customerId": 1 },
        ]
    );
    assert_eq!(spec.indexes[0].name, "by_assignee");
    assert!(matches!(
        &spec.indexes[0].reasons[..],
        [IndexReason::Declared, IndexReason::Reference { target, .. }] if target == "agents"
    ));
    assert!(
        matches!(&spec.indexes[1].reasons[..], [IndexReason::Reference { target, .. }] if target == "customers")
    );
    assert_eq!(spec.references.len(), 3);
    assert_eq!(
        Ticket::references(),
        spec.references,
        "generated without building the validator"
    );
    assert_eq!(spec.references[2].max, Some(20));

    // one index serves the shard key and the keyset pages of a ticket's messages (`at` is not
    // unique, so `_id` breaks ties in index order)
    let spec = Message::collection_spec();
    assert_eq!(spec.indexes.len(), 1);
    assert_eq!(
        spec.indexes[0].keys,
        doc! { "ticket_id": 1, "at": 1, "_id": 1 }
    );
    assert_eq!(spec.indexes[0].reasons.len(), 2);

    // typed relations; ordered ones have pages
    assert_eq!(Message::TICKET_ID.field(), "ticket_id");
    assert_eq!(Message::TICKET_ID.sort_key().field, "at");
    assert!(!Message::TICKET_ID.sort_key().unique);
    assert_eq!(Ticket::ASSIGNEE_ID.sort_key().direction, -1);
    assert_eq!(Ticket::PART_IDS.kind(), RefKind::Many);
    assert_eq!(Ticket::CUSTOMER_ID.kind(), RefKind::One);
    let page = Message::TICKET_ID
        .page(&Ref::new(ObjectId::new()))
        .limit(10);
    assert_eq!(page.sort(), doc! { "at": 1, "_id": 1 });

    // Ref<T> serializes as T's id
    let reference: Ref<Customer> = Ref::new(7);
    assert_eq!(
        mongo_schema::bson::to_bson(&reference).unwrap(),
        mongo_schema::bson::Bson::Int64(7)
    );
}
