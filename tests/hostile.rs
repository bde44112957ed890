//! Input that is not what it seems: ids stored by another driver with another number type,
//! cursors and expected values from a client that hold query operators, a bucket entry without
//! the key its bucket is ordered by.

mod common;

use mongo_schema::bson::{doc, Bson, Document as BsonDocument};
use mongo_schema::error::UnsafeKind;
use mongo_schema::prelude::*;
use mongo_schema::{Error, PageCursor};
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "shelves")]
pub struct Shelf {
    #[serde(rename = "_id")]
    pub id: i64,
    pub name: String,
    pub state: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "books")]
#[index(keys(shelf_id = 1, title = 1))]
pub struct Book {
    #[serde(rename = "_id")]
    pub id: i64,
    #[reference]
    pub shelf_id: Ref<Shelf>,
    pub title: String,
}

async fn applied(prefix: &str) -> mongodb::Database {
    let db = mongo_schema_testkit::database(prefix).await;
    Schema::new()
        .model::<Shelf>()
        .model::<Book>()
        .build()
        .unwrap()
        .apply(&db)
        .await
        .unwrap();
    db
}

#[tokio::test]
async fn references_find_documents_whose_ids_another_driver_stored_as_int32() {
    let db = applied("hostile_ids").await;
    // written by mongosh or another driver before the validator existed: small numbers are
    // Int32 there
    db.collection::<BsonDocument>("shelves")
        .insert_many([
            doc! { "_id": 1_i32, "name": "one", "state": "open" },
            doc! { "_id": 2_i64, "name": "two", "state": "open" },
            doc! { "_id": 3_i32, "name": "three", "state": "open" },
        ])
        .bypass_document_validation(true)
        .await
        .unwrap();
    let refs = [3_i64, 1, 4, 2, 1].map(Ref::<Shelf>::new);
    let resolved = Ref::resolve_all(&db, &refs).await.unwrap();
    println!("{resolved:?}");
    assert_eq!(
        resolved
            .documents
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>(),
        ["three", "one", "two"],
        "found whatever their stored number type, in reference order"
    );
    assert_eq!(
        resolved.missing,
        [Ref::new(4)],
        "only the absent one is missing"
    );
}

#[tokio::test]
async fn a_page_cursor_holding_an_operator_is_refused() {
    let db = applied("hostile_cursor").await;
    let shelf = Shelf {
        id: 1,
        name: "one".into(),
        state: "open".into(),
    };
    Shelf::collection(&db).insert_one(&shelf).await.unwrap();
    Book::collection(&db)
        .insert_many((0..5).map(|i| Book {
            id: i,
            shelf_id: shelf.to_ref(),
            title: format!("title {i}"),
        }))
        .await
        .unwrap();
    let first = Book::SHELF_ID
        .page_in(&db, &shelf.to_ref())
        .limit(2)
        .await
        .unwrap();
    let honest: PageCursor = first.next.clone().expect("a next page");
    // the cursor made a round trip through a client, which changed it
    let json = serde_json::to_value(&honest).unwrap();
    println!("the cursor as a client sees it: {json}");
    let mut forged = honest.clone();
    forged.key = Bson::Document(doc! { "$ne": null });
    let error = Book::SHELF_ID
        .page_in(&db, &shelf.to_ref())
        .after(forged)
        .await
        .unwrap_err();
    println!("{error}");
    assert!(
        matches!(&error, Error::UnsafeValue { what, path, found: UnsafeKind::Operator(op), .. }
            if what == "the page cursor's key" && path == "$ne" && op == "$ne"),
        "{error:#?}"
    );
    let mut forged = honest.clone();
    forged.id = Bson::Document(doc! { "$gt": { "$minKey": 1 } });
    assert!(matches!(
        Book::SHELF_ID
            .page_in(&db, &shelf.to_ref())
            .after(forged)
            .await,
        Err(Error::UnsafeValue { found: UnsafeKind::Operator(op), .. }) if op == "$gt"
    ));
    // the honest cursor still pages on
    let second = Book::SHELF_ID
        .page_in(&db, &shelf.to_ref())
        .limit(2)
        .after(honest)
        .await
        .unwrap();
    assert_eq!(
        second.items.iter().map(|b| b.id).collect::<Vec<_>>(),
        [2, 3]
    );
}

