//! Failure records tell the truth: one per copy, holder and source (an array of copies with two
//! failing sources has two), removed by the next successful rewrite of that holder for that copy
//! (by the worker or reconcile, without `retry_failures`), listed and retried a batch at a time,
//! and bounded by a TTL.

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::{eventually, shut_down};
use futures_util::{StreamExt, TryStreamExt};
use model::*;
use mongo_schema::bson::{doc, Bson, DateTime, Document as BsonDocument};
use mongo_schema::prelude::*;
use mongo_schema::{SyncWorkerHandle, FAILURES_COLLECTION, FAILURE_RECORD_TTL};

mod model {
    use mongo_schema::prelude::*;
    use serde::{Deserialize, Serialize};

    #[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
    #[collection(name = "labels")]
    pub struct Label {
        #[serde(rename = "_id")]
        pub id: i64,
        pub name: String,
    }

    /// A holder with an array of copies.
    #[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
    #[collection(name = "boards")]
    pub struct Board {
        #[serde(rename = "_id")]
        pub id: ObjectId,
        pub title: String,
        #[extended_ref(to = Label, fields = "name", sync = "async", max = 10)]
        pub labels: Vec<BoardLabels>,
    }

    pub fn schema() -> Schema {
        Schema::new()
            .model::<Label>()
            .model::<Board>()
            .build()
            .expect("the boards schema builds")
    }
}

fn label(id: i64, name: &str) -> Label {
    Label {
        id,
        name: name.into(),
    }
}

async fn applied(prefix: &str) -> mongodb::Database {
    let db = mongo_schema_testkit::database(prefix).await;
    schema().apply(&db).await.unwrap();
    db
}

/// Labels 1 and 2, a board copying both that another client left invalid (a title that is no
/// string: its validator rejects every update), and a valid board copying both.
async fn boards(db: &mongodb::Database) -> (ObjectId, ObjectId) {
    let (one, two) = (label(1, "one"), label(2, "two"));
    Label::collection(db)
        .insert_many([&one, &two])
        .await
        .unwrap();
    let (bad, good) = (ObjectId::new(), ObjectId::new());
    for id in [bad, good] {
        Board::collection(db)
            .insert_one(&Board {
                id,
                title: "board".into(),
                labels: vec![(&one).into(), (&two).into()],
            })
            .await
            .unwrap();
    }
    set_title(db, bad, Bson::Int32(42)).await;
    (bad, good)
}

async fn set_title(db: &mongodb::Database, board: ObjectId, title: Bson) {
    db.collection::<BsonDocument>("boards")
        .update_one(doc! { "_id": board }, doc! { "$set": { "title": title } })
        .bypass_document_validation(true)
        .await
        .unwrap();
}

async fn rename(db: &mongodb::Database, id: i64, name: &str) {
    Label::collection(db)
        .update_one(doc! { "_id": id }, doc! { "$set": { "name": name } })
        .await
        .unwrap();
}

/// The copied names of a board's labels, in order.
async fn label_names(db: &mongodb::Database, board: ObjectId) -> Vec<String> {
    let stored = db
        .collection::<BsonDocument>("boards")
        .find_one(doc! { "_id": board })
        .await
        .unwrap()
        .unwrap();
    stored
        .get_array("labels")
        .unwrap()
        .iter()
        .map(|l| l.as_document().unwrap().get_str("name").unwrap().to_owned())
        .collect()
}

