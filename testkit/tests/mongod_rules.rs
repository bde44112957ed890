//! The test server says no where mongod says no: each of mongod's rules the testkit installs
//! into SecantusDB ([`mongo_schema_testkit::RULES`]), through `database(..)` and the driver
//! directly, with the refused command and its allowed neighbour; the rules SecantusDB enforces
//! by itself; and a server that leaves a rule out by name.
//!
//! With `MONGODB_URI` set to a mongod these hold as they are: they are mongod's rules.

use std::time::Duration;

use futures_util::StreamExt;
use mongo_schema_testkit::{database, TestServer, RULES};
use mongodb::bson::{doc, Bson, DateTime, Document};
use mongodb::error::{ErrorKind, WriteFailure};
use mongodb::options::{ChangeStreamOptions, FullDocumentType};
use mongodb::{Client, Collection, Database};

/// The server's error code of a refused command or write (the first write error of a batch).
fn code(e: &mongodb::error::Error) -> Option<i32> {
    match e.kind.as_ref() {
        ErrorKind::Command(c) => Some(c.code),
        ErrorKind::Write(WriteFailure::WriteError(w)) => Some(w.code),
        ErrorKind::InsertMany(m) => m.write_errors.as_ref()?.first().map(|w| w.code),
        _ => None,
    }
}

fn message(e: &mongodb::error::Error) -> String {
    match e.kind.as_ref() {
        ErrorKind::Command(c) => c.message.clone(),
        ErrorKind::Write(WriteFailure::WriteError(w)) => w.message.clone(),
        ErrorKind::InsertMany(m) => m
            .write_errors
            .iter()
            .flatten()
            .map(|w| w.message.clone())
            .collect::<Vec<_>>()
            .join("; "),
        _ => e.to_string(),
    }
}

#[track_caller]
fn refused<T: std::fmt::Debug>(result: mongodb::error::Result<T>, expected: i32) -> String {
    match result {
        Ok(value) => panic!("expected code {expected}, the server accepted it: {value:?}"),
        Err(e) => {
            assert_eq!(code(&e), Some(expected), "{e}");
            message(&e)
        }
    }
}

fn coll(db: &Database, name: &str) -> Collection<Document> {
    db.collection::<Document>(name)
}

/// Creates the index of `keys` on `c`, through the driver's `create_index`.
async fn create_index(
    c: &Collection<Document>,
    keys: Document,
) -> mongodb::error::Result<mongodb::results::CreateIndexResult> {
    c.create_index(mongodb::IndexModel::builder().keys(keys).build())
        .await
}

/// Creates collection `name` with a case-insensitive default collation (`en`, strength 2).
async fn create_case_insensitive(db: &Database, name: &str) {
    run(
        db,
        doc! { "create": name, "collation": { "locale": "en", "strength": 2 } },
    )
    .await
    .unwrap();
}

/// A server of its own with one rule left out (the positive control of that rule), and a client
/// of it; [`WithoutRule::stop`] stops it.
struct WithoutRule {
    server: TestServer,
    client: Client,
}

impl WithoutRule {
    async fn start(rule: &'static str, why: &'static str) -> WithoutRule {
        let server = tokio::task::spawn_blocking(move || {
            TestServer::start_with_rules_off(None, &[rule], why)
        })
        .await
        .unwrap()
        .expect("server");
        let client = Client::with_uri_str(server.uri()).await.unwrap();
        WithoutRule { server, client }
    }

    fn database(&self, name: &str) -> Database {
        self.client.database(name)
    }

    async fn stop(self) {
        drop(self.client);
        let server = self.server;
        tokio::task::spawn_blocking(move || drop(server))
            .await
            .unwrap();
    }
}

async fn run(db: &Database, command: Document) -> mongodb::error::Result<Document> {
    db.run_command(command).await
}

/// Runs each command of a table, expecting mongod's code for it.
async fn refuses_each(db: &Database, cases: impl IntoIterator<Item = (Document, i32)>) {
    for (command, expected) in cases {
        refused(run(db, command).await, expected);
    }
}

// --- parallel arrays -------------------------------------------------------------------------

#[tokio::test]
async fn an_insert_of_two_arrays_under_one_compound_index_fails_with_171() {
    let db = database("rules_parallel").await;
    run(
        &db,
        doc! { "createIndexes": "c", "indexes": [{ "key": { "a": 1, "b": 1 }, "name": "a_1_b_1" }] },
    )
    .await
    .unwrap();
    let c = coll(&db, "c");
    let msg = refused(c.insert_one(doc! { "a": [1, 2], "b": [3, 4] }).await, 171);
    assert_eq!(msg, "cannot index parallel arrays [b] [a]");
    // The neighbour: one array under the index.
    c.insert_one(doc! { "a": [1, 2], "b": 3 }).await.unwrap();
    c.insert_one(doc! { "a": 1, "b": [3, 4] }).await.unwrap();
    assert_eq!(c.count_documents(doc! {}).await.unwrap(), 2);
}

