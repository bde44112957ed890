//! Documents broken one way each are refused, the typed error naming the path and the rule,
//! beside a valid control document that is accepted.

use super::*;

// ---------------------------------------------------------------------------------------------
// broken documents

/// `valid` with the value at each dotted path set (or removed, with `None`).
fn edit(valid: &BsonDocument, edits: &[(&str, Option<Bson>)]) -> BsonDocument {
    let mut doc = Bson::Document(valid.clone());
    for (path, value) in edits {
        set_path(
            &mut doc,
            &path.split('.').collect::<Vec<_>>(),
            value.clone(),
        );
    }
    let Bson::Document(doc) = doc else {
        unreachable!("the root stays a document")
    };
    doc
}

/// One document broken one way, and the failure the typed error must report for it.
struct Broken {
    what: &'static str,
    document: BsonDocument,
    /// The path and rule of a failure the typed error must hold.
    failure: (&'static str, &'static str),
}

fn broken(
    what: &'static str,
    document: BsonDocument,
    failure: (&'static str, &'static str),
) -> Broken {
    Broken {
        what,
        document,
        failure,
    }
}

/// A model's valid document (as the driver writes it), built for a fresh id each call, and the
/// ways it is broken.
struct Model {
    collection: &'static str,
    valid: fn() -> BsonDocument,
    broken: fn(BsonDocument) -> Vec<Broken>,
}

fn to_doc<T: Serialize>(value: &T) -> BsonDocument {
    mongo_schema::bson::to_document(value).unwrap()
}