async fn started(db: &mongodb::Database) -> SyncWorkerHandle {
    let worker = common::ready_worker(&schema(), db, "records").await;
    worker
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_array_of_copies_keeps_one_record_per_failing_source() {
    let db = applied("records_array").await;
    let schema = schema();
    let (bad, good) = boards(&db).await;
    let worker = started(&db).await;
    rename(&db, 1, "one, renamed").await;
    rename(&db, 2, "two, renamed").await;
    eventually(
        Duration::from_secs(20),
        "the valid board converges",
        || async { label_names(&db, good).await == ["one, renamed", "two, renamed"] },
    )
    .await;
    eventually(
        Duration::from_secs(20),
        "both failures of the invalid board are recorded",
        || async { schema.sync_failures(&db).await.unwrap().len() == 2 },
    )
    .await;
    let recorded = schema.sync_failures(&db).await.unwrap();
    let sources: BTreeSet<String> = recorded.iter().map(|f| f.source.to_string()).collect();
    assert_eq!(sources, BTreeSet::from(["1".to_owned(), "2".to_owned()]));
    for failure in &recorded {
        assert_eq!(failure.copy, "boards.labels");
        assert_eq!(failure.holder, Bson::ObjectId(bad));
        assert_eq!(failure.code, Some(121), "{failure}");
        assert_eq!(failure.worker, "records");
    }
    // the records are bounded by a TTL on the time last met
    let indexes: Vec<mongodb::IndexModel> = common::all(
        db.collection::<BsonDocument>(FAILURES_COLLECTION)
            .list_indexes(),
    )
    .await;
    let ttl = indexes
        .iter()
        .find(|i| i.keys == doc! { "at": 1 })
        .expect("a TTL index on `at`");
    assert_eq!(
        ttl.options.as_ref().and_then(|o| o.expire_after),
        Some(Duration::from_secs(30 * 24 * 60 * 60)),
        "30 days, as the README documents"
    );
    assert_eq!(FAILURE_RECORD_TTL, Duration::from_secs(30 * 24 * 60 * 60));
    shut_down(worker).await;

    // mended, each record is retried for its own source
    set_title(&db, bad, "mended".into()).await;
    let retry = schema.retry_failures(&db).await.unwrap();
    assert_eq!((retry.retried, retry.resolved), (2, 2), "{retry}");
    assert_eq!(
        label_names(&db, bad).await,
        ["one, renamed", "two, renamed"],
        "both sources' values were applied"
    );
    assert!(schema.sync_failures(&db).await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_goes_with_the_next_successful_rewrite_without_retry_failures() {
    let db = applied("records_cleared").await;
    let schema = schema();
    let (bad, _) = boards(&db).await;

    // the worker: a rename fails on the invalid board and is recorded
    let worker = started(&db).await;
    rename(&db, 1, "one, first").await;
    eventually(
        Duration::from_secs(20),
        "the failure is recorded",
        || async { schema.sync_failures(&db).await.unwrap().len() == 1 },
    )
    .await;
    // the board is mended; the next rename of that label rewrites it and removes the record
    set_title(&db, bad, "mended".into()).await;
    rename(&db, 1, "one, second").await;
    eventually(
        Duration::from_secs(20),
        "the rewrite of the mended board removed its record",
        || async {
            label_names(&db, bad).await == ["one, second", "two"]
                && schema.sync_failures(&db).await.unwrap().is_empty()
        },
    )
    .await;
    shut_down(worker).await;

    // reconcile: its failed repair is recorded, its successful repair removes the record in
    // the same pass
    set_title(&db, bad, Bson::Int32(42)).await;
    rename(&db, 2, "two, unfollowed").await;
    let report = schema.reconcile(&db).await.unwrap();
    assert_eq!(report.recorded_failures(), 1, "{report}");
    let recorded = schema.sync_failures(&db).await.unwrap();
    assert_eq!(recorded[0].source, Bson::Int64(2));
    assert_eq!(recorded[0].worker, "reconcile");
    set_title(&db, bad, "mended again".into()).await;
    let report = schema.reconcile(&db).await.unwrap();
    assert_eq!(report.repaired(), 1, "{report}");
    assert_eq!(
        report.recorded_failures(),
        0,
        "removed in the same pass: {report}"
    );
    assert_eq!(
        label_names(&db, bad).await,
        ["one, second", "two, unfollowed"]
    );

    // reconcile also removes the record of a holder someone else mended and rewrote
    db.collection::<BsonDocument>(FAILURES_COLLECTION)
        .insert_one(doc! {
            "_id": { "copy": "boards.labels", "holder": bad, "source": 1_i64 },
            "copy": "boards.labels", "holder": bad, "source": 1_i64, "worker": "records",
            "message": "met earlier", "code": 121, "at": DateTime::now(), "attempts": 1_i64,
        })
        .await
        .unwrap();
    let report = schema.reconcile(&db).await.unwrap();
    assert_eq!(report.drifted(), 0, "{report}");
    assert_eq!(report.recorded_failures(), 0, "the copy agrees: {report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_records_are_listed_and_retried_a_batch_at_a_time() {
    let db = applied("records_many").await;
    let schema = schema();
    const RECORDS: usize = 10_000;
    let records: Vec<BsonDocument> = (0..RECORDS as i64)
        .map(|i| {
            doc! {
                "_id": { "copy": "boards.gone", "holder": i, "source": 1_i64 },
                "copy": "boards.gone", "holder": i, "source": 1_i64, "worker": "records",
                "message": "a copy this schema no longer has", "code": 121,
                "at": DateTime::now(), "attempts": 1_i64,
            }
        })
        .collect();
    let failures = db.collection::<BsonDocument>(FAILURES_COLLECTION);
    for chunk in records.chunks(2_000) {
        failures.insert_many(chunk).await.unwrap();
    }

    let (client, log) = mongo_schema_testkit::monitored_client().await;
    let monitored = client.database(db.name());
    let mut stream = schema.sync_failure_stream(&monitored);
    let first = stream.next().await.unwrap().unwrap();
    assert_eq!(first.holder, Bson::Int64(0));
    // the first record came after one batch: nothing else was read
    assert_eq!(log.count("find"), 1, "{:?}", log.names());
    assert_eq!(log.count("getMore"), 0, "{:?}", log.names());
    let find = log
        .commands()
        .into_iter()
        .find(|c| c.name == "find")
        .unwrap();
    assert_eq!(
        find.command.get_i32("batchSize"),
        Ok(1000),
        "{:?}",
        find.command
    );
    let mut listed = 1;
    let mut last = first.holder;
    while let Some(record) = stream.try_next().await.unwrap() {
        listed += 1;
        assert!(record.holder.as_i64() > last.as_i64(), "in order");
        last = record.holder;
    }
    assert_eq!(listed, RECORDS);
    let get_mores: Vec<_> = log
        .commands()
        .into_iter()
        .filter(|c| c.name == "getMore")
        .collect();
    assert!(get_mores.len() >= RECORDS / 1000 - 1, "{}", get_mores.len());
    for get_more in &get_mores {
        assert_eq!(get_more.command.get_i32("batchSize"), Ok(1000));
    }

    // retried a page at a time: these records are of a copy the schema does not have
    log.clear();
    let retry = schema.retry_failures(&monitored).await.unwrap();
    assert_eq!(retry.retried, RECORDS as u64);
    assert_eq!(retry.unknown_copies, RECORDS as u64);
    let pages: Vec<_> = log
        .commands()
        .into_iter()
        .filter(|c| c.name == "find" && c.command.get_str("find") == Ok(FAILURES_COLLECTION))
        .collect();
    assert_eq!(
        pages.len(),
        RECORDS / 1000 + 1,
        "10 full pages and an empty one"
    );
    for page in &pages {
        assert_eq!(
            page.command.get_i64("limit"),
            Ok(1000),
            "{:?}",
            page.command
        );
    }
    assert_eq!(log.count("getMore"), 0, "each page is one reply");
    assert_eq!(
        failures.count_documents(doc! {}).await.unwrap(),
        RECORDS as u64,
        "records of unknown copies stay"
    );
}
