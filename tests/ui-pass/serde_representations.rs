//! serde's representations and attributes that the derives describe (once compile errors, see
//! `tests/enums.rs` for what each stores on the server).
use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(BsonSchema, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Open,
    Pending { until: DateTime },
    Closed,
}

#[derive(BsonSchema, Serialize, Deserialize)]
pub struct Audit {
    pub created_by: String,
    pub created_at: DateTime,
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "tickets")]
pub struct Ticket {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[serde(flatten)]
    pub audit: Audit,
    pub status: Status,
}

#[derive(BsonSchema, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum Channel {
    Email,
    Phone { number: String },
    Chat,
}

#[derive(Clone, BsonSchema, Serialize, Deserialize)]
#[serde(into = "String")]
pub struct Sku {
    pub vendor: String,
    pub code: String,
}

impl From<Sku> for String {
    fn from(sku: Sku) -> String {
        format!("{}-{}", sku.vendor, sku.code)
    }
}

#[derive(BsonSchema, Serialize, Deserialize)]
pub struct Dimensions(f64, f64);

#[derive(BsonSchema, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Priority {
    Level(i32),
    Named(String),
}

#[derive(BsonSchema, Serialize, Deserialize)]
#[serde(tag = "t", content = "c", rename_all = "lowercase")]
pub enum Reading {
    Missing,
    Celsius(f64),
    Pair(f64, f64),
}

/// A hand-written `Serialize`, described by what it writes.
#[derive(BsonSchema)]
#[schema(stored_as = String)]
pub struct Version {
    pub major: u16,
    pub minor: u16,
}

impl Serialize for Version {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{}.{}", self.major, self.minor))
    }
}

mod cents {
    use serde::Serializer;

    pub fn serialize<S: Serializer>(cents: &i64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{}.{:02}", cents / 100, cents % 100))
    }
}

#[derive(Document, Serialize)]
#[collection(name = "products")]
pub struct Product {
    #[serde(rename = "_id")]
    pub id: String,
    #[serde(serialize_with = "cents::serialize")]
    #[schema(stored_as = String, pattern = "^-?[0-9]+\\.[0-9]{2}$")]
    pub price: i64,
    pub sku: Sku,
    pub version: Version,
    pub size: Dimensions,
    pub channel: Channel,
    pub priority: Priority,
    pub reading: Reading,
}

/// A whole-document enum: one collection, several kinds, an index per kind.
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "events")]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Event {
    #[index(keys(user = 1, at = -1))]
    Login {
        #[serde(rename = "_id")]
        id: ObjectId,
        user: String,
        at: DateTime,
    },
    Logout {
        #[serde(rename = "_id")]
        id: ObjectId,
        at: DateTime,
    },
}

pub fn main() {
    let _ = Product::validator();
    let _ = Event::indexes();
}
