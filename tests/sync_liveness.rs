//! A worker never stays alive and idle: after a paused holder loses its lease to a standby, is
//! released and shut down, the standby applies every later rename; a stalled apply loop is
//! reported and recovers. (The 100,000-holder fan-out is `sync_big_fan_out.rs`, alone in its
//! binary.)

mod common;

use std::time::{Duration, Instant};

use common::cases::*;
use common::{authors, eventually, held_database, ready, shut_down_within, within};
use mongo_schema::bson::{doc, oid::ObjectId, Document as BsonDocument};
use mongo_schema::prelude::*;

const SHUTDOWN: Duration = Duration::from_secs(60);

const LEASE: Duration = Duration::from_secs(1);
const WORKER: &str = "takeover";

/// A fresh database named after `prefix` with the authors' schema applied, the author Ann
/// (raw documents, as another service writes them) and `n` posts holding her name: the
/// database, the schema, her id and the posts.
async fn ann_and_posts(
    prefix: &str,
    n: i64,
) -> (
    mongodb::Database,
    Schema,
    ObjectId,
    mongodb::Collection<BsonDocument>,
) {
    let db = mongo_schema_testkit::database(prefix).await;
    let schema = authors::schema();
    schema.apply(&db).await.unwrap();
    let author = ObjectId::new();
    db.collection::<BsonDocument>("authors")
        .insert_one(doc! { "_id": author, "name": "Ann" })
        .await
        .unwrap();
    let posts = db.collection::<BsonDocument>("posts");
    posts
        .insert_many((0..n).map(|i| doc! { "_id": i, "author": { "_id": author, "name": "Ann" } }))
        .await
        .unwrap();
    (db, schema, author, posts)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_standby_that_took_over_from_a_paused_holder_applies_every_later_rename() {
    let db = applied("live_takeover").await;
    let schema = schema();
    let (_, agent, _, _) = desk(&db, 3).await;
    let (held_db, held, release) = held_database(&db, agent_fan_out).await;
    let paused = schema
        .sync_worker(&held_db)
        .name(WORKER)
        .lease(LEASE)
        .spawn();
    ready(&paused).await;
    let standby = schema.sync_worker(&db).name(WORKER).lease(LEASE).spawn();
    ready(&standby).await;
    assert!(standby.stats().is_standby());

    take_over_from_a_paused_fan_out(&db, agent.id, held, &standby, "the newer rename lands").await;
    tokio::time::sleep(LEASE * 3).await;
    release.send(()).unwrap();
    shut_down_within(paused, SHUTDOWN).await;
    for round in 0..3 {
        let name = format!("Later {round}");
        rename_agent(&db, agent.id, &name).await;
        let took = agent_copies_become(
            &db,
            3,
            &name,
            Duration::from_secs(20),
            "a later rename lands",
        )
        .await;
        println!(
            "{name} landed in {took:?}: {:?}",
            standby.stats().snapshot()
        );
        assert!(
            took < Duration::from_secs(5),
            "{name} took {took:?} to land"
        );
    }
    assert!(standby.stats().is_active());
    shut_down_within(standby, SHUTDOWN).await;
}

/// The watchdog: a batch whose apply never ends (as a command that never returns would hold
/// it) is reported and the stream reopened from the saved token, and the change lands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_apply_loop_is_reported_and_recovers() {
    let (db, schema, author, posts) = ann_and_posts("live_watchdog", 3).await;
    let worker = schema
        .sync_worker(&db)
        .name("watched")
        .max_await_time(Duration::from_millis(100))
        .stall_timeout(Duration::from_secs(2))
        .__stall_next_batch()
        .spawn();
    ready(&worker).await;
    authors::rename_author(&db, author, "Anna").await;
    let took = eventually(
        Duration::from_secs(30),
        "the rename lands after the watchdog reopened the stream",
        || async {
            posts
                .count_documents(doc! { "author.name": "Anna" })
                .await
                .unwrap()
                == 3
        },
    )
    .await;
    let snapshot = worker.stats().snapshot();
    println!("landed after {took:?}: {snapshot:?}");
    assert_eq!(snapshot.stalls, 1, "the stall was counted once");
    assert!(
        took >= Duration::from_secs(2),
        "the stalled batch held the rename until the watchdog's bound: {took:?}"
    );
    let record = db
        .collection::<BsonDocument>(mongo_schema::TOKENS_COLLECTION)
        .find_one(doc! { "_id": "watched" })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.get_i64("stalls").ok(), Some(1), "{record}");
    assert!(record.get_datetime("stalled_at").is_ok(), "{record}");
    // and it goes on applying
    authors::rename_author(&db, author, "Annie").await;
    within(Duration::from_secs(30), "caught up", worker.caught_up())
        .await
        .unwrap();
    assert_eq!(
        posts
            .count_documents(doc! { "author.name": "Annie" })
            .await
            .unwrap(),
        3,
        "caught_up resolved with every copy rewritten"
    );
    assert_eq!(worker.stats().snapshot().stalls, 1);
    shut_down_within(worker, SHUTDOWN).await;
}

