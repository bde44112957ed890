//! The help desk of seed 003 ("A worked example: a help desk"), modelled as the seed decides.
//!
//! | relationship              | outcome                                   | why (seed 003)                          |
//! |---------------------------|-------------------------------------------|-----------------------------------------|
//! | ticket - messages         | reference + subset (last message, count)  | unbounded; the queue needs a preview    |
//! | ticket - customer         | extended reference, transactional         | read in the queue, small fan-out        |
//! | ticket - assignee (agent) | extended reference, async                 | thousands of tickets per agent          |
//! | ticket - tags             | bounded array of tag keys + tags collection | many-to-many, bounded on the ticket side |
//! | ticket - status history   | embedded, `$slice` cap                    | bounded in practice, atomic with status |
//! | message - attachments     | embedded metadata                         | bounded, never read without the message |
#![allow(dead_code)]

use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "customers")]
#[index(keys(email = 1), unique)]
pub struct Customer {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[schema(min_length = 1, max_length = 120)]
    pub name: String,
    #[schema(max_length = 254)]
    pub email: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "agents")]
#[index(keys(team = 1))]
pub struct Agent {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[schema(min_length = 1, max_length = 120)]
    pub name: String,
    pub team: String,
}

/// Tag labels live in a small collection the client caches; tickets hold the stable keys.
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "tags")]
pub struct Tag {
    #[serde(rename = "_id")]
    #[schema(max_length = 32)]
    pub key: String,
    pub label: String,
}

#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Open,
    Pending,
    Closed,
}

impl Status {
    /// As stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Open => "open",
            Status::Pending => "pending",
            Status::Closed => "closed",
        }
    }
}

#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Author {
    Customer,
    Agent,
}

#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct StatusChange {
    pub status: Status,
    pub at: DateTime,
}

#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct MessagePreview {
    pub from: Author,
    #[schema(max_length = 80)]
    pub preview: String,
    pub at: DateTime,
}

impl From<&Message> for MessagePreview {
    fn from(message: &Message) -> Self {
        MessagePreview {
            from: message.from,
            preview: message.body.chars().take(80).collect(),
            at: message.at,
        }
    }
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "tickets")]
#[index(keys(team = 1, status = 1, priority = -1, updated_at = -1), name = "agent_queue")]
// the agent queue (seed 003): open tickets of a team by priority and last update; one query on
// one collection, no `$lookup`, served by `agent_queue` in its sort order
#[query(name = "agent_queue", eq(team, status), sort(priority = -1, updated_at = -1), limit = 50, index = "agent_queue")]
// the ticket view: the ticket by id (then its thread, `Message::TICKET_ID.page`)
#[query(name = "ticket_view", eq(id))]
// a customer's tickets, newest first: the schema derives `{ customer._id: 1, updatedAt: -1 }`
#[query(name = "customer_tickets", eq("customer._id"), sort(updated_at = -1), limit = 20)]
#[serde(rename_all = "camelCase")]
pub struct Ticket {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[schema(min_length = 1, max_length = 200)]
    pub subject: String,
    pub team: String,
    pub status: Status,
    #[schema(minimum = 0, maximum = 3)]
    pub priority: i32,
    #[extended_ref(to = Customer, fields = "name", sync = "transactional")]
    pub customer: TicketCustomer,
    #[extended_ref(to = Agent, fields = "name", sync = "async")]
    pub assignee: Option<TicketAssignee>,
    #[reference(max = 10)]
    pub tags: Vec<Ref<Tag>>,
    #[embed(max = 50, cap)]
    pub history: Vec<StatusChange>,
    #[subset(of = Message, max = 1, sort = "-at", count = "message_count")]
    pub last_message: Option<MessagePreview>,
    pub message_count: i64,
    pub updated_at: DateTime,
}

/// Attachment metadata; the file itself is in object storage.
#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Attachment {
    #[schema(min_length = 1, max_length = 255)]
    pub file_name: String,
    pub content_type: String,
    #[schema(minimum = 0)]
    pub size: i64,
    pub url: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "messages", shard_key(ticket_id = 1, at = 1))]
#[serde(rename_all = "camelCase")]
pub struct Message {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[reference]
    pub ticket_id: Ref<Ticket>,
    pub from: Author,
    pub author_id: ObjectId,
    #[schema(max_length = 20000)]
    pub body: String,
    #[embed(max = 20)]
    pub attachments: Vec<Attachment>,
    pub at: DateTime,
}

/// The help desk's schema.
pub fn schema() -> Schema {
    Schema::new()
        .model::<Customer>()
        .model::<Agent>()
        .model::<Tag>()
        .model::<Ticket>()
        .model::<Message>()
        .build()
        .expect("the help desk schema is consistent")
}