#[tokio::test]
async fn compare_and_set_refuses_id_and_operators_and_counts_a_no_op_win() {
    let db = applied("hostile_cas").await;
    let shelves: Vec<Shelf> = (1..=2)
        .map(|id| Shelf {
            id,
            name: format!("shelf {id}"),
            state: "open".into(),
        })
        .collect();
    Shelf::collection(&db).insert_many(&shelves).await.unwrap();
    let one = shelves[0].to_ref();
    let set = |state: &str| doc! { "$set": { "state": state } };

    // `_id` as the field would replace the filter's `_id`: another document would be updated
    let error = one
        .compare_and_set(&db, field!(Shelf, id), &2_i64, set("closed"))
        .await
        .unwrap_err();
    println!("{error}");
    assert!(
        matches!(&error, Error::InvalidArgument { argument, .. } if argument == "field"),
        "{error:#?}"
    );
    // an operator as the expected value would match whatever the state is (the string form,
    // deprecated, takes any value; the typed form takes a `String` here)
    #[allow(deprecated)]
    let error = one
        .compare_and_set_by_name(&db, "state", doc! { "$exists": true }, set("closed"))
        .await
        .unwrap_err();
    println!("{error}");
    assert!(
        matches!(&error, Error::UnsafeValue { what, found: UnsafeKind::Operator(op), .. }
            if what == "the expected value" && op == "$exists"),
        "{error:#?}"
    );
    let states: Vec<String> = common::all(Shelf::collection(&db).find(doc! {}))
        .await
        .into_iter()
        .map(|s| s.state)
        .collect();
    assert_eq!(states, ["open", "open"], "nothing was written");

    // a won compare-and-set whose update changes nothing is still a win
    one.compare_and_set(&db, field!(Shelf, state), "open", set("open"))
        .await
        .expect("a no-op win");
    one.compare_and_set(&db, field!(Shelf, state), "open", set("closed"))
        .await
        .expect("a win");
    // the control: the state is no longer "open", so the same call loses
    let lost = one
        .compare_and_set(&db, field!(Shelf, state), "open", set("open"))
        .await
        .expect_err("the state changed: lost");
    assert!(
        matches!(&lost, Error::ConditionFailed { collection, label, position: None, .. }
            if collection == "shelves" && label == "compare_and_set shelves.state"),
        "{lost:#?}"
    );
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "readings")]
#[bucket(parent = shelf_id, entries = values, count = count, key = "at", first = first_at, last = last_at)]
pub struct Readings {
    #[serde(rename = "_id")]
    pub id: mongo_schema::bson::oid::ObjectId,
    #[reference]
    pub shelf_id: Ref<Shelf>,
    #[embed(max = 4)]
    pub values: Vec<Reading>,
    pub count: i64,
    pub first_at: i64,
    pub last_at: i64,
}

#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Reading {
    pub at: i64,
}

/// A database with the shelves and the bucket collection `B` applied, and one open shelf.
async fn shelved<B: Document>(prefix: &str, id: i64) -> (mongodb::Database, Shelf) {
    let db = mongo_schema_testkit::database(prefix).await;
    Schema::new()
        .model::<Shelf>()
        .model::<B>()
        .build()
        .unwrap()
        .apply(&db)
        .await
        .unwrap();
    let shelf = Shelf {
        id,
        name: format!("shelf {id}"),
        state: "open".into(),
    };
    Shelf::collection(&db).insert_one(&shelf).await.unwrap();
    (db, shelf)
}

#[tokio::test]
async fn an_entry_cursor_holding_an_operator_is_refused() {
    let (db, shelf) = shelved::<Readings>("hostile_entries", 9).await;
    for at in 0..10 {
        Readings::BUCKET
            .append(&db, &shelf.to_ref(), &Reading { at })
            .await
            .unwrap();
    }
    let first = Readings::BUCKET
        .entries(&db, &shelf.to_ref())
        .limit(3)
        .await
        .unwrap();
    let honest = first.next.clone().expect("a next page");
    let mut forged = honest.clone();
    forged.key = Bson::Document(doc! { "$gte": i64::MIN });
    let error = Readings::BUCKET
        .entries(&db, &shelf.to_ref())
        .after(forged.clone())
        .limit(3)
        .await
        .unwrap_err();
    println!("{error}");
    assert!(
        matches!(&error, Error::UnsafeValue { what, found: UnsafeKind::Operator(op), .. }
            if what == "the entry cursor's key" && op == "$gte"),
        "{error:#?}"
    );
    let mut forged = honest.clone();
    forged.bucket = Bson::Document(doc! { "$ne": null });
    assert!(matches!(
        Readings::BUCKET
            .entries(&db, &shelf.to_ref()).after(forged.clone()).limit(3)
            .await,
        Err(Error::UnsafeValue { what, .. }) if what == "the entry cursor's bucket"
    ));
    let second = Readings::BUCKET
        .entries(&db, &shelf.to_ref())
        .after(honest.clone())
        .limit(3)
        .await
        .unwrap();
    assert_eq!(
        second.items.iter().map(|r| r.at).collect::<Vec<_>>(),
        [3, 4, 5]
    );
}

