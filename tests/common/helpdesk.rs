//! The help desk of seed 003, shared by the copy and sync tests.
#![allow(dead_code)]

use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "customers")]
pub struct Customer {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[schema(min_length = 1, max_length = 80)]
    pub name: String,
    pub email: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "agents")]
#[serde(rename_all = "camelCase")]
pub struct Agent {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub display_name: String,
    pub team: String,
}

#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, PartialEq)]
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

#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct MessagePreview {
    #[schema(max_length = 40)]
    pub preview: String,
    pub at: DateTime,
}

impl From<&Message> for MessagePreview {
    fn from(message: &Message) -> Self {
        MessagePreview {
            preview: message.body.chars().take(40).collect(),
            at: message.at,
        }
    }
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "tickets")]
#[index(keys(status = 1, updated_at = -1))]
pub struct Ticket {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub subject: String,
    pub status: Status,
    #[extended_ref(to = Customer, fields = "name", sync = "transactional")]
    pub customer: TicketCustomer,
    #[extended_ref(to = Agent, fields = "display_name", sync = "async")]
    pub assignee: Option<TicketAssignee>,
    #[embed(max = 5, cap)]
    pub history: Vec<StatusChange>,
    #[subset(of = Message, max = 1, sort = "-at", count = "message_count")]
    pub last_message: Option<MessagePreview>,
    pub message_count: i64,
    pub updated_at: DateTime,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "messages")]
#[index(keys(ticket_id = 1, at = -1))]
pub struct Message {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[reference]
    pub ticket_id: Ref<Ticket>,
    pub body: String,
    pub at: DateTime,
}

/// An order keeps the customer as they were: a frozen snapshot.
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "orders")]
pub struct Order {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[extended_ref(to = Customer, fields = "name, email", sync = "frozen")]
    pub customer: OrderCustomer,
    pub total: f64,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "parts")]
pub struct Part {
    #[serde(rename = "_id")]
    pub id: String,
    pub name: String,
}

/// The hybrid model of seed 000: part references with their names copied, repaired by a
/// scheduled reconcile.
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "productsHybrid")]
pub struct Product {
    #[serde(rename = "_id")]
    pub id: String,
    pub name: String,
    #[extended_ref(to = Part, fields = "name", sync = "reconcile", max = 50)]
    pub parts: Vec<ProductParts>,
}

pub fn schema() -> Schema {
    Schema::new()
        .model::<Customer>()
        .model::<Agent>()
        .model::<Ticket>()
        .model::<Message>()
        .model::<Order>()
        .model::<Part>()
        .model::<Product>()
        .build()
        .expect("the help desk schema builds")
}

pub fn customer(name: &str) -> Customer {
    Customer {
        id: ObjectId::new(),
        name: name.into(),
        email: format!("{}@example.org", name.to_lowercase()),
    }
}

pub fn agent(display_name: impl Into<String>, team: &str) -> Agent {
    Agent {
        id: ObjectId::new(),
        display_name: display_name.into(),
        team: team.into(),
    }
}

/// Renames agent `id` with the driver (a worker, if one runs, applies the copies).
pub async fn rename_agent(db: &mongodb::Database, id: ObjectId, name: impl Into<String>) {
    Agent::collection(db)
        .update_one(
            doc! { "_id": id },
            doc! { "$set": { "displayName": name.into() } },
        )
        .await
        .unwrap();
}

pub fn ticket(customer: &Customer, assignee: Option<&Agent>, i: usize) -> Ticket {
    Ticket {
        id: ObjectId::new(),
        subject: format!("ticket {i}"),
        status: Status::Open,
        customer: customer.into(),
        assignee: assignee.map(Into::into),
        history: vec![],
        last_message: None,
        message_count: 0,
        updated_at: DateTime::now(),
    }
}

/// Inserts the agent Ana (billing) and a ticket of the customer Bo assigned to her, whose copy
/// of her name says `copied` (`"Ana"`, or another name for a drifted copy); returns the two.
pub async fn assigned_ticket(db: &mongodb::Database, copied: &str) -> (Agent, Ticket) {
    let ana = agent("Ana", "billing");
    Agent::collection(db).insert_one(&ana).await.unwrap();
    let mut ticket = ticket(&customer("Bo"), Some(&ana), 1);
    if let Some(assignee) = ticket.assignee.as_mut() {
        assignee.display_name = copied.into();
    }
    Ticket::collection(db).insert_one(&ticket).await.unwrap();
    (ana, ticket)
}
