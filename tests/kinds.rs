//! Whole-document enums (one collection, several kinds) and documents without `_id`, on the
//! real server: each kind accepted and read back, a partial index per declared kind, every kind
//! closed, the worst-case size that of the largest kind, and a description the derive cannot
//! see through (two flattened parts storing one name) refused by `Schema::build`.

mod common;

use mongo_schema::bson::{doc, Bson, Document as BsonDocument};
use mongo_schema::prelude::*;
use mongo_schema::SizeBound;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "notifications", additional_properties = false)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum Notification {
    #[index(keys(user_id = 1, sent_at = -1))]
    Mention {
        #[serde(rename = "_id")]
        id: ObjectId,
        user_id: i64,
        #[schema(max_length = 140)]
        excerpt: String,
        sent_at: DateTime,
    },
    #[index(keys(user_id = 1), unique, name = "one_digest_per_user")]
    Digest {
        #[serde(rename = "_id")]
        id: ObjectId,
        user_id: i64,
        #[embed(max = 20)]
        #[schema(max_length = 80)]
        titles: Vec<String>,
    },
    Broadcast {
        #[serde(rename = "_id")]
        id: ObjectId,
        #[schema(max_length = 500)]
        body: String,
    },
}

/// Kinds without `_id`: the server assigns an ObjectId to every kind.
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "metrics", additional_properties = false)]
#[serde(untagged)]
pub enum Metric {
    Counter {
        name: String,
        count: i64,
    },
    Gauge {
        name: String,
        value: f64,
        unit: String,
    },
}

/// No `_id` field at all, closed.
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "log_lines", additional_properties = false)]
pub struct LogLine {
    pub level: String,
    pub message: String,
}

/// An optional `_id` skipped when `None`: the server assigns it.
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "contacts", additional_properties = false)]
pub struct Contact {
    #[serde(rename = "_id", skip_serializing_if = "Option::is_none")]
    pub id: Option<ObjectId>,
    pub email: String,
}

fn schema() -> Schema {
    Schema::new()
        .model::<Notification>()
        .model::<Metric>()
        .model::<LogLine>()
        .model::<Contact>()
        .build()
        .unwrap()
}

#[tokio::test]
async fn every_kind_is_accepted_read_back_and_indexed_on_its_own() {
    let db = mongo_schema_testkit::database("kinds").await;
    schema().apply(&db).await.unwrap();
    let notifications = Notification::collection(&db);
    let all = vec![
        Notification::Mention {
            id: ObjectId::new(),
            user_id: 7,
            excerpt: "@ada look".into(),
            sent_at: DateTime::from_millis(1),
        },
        Notification::Digest {
            id: ObjectId::new(),
            user_id: 7,
            titles: vec!["a".into(), "b".into()],
        },
        Notification::Broadcast {
            id: ObjectId::new(),
            body: "maintenance at noon".into(),
        },
    ];
    notifications.insert_many(&all).await.unwrap();
    for n in &all {
        let read = notifications
            .find_one(doc! { "_id": n.id() })
            .await
            .unwrap();
        assert_eq!(read.as_ref(), Some(n));
    }
    let raw = db.collection::<BsonDocument>("notifications");
    let stored = raw
        .find_one(doc! { "_id": all[1].id() })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        stored.get_str("type"),
        Ok("digest"),
        "tag as serde writes it"
    );
    assert!(
        stored.contains_key("userId"),
        "rename_all_fields applied: {stored}"
    );

    // the indexes of a kind are partial on its tag, and named after it unless named
    let indexes: Vec<BsonDocument> = {
        common::all(raw.list_indexes())
            .await
            .into_iter()
            .map(|m| mongo_schema::bson::to_document(&m).unwrap())
            .collect()
    };
    let find = |name: &str| {
        indexes
            .iter()
            .find(|i| i.get_str("name") == Ok(name))
            .unwrap_or_else(|| panic!("index {name} in {indexes:?}"))
            .clone()
    };
    let options = find("userId_1_sentAt_-1_mention");
    assert_eq!(
        options.get_document("partialFilterExpression").unwrap(),
        &doc! { "type": "mention" }
    );
    let options = find("one_digest_per_user");
    assert_eq!(options.get_bool("unique"), Ok(true));
    assert_eq!(
        options.get_document("partialFilterExpression").unwrap(),
        &doc! { "type": "digest" }
    );
    // the unique index holds within its kind only: a mention of user 7 is not a second digest
    notifications
        .insert_one(Notification::Mention {
            id: ObjectId::new(),
            user_id: 7,
            excerpt: "again".into(),
            sent_at: DateTime::from_millis(2),
        })
        .await
        .unwrap();
    let second_digest = notifications
        .insert_one(Notification::Digest {
            id: ObjectId::new(),
            user_id: 7,
            titles: vec![],
        })
        .await
        .in_collection(Notification::COLLECTION)
        .unwrap_err();
    assert!(
        matches!(second_digest, mongo_schema::Error::Duplicate { .. }),
        "{second_digest}"
    );

    // a second apply has nothing to do
    let again = schema().apply(&db).await.unwrap();
    assert!(again.applied.is_empty(), "{again}");

    // the audit counts each kind: 2 mentions, 1 digest, 1 broadcast
    let audit = schema().audit(&db).await.unwrap();
    let notifications = audit
        .collections
        .iter()
        .find(|c| c.collection == "notifications")
        .unwrap();
    assert_eq!(
        notifications.kinds,
        [
            ("type = \"mention\"".to_owned(), 2),
            ("type = \"digest\"".to_owned(), 1),
            ("type = \"broadcast\"".to_owned(), 1),
        ]
    );
    assert!(
        // display-text: the audit's table, read by a person
        audit.to_string().contains("kinds: type = \"mention\": 2"),
        "{audit}"
    );
    let lines = audit
        .collections
        .iter()
        .find(|c| c.collection == "log_lines")
        .unwrap();
    assert!(lines.kinds.is_empty(), "one kind: no per-kind counts");
}