/// A visit whose time may be unknown: its bucket is ordered by it.
#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Visit {
    pub at: Option<i64>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "visits")]
#[bucket(parent = shelf_id, entries = visits, count = count, key = "at", first = first_at, last = last_at)]
pub struct Visits {
    #[serde(rename = "_id")]
    pub id: mongo_schema::bson::oid::ObjectId,
    #[reference]
    pub shelf_id: Ref<Shelf>,
    #[embed(max = 4)]
    pub visits: Vec<Visit>,
    pub count: i64,
    pub first_at: Option<i64>,
    pub last_at: Option<i64>,
}

#[tokio::test]
async fn a_bucket_entry_without_its_key_is_refused_before_anything_is_written() {
    let (db, shelf) = shelved::<Visits>("hostile_bucket_key", 4).await;
    let error = Visits::BUCKET
        .append(&db, &shelf.to_ref(), &Visit { at: None })
        .await
        .unwrap_err();
    println!("{error}");
    assert!(
        matches!(&error, Error::InvalidArgument { argument, .. } if argument == "entry.at"),
        "{error:#?}"
    );
    let buckets = || async {
        Visits::collection(&db)
            .count_documents(doc! {})
            .await
            .unwrap()
    };
    assert_eq!(buckets().await, 0, "nothing was written");
    // the positive control: with its key the same entry is appended and read back
    for at in [3, 1, 2] {
        Visits::BUCKET
            .append(&db, &shelf.to_ref(), &Visit { at: Some(at) })
            .await
            .unwrap();
    }
    assert_eq!(buckets().await, 1);
    let read = Visits::BUCKET
        .entries(&db, &shelf.to_ref())
        .limit(10)
        .await
        .unwrap();
    assert_eq!(
        read.items.iter().map(|v| v.at).collect::<Vec<_>>(),
        [Some(1), Some(2), Some(3)]
    );
}

/// A tag whose `_id` may be any BSON value (ids another service chose): a `Ref<Tag>` can hold a
/// document, an array, a regex or JavaScript, which a filter would run as a query.
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "tags")]
pub struct Tag {
    #[serde(rename = "_id")]
    pub id: Bson,
    pub name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "notes")]
#[index(keys(tag_id = 1, title = 1))]
pub struct Note {
    #[serde(rename = "_id")]
    pub id: i64,
    #[reference]
    pub tag_id: Ref<Tag>,
    pub title: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "tag_visits")]
#[bucket(parent = tag_id, entries = visits, count = count, key = "at", first = first_at, last = last_at)]
pub struct TagVisits {
    #[serde(rename = "_id")]
    pub id: mongo_schema::bson::oid::ObjectId,
    #[reference]
    pub tag_id: Ref<Tag>,
    #[embed(max = 4)]
    pub visits: Vec<Reading>,
    pub count: i64,
    pub first_at: Option<i64>,
    pub last_at: Option<i64>,
}

fn schema() -> Schema {
    Schema::new()
        .model::<Tag>()
        .model::<Note>()
        .model::<TagVisits>()
        .build()
        .unwrap()
}

/// Two tags with two notes and a bucket each, through a monitored client.
async fn tagged(prefix: &str) -> (mongodb::Database, mongo_schema_testkit::CommandLog) {
    let (client, log) = mongo_schema_testkit::monitored_client().await;
    let db = client.database(mongo_schema_testkit::database(prefix).await.name());
    schema().apply(&db).await.unwrap();
    for (n, tag) in ["red", "blue"].into_iter().enumerate() {
        Tag::collection(&db)
            .insert_one(Tag {
                id: Bson::String(tag.into()),
                name: tag.into(),
            })
            .await
            .unwrap();
        let tag = Ref::<Tag>::new(Bson::String(tag.into()));
        for i in 0..2 {
            Note::collection(&db)
                .insert_one(Note {
                    id: (n * 10 + i) as i64,
                    tag_id: tag.clone(),
                    title: format!("note {i}"),
                })
                .await
                .unwrap();
        }
        TagVisits::BUCKET
            .append(&db, &tag, &Reading { at: n as i64 })
            .await
            .unwrap();
    }
    (db, log)
}

/// The ids a client could slip in for a `Bson` id: each would match other parents.
fn hostile_ids() -> Vec<Bson> {
    vec![
        Bson::Document(doc! { "$ne": null }),
        Bson::Document(doc! { "name": { "$regex": "." } }),
        Bson::Array(vec!["red".into(), "blue".into()]),
        // bson 3's `Regex` has no public constructor: built the same way under bson 2 and 3
        Bson::RegularExpression(mongo_schema::bson_compat::regex(".*", "").unwrap()),
        Bson::JavaScriptCode("true".into()),
    ]
}