/// A number that differs every call, for ids that are not ObjectIds.
fn fresh() -> i64 {
    use std::sync::atomic::{AtomicI64, Ordering};
    static NEXT: AtomicI64 = AtomicI64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

fn s(text: &str) -> Option<Bson> {
    Some(Bson::String(text.into()))
}

fn models() -> Vec<Model> {
    vec![
        Model {
            collection: User::COLLECTION,
            valid: || {
                to_doc(&User {
                    id: ObjectId::new(),
                    email: "a@b.io".into(),
                    email_status: EmailStatus::Moving {
                        new_email: "c@d.io".into(),
                        token: "t".into(),
                        expiry: DateTime::from_millis(0),
                    },
                    display_name: None,
                    roles: vec![Role::Member],
                })
            },
            broken: |v| {
                vec![
                    broken(
                        "wrong tag",
                        edit(&v, &[("email_status.status", s("Lost"))]),
                        ("email_status", "oneOf"),
                    ),
                    broken(
                        "a missing field of its kind",
                        edit(&v, &[("email_status.expiry", None)]),
                        ("email_status.expiry", "required"),
                    ),
                    broken(
                        "the tag of another kind, its field missing",
                        edit(
                            &v,
                            &[
                                ("email_status.status", s("Pending")),
                                ("email_status.new_email", None),
                                ("email_status.expiry", None),
                            ],
                        ),
                        ("email_status.expiry", "required"),
                    ),
                    broken(
                        "a wrong type inside a kind",
                        edit(&v, &[("email_status.expiry", s("tomorrow"))]),
                        ("email_status.expiry", "bsonType"),
                    ),
                    broken(
                        "over-bound roles",
                        edit(
                            &v,
                            &[(
                                "roles",
                                Some(Bson::from(vec!["admin", "admin", "guest", "member"])),
                            )],
                        ),
                        ("roles", "maxItems"),
                    ),
                    broken(
                        "a field the closed root does not have",
                        edit(&v, &[("token", s("t"))]),
                        ("token", "additionalProperties"),
                    ),
                ]
            },
        },
        Model {
            collection: AuditEvent::COLLECTION,
            valid: || {
                to_doc(&AuditEvent::Login {
                    id: ObjectId::new(),
                    user: "ada".into(),
                    at: DateTime::from_millis(0),
                    ip: "10.0.0.1".into(),
                    mfa: false,
                })
            },
            broken: |v| {
                let granted = to_doc(&AuditEvent::RoleGranted {
                    id: ObjectId::new(),
                    user: "bob".into(),
                    role: Role::Admin,
                    by: "ada".into(),
                    at: DateTime::from_millis(0),
                });
                let exported = to_doc(&AuditEvent::DataExported {
                    id: ObjectId::new(),
                    user: "bob".into(),
                    at: DateTime::from_millis(0),
                    tables: vec![],
                });
                vec![
                    broken(
                        "an unknown kind",
                        edit(&v, &[("type", s("logout"))]),
                        ("", "oneOf"),
                    ),
                    broken(
                        "a missing field of its kind",
                        edit(&v, &[("ip", None)]),
                        ("ip", "required"),
                    ),
                    broken(
                        "a field of another kind (closed)",
                        edit(&granted, &[("ip", s("10.0.0.1"))]),
                        ("ip", "additionalProperties"),
                    ),
                    broken(
                        "the fields of one kind under another's tag",
                        edit(&v, &[("type", s("password_changed"))]),
                        ("mfa", "additionalProperties"),
                    ),
                    broken(
                        "a wrong unit variant",
                        edit(&granted, &[("role", s("root"))]),
                        ("role", "enum"),
                    ),
                    broken(
                        "over-bound tables",
                        edit(
                            &exported,
                            &[("tables", Some(Bson::from(vec!["a", "b", "c", "d"])))],
                        ),
                        ("tables", "maxItems"),
                    ),
                    broken("no tag", edit(&v, &[("type", None)]), ("type", "required")),
                ]
            },
        },
        Model {
            collection: Notification::COLLECTION,
            valid: || {
                to_doc(&Notification::Digest {
                    user_id: 1,
                    items: vec!["a".into()],
                })
            },
            broken: |v| {
                vec![
                    broken(
                        "an unknown kind",
                        edit(&v, &[("type", s("Reminder"))]),
                        ("", "oneOf"),
                    ),
                    broken(
                        "a field renamed by rename_all_fields written as in Rust",
                        edit(&v, &[("userId", None), ("user_id", Some(Bson::Int64(1)))]),
                        ("userId", "required"),
                    ),
                    broken(
                        "over-bound items",
                        edit(&v, &[("items", Some(Bson::from(vec!["a"; 6])))]),
                        ("items", "maxItems"),
                    ),
                    broken(
                        "a bound inside another kind",
                        edit(
                            &v,
                            &[
                                ("type", s("System")),
                                ("userId", None),
                                ("items", None),
                                ("message", s(&"x".repeat(201))),
                            ],
                        ),
                        ("message", "maxLength"),
                    ),
                ]
            },
        },
        Model {
            collection: Contact::COLLECTION,
            valid: || {
                to_doc(&Contact::Person {
                    id: fresh(),
                    first: "Ada".into(),
                    last: "Lovelace".into(),
                })
            },
            broken: |v| {
                vec![
                    broken(
                        "neither shape",
                        edit(&v, &[("last", None)]),
                        ("last", "required"),
                    ),
                    broken(
                        "a field of neither shape (closed)",
                        edit(&v, &[("vat", s("DE1"))]),
                        ("vat", "additionalProperties"),
                    ),
                    broken(
                        "a wrong id type",
                        edit(&v, &[("_id", s("c1"))]),
                        ("_id", "bsonType"),
                    ),
                ]
            },
        },
        Model {
            collection: Job::COLLECTION,
            valid: || {
                to_doc(&Job {
                    id: format!("job-{}", fresh()),
                    kind: "email".into(),
                    status: JobState::Failed {
                        error: "timeout".into(),
                        attempts: 3,
                    },
                    times: Timestamps {
                        created_at: DateTime::from_millis(0),
                        updated_at: DateTime::from_millis(0),
                    },
                })
            },
            broken: |v| {
                vec![
                    broken(
                        "an unknown state",
                        edit(&v, &[("state", s("paused"))]),
                        ("", "oneOf"),
                    ),
                    broken(
                        "a missing field of its state",
                        edit(
                            &v,
                            &[("state", s("running")), ("error", None), ("attempts", None)],
                        ),
                        ("worker", "required"),
                    ),
                    broken(
                        "a wrong type inside its state",
                        edit(&v, &[("attempts", s("three"))]),
                        ("attempts", "bsonType"),
                    ),
                    broken(
                        "a u32 out of range",
                        edit(&v, &[("attempts", Some(Bson::Int64(-1)))]),
                        ("attempts", "minimum"),
                    ),
                    broken("no state", edit(&v, &[("state", None)]), ("", "oneOf")),
                    broken(
                        "a flattened struct's field missing",
                        edit(&v, &[("updated_at", None)]),
                        ("updated_at", "required"),
                    ),
                    broken(
                        "a field of another state (closed)",
                        edit(&v, &[("worker", s("w1"))]),
                        ("worker", "additionalProperties"),
                    ),
                ]
            },
        },
        Model {
            collection: Member::COLLECTION,
            valid: || {
                to_doc(&Member {
                    id: MemberKey {
                        server: fresh(),
                        user: 7,
                    },
                    nickname: Some("ada".into()),
                    roles: [1, 2].into_iter().collect(),
                    joined_at: DateTime::from_millis(0),
                })
            },
            broken: |v| {
                vec![
                    broken(
                        "a wrong type in the composite id",
                        edit(&v, &[("_id.user", s("7"))]),
                        ("_id.user", "bsonType"),
                    ),
                    broken(
                        "a missing part of the composite id",
                        edit(&v, &[("_id.server", None)]),
                        ("_id.server", "required"),
                    ),
                    broken(
                        "an extra part of the closed composite id",
                        edit(&v, &[("_id.shard", Some(Bson::Int64(1)))]),
                        ("_id.shard", "additionalProperties"),
                    ),
                    broken(
                        "an ObjectId for the composite id",
                        edit(&v, &[("_id", Some(Bson::ObjectId(ObjectId::new())))]),
                        ("_id", "bsonType"),
                    ),
                    broken(
                        "duplicate roles in a set",
                        edit(&v, &[("roles", Some(Bson::from(vec![1i64, 1])))]),
                        ("roles", "uniqueItems"),
                    ),
                ]
            },
        },
        Model {
            collection: Profile::COLLECTION,
            valid: || {
                to_doc(&Profile {
                    id: UserId(format!("u_{}", fresh())),
                    handle: Handle("ada".into()),
                    referrer: None,
                    location: Some(GeoPoint(1.0, 2.0)),
                    friends: vec![UserId("u_bob".into())],
                })
            },
            broken: |v| {
                vec![
                    broken(
                        "a number for the newtype id",
                        edit(&v, &[("_id", Some(Bson::Int64(1)))]),
                        ("_id", "bsonType"),
                    ),
                    broken(
                        "the newtype id's pattern",
                        edit(&v, &[("_id", s("User-1"))]),
                        ("_id", "pattern"),
                    ),
                    broken(
                        "the newtype's pattern inside an Option",
                        edit(&v, &[("referrer", s("bob"))]),
                        ("referrer", "pattern"),
                    ),
                    broken(
                        "a plain newtype's bound",
                        edit(&v, &[("handle", s("a-handle-too-long"))]),
                        ("handle", "maxLength"),
                    ),
                    broken(
                        "a tuple struct of the wrong length",
                        edit(&v, &[("location", Some(Bson::from(vec![1.0, 2.0, 3.0])))]),
                        ("location", "maxItems"),
                    ),
                    broken(
                        "a newtype element of the wrong type",
                        edit(&v, &[("friends", Some(Bson::from(vec![1i64])))]),
                        ("friends.0", "bsonType"),
                    ),
                ]
            },
        },
        Model {
            collection: Preferences::COLLECTION,
            valid: || {
                let mut channels = HashMap::new();
                channels.insert(
                    "mobile".to_owned(),
                    Channel::Sms {
                        phone_number: "+49123".into(),
                    },
                );
                channels.insert("fax".to_owned(), Channel::Off);
                to_doc(&Preferences {
                    id: ObjectId::new(),
                    on_alert: Action::Notify(Channel::Email {
                        address: "a@b.io".into(),
                    }),
                    channels,
                    tags: [Tag {
                        name: "vip".into(),
                        color: Color::Red,
                    }]
                    .into_iter()
                    .collect(),
                })
            },
            broken: |v| {
                let eleven: BsonDocument = (0..11)
                    .map(|i| (format!("c{i}"), Bson::Document(doc! { "kind": "off" })))
                    .collect();
                let tag = doc! { "name": "vip", "color": "Red" };
                vec![
                    broken(
                        "the inner tag of a nested internally tagged enum",
                        edit(&v, &[("on_alert.kind", s("pager"))]),
                        ("on_alert", "oneOf"),
                    ),
                    broken(
                        "a missing field of the inner kind",
                        edit(&v, &[("on_alert.address", None)]),
                        ("on_alert.address", "required"),
                    ),
                    // a variant wrapping another tagged enum is not the kind meant: the
                    // failure inside `webhook` is named
                    broken(
                        "an optional field of a kind of the wrong type",
                        edit(
                            &v,
                            &[(
                                "on_alert",
                                Some(doc! { "action": "webhook", "url": "u", "secret": 1 }.into()),
                            )],
                        ),
                        ("on_alert.secret", "bsonType"),
                    ),
                    broken(
                        "over-bound map",
                        edit(&v, &[("channels", Some(Bson::Document(eleven)))]),
                        ("channels", "maxProperties"),
                    ),
                    broken(
                        "an unknown kind in the map",
                        edit(&v, &[("channels.fax.kind", s("fax"))]),
                        ("channels.fax", "oneOf"),
                    ),
                    broken(
                        "a missing field of its kind in the map",
                        edit(&v, &[("channels.mobile.phoneNumber", None)]),
                        ("channels.mobile.phoneNumber", "required"),
                    ),
                    broken(
                        "a duplicate in the set",
                        edit(
                            &v,
                            &[("tags", Some(Bson::from(vec![tag.clone(), tag.clone()])))],
                        ),
                        ("tags", "uniqueItems"),
                    ),
                    broken(
                        "over-bound set",
                        edit(
                            &v,
                            &[(
                                "tags",
                                Some(Bson::from(
                                    (0..5)
                                        .map(|i| doc! { "name": format!("t{i}"), "color": "Red" })
                                        .collect::<Vec<_>>(),
                                )),
                            )],
                        ),
                        ("tags", "maxItems"),
                    ),
                    broken(
                        "a wrong unit variant in a set element",
                        edit(&v, &[("tags.0.color", s("Pink"))]),
                        ("tags.0.color", "enum"),
                    ),
                    broken(
                        "a missing field of a set element",
                        edit(&v, &[("tags.0.name", None)]),
                        ("tags.0.name", "required"),
                    ),
                ]
            },
        },
        Model {
            collection: Invoice::COLLECTION,
            valid: || {
                to_doc(&Invoice {
                    id: fresh(),
                    total: 1234,
                    due: DateTime::from_millis(1_000),
                    api_version: SemVer {
                        major: 1,
                        minor: 2,
                        patch: 3,
                    },
                    sku: Sku {
                        vendor: "ACME".into(),
                        code: "1".into(),
                    },
                })
            },
            broken: |v| {
                vec![
                    broken(
                        "the cents as a number",
                        edit(&v, &[("total", Some(Bson::Int64(1234)))]),
                        ("total", "bsonType"),
                    ),
                    broken(
                        "the pattern of a serialize_with field",
                        edit(&v, &[("total", s("12.3"))]),
                        ("total", "pattern"),
                    ),
                    broken(
                        "a with = field written as a date",
                        edit(&v, &[("due", Some(Bson::DateTime(DateTime::now())))]),
                        ("due", "bsonType"),
                    ),
                    broken(
                        "a hand-written Serialize's value as a document",
                        edit(&v, &[("api_version", Some(doc! { "major": 1 }.into()))]),
                        ("api_version", "bsonType"),
                    ),
                    broken(
                        "an into = String value as a document",
                        edit(
                            &v,
                            &[("sku", Some(doc! { "vendor": "A", "code": "1" }.into()))],
                        ),
                        ("sku", "bsonType"),
                    ),
                ]
            },
        },
        Model {
            collection: PageView::COLLECTION,
            valid: || {
                to_doc(&PageView {
                    path: "/home".into(),
                    at: DateTime::from_millis(0),
                    referrers: vec!["https://a.com".into()],
                    duration_ms: Some(5),
                })
            },
            broken: |v| {
                vec![
                    broken(
                        "a wrong type",
                        edit(&v, &[("path", Some(Bson::Int32(1)))]),
                        ("path", "bsonType"),
                    ),
                    broken(
                        "a missing field",
                        edit(&v, &[("at", None)]),
                        ("at", "required"),
                    ),
                    broken(
                        "over-bound referrers",
                        edit(&v, &[("referrers", Some(Bson::from(vec!["a"; 4])))]),
                        ("referrers", "maxItems"),
                    ),
                    broken(
                        "a field the closed root does not have",
                        edit(&v, &[("user", s("ada"))]),
                        ("user", "additionalProperties"),
                    ),
                    broken(
                        "an _id other than the server's ObjectId",
                        edit(&v, &[("_id", s("view-1"))]),
                        ("_id", "bsonType"),
                    ),
                ]
            },
        },
        Model {
            collection: Comment::COLLECTION,
            valid: || {
                to_doc(&Comment {
                    id: None,
                    author: "ada".into(),
                    body: "hi".into(),
                    likes: 1,
                })
            },
            broken: |v| {
                vec![
                    broken(
                        "a string id",
                        edit(&v, &[("_id", s("c1"))]),
                        ("_id", "bsonType"),
                    ),
                    // serde never writes a null `_id` for a skipped `Option`: refused
                    broken(
                        "a null id",
                        edit(&v, &[("_id", Some(Bson::Null))]),
                        ("_id", "bsonType"),
                    ),
                    broken(
                        "a missing field",
                        edit(&v, &[("body", None)]),
                        ("body", "required"),
                    ),
                    broken(
                        "an i32 out of range",
                        edit(&v, &[("likes", Some(Bson::Int64(1 << 40)))]),
                        ("likes", "bsonType"),
                    ),
                    broken(
                        "a field the closed root does not have",
                        edit(&v, &[("title", s("x"))]),
                        ("title", "additionalProperties"),
                    ),
                ]
            },
        },
        Model {
            collection: Payment::COLLECTION,
            valid: || {
                to_doc(&Payment {
                    id: ObjectId::new(),
                    method: PaymentMethod::Card {
                        last4: "4242".into(),
                        brand: CardBrand::Visa,
                    },
                    events: vec![PaymentEvent::Created, PaymentEvent::Captured(5)],
                    last_event: PaymentEvent::Authorized {
                        amount: 5,
                        currency: "EUR".into(),
                    },
                })
            },
            broken: |v| {
                vec![
                    broken(
                        "an unknown variant",
                        edit(&v, &[("method", Some(doc! { "Crypto": "btc" }.into()))]),
                        ("method", "oneOf"),
                    ),
                    broken(
                        "an unknown unit variant",
                        edit(&v, &[("method", s("Cheque"))]),
                        ("method", "enum"),
                    ),
                    broken(
                        "a missing field of a struct variant",
                        edit(&v, &[("method.Card.last4", None)]),
                        ("method.Card.last4", "required"),
                    ),
                    broken(
                        "a pattern inside a struct variant",
                        edit(&v, &[("method.Card.last4", s("42"))]),
                        ("method.Card.last4", "pattern"),
                    ),
                    broken(
                        "a tuple variant of the wrong length",
                        edit(&v, &[("method", Some(doc! { "Split": [1i64] }.into()))]),
                        ("method.Split", "minItems"),
                    ),
                    broken(
                        "an over-bound newtype collection",
                        edit(
                            &v,
                            &[(
                                "method",
                                Some(doc! { "Wallets": ["a", "b", "c", "d"] }.into()),
                            )],
                        ),
                        ("method.Wallets", "maxItems"),
                    ),
                    broken(
                        "adjacent content of another kind",
                        edit(&v, &[("last_event.data", s("five"))]),
                        ("last_event.data", "bsonType"),
                    ),
                    broken(
                        "an unknown adjacent tag",
                        edit(&v, &[("last_event.type", s("voided"))]),
                        ("last_event", "oneOf"),
                    ),
                    broken(
                        "an adjacent unit with content",
                        edit(
                            &v,
                            &[(
                                "events.0",
                                Some(doc! { "type": "created", "data": 1 }.into()),
                            )],
                        ),
                        ("events.0.data", "additionalProperties"),
                    ),
                    broken(
                        "over-bound events",
                        edit(
                            &v,
                            &[(
                                "events",
                                Some(Bson::from(vec![doc! { "type": "created" }; 5])),
                            )],
                        ),
                        ("events", "maxItems"),
                    ),
                ]
            },
        },
        Model {
            collection: Ticket::COLLECTION,
            valid: || {
                to_doc(&Ticket {
                    id: fresh(),
                    title: "printer".into(),
                    assignee: Some(Assignee::Name("ada".into())),
                    priority: Some(Priority::VeryHigh),
                    previous_state: Some(JobState::Queued),
                    reopen_count: 0,
                    watchers: vec![Assignee::Id(1)],
                    created_at: DateTime::from_millis(0),
                    source: Source::Other("phone".into()),
                })
            },
            broken: |v| {
                vec![
                    broken(
                        "an untagged fallback variant over its bound",
                        edit(&v, &[("source", s(&"x".repeat(21)))]),
                        // a long string could be a misspelt unit variant as well as an over-long
                        // fallback: no branch is named, the `anyOf` is
                        ("source", "anyOf"),
                    ),
                    broken(
                        "an untagged fallback variant of the wrong type",
                        edit(&v, &[("source", Some(Bson::Int32(1)))]),
                        ("source", "anyOf"),
                    ),
                    broken(
                        "an untagged value of neither shape",
                        edit(&v, &[("assignee", Some(Bson::Boolean(true)))]),
                        ("assignee", "anyOf"),
                    ),
                    broken(
                        "an untagged branch's bound",
                        edit(&v, &[("assignee", s(&"x".repeat(31)))]),
                        ("assignee", "maxLength"),
                    ),
                    broken(
                        "a unit variant spelled in Rust instead of camelCase",
                        edit(&v, &[("priority", s("VeryHigh"))]),
                        ("priority", "enum"),
                    ),
                    broken(
                        "a field spelled in Rust instead of camelCase",
                        edit(
                            &v,
                            &[
                                ("createdAt", None),
                                ("created_at", Some(Bson::DateTime(DateTime::now()))),
                            ],
                        ),
                        ("createdAt", "required"),
                    ),
                    broken(
                        "a #[serde(default)] field of the wrong type",
                        edit(&v, &[("reopenCount", s("0"))]),
                        ("reopenCount", "bsonType"),
                    ),
                    broken(
                        "an Option<Enum> of an unknown state",
                        edit(
                            &v,
                            &[("previousState", Some(doc! { "state": "paused" }.into()))],
                        ),
                        ("previousState", "oneOf"),
                    ),
                    broken(
                        "over-bound watchers",
                        edit(&v, &[("watchers", Some(Bson::from(vec![1i64; 4])))]),
                        ("watchers", "maxItems"),
                    ),
                ]
            },
        },
        Model {
            collection: TenantSettings::COLLECTION,
            valid: || {
                to_doc(&TenantSettings {
                    id: format!("t{}", fresh()),
                    plan: Role::Admin,
                    extra: [("x_theme".to_owned(), "dark".to_owned())]
                        .into_iter()
                        .collect(),
                })
            },
            broken: |v| {
                vec![
                    broken(
                        "a flattened map's value of the wrong type",
                        edit(&v, &[("x_theme", Some(Bson::Int32(1)))]),
                        ("x_theme", "bsonType"),
                    ),
                    broken(
                        "an over-bound flattened map",
                        edit(&v, &[("x_a", s("1")), ("x_b", s("2")), ("x_c", s("3"))]),
                        ("", "maxProperties"),
                    ),
                    broken(
                        "a missing field next to the map",
                        edit(&v, &[("plan", None)]),
                        ("plan", "required"),
                    ),
                ]
            },
        },
        Model {
            collection: Reminder::COLLECTION,
            valid: || {
                to_doc(&Reminder::Daily {
                    id: None,
                    user_id: 1,
                    hour: 7,
                })
            },
            broken: |v| {
                vec![
                    broken(
                        "a bound inside a kind",
                        edit(&v, &[("hour", Some(Bson::Int32(24)))]),
                        ("hour", "maximum"),
                    ),
                    broken(
                        "a string id in a kind",
                        edit(&v, &[("_id", s("r1"))]),
                        ("_id", "bsonType"),
                    ),
                    broken(
                        "a field of another kind (closed)",
                        edit(&v, &[("at", Some(Bson::DateTime(DateTime::now())))]),
                        ("at", "additionalProperties"),
                    ),
                    broken(
                        "a variant spelled in Rust instead of camelCase",
                        edit(&v, &[("kind", s("Daily"))]),
                        ("", "oneOf"),
                    ),
                ]
            },
        },
        Model {
            collection: Activity::COLLECTION,
            valid: || {
                to_doc(&Activity::Commented {
                    id: ObjectId::new(),
                    base: ActivityBase {
                        actor: "ada".into(),
                        at: DateTime::from_millis(0),
                    },
                    text: "hi".into(),
                    reply_to: None,
                })
            },
            broken: |v| {
                vec![
                    broken(
                        "a flattened common field missing in a kind",
                        edit(&v, &[("actor", None)]),
                        ("actor", "required"),
                    ),
                    broken(
                        "a flattened common field of the wrong type",
                        edit(&v, &[("at", s("now"))]),
                        ("at", "bsonType"),
                    ),
                    broken(
                        "a field of another kind (closed)",
                        edit(&v, &[("kind", s("liked"))]),
                        ("text", "additionalProperties"),
                    ),
                    broken(
                        "an optional field of the wrong type",
                        edit(&v, &[("reply_to", s("x"))]),
                        ("reply_to", "bsonType"),
                    ),
                ]
            },
        },
        Model {
            collection: CatalogItem::COLLECTION,
            valid: || {
                to_doc(&CatalogItem {
                    id: ObjectId::new(),
                    packaging: Packaging::InABox(Boxed {
                        label: "A4".into(),
                        size: Dimensions {
                            width: 1.0,
                            height: 2.0,
                        },
                    }),
                    price: Price::Range { min: 1, max: 2 },
                    attributes: vec![Attr("w".into(), 1)],
                    warehouse: Some(Box::new(Address {
                        city: "Lyon".into(),
                    })),
                    meta: Some(Meta {
                        source: "erp".into(),
                        imported_at: DateTime::from_millis(0),
                    }),
                })
            },
            broken: |v| {
                vec![
                    broken(
                        "a kebab-case tag spelled in Rust",
                        edit(&v, &[("packaging.type", s("InABox"))]),
                        ("packaging", "oneOf"),
                    ),
                    broken(
                        "a field the wrapped struct flattens, missing",
                        edit(&v, &[("packaging.height", None)]),
                        ("packaging.height", "required"),
                    ),
                    broken(
                        "an over-bound array skipped when empty",
                        edit(
                            &v,
                            &[(
                                "packaging",
                                Some(
                                    doc! { "type": "on-pallet", "stacked_with": ["a", "b", "c", "d"] }
                                        .into(),
                                ),
                            )],
                        ),
                        ("packaging.stacked_with", "maxItems"),
                    ),
                    broken(
                        "an untagged struct of neither shape",
                        edit(&v, &[("price", Some(doc! { "min": 1_i64 }.into()))]),
                        ("price", "anyOf"),
                    ),
                    broken(
                        "a pair of the wrong shape",
                        edit(&v, &[("attributes.0", Some(Bson::from(vec!["w"])))]),
                        ("attributes.0", "minItems"),
                    ),
                    broken(
                        "a boxed struct's field of the wrong type",
                        edit(&v, &[("warehouse.city", Some(Bson::Int32(1)))]),
                        ("warehouse.city", "bsonType"),
                    ),
                    broken(
                        "half of a flattened Option struct",
                        edit(&v, &[("imported_at", s("yesterday"))]),
                        ("imported_at", "bsonType"),
                    ),
                ]
            },
        },
        Model {
            collection: Shipment::COLLECTION,
            valid: || {
                to_doc(&Shipment {
                    id: ShipmentId(ObjectId::new()),
                    tracking: mongo_schema::bson::Uuid::new(),
                    delivered_at: Some(DateTime::from_millis(5_000)),
                    level: Level::High,
                })
            },
            broken: |v| {
                vec![
                    broken(
                        "a string for the ObjectId newtype id",
                        edit(&v, &[("_id", s("s1"))]),
                        ("_id", "bsonType"),
                    ),
                    broken(
                        "a string for the UUID",
                        edit(&v, &[("tracking", s("0000"))]),
                        ("tracking", "bsonType"),
                    ),
                    broken(
                        "an optional with = helper's value as a date",
                        edit(
                            &v,
                            &[("delivered_at", Some(Bson::DateTime(DateTime::now())))],
                        ),
                        ("delivered_at", "bsonType"),
                    ),
                    broken(
                        "a hand-written enum written by name",
                        edit(&v, &[("level", s("High"))]),
                        ("level", "bsonType"),
                    ),
                ]
            },
        },
    ]
}

/// Inserts `document` raw and returns the typed validation error, or what went wrong.
async fn refused(
    db: &mongodb::Database,
    collection: &str,
    document: &BsonDocument,
) -> Result<ValidationError, String> {
    let error = db
        .collection::<BsonDocument>(collection)
        .insert_one(document)
        .await
        .in_collection(collection)
        .err()
        .ok_or_else(|| format!("accepted: {document}"))?;
    error
        .as_validation()
        .cloned()
        .ok_or_else(|| format!("not a validation error: {error}"))
}

#[test]
fn documents_broken_one_way_are_refused_naming_path_and_rule() {
    let live = live("shapes_broken");
    live.runtime.block_on(async {
        let db = &live.db;
        let mut checked = 0;
        let mut problems = Vec::new();
        for model in models() {
            let raw = db.collection::<BsonDocument>(model.collection);
            let cases = (model.broken)((model.valid)());
            for case in &cases {
                // the control: a valid document of the same model is accepted
                raw.insert_one((model.valid)()).await.unwrap_or_else(|e| {
                    panic!(
                        "{}: {}: the valid control: {e}",
                        model.collection, case.what
                    )
                });
                let (path, rule) = case.failure;
                match refused(db, model.collection, &case.document).await {
                    Ok(v) if v.failures.iter().any(|f| f.path == path && f.rule == rule) => {
                        println!("{}: {}: {v}", model.collection, case.what);
                        checked += 1;
                    }
                    Ok(v) => problems.push(format!(
                        "{}: {}: expected `{path}` fails `{rule}`, got {v}",
                        model.collection, case.what
                    )),
                    Err(e) => problems.push(format!("{}: {}: {e}", model.collection, case.what)),
                }
            }
            assert_eq!(
                raw.count_documents(doc! {}).await.unwrap(),
                cases.len() as u64,
                "{}: only the controls were stored",
                model.collection
            );
        }
        assert!(problems.is_empty(), "{}", problems.join("\n"));
        println!("{checked} broken documents refused, each naming its path and rule");
    });
}