#[tokio::test]
async fn kinds_are_closed_and_a_broken_kind_is_refused_naming_the_rule() {
    let db = mongo_schema_testkit::database("kinds_broken").await;
    schema().apply(&db).await.unwrap();
    let raw = db.collection::<BsonDocument>("notifications");
    // the control: a valid broadcast, written by hand, is accepted
    raw.insert_one(doc! { "type": "broadcast", "body": "hi" })
        .await
        .unwrap();
    let broken = [
        ("unknown kind", doc! { "type": "poke", "body": "hi" }),
        (
            "field of another kind",
            doc! { "type": "broadcast", "body": "hi", "userId": 1_i64 },
        ),
        (
            "missing field of its kind",
            doc! { "type": "mention", "userId": 1_i64, "excerpt": "x" },
        ),
        (
            "bound inside a kind",
            doc! { "type": "broadcast", "body": "x".repeat(501) },
        ),
        ("no tag", doc! { "body": "hi" }),
    ];
    for (what, document) in broken {
        let error = raw
            .insert_one(&document)
            .await
            .in_collection("notifications")
            .expect_err(what);
        let v = error
            .as_validation()
            .unwrap_or_else(|| panic!("{what}: {error}"));
        assert!(
            v.failures.iter().any(|f| f.rule == "oneOf"),
            "{what}: the kinds' `oneOf` is named: {v}"
        );
    }
    assert_eq!(raw.count_documents(doc! {}).await.unwrap(), 1);
}

#[tokio::test]
async fn documents_without_id_get_the_servers_objectid() {
    let db = mongo_schema_testkit::database("no_id").await;
    schema().apply(&db).await.unwrap();
    let metrics = Metric::collection(&db);
    let gauge = Metric::Gauge {
        name: "cpu".into(),
        value: 0.5,
        unit: "ratio".into(),
    };
    let id = metrics.insert_one(&gauge).await.unwrap().inserted_id;
    assert!(matches!(id, Bson::ObjectId(_)));
    metrics
        .insert_one(Metric::Counter {
            name: "hits".into(),
            count: 3,
        })
        .await
        .unwrap();
    let read = metrics.find_one(doc! { "_id": &id }).await.unwrap();
    assert_eq!(read, Some(gauge));
    // closed: an untagged kind with an extra field matches no branch
    let raw = db.collection::<BsonDocument>("metrics");
    raw.insert_one(doc! { "name": "n", "count": 1_i64, "unit": "u" })
        .await
        .in_collection("metrics")
        .expect_err("a counter with a gauge's field is refused");

    let lines = LogLine::collection(&db);
    let line = LogLine {
        level: "info".into(),
        message: "started".into(),
    };
    let id = lines.insert_one(&line).await.unwrap().inserted_id;
    assert!(matches!(id, Bson::ObjectId(_)));
    db.collection::<BsonDocument>("log_lines")
        .insert_one(doc! { "level": "info", "message": "m", "extra": 1 })
        .await
        .in_collection("log_lines")
        .expect_err("closed: an extra field is refused");

    let contacts = Contact::collection(&db);
    let without = Contact {
        id: None,
        email: "a@b.c".into(),
    };
    let id = contacts.insert_one(&without).await.unwrap().inserted_id;
    let read = contacts
        .find_one(doc! { "_id": &id })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(read.id.map(Bson::ObjectId), Some(id));
    let with = Contact {
        id: Some(ObjectId::new()),
        email: "d@e.f".into(),
    };
    contacts.insert_one(&with).await.unwrap();
    assert_eq!(
        contacts.find_one(doc! { "_id": with.id }).await.unwrap(),
        Some(with)
    );
}