#[tokio::test]
async fn a_batch_stops_at_its_first_parallel_arrays_when_ordered() {
    let db = database("rules_parallel_batch").await;
    let c = coll(&db, "c");
    create_index(&c, doc! { "a": 1, "b": 1 }).await.unwrap();
    let docs = [
        doc! { "_id": 1, "a": 1, "b": 1 },
        doc! { "_id": 2, "a": [1], "b": [2] },
        doc! { "_id": 3, "a": 2, "b": 2 },
    ];
    refused(c.insert_many(docs.clone()).await, 171);
    assert_eq!(c.count_documents(doc! {}).await.unwrap(), 1);
    c.delete_many(doc! {}).await.unwrap();
    let err = c
        .insert_many(docs)
        .ordered(false)
        .await
        .expect_err("the second document has two arrays");
    let ErrorKind::InsertMany(m) = err.kind.as_ref() else {
        panic!("{err}");
    };
    let errors = m.write_errors.as_ref().unwrap();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!((errors[0].index, errors[0].code), (1, 171));
    assert_eq!(c.count_documents(doc! {}).await.unwrap(), 2);
}

#[tokio::test]
async fn updates_replacements_upserts_and_find_and_modify_that_make_parallel_arrays_fail() {
    let db = database("rules_parallel_update").await;
    let c = coll(&db, "c");
    create_index(&c, doc! { "a": 1, "b": 1 }).await.unwrap();
    c.insert_one(doc! { "_id": 1, "a": [1, 2], "b": 3 })
        .await
        .unwrap();

    let msg = refused(
        c.update_one(doc! { "_id": 1 }, doc! { "$set": { "b": [4, 5] } })
            .await,
        171,
    );
    assert!(
        msg.ends_with("cannot index parallel arrays [b] [a]"),
        "{msg}"
    );
    refused(
        c.replace_one(doc! { "_id": 1 }, doc! { "a": [1], "b": [2] })
            .await,
        171,
    );
    refused(
        c.update_one(doc! { "_id": 2 }, doc! { "$set": { "a": [1], "b": [2] } })
            .upsert(true)
            .await,
        171,
    );
    refused(
        c.find_one_and_update(doc! { "_id": 1 }, doc! { "$set": { "b": [1] } })
            .await,
        171,
    );
    // The neighbours: the same writes leaving one array.
    c.update_one(doc! { "_id": 1 }, doc! { "$set": { "b": 4 } })
        .await
        .unwrap();
    c.replace_one(doc! { "_id": 1 }, doc! { "a": 1, "b": [2] })
        .await
        .unwrap();
    c.find_one_and_update(doc! { "_id": 1 }, doc! { "$push": { "b": 3 } })
        .await
        .unwrap();
    assert_eq!(
        c.find_one(doc! { "_id": 1 }).await.unwrap().unwrap(),
        doc! { "_id": 1, "a": 1, "b": [2, 3] }
    );
}

#[tokio::test]
async fn dotted_paths_count_arrays_as_mongod_does() {
    let db = database("rules_parallel_dotted").await;
    let c = coll(&db, "c");
    create_index(&c, doc! { "x.a": 1, "x.b": 1 }).await.unwrap();
    // One array holding both paths: one array, not two.
    c.insert_one(doc! { "x": [{ "a": 1, "b": 2 }, { "a": 3, "b": 4 }] })
        .await
        .unwrap();
    let msg = refused(
        c.insert_one(doc! { "x": { "a": [1], "b": [2] } }).await,
        171,
    );
    assert_eq!(msg, "cannot index parallel arrays [b] [a]");
    // Arrays inside the elements of the one array are parallel too.
    refused(
        c.insert_one(doc! { "x": [{ "a": [1], "b": [2] }] }).await,
        171,
    );
}

#[tokio::test]
async fn an_index_over_documents_with_parallel_arrays_is_not_built() {
    let db = database("rules_parallel_build").await;
    let c = coll(&db, "c");
    c.insert_one(doc! { "a": [1, 2], "b": [3, 4], "c": 1 })
        .await
        .unwrap();
    let msg = refused(create_index(&c, doc! { "a": 1, "b": 1 }).await, 171);
    assert!(msg.starts_with("Index build failed: "), "{msg}");
    assert!(
        msg.ends_with(":: caused by :: cannot index parallel arrays [b] [a]"),
        "{msg}"
    );
    // The neighbour: an index over one of the arrays.
    create_index(&c, doc! { "a": 1, "c": 1 }).await.unwrap();
    let names = c.list_index_names().await.unwrap();
    assert!(!names.contains(&"a_1_b_1".to_owned()), "{names:?}");
}

// --- the _id index -----------------------------------------------------------------------------

