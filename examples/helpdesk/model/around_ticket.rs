// Customers, agents, tags, messages and the ticket's sub-documents: every type the ticket
// names. Included by `../model.rs`, and as they are by the README's and the guide's doc tests (no
// `use` lines or inner attributes here: the including file brings `mongo_schema::prelude::*` and
// serde's derives).

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
