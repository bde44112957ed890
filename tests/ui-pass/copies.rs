//! Extended references with every sync strategy and both subset shapes: the copy types the
//! derive generates, their schema, serde and `From`, the copy and subset tables, the fan-out
//! indexes and the update helpers.

use mongo_schema::bson::{doc, Bson};
use mongo_schema::prelude::*;
use mongo_schema::{CopyShape, IndexReason, OnDelete, SyncStrategy};
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "customers")]
pub struct Customer {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[schema(min_length = 1, max_length = 80)]
    pub name: String,
    #[serde(rename = "mail")]
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
pub struct Ticket {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub subject: String,
    #[extended_ref(to = Customer, fields = "name, email", sync = "transactional")]
    pub customer: TicketCustomer,
    #[extended_ref(to = Agent, fields = "display_name", sync = "async")]
    pub assignee: Option<TicketAssignee>,
    #[embed(max = 5, cap)]
    pub history: Vec<StatusChange>,
    #[subset(of = Message, max = 1, sort = "-at", count = "message_count")]
    pub last_message: Option<MessagePreview>,
    pub message_count: i64,
    #[subset(of = Message, max = 3, sort = "-at")]
    pub recent: Vec<MessagePreview>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "messages")]
pub struct Message {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[reference]
    pub ticket_id: Ref<Ticket>,
    pub body: String,
    pub at: DateTime,
}

/// A frozen snapshot, with the copy type named by `as`.
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "orders")]
pub struct Order {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[extended_ref(to = Customer, fields = "name", sync = "frozen", as = BilledCustomer)]
    pub customer: BilledCustomer,
    pub total: f64,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "parts")]
pub struct Part {
    #[serde(rename = "_id")]
    pub id: String,
    pub name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "products")]
pub struct Product {
    #[serde(rename = "_id")]
    pub id: String,
    #[extended_ref(to = Part, fields = "name", sync = "reconcile", max = 50)]
    pub parts: Vec<ProductParts>,
}

/// What a deletion of the source does: `unset` on an optional copy, `keep` spelled out.
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "incidents")]
pub struct Incident {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[extended_ref(to = Agent, fields = "display_name", sync = "async", on_delete = "unset")]
    pub responder: Option<IncidentResponder>,
    #[extended_ref(to = Customer, fields = "name", sync = "transactional", on_delete = "keep")]
    pub reporter: IncidentReporter,
    #[extended_ref(to = Customer, fields = "name", sync = "transactional", on_delete = "unset")]
    pub watcher: Option<IncidentWatcher>,
}

fn index_keys(spec: &mongo_schema::CollectionSpec) -> Vec<mongo_schema::bson::Document> {
    spec.indexes.iter().map(|i| i.keys.clone()).collect()
}

/// A holder written by a `macro_rules!`, as a service that generates its models would: an
/// attribute's value passed in by the macro (`name = $collection`) reads as written.
macro_rules! holder {
    ($name:ident, $collection:literal) => {
        #[derive(Document, Serialize, Deserialize, Debug, Clone)]
        #[collection(name = $collection)]
        pub struct $name {
            #[serde(rename = "_id")]
            pub id: ObjectId,
            #[extended_ref(to = Customer, fields = "name", sync = "transactional")]
            pub customer: NoteCustomer,
        }
    };
}

holder!(Note, "notes");

