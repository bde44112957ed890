// The help desk of seed 003 without its ticket: the types the README's ten-line `Ticket` names.
// `helpdesk.rs` adds the ticket of `examples/helpdesk/model.rs`. Included by the doc tests of
// the README and the guide (`include!`: no inner attributes or `//!` comments here, and no `use`
// lines, which would clash with the including block's own `use mongo_schema::prelude::*` and
// `use serde::{Deserialize, Serialize}`).

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

/// What the README says of the help desk's indexes (its doc test calls this): the agent queue's
/// index derived by ESR, and the fan-out index of each copy.
#[allow(dead_code)]
fn readme_claims() {
    let schema = Schema::new()
        .model::<Customer>()
        .model::<Agent>()
        .model::<Tag>()
        .model::<Ticket>()
        .model::<Message>()
        .build()
        .expect("the help desk");
    let tickets = schema.collection("tickets").expect("declared");
    let keys: Vec<_> = tickets.indexes.iter().map(|index| index.keys.clone()).collect();
    for claimed in [
        doc! { "team": 1, "status": 1, "priority": -1, "updatedAt": -1 },
        doc! { "customer._id": 1, "_id": 1 },
        doc! { "assignee._id": 1, "_id": 1 },
    ] {
        assert!(keys.contains(&claimed), "{claimed} in {keys:?}");
    }
}