#[tokio::test]
async fn a_second_index_on_id_is_refused() {
    let db = database("rules_id_index").await;
    run(&db, doc! { "create": "c" }).await.unwrap();
    let second = |options: Document| {
        let mut spec = doc! { "key": { "_id": 1 }, "name": "by_id" };
        spec.extend(options);
        doc! { "createIndexes": "c", "indexes": [spec] }
    };
    let msg = refused(run(&db, second(doc! {})).await, 85);
    assert_eq!(msg, "Index already exists with a different name: _id_");
    refuses_each(
        &db,
        [
            (second(doc! { "unique": true }), 85),
            (second(doc! { "sparse": true }), 67),
            (second(doc! { "unique": false }), 67),
        ],
    )
    .await;
    // The neighbours: the _id index itself, and { _id: -1 }.
    for index in [
        doc! { "key": { "_id": 1 }, "name": "_id_" },
        doc! { "key": { "_id": -1 }, "name": "id_desc" },
    ] {
        run(&db, doc! { "createIndexes": "c", "indexes": [index] })
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn an_id_index_takes_the_collections_collation_only() {
    let db = database("rules_id_collation").await;
    create_case_insensitive(&db, "c").await;
    let with = |collation: Document| {
        doc! { "createIndexes": "c", "indexes": [
            { "key": { "_id": -1 }, "name": "id_desc", "collation": collation }
        ] }
    };
    let msg = refused(run(&db, with(doc! { "locale": "simple" })).await, 2);
    assert!(
        msg.starts_with("The _id index must have the same collation as the collection."),
        "{msg}"
    );
    // Without a collation it gets the collection's; with the collection's it is taken.
    run(&db, with(doc! { "locale": "en", "strength": 2 }))
        .await
        .unwrap();
    // And a second { _id: 1 }, collation or none, is still a second { _id: 1 }.
    refused(
        run(
            &db,
            doc! { "createIndexes": "c", "indexes": [{ "key": { "_id": 1 }, "name": "by_id" }] },
        )
        .await,
        85,
    );
}

// --- collation -------------------------------------------------------------------------------

#[tokio::test]
async fn create_with_an_unknown_locale_fails() {
    let db = database("rules_locale").await;
    let msg = refused(
        run(
            &db,
            doc! { "create": "c", "collation": { "locale": "xx_NOPE" } },
        )
        .await,
        2,
    );
    assert_eq!(
        msg,
        r#"Field 'locale' is invalid in: { locale: "xx_NOPE" }"#
    );
    let msg = refused(
        run(
            &db,
            doc! { "create": "e", "collation": { "locale": "en_XX" } },
        )
        .await,
        2,
    );
    assert!(msg.ends_with(". Did you mean 'en'?"), "{msg}");
    refuses_each(
        &db,
        [
            (doc! { "create": "d", "collation": { "locale": "english" } }, 2),
            // Out of range.
            (doc! { "create": "f", "collation": { "locale": "en", "strength": 7 } }, 9),
            (doc! { "create": "g", "collation": { "locale": "en", "caseFirst": "UPPER" } }, 9),
            (doc! { "create": "h", "collation": { "locale": "en", "strength": 1, "backwards": true } }, 2),
        ],
    )
    .await;
    // Any command's collation.
    refused(
        coll(&db, "x")
            .find(doc! {})
            .collation(
                mongodb::options::Collation::builder()
                    .locale("xx_NOPE")
                    .build(),
            )
            .await,
        2,
    );
    // The neighbours: locales mongod knows, a variant, simple.
    for locale in ["en", "fr_CA", "de@collation=phonebook", "zh_Hant", "simple"] {
        run(
            &db,
            doc! { "create": format!("ok_{}", locale.replace(['@', '='], "_")), "collation": { "locale": locale } },
        )
        .await
        .unwrap_or_else(|e| panic!("{locale}: {e}"));
    }
}

#[tokio::test]
async fn a_count_without_a_collation_runs_under_the_collections_default() {
    let db = database("rules_default_collation").await;
    create_case_insensitive(&db, "people").await;
    let people = coll(&db, "people");
    people.insert_one(doc! { "e": "Ana" }).await.unwrap();
    assert_eq!(
        people.count_documents(doc! { "e": "ana" }).await.unwrap(),
        1
    );
    // The other commands too.
    assert!(people
        .find_one(doc! { "e": "ANA" })
        .await
        .unwrap()
        .is_some());
    assert_eq!(
        people.distinct("e", doc! { "e": "ana" }).await.unwrap(),
        vec![Bson::String("Ana".into())]
    );
    let matched = people
        .update_many(doc! { "e": "ana" }, doc! { "$set": { "seen": true } })
        .await
        .unwrap()
        .matched_count;
    assert_eq!(matched, 1);
    let mut cursor = people
        .aggregate([doc! { "$match": { "e": "aNa" } }])
        .await
        .unwrap();
    assert!(cursor.next().await.is_some());
    // An explicit collation wins: the simple one compares code points.
    let simple = mongodb::options::Collation::builder()
        .locale("simple")
        .build();
    assert_eq!(
        people
            .count_documents(doc! { "e": "ana" })
            .collation(simple)
            .await
            .unwrap(),
        0
    );
    // An index created without a collation gets the collection's: it is unique case-insensitively.
    people
        .create_index(
            mongodb::IndexModel::builder()
                .keys(doc! { "e": 1 })
                .options(
                    mongodb::options::IndexOptions::builder()
                        .unique(true)
                        .build(),
                )
                .build(),
        )
        .await
        .unwrap();
    refused(people.insert_one(doc! { "e": "ANA" }).await, 11000);
    assert_eq!(
        people
            .delete_many(doc! { "e": "ana" })
            .await
            .unwrap()
            .deleted_count,
        1
    );
}

/// The plan's index of a `find` (`None`: a collection scan), from `explain`.
async fn index_of(db: &Database, find: Document) -> Option<String> {
    let explained = run(db, doc! { "explain": find }).await.unwrap();
    fn walk(stage: &Document) -> Option<String> {
        if let Ok(name) = stage.get_str("indexName") {
            return Some(name.to_owned());
        }
        stage.get_document("inputStage").ok().and_then(walk)
    }
    walk(
        explained
            .get_document("queryPlanner")
            .and_then(|p| p.get_document("winningPlan"))
            .unwrap(),
    )
}

#[tokio::test]
async fn the_simple_collation_stated_is_served_by_an_index_of_the_simple_collation() {
    let db = database("rules_simple_stated").await;
    create_case_insensitive(&db, "c").await;
    run(
        &db,
        doc! { "createIndexes": "c", "indexes": [
            { "key": { "a": 1 }, "name": "a_simple", "collation": { "locale": "simple" } },
            { "key": { "b": 1 }, "name": "b_default" },
        ] },
    )
    .await
    .unwrap();
    coll(&db, "c")
        .insert_many([
            doc! { "_id": 1, "a": "abc", "b": "abc" },
            doc! { "_id": 2, "a": "ABC", "b": "ABC" },
        ])
        .await
        .unwrap();
    let simple = doc! { "locale": "simple" };
    // mongod: `{ locale: "simple" }` is no collator, so the index of the simple collation
    // serves it, exactly
    let find = doc! { "find": "c", "filter": { "a": "abc" }, "collation": simple.clone() };
    assert_eq!(
        index_of(&db, find.clone()).await.as_deref(),
        Some("a_simple")
    );
    let found = run(&db, find).await.unwrap();
    let batch = found
        .get_document("cursor")
        .and_then(|c| c.get_array("firstBatch"))
        .unwrap();
    assert_eq!(batch.len(), 1, "{found}");
    // the neighbour: without a collation the query runs under the default, which the index of
    // the simple collation does not serve (and "ABC" matches)
    let find = doc! { "find": "c", "filter": { "a": "abc" } };
    assert_eq!(index_of(&db, find).await, None);
    assert_eq!(
        coll(&db, "c")
            .count_documents(doc! { "a": "abc" })
            .await
            .unwrap(),
        2
    );
    // and the index of the default collation serves the query without one only
    let find = doc! { "find": "c", "filter": { "b": "abc" } };
    assert_eq!(index_of(&db, find).await.as_deref(), Some("b_default"));
    let find = doc! { "find": "c", "filter": { "b": "abc" }, "collation": simple.clone() };
    assert_eq!(index_of(&db, find).await, None);
    // an update statement stating the simple collation matches exactly too
    let updated = run(
        &db,
        doc! { "update": "c", "updates": [
            { "q": { "a": "abc" }, "u": { "$set": { "seen": true } }, "multi": true, "collation": simple },
        ] },
    )
    .await
    .unwrap();
    assert_eq!(updated.get_i32("n").unwrap(), 1, "{updated}");
}

// --- conditions under an array ----------------------------------------------------------------

/// The ids `filter` finds in `c`, by the indexes and by a collection scan (`hint: $natural`).
async fn ids_both_ways(c: &Collection<Document>, filter: Document) -> (Vec<i32>, Vec<i32>) {
    let ids = |docs: Vec<Document>| {
        let mut ids: Vec<i32> = docs.iter().map(|d| d.get_i32("_id").unwrap()).collect();
        ids.sort_unstable();
        ids
    };
    let indexed = c.find(filter.clone()).await.unwrap();
    let indexed = ids(indexed.map(|d| d.unwrap()).collect().await);
    let scanned = c
        .find(filter)
        .hint(mongodb::options::Hint::Keys(doc! { "$natural": 1 }))
        .await
        .unwrap();
    let scanned = ids(scanned.map(|d| d.unwrap()).collect().await);
    (indexed, scanned)
}

/// Orders whose items match `{ price: 10..20 }` and `{ sku: "a", qty: 2 }` only across
/// elements (1), in one element (2), or not at all (3), under the indexes of both queries.
async fn orders_across_elements(db: &Database) -> Collection<Document> {
    let c = coll(db, "orders");
    c.insert_many([
        doc! { "_id": 1, "items": [{ "sku": "a", "qty": 1, "price": 5 }, { "sku": "b", "qty": 2, "price": 100 }] },
        doc! { "_id": 2, "items": [{ "sku": "a", "qty": 2, "price": 15 }] },
        doc! { "_id": 3, "items": [{ "sku": "c", "qty": 2, "price": 30 }] },
    ])
    .await
    .unwrap();
    run(
        db,
        doc! { "createIndexes": "orders", "indexes": [
            { "key": { "items.price": 1 }, "name": "price" },
            { "key": { "items.sku": 1, "items.qty": 1 }, "name": "sku_qty" },
        ] },
    )
    .await
    .unwrap();
    c
}

#[tokio::test]
async fn conditions_under_an_array_match_across_elements_with_or_without_an_index() {
    let db = database("rules_array_conditions").await;
    let c = orders_across_elements(&db).await;
    let range = doc! { "items.price": { "$gte": 10, "$lt": 20 } };
    // mongod: each bound may hold for another item (jstests/core/index13.js), so order 1 (items
    // of 5 and 100) matches, by the index as by the scan
    let (indexed, scanned) = ids_both_ways(&c, range.clone()).await;
    assert_eq!(indexed, [1, 2]);
    assert_eq!(scanned, [1, 2]);
    assert_eq!(c.count_documents(range.clone()).await.unwrap(), 2);
    // and mongod picks the index for it all the same
    let find = doc! { "find": "orders", "filter": range };
    assert_eq!(index_of(&db, find).await.as_deref(), Some("price"));
    let (indexed, scanned) = ids_both_ways(&c, doc! { "items.sku": "a", "items.qty": 2 }).await;
    assert_eq!(indexed, [1, 2]);
    assert_eq!(scanned, [1, 2]);
    // the neighbour: under `$elemMatch` one item holds every condition
    let one_item = doc! { "items": { "$elemMatch": { "price": { "$gte": 10, "$lt": 20 } } } };
    assert_eq!(ids_both_ways(&c, one_item).await, (vec![2], vec![2]));
    let one_item = doc! { "items": { "$elemMatch": { "sku": "a", "qty": 2 } } };
    assert_eq!(ids_both_ways(&c, one_item).await, (vec![2], vec![2]));
}

#[tokio::test]
async fn without_the_rule_the_index_scan_intersects_the_bounds_across_elements() {
    // the positive control of the rule above: SecantusDB by itself misses order 1 by the index
    let server = WithoutRule::start("array-conditions", "shows SecantusDB's own index scan").await;
    let db = server.database("rules_array_conditions_off");
    let c = orders_across_elements(&db).await;
    let (indexed, scanned) =
        ids_both_ways(&c, doc! { "items.price": { "$gte": 10, "$lt": 20 } }).await;
    assert_eq!(indexed, [2]);
    assert_eq!(scanned, [1, 2]);
    server.stop().await;
}

#[tokio::test]
async fn a_lookup_compares_under_the_aggregations_collation() {
    // jstests/aggregation/sources/lookup/collation_lookup.js
    let db = database("rules_lookup_collation").await;
    run(
        &db,
        doc! { "create": "with_default", "collation": { "locale": "en_US", "strength": 2 } },
    )
    .await
    .unwrap();
    coll(&db, "with_default")
        .insert_one(doc! { "_id": "lowercase", "str": "abc" })
        .await
        .unwrap();
    coll(&db, "without_default")
        .insert_many([
            doc! { "_id": "lowercase", "str": "abc" },
            doc! { "_id": "uppercase", "str": "ABC" },
            doc! { "_id": "unmatched", "str": "def" },
        ])
        .await
        .unwrap();
    let lookup = |from: &str| {
        doc! { "$lookup": { "from": from, "localField": "str", "foreignField": "str", "as": "matched" } }
    };
    /// The ids the first row joined.
    async fn matched(joined: mongodb::Cursor<Document>) -> Vec<String> {
        let rows: Vec<Document> = joined.map(Result::unwrap).collect().await;
        let mut ids: Vec<String> = rows[0]
            .get_array("matched")
            .unwrap()
            .iter()
            .filter_map(|m| m.as_document()?.get_str("_id").ok().map(str::to_owned))
            .collect();
        ids.sort();
        ids
    }
    // the collection's default collation is inherited by the join
    let with_default = coll(&db, "with_default");
    let joined = with_default.aggregate([lookup("without_default")]).await;
    assert_eq!(
        matched(joined.unwrap()).await,
        vec!["lowercase", "uppercase"]
    );
    // the neighbour: the simple collation stated on the aggregation joins exactly
    let simple = mongodb::options::Collation::builder()
        .locale("simple")
        .build();
    let joined = with_default
        .aggregate([lookup("without_default")])
        .collation(simple)
        .await;
    assert_eq!(matched(joined.unwrap()).await, vec!["lowercase"]);
    // from a collection without a default, the foreign one's default does not count
    let without_default = coll(&db, "without_default");
    let lowercase = doc! { "$match": { "_id": "lowercase" } };
    let joined = without_default
        .aggregate([lowercase.clone(), lookup("with_default")])
        .await;
    assert_eq!(matched(joined.unwrap()).await, vec!["lowercase"]);
    // an explicit collation on the aggregation is the join's
    let ci = mongodb::options::Collation::builder()
        .locale("en_US")
        .strength(mongodb::options::CollationStrength::Secondary)
        .build();
    let joined = without_default
        .aggregate([lowercase, lookup("without_default")])
        .collation(ci)
        .await;
    assert_eq!(
        matched(joined.unwrap()).await,
        vec!["lowercase", "uppercase"]
    );
}

#[tokio::test]
async fn a_2d_index_on_a_collated_collection_must_say_simple() {
    let db = database("rules_2d_collation").await;
    create_case_insensitive(&db, "c").await;
    // (SecantusDB has no text indexes; a 2d index takes no collation either.)
    let two_d = |collation: Option<Document>| {
        let mut spec = doc! { "key": { "at": "2d" }, "name": "at_2d" };
        if let Some(collation) = collation {
            spec.insert("collation", collation);
        }
        doc! { "createIndexes": "c", "indexes": [spec] }
    };
    refused(run(&db, two_d(None)).await, 67);
    run(&db, two_d(Some(doc! { "locale": "simple" })))
        .await
        .unwrap();
}

// --- time series -----------------------------------------------------------------------------

async fn timeseries(db: &Database, name: &str) {
    run(
        db,
        doc! { "create": name, "timeseries": { "timeField": "t", "metaField": "m" } },
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn an_insert_into_a_time_series_collection_inside_a_transaction_fails() {
    let db = database("rules_ts_txn").await;
    timeseries(&db, "scans").await;
    run(&db, doc! { "create": "plain" }).await.unwrap();
    let client: Client = db.client().clone();
    let mut session = client.start_session().await.unwrap();
    session.start_transaction().await.unwrap();
    let msg = refused(
        coll(&db, "scans")
            .insert_one(doc! { "t": DateTime::now(), "m": "gate-1" })
            .session(&mut session)
            .await,
        263,
    );
    assert!(
        msg.starts_with(
            "Cannot insert into a time-series collection in a multi-document transaction"
        ),
        "{msg}"
    );
    let _ = session.abort_transaction().await;
    // The neighbours: the same insert outside a transaction, a plain collection inside one.
    coll(&db, "scans")
        .insert_one(doc! { "t": DateTime::now(), "m": "gate-1" })
        .await
        .unwrap();
    session.start_transaction().await.unwrap();
    coll(&db, "plain")
        .insert_one(doc! { "x": 1 })
        .session(&mut session)
        .await
        .unwrap();
    session.commit_transaction().await.unwrap();
    // Updates and deletes inside one fail too.
    session.start_transaction().await.unwrap();
    refused(
        coll(&db, "scans")
            .delete_many(doc! { "m": "gate-1" })
            .session(&mut session)
            .await,
        263,
    );
    let _ = session.abort_transaction().await;
}

#[tokio::test]
async fn pre_and_post_images_are_not_for_a_time_series_collection() {
    let db = database("rules_ts_images").await;
    let msg = refused(
        run(
            &db,
            doc! {
                "create": "scans",
                "timeseries": { "timeField": "t" },
                "changeStreamPreAndPostImages": { "enabled": true },
            },
        )
        .await,
        72,
    );
    assert!(
        msg.ends_with("'timeseries' is not allowed with 'changeStreamPreAndPostImages'"),
        "{msg}"
    );
    timeseries(&db, "scans").await;
    refused(
        run(
            &db,
            doc! { "collMod": "scans", "changeStreamPreAndPostImages": { "enabled": true } },
        )
        .await,
        72,
    );
    // The neighbour: a plain collection takes them.
    run(&db, doc! { "create": "plain" }).await.unwrap();
    run(
        &db,
        doc! { "collMod": "plain", "changeStreamPreAndPostImages": { "enabled": true } },
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn change_streams_do_not_show_a_time_series_collections_writes() {
    let db = database("rules_ts_stream").await;
    timeseries(&db, "scans").await;
    run(&db, doc! { "create": "plain" }).await.unwrap();
    refused(coll(&db, "scans").watch().await, 166);

    let mut stream = db
        .watch()
        .with_options(
            ChangeStreamOptions::builder()
                .full_document(Some(FullDocumentType::UpdateLookup))
                .build(),
        )
        .await
        .unwrap();
    coll(&db, "scans")
        .insert_one(doc! { "t": DateTime::now(), "m": "gate-1" })
        .await
        .unwrap();
    coll(&db, "plain")
        .insert_one(doc! { "x": 1 })
        .await
        .unwrap();
    let event = tokio::time::timeout(Duration::from_secs(20), stream.next())
        .await
        .expect("an event within 20 s")
        .expect("the stream is open")
        .unwrap();
    assert_eq!(
        event.ns.as_ref().and_then(|ns| ns.coll.as_deref()),
        Some("plain"),
        "{event:?}"
    );
}

#[tokio::test]
async fn geo_near_on_a_time_series_collection_takes_a_key_and_no_query() {
    let db = database("rules_ts_geonear").await;
    timeseries(&db, "scans").await;
    create_index(&coll(&db, "scans"), doc! { "loc": "2dsphere" })
        .await
        .unwrap();
    coll(&db, "scans")
        .insert_one(doc! {
            "t": DateTime::now(), "m": "gate-1",
            "loc": { "type": "Point", "coordinates": [13.4, 52.5] },
        })
        .await
        .unwrap();
    let near = |extra: Document| {
        let mut stage = doc! {
            "near": { "type": "Point", "coordinates": [13.4, 52.5] },
            "distanceField": "d",
        };
        stage.extend(extra);
        vec![doc! { "$geoNear": stage }]
    };
    refused(coll(&db, "scans").aggregate(near(doc! {})).await, 5892921);
    refused(
        coll(&db, "scans")
            .aggregate(near(doc! { "key": "loc", "query": { "m": "gate-1" } }))
            .await,
        5860207,
    );
    // The neighbour: the key, and the condition in a $match after the stage.
    let mut pipeline = near(doc! { "key": "loc" });
    pipeline.push(doc! { "$match": { "m": "gate-1" } });
    let found: Vec<_> = coll(&db, "scans")
        .aggregate(pipeline)
        .await
        .unwrap()
        .collect()
        .await;
    assert_eq!(found.len(), 1, "{found:?}");
}

#[tokio::test]
async fn a_measurement_whose_bucket_passes_16_mib_is_refused() {
    // mongod refuses a measurement whose bucket (the meta field once, every other field in
    // control.min, control.max and data) passes 16 MiB; it has no limit of 4 MB
    let db = database("rules_ts_size").await;
    timeseries(&db, "scans").await;
    const MIB: usize = 1024 * 1024;
    let measurement =
        |bytes: usize| doc! { "t": DateTime::now(), "m": "gate-1", "blob": "x".repeat(bytes) };
    refused(
        coll(&db, "scans").insert_one(measurement(6 * MIB)).await,
        10334,
    );
    // 5 MiB of metrics: a bucket of about 15 MiB, which mongod writes
    coll(&db, "scans")
        .insert_one(measurement(5 * MIB))
        .await
        .unwrap();
    // the meta field is in the bucket once: 10 MiB of it pass
    coll(&db, "scans")
        .insert_one(doc! { "t": DateTime::now(), "m": "y".repeat(10 * MIB), "count": 1 })
        .await
        .unwrap();
}

#[tokio::test]
async fn a_time_series_update_keeps_to_mongod_7_0s_limits() {
    let db = database("rules_ts_update").await;
    timeseries(&db, "scans").await;
    let scans = coll(&db, "scans");
    scans
        .insert_one(doc! { "t": DateTime::now(), "m": "gate-1", "count": 1 })
        .await
        .unwrap();
    let msg = refused(
        scans
            .update_one(doc! { "m": "gate-1" }, doc! { "$set": { "m": "gate-2" } })
            .await,
        72,
    );
    assert_eq!(
        msg,
        "Cannot perform a non-multi update on a time-series collection"
    );
    for (filter, update) in [
        (doc! { "count": 1 }, doc! { "$set": { "m": "gate-2" } }),
        (doc! { "m": "gate-1" }, doc! { "$inc": { "count": 1 } }),
    ] {
        refused(scans.update_many(filter, update).await, 72);
    }
    // The neighbour: a multi-update of the metaField by the metaField.
    let changed = scans
        .update_many(doc! { "m": "gate-1" }, doc! { "$set": { "m": "gate-2" } })
        .await
        .unwrap();
    assert_eq!(changed.matched_count, 1);
}

// --- $geoNear's key --------------------------------------------------------------------------

#[tokio::test]
async fn geo_near_without_a_key_over_two_2dsphere_indexes_fails() {
    let db = database("rules_geonear_key").await;
    let venues = coll(&db, "venues");
    for field in ["entrance", "stage"] {
        create_index(&venues, doc! { field: "2dsphere" })
            .await
            .unwrap();
    }
    venues
        .insert_one(doc! {
            "entrance": { "type": "Point", "coordinates": [13.4, 52.5] },
            "stage": { "type": "Point", "coordinates": [13.41, 52.51] },
        })
        .await
        .unwrap();
    let near = |key: Option<&str>| {
        let mut stage = doc! {
            "near": { "type": "Point", "coordinates": [13.4, 52.5] },
            "distanceField": "d",
        };
        if let Some(key) = key {
            stage.insert("key", key);
        }
        vec![doc! { "$geoNear": stage }]
    };
    let msg = refused(venues.aggregate(near(None)).await, 27);
    assert!(
        msg.starts_with("There is more than one 2dsphere index on "),
        "{msg}"
    );
    let found: Vec<_> = venues
        .aggregate(near(Some("entrance")))
        .await
        .unwrap()
        .collect()
        .await;
    assert_eq!(found.len(), 1);
}

// --- rules SecantusDB enforces by itself -----------------------------------------------------

#[tokio::test]
async fn secantus_already_refuses_a_hint_naming_no_index() {
    let db = database("rules_hint").await;
    let c = coll(&db, "c");
    c.insert_one(doc! { "a": 1 }).await.unwrap();
    refused(
        c.find(doc! {})
            .hint(mongodb::options::Hint::Name("a_1".into()))
            .await,
        2,
    );
    create_index(&c, doc! { "a": 1 }).await.unwrap();
    c.find(doc! {})
        .hint(mongodb::options::Hint::Name("a_1".into()))
        .await
        .unwrap();
}

#[tokio::test]
async fn secantus_already_refuses_max_time_on_a_get_more_of_a_plain_cursor() {
    let db = database("rules_getmore").await;
    let c = coll(&db, "c");
    c.insert_many((0..5).map(|i| doc! { "i": i }))
        .await
        .unwrap();
    let reply = run(&db, doc! { "find": "c", "batchSize": 1 })
        .await
        .unwrap();
    let id = reply.get_document("cursor").unwrap().get_i64("id").unwrap();
    refused(
        run(
            &db,
            doc! { "getMore": id, "collection": "c", "maxTimeMS": 1000 },
        )
        .await,
        2,
    );
    run(&db, doc! { "getMore": id, "collection": "c" })
        .await
        .unwrap();
}

#[tokio::test]
async fn secantus_already_refuses_a_write_concern_inside_a_transaction() {
    let db = database("rules_txn_wc").await;
    run(&db, doc! { "create": "c" }).await.unwrap();
    let mut session = db.client().start_session().await.unwrap();
    session.start_transaction().await.unwrap();
    let refusal = db
        .run_command(doc! { "insert": "c", "documents": [{ "x": 1 }], "writeConcern": { "w": 1 } })
        .session(&mut session)
        .await;
    refused(refusal, 72);
    let _ = session.abort_transaction().await;
}

// --- turning rules off -----------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn a_rule_is_turned_off_by_name_with_a_reason() {
    let server = WithoutRule::start("parallel-arrays", "shows SecantusDB's own leniency").await;
    assert_eq!(server.server.rules_off(), ["parallel-arrays"]);
    let db = server.database("rules_off");
    let c = coll(&db, "c");
    create_index(&c, doc! { "a": 1, "b": 1 }).await.unwrap();
    c.insert_one(doc! { "a": [1, 2], "b": [3, 4] })
        .await
        .unwrap();
    // The others stay on.
    refused(
        run(
            &db,
            doc! { "create": "d", "collation": { "locale": "xx_NOPE" } },
        )
        .await,
        2,
    );
    server.stop().await;
}

#[test]
fn turning_off_needs_known_names_and_a_reason() {
    let unknown = TestServer::start_with_rules_off(None, &["parallel-array"], "a reason")
        .expect_err("no such rule");
    assert_eq!(unknown.kind(), std::io::ErrorKind::InvalidInput);
    assert!(unknown.to_string().contains("parallel-arrays"), "{unknown}");
    let reasonless =
        TestServer::start_with_rules_off(None, &["parallel-arrays"], " ").expect_err("no reason");
    assert_eq!(reasonless.kind(), std::io::ErrorKind::InvalidInput);
    let none = TestServer::start_with_rules_off(None, &[], "a reason").expect_err("no rule");
    assert_eq!(none.kind(), std::io::ErrorKind::InvalidInput);
    assert!(RULES.iter().any(|(name, _)| *name == "parallel-arrays"));
}

/// The time a change stream's resume token carries: mongod's own keystring (its first byte 130,
/// then the cluster time's seconds and increment, big-endian) or SecantusDB's hex BSON (`t`).
fn token_time(token: &Document) -> Option<mongodb::bson::Timestamp> {
    let data = token.get_str("_data").ok()?;
    let bytes: Vec<u8> = (0..data.len() / 2)
        .map(|i| u8::from_str_radix(data.get(2 * i..2 * i + 2)?, 16).ok())
        .collect::<Option<_>>()?;
    if bytes.first() == Some(&130) && bytes.len() >= 9 {
        let word = |at: usize| {
            u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
        };
        return Some(mongodb::bson::Timestamp {
            time: word(1),
            increment: word(5),
        });
    }
    Document::from_reader(bytes.as_slice())
        .ok()?
        .get_timestamp("t")
        .ok()
}

/// A database stream that matches nothing, read past five inserts into another database: the
/// time of its post-batch resume token, and the newest entry of the oplog then.
async fn quiet_token_and_newest(
    client: &Client,
    db: &Database,
) -> (mongodb::bson::Timestamp, mongodb::bson::Timestamp) {
    let mut stream = db
        .watch()
        .pipeline([doc! { "$match": { "ns.coll": "nothing_here" } }])
        .max_await_time(Duration::from_millis(100))
        .await
        .unwrap();
    // in another database: the stream's scan sees these entries and passes them by
    let other = client.database(&format!("{}_other", db.name()));
    coll(&other, "elsewhere")
        .insert_many((0..5).map(|i| doc! { "_id": i }))
        .await
        .unwrap();
    for _ in 0..3 {
        assert!(stream.next_if_any().await.unwrap().is_none());
    }
    let token = mongodb::bson::to_document(&stream.resume_token().unwrap()).unwrap();
    let newest = client
        .database("local")
        .collection::<Document>("oplog.rs")
        .find_one(doc! {})
        .sort(doc! { "$natural": -1 })
        .await
        .unwrap()
        .unwrap();
    (
        token_time(&token).expect("a token with a time"),
        newest.get_timestamp("ts").unwrap(),
    )
}

/// mongod's post-batch resume token is the position its scan of the oplog reached, with that
/// entry's time; SecantusDB's, for a reply that matched nothing, carries a time it mints then,
/// later than an entry minted and not yet visible (which a later reply delivers): the sync
/// worker's `caught_up` returned before such a change was applied.
#[tokio::test]
async fn a_quiet_streams_resume_token_carries_no_time_past_the_oplog() {
    let db = database("rules_change_stream_clock").await;
    let (token, newest) = quiet_token_and_newest(db.client(), &db).await;
    assert!(
        token <= newest,
        "the token's time {token:?} is past the oplog's newest {newest:?}"
    );
}

#[tokio::test]
async fn without_the_rule_a_quiet_streams_token_runs_ahead_of_the_oplog() {
    // the positive control of the rule above
    let server = WithoutRule::start(
        "change-stream-clock",
        "shows SecantusDB's own post-batch token",
    )
    .await;
    let db = server.database("rules_change_stream_clock_off");
    let (token, newest) = quiet_token_and_newest(db.client(), &db).await;
    assert!(token > newest, "{token:?} vs {newest:?}");
    server.stop().await;
}

/// A database stream with `fullDocument: "required"` that admits collection `a` only (whose
/// post-images are on) reads past an update of `b` (whose are not): the update of `a` after it,
/// or the error a missing image raises.
async fn required_images_past_another_collection(db: &Database) -> mongodb::error::Result<String> {
    db.run_command(doc! { "create": "a", "changeStreamPreAndPostImages": { "enabled": true } })
        .await
        .unwrap();
    coll(db, "a")
        .insert_one(doc! { "_id": 1, "v": 0 })
        .await
        .unwrap();
    coll(db, "b")
        .insert_one(doc! { "_id": 1, "v": 0 })
        .await
        .unwrap();
    let mut stream = db
        .watch()
        .pipeline([doc! { "$match": { "ns.coll": { "$in": ["a"] } } }])
        .full_document(FullDocumentType::Required)
        .max_await_time(Duration::from_millis(100))
        .await?;
    coll(db, "b")
        .update_one(doc! { "_id": 1 }, doc! { "$set": { "v": 1 } })
        .await
        .unwrap();
    coll(db, "a")
        .update_one(doc! { "_id": 1 }, doc! { "$set": { "v": 1 } })
        .await
        .unwrap();
    for _ in 0..20 {
        if let Some(event) = stream.next_if_any().await? {
            return Ok(event.ns.and_then(|ns| ns.coll).unwrap_or_default());
        }
    }
    panic!("no event within 20 replies");
}

/// mongod pushes a change stream's `$match` on `ns` into its oplog scan: an event of a
/// collection it leaves out never reaches the post-image lookup, nor its "required" error.
#[tokio::test]
async fn a_change_streams_match_on_ns_comes_before_the_post_image() {
    let db = database("rules_change_stream_match_first").await;
    let collection = required_images_past_another_collection(&db).await.unwrap();
    assert_eq!(collection, "a");
}

#[tokio::test]
async fn without_the_rule_an_event_the_match_leaves_out_needs_its_image() {
    // the positive control of the rule above
    let server = WithoutRule::start(
        "change-stream-match-first",
        "shows SecantusDB's projection before the $match",
    )
    .await;
    let db = server.database("rules_change_stream_match_first_off");
    let error = required_images_past_another_collection(&db)
        .await
        .expect_err("the update of b has no post-image");
    assert_eq!(code(&error), Some(47), "{error}");
    server.stop().await;
}