pub fn main() {
    let customer = Customer {
        id: ObjectId::new(),
        name: "Ada".into(),
        email: "ada@example.com".into(),
    };
    let copy = NoteCustomer::from(&customer);
    assert_eq!((copy.id, copy.name.as_str()), (customer.id, "Ada"));

    // The copy and subset tables.
    let spec = Ticket::collection_spec();
    assert_eq!(spec.copies.len(), 2);
    let customer = &spec.copies[0];
    assert_eq!(customer.path, "customer");
    assert_eq!(customer.source, "customers");
    assert_eq!(customer.source_type, "Customer");
    assert_eq!(customer.fields, ["name", "mail"]);
    assert_eq!(customer.strategy, SyncStrategy::Transactional);
    assert_eq!(customer.shape, CopyShape::One);
    assert_eq!(customer.id_path(), "customer._id");
    let assignee = &spec.copies[1];
    assert_eq!(assignee.path, "assignee");
    assert_eq!(assignee.source, "agents");
    assert_eq!(assignee.fields, ["displayName"]);
    assert_eq!(assignee.strategy, SyncStrategy::Async);
    assert_eq!(assignee.shape, CopyShape::Optional);

    assert_eq!(spec.subsets.len(), 2);
    let last = &spec.subsets[0];
    assert_eq!(last.path, "last_message");
    assert_eq!(last.child, "messages");
    assert_eq!(last.max, 1);
    assert_eq!(last.sort_field, "at");
    assert_eq!(last.sort_direction, -1);
    assert_eq!(last.count.as_deref(), Some("message_count"));
    let recent = &spec.subsets[1];
    assert_eq!(recent.path, "recent");
    assert_eq!(recent.max, 3);
    assert_eq!(recent.count, None);

    // Fan-out indexes for every non-frozen copy (the copied id, then `_id`: the walk of the
    // holders in `_id` order), none for the frozen one.
    let keys = index_keys(&spec);
    assert!(
        keys.contains(&doc! { "customer._id": 1, "_id": 1 }),
        "{keys:?}"
    );
    assert!(
        keys.contains(&doc! { "assignee._id": 1, "_id": 1 }),
        "{keys:?}"
    );
    let fan_out = spec
        .indexes
        .iter()
        .find(|i| i.keys == doc! { "customer._id": 1, "_id": 1 })
        .unwrap();
    assert!(fan_out.reasons.contains(&IndexReason::FanOut {
        path: "customer".into(),
        source: "customers".into(),
    }));
    let order = Order::collection_spec();
    assert_eq!(order.copies.len(), 1);
    assert_eq!(order.copies[0].strategy, SyncStrategy::Frozen);
    assert!(
        order
            .indexes
            .iter()
            .all(|i| !i.keys.contains_key("customer._id")),
        "{:?}",
        order.indexes
    );
    // `on_delete`: keep unless `unset` is written.
    assert!(spec.copies.iter().all(|c| c.on_delete == OnDelete::Keep));
    let incident = Incident::collection_spec();
    assert_eq!(incident.copies.len(), 3);
    assert_eq!(incident.copies[0].path, "responder");
    assert_eq!(incident.copies[0].on_delete, OnDelete::Unset);
    assert_eq!(incident.copies[0].shape, CopyShape::Optional);
    assert_eq!(incident.copies[1].path, "reporter");
    assert_eq!(incident.copies[1].on_delete, OnDelete::Keep);
    assert_eq!(incident.copies[2].path, "watcher");
    assert_eq!(incident.copies[2].on_delete, OnDelete::Unset);
    assert_eq!(incident.copies[2].strategy, SyncStrategy::Transactional);
    let product = Product::collection_spec();
    assert_eq!(product.copies[0].strategy, SyncStrategy::Reconcile);
    assert_eq!(product.copies[0].shape, CopyShape::Many);
    assert!(index_keys(&product).contains(&doc! { "parts._id": 1, "_id": 1 }));

    // The copy's schema carries the source's constraints and stored names.
    let validator = Ticket::validator();
    let properties = validator
        .get_document("$jsonSchema")
        .unwrap()
        .get_document("properties")
        .unwrap();
    let copy = properties.get_document("customer").unwrap();
    let required: Vec<&str> = copy
        .get_array("required")
        .unwrap()
        .iter()
        .map(|b| b.as_str().unwrap())
        .collect();
    assert_eq!(required, ["_id", "name", "mail"]);
    let copied = copy.get_document("properties").unwrap();
    assert_eq!(
        copied.get_document("_id").unwrap(),
        &doc! { "bsonType": "objectId" }
    );
    let name = copied.get_document("name").unwrap();
    assert_eq!(name.get_str("bsonType"), Ok("string"));
    assert_eq!(name.get("minLength").and_then(Bson::as_i64), Some(1));
    assert_eq!(name.get("maxLength").and_then(Bson::as_i64), Some(80));
    assert!(copied.contains_key("mail") && !copied.contains_key("email"));
    let products = Product::validator();
    let parts = products
        .get_document("$jsonSchema")
        .unwrap()
        .get_document("properties")
        .unwrap()
        .get_document("parts")
        .unwrap();
    assert_eq!(parts.get_str("bsonType"), Ok("array"));
    assert_eq!(parts.get("maxItems").and_then(Bson::as_i64), Some(50));

    // The copy is built from its source and round-trips with the stored names.
    let source = Customer {
        id: ObjectId::new(),
        name: "Ada".into(),
        email: "ada@example.org".into(),
    };
    let copy = TicketCustomer::from(&source);
    assert_eq!(copy.id, source.id);
    assert_eq!(copy.name, "Ada");
    assert_eq!(copy.email, "ada@example.org");
    let stored = mongo_schema::bson::to_document(&copy).unwrap();
    assert_eq!(
        stored,
        doc! { "_id": source.id, "name": "Ada", "mail": "ada@example.org" }
    );
    let back: TicketCustomer = mongo_schema::bson::from_document(stored).unwrap();
    assert_eq!(back, copy);
    let billed = BilledCustomer::from(&source);
    assert_eq!(billed.name, "Ada");
    let part = Part {
        id: "p-1".into(),
        name: "bolt".into(),
    };
    let copied_part: ProductParts = (&part).into();
    assert_eq!(copied_part.id, "p-1");

    // A whole ticket round-trips too.
    let agent = Agent {
        id: ObjectId::new(),
        display_name: "Grace".into(),
        team: "L1".into(),
    };
    let ticket = Ticket {
        id: ObjectId::new(),
        subject: "printer".into(),
        customer: (&source).into(),
        assignee: Some((&agent).into()),
        history: vec![],
        last_message: None,
        message_count: 0,
        recent: vec![],
    };
    let stored = mongo_schema::bson::to_document(&ticket).unwrap();
    assert_eq!(
        stored.get_document("assignee").unwrap(),
        &doc! { "_id": agent.id, "displayName": "Grace" }
    );
    let back: Ticket = mongo_schema::bson::from_document(stored).unwrap();
    assert_eq!(back, ticket);

    // The update helpers: a capped push, a `$set` preview and a sorted, sliced push.
    let change = StatusChange {
        status: Status::Closed,
        at: DateTime::now(),
    };
    let update = Ticket::HISTORY.push_update(&[change]).unwrap();
    let push = update
        .get_document("$push")
        .unwrap()
        .get_document("history")
        .unwrap();
    assert_eq!(push.get("$slice").and_then(Bson::as_i64), Some(-5));
    assert_eq!(push.get_array("$each").unwrap().len(), 1);
    assert_eq!(Ticket::HISTORY.max(), 5);

    assert_eq!(Ticket::LAST_MESSAGE.path(), "last_message");
    assert_eq!(Ticket::RECENT.path(), "recent");
    let preview = MessagePreview {
        preview: "hello".into(),
        at: DateTime::now(),
    };
    let (condition, update) = Ticket::LAST_MESSAGE.update_for(&preview).unwrap();
    assert!(condition.is_some());
    assert!(update
        .get_document("$set")
        .unwrap()
        .contains_key("last_message"));
    assert_eq!(
        update.get_document("$inc").unwrap(),
        &doc! { "message_count": 1_i64 }
    );
    let (condition, update) = Ticket::RECENT.update_for(&preview).unwrap();
    assert!(condition.is_none());
    let push = update
        .get_document("$push")
        .unwrap()
        .get_document("recent")
        .unwrap();
    assert_eq!(push.get_document("$sort").unwrap(), &doc! { "at": -1 });
    assert_eq!(push.get("$slice").and_then(Bson::as_i64), Some(3));
    assert!(!update.contains_key("$inc"));
    assert_eq!(Ticket::LAST_MESSAGE.parent_field().unwrap(), "ticket_id");
}
