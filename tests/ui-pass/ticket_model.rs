//! The help-desk model of SPEC §3, without the relationship attributes that are not implemented
//! yet (`#[reference]`, `#[extended_ref]`, `#[subset]`, `Ref<T>`): the ids are plain fields.

use mongo_schema::bson::{doc, Bson};
use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(BsonSchema, Serialize, Deserialize)]
pub struct StatusChange {
    pub status: Status,
    pub at: DateTime,
}

#[derive(BsonSchema, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Open,
    Pending,
    Closed,
}

#[derive(BsonSchema, Serialize, Deserialize)]
pub struct TicketCustomer {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub name: String,
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "tickets")]
#[index(keys(team = 1, status = 1, priority = -1, updated_at = -1), name = "agent_queue")]
pub struct Ticket {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub team: String,
    pub status: Status,
    pub priority: i32,
    pub customer: TicketCustomer,
    pub assignee_id: Option<ObjectId>,
    #[embed(max = 10)]
    pub tags: Vec<String>,
    #[embed(max = 50, cap)]
    pub history: Vec<StatusChange>,
    pub message_count: i64,
    pub updated_at: DateTime,
}

#[derive(BsonSchema, Serialize, Deserialize)]
pub struct Attachment {
    pub file_name: String,
    pub size: i64,
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "messages", shard_key(ticket_id = 1, at = 1))]
#[index(keys(ticket_id = 1, at = -1))]
pub struct Message {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub ticket_id: ObjectId,
    #[embed(max = 20)]
    pub attachments: Vec<Attachment>,
    pub body: String,
    pub at: DateTime,
}

pub fn main() {
    assert_eq!(Ticket::COLLECTION, "tickets");
    assert_eq!(Message::COLLECTION, "messages");

    let validator = Ticket::validator();
    let schema = validator.get_document("$jsonSchema").unwrap();
    assert_eq!(schema.get_str("bsonType"), Ok("object"));
    let required: Vec<&str> = schema
        .get_array("required")
        .unwrap()
        .iter()
        .map(|b| b.as_str().unwrap())
        .collect();
    assert_eq!(
        required,
        [
            "_id",
            "team",
            "status",
            "priority",
            "customer",
            "assignee_id",
            "tags",
            "history",
            "message_count",
            "updated_at"
        ]
    );

    let properties = schema.get_document("properties").unwrap();
    assert_eq!(
        properties.get_document("_id").unwrap(),
        &doc! { "bsonType": "objectId" }
    );
    assert_eq!(
        properties.get_document("priority").unwrap(),
        &doc! { "bsonType": "int" }
    );
    assert_eq!(
        properties.get_document("status").unwrap(),
        &doc! { "bsonType": "string", "enum": ["open", "pending", "closed"] }
    );
    assert_eq!(
        properties.get_document("assignee_id").unwrap(),
        &doc! { "bsonType": ["objectId", "null"] }
    );
    assert_eq!(
        properties.get_document("tags").unwrap(),
        &doc! { "bsonType": "array", "maxItems": 10_i64, "items": { "bsonType": "string" } }
    );
    let history = properties.get_document("history").unwrap();
    assert_eq!(history.get_i64("maxItems"), Ok(50));
    let change = history.get_document("items").unwrap();
    assert_eq!(
        change
            .get_document("properties")
            .unwrap()
            .get_document("at")
            .unwrap(),
        &doc! { "bsonType": "date" }
    );
    let customer = properties.get_document("customer").unwrap();
    assert_eq!(
        customer.get_array("required").unwrap(),
        &vec![Bson::from("_id"), Bson::from("name")]
    );

    let indexes = Ticket::indexes();
    assert_eq!(indexes.len(), 1);
    assert_eq!(
        indexes[0].keys,
        doc! { "team": 1, "status": 1, "priority": -1, "updated_at": -1 }
    );
    assert_eq!(
        indexes[0].options.as_ref().and_then(|o| o.name.as_deref()),
        Some("agent_queue")
    );

    // the declared index and the shard key's index
    let message_indexes: Vec<_> = Message::indexes().into_iter().map(|i| i.keys).collect();
    assert!(message_indexes.contains(&doc! { "ticket_id": 1, "at": -1 }));
    assert!(message_indexes.contains(&doc! { "ticket_id": 1, "at": 1 }));
    assert_eq!(message_indexes.len(), 2);
    let attachments = Message::validator()
        .get_document("$jsonSchema")
        .unwrap()
        .get_document("properties")
        .unwrap()
        .get_document("attachments")
        .unwrap()
        .clone();
    assert_eq!(attachments.get_i64("maxItems"), Ok(20));
}