/// Each kind at its largest: every string at its `max_length` in `fill` (a character of 1 to 4
/// UTF-8 bytes), every array at its `max`; `user` is the digest's user (one digest per user).
fn maximal(fill: char, user: i64) -> [Notification; 3] {
    let text = |n: usize| std::iter::repeat_n(fill, n).collect::<String>();
    [
        Notification::Mention {
            id: ObjectId::new(),
            user_id: user,
            excerpt: text(140),
            sent_at: DateTime::now(), // 8 bytes whatever the date
        },
        Notification::Digest {
            id: ObjectId::new(),
            user_id: user,
            titles: (0..20).map(|_| text(80)).collect(),
        },
        Notification::Broadcast {
            id: ObjectId::new(),
            body: text(500),
        },
    ]
}

fn kind_of(n: &Notification) -> &'static str {
    match n {
        Notification::Mention { .. } => "mention",
        Notification::Digest { .. } => "digest",
        Notification::Broadcast { .. } => "broadcast",
    }
}

/// The BSON size of `n` as the driver writes it.
fn bson_size(n: &Notification) -> u64 {
    mongo_schema::bson::to_raw_document_buf(n)
        .unwrap()
        .as_bytes()
        .len() as u64
}

#[tokio::test]
async fn the_worst_case_size_of_kinds_is_the_largest_kind() {
    let schema = Notification::bson_schema();
    let whole = SizeBound::of(&schema);
    let kinds: Vec<SizeBound> = schema
        .get_array("oneOf")
        .unwrap()
        .iter()
        .map(|k| SizeBound::of(k.as_document().unwrap()))
        .collect();
    assert_eq!(kinds.len(), 3);
    assert!(whole.is_known(), "{whole}");
    let largest = kinds.iter().map(|k| k.bytes).max().unwrap();
    assert_eq!(whole.bytes, largest);
    // the digest (20 titles of 80 characters) is the largest kind
    assert_eq!(largest, kinds[1].bytes);

    // the bounds against real documents at every bound, accepted by the server's validator
    let db = mongo_schema_testkit::database("kinds_size").await;
    Schema::new()
        .model::<Notification>()
        .build()
        .unwrap()
        .apply(&db)
        .await
        .unwrap();
    // four-byte characters: the bound's worst case, met to the byte (factor 1); one-byte
    // characters: the same bound, at most 4 times the real size (it counts 4 bytes a character)
    for (fill, user, factor) in [('😀', 1, 1.0), ('x', 2, 4.0)] {
        let documents = maximal(fill, user);
        Notification::collection(&db)
            .insert_many(&documents)
            .await
            .unwrap_or_else(|e| panic!("the maximal documents of {fill:?} are valid: {e}"));
        for (document, bound) in documents.iter().zip(&kinds) {
            let real = bson_size(document);
            println!(
                "{fill:?} {}: {real} bytes, bound {}",
                kind_of(document),
                bound.bytes
            );
            assert!(
                bound.bytes >= real,
                "{}: the bound {} is under the real size {real}",
                kind_of(document),
                bound.bytes
            );
            assert!(
                bound.bytes as f64 <= real as f64 * factor,
                "{}: the bound {} is more than {factor} times the real size {real}",
                kind_of(document),
                bound.bytes
            );
            assert!(whole.bytes >= real);
        }
        let real_largest = documents.iter().map(bson_size).max().unwrap();
        assert_eq!(real_largest, bson_size(&documents[1]), "the digest is");
    }
}

#[derive(BsonSchema, Serialize, Deserialize)]
pub struct Audit {
    pub name: String,
}

/// Two parts storing `name`: the derive cannot see `Audit`'s fields, `Schema::build` can.
#[derive(Document, Serialize, Deserialize)]
#[collection(name = "clashes")]
pub struct Clash {
    pub name: String,
    #[serde(flatten)]
    pub audit: Audit,
}

#[test]
fn two_flattened_parts_storing_one_name_are_a_build_error() {
    let error = Schema::new().model::<Clash>().build().unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains("clashes") && text.contains("`name`") && text.contains("cannot describe"),
        "{text}"
    );
    // the control: the same schema without the clash builds
    Schema::new().model::<LogLine>().build().unwrap();
}

#[test]
fn the_report_diagram_and_script_show_each_kind() {
    let schema = Schema::new().model::<Notification>().build().unwrap();
    let report = schema.report();
    for kind in ["mention", "digest", "broadcast"] {
        assert!(
            report.contains(&format!("Kind `type = \"{kind}\"`")),
            "{kind} in the report:\n{report}"
        );
    }
    assert!(report.contains("one of 3 kinds of document"), "{report}");
    let mermaid = schema.mermaid();
    assert!(
        mermaid.contains("kinds: type = 'mention' | type = 'digest' | type = 'broadcast'"),
        "{mermaid}"
    );
    let script = schema.mongosh_script();
    assert!(
        script.contains("// 3 kinds of document (oneOf in the validator): type = \"mention\""),
        "{script}"
    );
    // the control: a plain struct shows no kinds
    let plain = Schema::new().model::<LogLine>().build().unwrap();
    assert!(!plain.report().contains("Kind `"));
    assert!(!plain.mongosh_script().contains("kinds of document"));
}