#[tokio::test]
async fn hostile_ids_are_refused_by_page_bucket_lookup_and_resolve_before_anything_is_sent() {
    let (db, log) = tagged("hostile_id_kinds").await;
    // the danger, shown with the driver: the first hostile id as a filter matches every note
    let every = Note::collection(&db)
        .count_documents(doc! { "tag_id": { "$ne": null } })
        .await
        .unwrap();
    assert_eq!(every, 4, "an operator id selects other parents' children");
    // the positive control: an honest id of the same type pages, resolves and reads its bucket
    let red = Ref::<Tag>::new(Bson::String("red".into()));
    let page = Note::TAG_ID.page_in(&db, &red).limit(5).await.unwrap();
    assert_eq!(page.items.iter().map(|n| n.id).collect::<Vec<_>>(), [0, 1]);
    let resolved = Ref::resolve_all(&db, [&red]).await.unwrap();
    assert_eq!(resolved.documents.len(), 1);
    let entries = TagVisits::BUCKET
        .entries(&db, &red)
        .limit(10)
        .await
        .unwrap();
    assert_eq!(entries.items, [Reading { at: 0 }]);
    assert_eq!(
        Note::TAG_ID.children_filter(&red).unwrap(),
        doc! { "tag_id": "red" }
    );
    log.clear();
    for id in hostile_ids() {
        let hostile = Ref::<Tag>::new(id.clone());
        let refusals = [
            Note::TAG_ID.page_in(&db, &hostile).await.map(drop),
            Ref::resolve_all(&db, [&red, &hostile]).await.map(drop),
            TagVisits::BUCKET
                .entries(&db, &hostile)
                .limit(10)
                .await
                .map(drop),
            TagVisits::BUCKET
                .append(&db, &hostile, &Reading { at: 9 })
                .await,
            Note::TAG_ID.children_filter(&hostile).map(drop),
            schema()
                .transaction(&db)
                .append(&TagVisits::BUCKET, &hostile, &Reading { at: 9 })
                .await
                .map(drop),
        ];
        for (helper, outcome) in [
            "page",
            "resolve",
            "entries",
            "append",
            "children_filter",
            "transaction append",
        ]
        .into_iter()
        .zip(refusals)
        {
            let expected = match &id {
                Bson::Array(_) => UnsafeKind::Array,
                Bson::RegularExpression(_) => UnsafeKind::RegularExpression,
                Bson::JavaScriptCode(_) => UnsafeKind::JavaScript,
                Bson::Document(d) if d.contains_key("$ne") => UnsafeKind::Operator("$ne".into()),
                _ => UnsafeKind::Operator("$regex".into()),
            };
            match outcome {
                Err(Error::UnsafeValue { found, .. }) if found == expected => {}
                other => panic!("{helper} with {id}: expected {expected:?}, got {other:?}"),
            }
        }
    }
    assert_eq!(log.names(), Vec::<String>::new(), "nothing was sent");
    // and nothing was written: one bucket per tag, as before
    assert_eq!(
        TagVisits::collection(&db)
            .count_documents(doc! {})
            .await
            .unwrap(),
        2
    );
}

#[tokio::test]
async fn a_page_of_zero_or_above_the_maximum_is_refused() {
    let (db, log) = tagged("hostile_limits").await;
    let red = Ref::<Tag>::new(Bson::String("red".into()));
    log.clear();
    for limit in [0, -1, mongo_schema::MAX_PAGE_SIZE + 1] {
        let page = Note::TAG_ID.page_in(&db, &red).limit(limit).await;
        assert!(
            matches!(&page, Err(Error::InvalidArgument { argument, .. }) if argument == "limit"),
            "limit {limit}: {page:?}"
        );
        let entries = TagVisits::BUCKET.entries(&db, &red).limit(limit).await;
        assert!(
            matches!(&entries, Err(Error::InvalidArgument { argument, .. }) if argument == "limit"),
            "limit {limit}: {entries:?}"
        );
    }
    assert!(log.names().is_empty(), "{:?}", log.names());
    // the largest page is read, with one find
    let page = Note::TAG_ID
        .page_in(&db, &red)
        .limit(mongo_schema::MAX_PAGE_SIZE)
        .await
        .unwrap();
    assert_eq!(page.items.len(), 2);
    assert!(page.next.is_none());
    assert_eq!(log.names(), ["find"]);
}
