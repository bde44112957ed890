//! Issue 48: `shutdown()` during a large fan-out returns at the fan-out's next chunk boundary,
//! not when the fan-out ends, and the next worker of the name resumes the fan-out after the
//! last chunk the first one committed; during a first start's full reconcile it returns at the
//! reconcile's next chunk of repairs, and the next worker reconciles the rest. Its own test binary, so its own test server: the
//! fan-out's pace is the worker's alone.

mod common;

use std::time::{Duration, Instant};

use common::{authors, command_on, eventually, held_database, shut_down, within};
use mongo_schema::bson::{doc, oid::ObjectId, Bson, Document as BsonDocument};
use mongo_schema::{FAN_OUT_CHUNK, TOKENS_COLLECTION};

const HOLDERS: i64 = 20_000;
const WORKER: &str = "stops";
/// The drifted holders a first start reconciles: three chunks of repairs (a chunk's `$in` of
/// 1,000 holders takes seconds on the test server).
const DRIFTED: i64 = 3_000;

/// Applies `schema`, and stores one author named `name` and `posts` posts (`_id`s from 0) whose
/// copy of the author says `copied`; the author's id and the posts.
async fn seed(
    db: &mongodb::Database,
    schema: &mongo_schema::Schema,
    name: &str,
    copied: &str,
    posts: i64,
) -> (ObjectId, mongodb::Collection<BsonDocument>) {
    schema.apply(db).await.unwrap();
    let author = ObjectId::new();
    db.collection::<BsonDocument>("authors")
        .insert_one(doc! { "_id": author, "name": name })
        .await
        .unwrap();
    let collection = db.collection::<BsonDocument>("posts");
    let docs: Vec<BsonDocument> = (0..posts)
        .map(|i| doc! { "_id": i, "author": { "_id": author, "name": copied } })
        .collect();
    for part in docs.chunks(10_000) {
        collection.insert_many(part.to_vec()).await.unwrap();
    }
    (author, collection)
}