/// `caught_up` resolves once every change committed before the call is applied: each of many
/// renames is in its copies when it returns, with no polling.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn caught_up_resolves_with_every_earlier_change_applied() {
    let (db, schema, author, posts) = ann_and_posts("live_caught_up", 50).await;
    let worker = schema.sync_worker(&db).name("caught").spawn();
    ready(&worker).await;
    for round in 0..10 {
        let name = format!("Ann {round}");
        authors::rename_author(&db, author, &name).await;
        within(Duration::from_secs(30), "caught up", worker.caught_up())
            .await
            .unwrap();
        assert_eq!(
            posts
                .count_documents(doc! { "author.name": &name })
                .await
                .unwrap(),
            50,
            "round {round}: every copy holds the rename once caught_up returned"
        );
    }
    shut_down_within(worker, SHUTDOWN).await;
}

/// A worker catching up a backlog keeps polling the batches it has in flight while it reads the
/// next one: a batch left unpolled holds the pool connection of the command it is in the middle
/// of, and with enough of them the stream's next `getMore` and the lease's renewal waited for a
/// connection until the lease lapsed. The worker then lost and retook its lease every 9 s and
/// saved no token (the sync benchmark's catch-up of 10,000 renames never ended). A pool of 3
/// connections makes it certain; the worker must catch up without losing its lease, and the
/// service's own commands on the same client must not wait for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_catching_up_leaves_its_client_connections_for_the_stream_and_the_lease() {
    const AUTHORS: usize = 20;
    const ROUNDS: usize = 50;
    let base = mongo_schema_testkit::database("live_small_pool").await;
    let uri = tokio::task::spawn_blocking(mongo_schema_testkit::uri)
        .await
        .unwrap();
    let db = mongodb::Client::with_uri_str(format!("{uri}&maxPoolSize=3"))
        .await
        .unwrap()
        .database(base.name());
    let schema = authors::schema();
    schema.apply(&db).await.unwrap();
    let authors: Vec<ObjectId> = (0..AUTHORS).map(|_| ObjectId::new()).collect();
    db.collection::<BsonDocument>("authors")
        .insert_many(authors.iter().map(|a| doc! { "_id": *a, "name": "v" }))
        .await
        .unwrap();
    db.collection::<BsonDocument>("posts")
        .insert_many(authors.iter().enumerate().flat_map(|(i, a)| {
            (0..5_i64).map(
                move |p| doc! { "_id": i as i64 * 5 + p, "author": { "_id": *a, "name": "v" } },
            )
        }))
        .await
        .unwrap();
    let worker = || {
        schema
            .sync_worker(&db)
            .name("small_pool")
            .lease(Duration::from_secs(3))
            .max_await_time(Duration::from_millis(100))
    };
    let first = worker().spawn();
    ready(&first).await;
    shut_down_within(first, SHUTDOWN).await;
    for round in 0..ROUNDS {
        for author in &authors {
            authors::rename_author(&db, *author, &format!("r{round}")).await;
        }
    }
    let worker = worker().spawn();
    let started = Instant::now();
    let slowest = std::sync::atomic::AtomicU64::new(0);
    eventually(
        Duration::from_secs(120),
        "the worker applies the backlog",
        || async {
            // a command of the service on the worker's client, meanwhile
            let asked = Instant::now();
            db.collection::<BsonDocument>("authors")
                .find_one(doc! {})
                .await
                .unwrap();
            slowest.fetch_max(
                asked.elapsed().as_millis() as u64,
                std::sync::atomic::Ordering::Relaxed,
            );
            worker.stats().snapshot().applied >= (AUTHORS * ROUNDS) as u64
        },
    )
    .await;
    within(Duration::from_secs(60), "caught up", worker.caught_up())
        .await
        .unwrap();
    let snapshot = worker.stats().snapshot();
    let slowest = Duration::from_millis(slowest.into_inner());
    println!(
        "caught up {} renames in {:?}; the slowest command of the service meanwhile took {slowest:?}: {snapshot:?}",
        AUTHORS * ROUNDS,
        started.elapsed()
    );
    assert_eq!(
        snapshot.takeovers, 1,
        "the worker never lost its lease: {snapshot:?}"
    );
    assert!(
        slowest < Duration::from_secs(2),
        "the service's commands did not wait for the worker: {slowest:?}"
    );
    let stale = db
        .collection::<BsonDocument>("posts")
        .count_documents(doc! { "author.name": { "$ne": format!("r{}", ROUNDS - 1) } })
        .await
        .unwrap();
    assert_eq!(stale, 0, "every copy holds the last rename");
    shut_down_within(worker, SHUTDOWN).await;
}
