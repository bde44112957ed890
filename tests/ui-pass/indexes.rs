//! Index options (unique, sparse, partial, name; mongod refuses sparse with partial), a TTL index, validation settings, a shard key whose unique index starts with it, and an index that starts with a reference kept as declared (`pages = false`) beside one the derive extends for keyset pages.

use mongo_schema::bson::doc;
use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize)]
#[collection(
    name = "sessions",
    validation_level = "moderate",
    validation_action = "warn"
)]
#[index(
    keys(token = 1),
    unique,
    partial = "{\"revoked\": false}",
    name = "active_token"
)]
#[index(keys(created_at = 1), sparse, expire_after_secs = 3600)]
#[index(keys("device.os" = 1, body = "text"))]
pub struct Session {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub token: String,
    pub revoked: bool,
    pub created_at: DateTime,
    pub device: Device,
    pub body: String,
}

#[derive(BsonSchema, Serialize, Deserialize)]
pub struct Device {
    pub os: String,
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "messages", shard_key(ticket_id = 1, at = 1))]
#[index(keys(ticket_id = 1, at = 1, client_id = 1), unique, name = "dedup")]
pub struct Message {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub ticket_id: ObjectId,
    pub client_id: String,
    pub at: DateTime,
}

#[derive(Document, Serialize, Deserialize)]
#[collection(name = "members")]
pub struct Member {
    #[serde(rename = "_id")]
    pub id: ObjectId,
}

/// Loans by member, newest first: the derive appends `_id` to such an index for the keyset
/// pages of a member's loans, unless `pages = false` keeps it as declared.
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "loans")]
#[index(keys(member_id = 1, loaned_at = -1), pages = false, name = "memberId_1_loanedAt_-1")]
pub struct Loan {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[reference]
    pub member_id: Ref<Member>,
    pub loaned_at: DateTime,
}

/// The same index without `pages = false`: extended, its declared name kept.
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "paged_loans")]
#[index(keys(member_id = 1, loaned_at = -1), name = "by_member")]
pub struct PagedLoan {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[reference]
    pub member_id: Ref<Member>,
    pub loaned_at: DateTime,
}

pub fn main() {
    let spec = Session::collection_spec();
    assert_eq!(
        spec.validation_level,
        mongo_schema::ValidationLevel::Moderate
    );
    assert_eq!(spec.validation_action, mongo_schema::ValidationAction::Warn);
    assert_eq!(spec.indexes.len(), 3);

    let token = &spec.indexes[0];
    assert_eq!(token.keys, doc! { "token": 1 });
    assert_eq!(token.name, "active_token");
    assert!(token.unique && !token.sparse);
    assert_eq!(token.partial_filter, Some(doc! { "revoked": false }));
    assert_eq!(token.expire_after_secs, None);

    let ttl = &spec.indexes[1];
    assert_eq!(ttl.keys, doc! { "created_at": 1 });
    assert_eq!(ttl.expire_after_secs, Some(3600));
    assert_eq!(ttl.name, "created_at_1");
    assert!(ttl.sparse);

    assert_eq!(
        spec.indexes[2].keys,
        doc! { "device.os": 1, "body": "text" }
    );

    let models = Session::indexes();
    let options = models[0].options.as_ref().unwrap();
    assert_eq!(options.unique, Some(true));
    assert_eq!(options.sparse, None);
    assert_eq!(models[1].options.as_ref().unwrap().sparse, Some(true));
    assert_eq!(
        models[1].options.as_ref().unwrap().expire_after,
        Some(std::time::Duration::from_secs(3600))
    );

    let spec = Message::collection_spec();
    assert_eq!(spec.shard_key, Some(doc! { "ticket_id": 1, "at": 1 }));
    // the unique index starts with the shard key, so it also serves as the shard key's index
    let keys: Vec<_> = spec.indexes.iter().map(|i| i.keys.clone()).collect();
    assert_eq!(keys, [doc! { "ticket_id": 1, "at": 1, "client_id": 1 }]);
    assert!(spec.indexes[0].unique);
    assert_eq!(spec.indexes[0].reasons.len(), 2);

    // `pages = false`: one index, as declared, which also serves the reference
    let spec = Loan::collection_spec();
    assert_eq!(spec.indexes.len(), 1);
    assert_eq!(
        spec.indexes[0].keys,
        doc! { "member_id": 1, "loaned_at": -1 }
    );
    assert_eq!(spec.indexes[0].name, "memberId_1_loanedAt_-1");
    assert!(matches!(
        spec.indexes[0].reasons.as_slice(),
        [
            mongo_schema::IndexReason::Declared,
            mongo_schema::IndexReason::Reference { .. }
        ]
    ));
    // the control: without it, the same index gains the `_id` tie-break
    let spec = PagedLoan::collection_spec();
    assert_eq!(spec.indexes.len(), 1);
    assert_eq!(
        spec.indexes[0].keys,
        doc! { "member_id": 1, "loaned_at": -1, "_id": -1 }
    );
    assert_eq!(spec.indexes[0].name, "by_member");
}
