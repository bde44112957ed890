//! An audit log: one collection, several kinds of event (a whole-document enum), each kind with
//! its own fields and its own index, validated, applied, written and queried.
//!
//! ```text
//! cargo run --example events            # an embedded SecantusDB server is started for you
//! MONGODB_URI=mongodb://localhost:27017 cargo run --example events
//! ```

use mongo_schema::bson::{doc, Document as BsonDocument};
use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

/// Where a login came from: an externally tagged enum with data inside the `login` kind.
#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    Password,
    Sso { provider: String },
    ApiKey(#[schema(max_length = 12)] String),
}

/// The audit log. serde stores each variant as a document with `kind` naming it; the validator
/// is one branch per kind (`oneOf`), each with its own `required` fields and bounds.
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "audit_events", additional_properties = false)]
#[index(keys(at = -1))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AuditEvent {
    /// Indexed for "the last logins of a user": a partial index on `{ kind: "login" }`.
    #[index(keys(user = 1, at = -1))]
    Login {
        #[serde(rename = "_id")]
        id: ObjectId,
        user: String,
        method: Method,
        at: DateTime,
    },
    /// Indexed for "every refund of an order".
    #[index(keys(order = 1))]
    Refund {
        #[serde(rename = "_id")]
        id: ObjectId,
        order: i64,
        #[schema(minimum = 1)]
        cents: i64,
        #[embed(max = 5)]
        #[schema(max_length = 200)]
        notes: Vec<String>,
        at: DateTime,
    },
    RoleChanged {
        #[serde(rename = "_id")]
        id: ObjectId,
        user: String,
        #[schema(max_length = 30)]
        role: String,
        at: DateTime,
    },
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let uri = mongo_schema_testkit::uri(); // MONGODB_URI, or a local SecantusDB started for us
    let client = mongodb::Client::with_uri_str(&uri).await?;
    let db = client.database("mongo_schema_events");
    db.drop().await?;
    println!("server: {uri}, database `{}`\n", db.name());

    let schema = Schema::new().model::<AuditEvent>().build()?;
    println!("{}", schema.apply(&db).await?);
    println!("{}", schema.report());

    let events = AuditEvent::collection(&db);
    let now = DateTime::now();
    let written = vec![
        AuditEvent::Login {
            id: ObjectId::new(),
            user: "ada".into(),
            method: Method::Sso {
                provider: "github".into(),
            },
            at: now,
        },
        AuditEvent::Refund {
            id: ObjectId::new(),
            order: 1042,
            cents: 1999,
            notes: vec!["damaged in transit".into()],
            at: now,
        },
        AuditEvent::RoleChanged {
            id: ObjectId::new(),
            user: "ada".into(),
            role: "admin".into(),
            at: now,
        },
        AuditEvent::Login {
            id: ObjectId::new(),
            user: "ada".into(),
            method: Method::ApiKey("k-7f3a".into()),
            at: now,
        },
    ];
    events.insert_many(&written).await?;
    println!("wrote {} events of 3 kinds", written.len());

    // the partial index of the `login` kind serves this query: its filter repeats the kind
    let logins = events
        .count_documents(doc! { "kind": "login", "user": "ada" })
        .await?;
    println!("logins of ada: {logins}");
    assert_eq!(logins, 2);
    let id = written[0].id();
    let read = events.find_one(doc! { "_id": id }).await?;
    assert_eq!(read.as_ref(), Some(&written[0]));
    println!("read back: {read:?}");

    // a refund with a field of another kind, written by some other program: refused
    let raw = db.collection::<BsonDocument>(AuditEvent::COLLECTION);
    let refused = raw
        .insert_one(doc! { "kind": "refund", "order": 7_i64, "cents": 0_i64, "notes": [], "at": now, "user": "eve" })
        .await
        .in_collection(AuditEvent::COLLECTION)
        .expect_err("a broken refund is refused");
    println!("refused as it should be: {refused}");
    assert!(refused.as_validation().is_some());
    Ok(())
}