/// How many posts carry `name`.
async fn named(posts: &mongodb::Collection<BsonDocument>, name: &str) -> u64 {
    posts
        .count_documents(doc! { "author.name": name })
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_stops_a_fan_out_at_a_chunk_boundary_and_the_next_worker_resumes_it() {
    let chunk = FAN_OUT_CHUNK as u64;
    let db = mongo_schema_testkit::database("live_shutdown").await;
    let schema = authors::schema();
    let (author, posts) = seed(&db, &schema, "Pro", "Pro", HOLDERS).await;

    let first = schema
        .sync_worker(&db)
        .name(WORKER)
        .ready_timeout(Duration::from_secs(120))
        .spawn();
    within(
        Duration::from_secs(150),
        "the first worker is ready",
        first.ready(),
    )
    .await
    .unwrap();
    let renamed_at = Instant::now();
    authors::rename_author(&db, author, "Pro 2").await;
    // at least one chunk committed, the fan-out not done
    let first_chunk = eventually(
        Duration::from_secs(120),
        "the first chunk of the fan-out lands",
        || async { named(&posts, "Pro 2").await >= chunk },
    )
    .await;
    let before = named(&posts, "Pro 2").await;
    assert!(
        before < HOLDERS as u64 / 2,
        "the fan-out is still early when shutdown is asked: {before} of {HOLDERS} renamed"
    );

    let asked = Instant::now();
    within(
        Duration::from_secs(5),
        "shutdown returns at the fan-out's next chunk boundary",
        first.shutdown(),
    )
    .await
    .unwrap();
    let took = asked.elapsed();
    let at_shutdown = named(&posts, "Pro 2").await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let a_second_later = named(&posts, "Pro 2").await;
    println!(
        "first chunk landed {first_chunk:?} after the rename; shutdown asked with {before} \
         renamed, returned after {took:?} with {at_shutdown} of {HOLDERS} renamed \
         ({:?} after the rename)",
        renamed_at.elapsed()
    );
    // the positive control: the worker really stopped in the middle of the fan-out
    assert!(
        at_shutdown < HOLDERS as u64,
        "shutdown returned before the fan-out ended: {at_shutdown} of {HOLDERS}"
    );
    assert_eq!(
        a_second_later, at_shutdown,
        "nothing is written after shutdown returned"
    );
    assert_eq!(
        at_shutdown % chunk,
        0,
        "whole chunks landed, in holder order"
    );
    assert_eq!(
        posts
            .count_documents(doc! { "_id": { "$lt": at_shutdown as i64 }, "author.name": "Pro 2" })
            .await
            .unwrap(),
        at_shutdown,
        "the chunks that landed are the first ones"
    );
    // the fan-out's progress is recorded: its last committed holder
    let tokens = db.collection::<BsonDocument>(TOKENS_COLLECTION);
    let progress = doc! { "_id.lease": WORKER, "_id.fan_out": { "$exists": true } };
    let record = tokens.find_one(progress.clone()).await.unwrap();
    assert_eq!(
        record.as_ref().and_then(|r| r.get("after")),
        Some(&Bson::Int64(at_shutdown as i64 - 1)),
        "the progress of the cut fan-out: {record:?}"
    );

    // the next worker of the name, on a client that logs its commands
    let (client, log) = mongo_schema_testkit::monitored_client().await;
    let second = schema
        .sync_worker(&client.database(db.name()))
        .name(WORKER)
        .spawn();
    let resumed = Instant::now();
    eventually(
        Duration::from_secs(300),
        "every post is renamed by the next worker",
        || async { named(&posts, "Pro 2").await == HOLDERS as u64 },
    )
    .await;
    println!(
        "the next worker renamed the rest in {:?}; {:?}",
        resumed.elapsed(),
        second.stats().snapshot()
    );
    // it resumed after the last committed holder: no chunk of its walk starts before it
    let starts: Vec<Bson> = log
        .commands()
        .into_iter()
        .filter(|c| c.name == "update" && c.command.get_str("update").ok() == Some("posts"))
        .filter_map(|c| {
            let update = c
                .command
                .get_array("updates")
                .ok()?
                .first()?
                .as_document()?
                .clone();
            update
                .get_document("q")
                .ok()?
                .get_document("_id")
                .ok()?
                .get("$gte")
                .cloned()
        })
        .collect();
    assert!(!starts.is_empty(), "the next worker's chunks were seen");
    assert_eq!(
        starts.first(),
        Some(&Bson::Int64(at_shutdown as i64)),
        "the next worker's first chunk starts right after the last holder committed: {starts:?}"
    );
    eventually(
        Duration::from_secs(30),
        "the finished fan-out deletes its progress",
        || async { tokens.count_documents(progress.clone()).await.unwrap() == 0 },
    )
    .await;
    within(
        Duration::from_secs(30),
        "the next worker shuts down",
        second.shutdown(),
    )
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_cuts_a_first_starts_reconcile_at_a_chunk_boundary() {
    let db = mongo_schema_testkit::database("live_shutdown_reconcile").await;
    let schema = authors::schema();
    // every post's copy has drifted: a fresh worker's reconcile repairs them, a batch at a time
    let (_, posts) = seed(&db, &schema, "New", "Old", DRIFTED).await;

    // the first worker's first repair of the posts is held: its reconcile is under way
    let (held_db, held, release) = held_database(&db, command_on("update", "posts")).await;
    let first = schema.sync_worker(&held_db).name("reconciles").spawn();
    tokio::task::spawn_blocking(move || held.recv_timeout(Duration::from_secs(60)))
        .await
        .unwrap()
        .expect("the reconcile's first repair is held within 60 s");
    let asked = Instant::now();
    let stopping = tokio::spawn(first.shutdown());
    // the stop raised, the held repair goes on; the reconcile stops before its next chunk of
    // repairs
    tokio::time::sleep(Duration::from_millis(300)).await;
    release.send(()).unwrap();
    within(
        Duration::from_secs(60),
        "shutdown returns at the reconcile's next chunk boundary",
        stopping,
    )
    .await
    .unwrap()
    .unwrap();
    let took = asked.elapsed();
    let at_shutdown = named(&posts, "New").await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    println!("shutdown returned after {took:?} with {at_shutdown} of {DRIFTED} repaired");
    // the positive control: the reconcile was cut (it does not finish behind a shutdown)
    assert!(
        at_shutdown < DRIFTED as u64,
        "shutdown waited for the whole reconcile: {at_shutdown} of {DRIFTED} repaired when it returned"
    );
    assert_eq!(
        named(&posts, "New").await,
        at_shutdown,
        "nothing is written after shutdown returned"
    );

    // the next worker of the name starts fresh again (no token was saved) and repairs the rest
    let second = schema
        .sync_worker(&db)
        .name("reconciles")
        .ready_timeout(Duration::from_secs(120))
        .spawn();
    eventually(
        Duration::from_secs(120),
        "every post is repaired by the next worker",
        || async { named(&posts, "New").await == DRIFTED as u64 },
    )
    .await;
    assert_eq!(second.stats().snapshot().reconciles, 1);
    shut_down(second).await;
}
