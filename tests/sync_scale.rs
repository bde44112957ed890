//! Sync at production size and over a long life: a rename of a source that 20,000 holders copy
//! is written in fenced chunks of at most `FAN_OUT_CHUNK` holders, paged by holder `_id` across
//! `_id` types, while a rename of another source in the same batch converges without waiting for
//! the big one's last chunk; a holder collection that refuses every chunk after the first records
//! its holders and never stops the other sources' events; a quiet stream saves its token; a
//! failure log whose index the server refuses still records; a deleted token document restarts
//! the epoch above the lanes', and the lane count is recorded with the token.

mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{eventually, ready, ready_within, shut_down_within, within};
use mongo_schema::bson::{doc, oid::ObjectId, Bson, Document as BsonDocument};
use mongo_schema::prelude::*;
use mongo_schema::FAN_OUT_CHUNK;

const HOLDERS: usize = 20_000;
/// The bound SPEC §12 pins, written out so the test fails if the constant grows.
const CHUNK: i64 = 1_000;
const SHUTDOWN: Duration = Duration::from_secs(60);
const CONVERGE: Duration = Duration::from_secs(180);

mod model {
    use mongo_schema::prelude::*;
    use serde::{Deserialize, Serialize};

    /// The source.
    pub use crate::common::owners::Owner;

    /// A holder of an async copy (its `_id`s are of several BSON types: the test writes them
    /// raw and lifts the validator).
    #[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
    #[collection(name = "items")]
    pub struct Item {
        #[serde(rename = "_id")]
        pub id: ObjectId,
        pub n: i64,
        #[extended_ref(to = Owner, fields = "name", sync = "async")]
        pub owner: Option<ItemOwner>,
    }

    /// A second holder of the same source, whose validator the control test narrows.
    #[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
    #[collection(name = "strict_items")]
    pub struct StrictItem {
        #[serde(rename = "_id")]
        pub id: i64,
        pub n: i64,
        #[extended_ref(to = Owner, fields = "name", sync = "async")]
        pub owner: Option<StrictItemOwner>,
    }

    pub fn schema() -> Schema {
        Schema::new()
            .model::<Owner>()
            .model::<Item>()
            .model::<StrictItem>()
            .build()
            .expect("the schema builds")
    }
}

use common::owners::{owner, rename_owner};
use model::*;

fn holder(id: Bson, n: i64, owner: &ObjectId, name: &str) -> BsonDocument {
    doc! { "_id": id, "n": n, "owner": { "_id": *owner, "name": name } }
}

/// The `_id` of the `i`th big holder: numbers, strings and ObjectIds, so the chunks' walk
/// crosses type brackets.
fn mixed_id(i: usize) -> Bson {
    match i % 4 {
        0 | 1 => Bson::Int64(i as i64),
        2 => Bson::String(format!("h{i:06}")),
        _ => Bson::ObjectId(ObjectId::new()),
    }
}

async fn insert_raw(db: &mongodb::Database, collection: &str, docs: Vec<BsonDocument>) {
    for part in docs.chunks(5_000) {
        db.collection::<BsonDocument>(collection)
            .insert_many(part.to_vec())
            .bypass_document_validation(true)
            .await
            .unwrap();
    }
}

async fn renamed(db: &mongodb::Database, collection: &str, owner: ObjectId, name: &str) -> u64 {
    db.collection::<BsonDocument>(collection)
        .count_documents(doc! { "owner._id": owner, "owner.name": name })
        .await
        .unwrap()
}

/// One `update` command of the holders, as command monitoring saw it: sent inside a
/// transaction, and the documents it matched and modified.
#[derive(Debug, Clone, Default)]
struct Update {
    collection: String,
    in_transaction: bool,
    matched: i64,
    modified: i64,
    command: BsonDocument,
}

/// A client that records every `update` it sends with its reply.
async fn update_monitor() -> (mongodb::Client, Arc<Mutex<Vec<Update>>>) {
    use mongodb::event::{command::CommandEvent, EventHandler};
    let uri = tokio::task::spawn_blocking(mongo_schema_testkit::uri)
        .await
        .unwrap();
    let mut options = mongodb::options::ClientOptions::parse(&uri).await.unwrap();
    let sent: Arc<Mutex<HashMap<i32, BsonDocument>>> = Arc::default();
    let updates: Arc<Mutex<Vec<Update>>> = Arc::default();
    let log = updates.clone();
    options.command_event_handler = Some(EventHandler::callback(move |event| match event {
        CommandEvent::Started(started) if started.command_name == "update" => {
            sent.lock()
                .unwrap()
                .insert(started.request_id, started.command);
        }
        CommandEvent::Succeeded(done) if done.command_name == "update" => {
            if let Some(command) = sent.lock().unwrap().remove(&done.request_id) {
                let number = |key: &str| match done.reply.get(key) {
                    Some(Bson::Int32(n)) => i64::from(*n),
                    Some(Bson::Int64(n)) => *n,
                    _ => 0,
                };
                log.lock().unwrap().push(Update {
                    collection: command.get_str("update").unwrap_or_default().to_owned(),
                    in_transaction: command.contains_key("txnNumber")
                        && command.get_bool("autocommit") == Ok(false),
                    matched: number("n"),
                    modified: number("nModified"),
                    command,
                });
            }
        }
        _ => {}
    }));
    (mongodb::Client::with_options(options).unwrap(), updates)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rename_of_20000_holders_is_written_in_fenced_chunks_and_never_holds_up_another() {
    let db = mongo_schema_testkit::database("scale_chunks").await;
    let schema = schema();
    schema.apply(&db).await.unwrap();
    // the holders' `_id`s mix types, which the derived validator would refuse
    db.run_command(doc! { "collMod": "items", "validator": {} })
        .await
        .unwrap();
    let (big, small) = (owner("Big"), owner("Small"));
    Owner::collection(&db)
        .insert_many([&big, &small])
        .await
        .unwrap();
    let started = Instant::now();
    let mut docs: Vec<BsonDocument> = (0..HOLDERS)
        .map(|i| holder(mixed_id(i), i as i64, &big.id, "Big"))
        .collect();
    docs.push(holder(Bson::Int64(-1), -1, &small.id, "Small"));
    insert_raw(&db, "items", docs).await;
    println!(
        "{} holders inserted in {:?}",
        HOLDERS + 1,
        started.elapsed()
    );

    let (client, updates) = update_monitor().await;
    let watched = client.database(db.name());
    let worker = |name: &str| {
        schema
            .sync_worker(&watched)
            .name(name)
            .max_await_time(Duration::from_millis(100))
            .ready_timeout(Duration::from_secs(120))
            .spawn()
    };
    // a first worker saves a token and stops, so both renames wait for the next one in one batch
    let first = worker("scale");
    ready_within(&first, Duration::from_secs(120)).await;
    shut_down_within(first, SHUTDOWN).await;
    rename_owner(&db, big.id, "Big 2").await;
    rename_owner(&db, small.id, "Small 2").await;
    updates.lock().unwrap().clear();

    let started = Instant::now();
    let second = worker("scale");
    ready_within(&second, Duration::from_secs(120)).await;
    let small_holder = doc! { "_id": -1_i64, "owner.name": "Small 2" };
    let items = db.collection::<BsonDocument>("items");
    let small_after = eventually(CONVERGE, "the small source's holder converges", || async {
        items.count_documents(small_holder.clone()).await.unwrap() == 1
    })
    .await;
    let big_when_small_done = renamed(&db, "items", big.id, "Big 2").await;
    // the worker's figures, polled (a count of 20,000 holders each time would load the server)
    let rewritten = || second.stats().snapshot().copies_rewritten;
    let mut progress = Instant::now();
    let big_after = eventually(CONVERGE, "the worker rewrites all 20,001 holders", || {
        let done = rewritten();
        if progress.elapsed() > Duration::from_secs(10) {
            progress = Instant::now();
            println!("{done} holders rewritten after {:?}", started.elapsed());
        }
        async move { done > HOLDERS as u64 }
    })
    .await;
    assert_eq!(
        renamed(&db, "items", big.id, "Big 2").await,
        HOLDERS as u64,
        "all 20,000 holders converged"
    );
    println!(
        "small source converged after {small_after:?}, when {big_when_small_done} of {HOLDERS} \
         big holders had; all of them after {big_after:?} ({:?} since the worker started)",
        started.elapsed()
    );
    assert!(
        big_when_small_done < HOLDERS as u64,
        "the small source's rename waited for every chunk of the big one"
    );

    // every update of the holders is sent inside a transaction and modifies at most
    // FAN_OUT_CHUNK of them
    let all = updates.lock().unwrap().clone();
    let updates: Vec<&Update> = all.iter().filter(|u| u.collection == "items").collect();
    // the fence: the last statement of each fenced transaction writes the worker's lane
    let fenced = all
        .iter()
        .filter(|u| u.collection == mongo_schema::TOKENS_COLLECTION && u.in_transaction)
        .count();
    let writing: Vec<&Update> = updates.iter().copied().filter(|u| u.modified > 0).collect();
    for update in &updates {
        assert!(
            update.in_transaction,
            "every fan-out write is inside a transaction: {}",
            update.command
        );
        assert!(
            update.matched <= CHUNK && update.modified <= CHUNK,
            "a transaction matched {} and modified {} holders: {}",
            update.matched,
            update.modified,
            update.command
        );
    }
    assert!(
        fenced >= updates.len(),
        "each chunk's transaction is fenced: {fenced} fence writes, {} chunks",
        updates.len()
    );
    let modified: i64 = updates.iter().map(|u| u.modified).sum();
    println!(
        "{} updates of the holders, {} of them writing (at most {} holders each), {modified} \
         holders modified in all",
        updates.len(),
        writing.len(),
        writing.iter().map(|u| u.modified).max().unwrap_or(0)
    );
    assert_eq!(modified, HOLDERS as i64 + 1);
    assert_eq!(FAN_OUT_CHUNK as i64, CHUNK);
    assert!(
        writing.len() as i64 > HOLDERS as i64 / CHUNK,
        "20 chunks of the big source and one of the small: {}",
        writing.len()
    );
    assert_eq!(
        second.stats().snapshot().copies_rewritten,
        HOLDERS as u64 + 1
    );
    assert_eq!(second.stats().snapshot().failed, 0);
    shut_down_within(second, SHUTDOWN).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_collection_that_refuses_later_chunks_never_stops_another_source() {
    const STRICT: usize = 1_200;
    let db = mongo_schema_testkit::database("scale_refuse").await;
    let schema = schema();
    schema.apply(&db).await.unwrap();
    let (big, small) = (owner("Big"), owner("Small"));
    Owner::collection(&db)
        .insert_many([&big, &small])
        .await
        .unwrap();
    let strict: Vec<BsonDocument> = (0..STRICT)
        .map(|i| holder(Bson::Int64(i as i64), i as i64, &big.id, "Big"))
        .collect();
    insert_raw(&db, "strict_items", strict).await;
    Item::collection(&db)
        .insert_one(Item {
            id: ObjectId::new(),
            n: 0,
            owner: Some(ItemOwner {
                id: small.id,
                name: "Small".into(),
            }),
        })
        .await
        .unwrap();
    // the first chunk (`_id` 0..1000) takes a new name; every later one is refused
    db.run_command(doc! {
        "collMod": "strict_items",
        "validator": { "$or": [{ "n": { "$lt": FAN_OUT_CHUNK as i64 } }, { "owner.name": "Big" }] },
        "validationLevel": "strict",
    })
    .await
    .unwrap();

    let worker = common::ready_worker(&schema, &db, "refuse").await;
    rename_owner(&db, big.id, "Big 2").await;
    rename_owner(&db, small.id, "Small 2").await;
    eventually(CONVERGE, "the other source's holder converges", || async {
        renamed(&db, "items", small.id, "Small 2").await == 1
    })
    .await;
    eventually(CONVERGE, "the refused holders are recorded", || async {
        worker.stats().snapshot().failed == (STRICT - FAN_OUT_CHUNK) as u64
    })
    .await;
    assert_eq!(
        renamed(&db, "strict_items", big.id, "Big 2").await,
        FAN_OUT_CHUNK as u64,
        "the first chunk was written"
    );
    let failures = schema.sync_failures(&db).await.unwrap();
    assert_eq!(failures.len(), STRICT - FAN_OUT_CHUNK);
    assert!(failures
        .iter()
        .all(|f| f.copy == "strict_items.owner" && f.code == Some(121)));
    // the worker went on: a later change of the other source is applied too
    rename_owner(&db, small.id, "Small 3").await;
    eventually(CONVERGE, "a later rename converges", || async {
        renamed(&db, "items", small.id, "Small 3").await == 1
    })
    .await;
    shut_down_within(worker, SHUTDOWN).await;
}

/// The saved token's time.
async fn token_time(db: &mongodb::Database, worker: &str) -> Option<mongo_schema::bson::Timestamp> {
    db.collection::<BsonDocument>(mongo_schema::TOKENS_COLLECTION)
        .find_one(doc! { "_id": worker })
        .await
        .unwrap()
        .and_then(|t| t.get_timestamp("token_time").ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quiet_stream_saves_its_token_at_the_interval() {
    const INTERVAL: Duration = Duration::from_millis(400);
    let db = mongo_schema_testkit::database("scale_quiet").await;
    let schema = schema();
    schema.apply(&db).await.unwrap();
    let spawn = |name: &str, interval: Option<Duration>| {
        let mut worker = schema
            .sync_worker(&db)
            .name(name)
            .lease(Duration::from_millis(900))
            .max_await_time(Duration::from_millis(100));
        if let Some(interval) = interval {
            worker = worker.token_save_interval(interval);
        }
        worker.spawn()
    };
    let quiet = spawn("quiet", Some(INTERVAL));
    // the control: the default interval (60 s) saves nothing more during the test
    let control = spawn("control", None);
    ready(&quiet).await;
    ready(&control).await;
    let first = eventually(
        Duration::from_secs(10),
        "a first token is saved",
        || async {
            token_time(&db, "quiet").await.is_some() && token_time(&db, "control").await.is_some()
        },
    )
    .await;
    let (quiet_before, control_before) = (
        token_time(&db, "quiet").await.unwrap(),
        token_time(&db, "control").await.unwrap(),
    );
    // no change of any source; the stream's position moves with other writes (the workers'
    // own lease renewals)
    tokio::time::sleep(INTERVAL * 3).await;
    let advanced = eventually(
        Duration::from_secs(10),
        "the quiet token's time advances",
        || async { token_time(&db, "quiet").await.unwrap() > quiet_before },
    )
    .await;
    let quiet_after = token_time(&db, "quiet").await.unwrap();
    let control_after = token_time(&db, "control").await.unwrap();
    println!(
        "quiet stream: token time {quiet_before:?} -> {quiet_after:?} ({advanced:?} after 3 \
         intervals; first token after {first:?}); control (60 s): {control_before:?} -> \
         {control_after:?}"
    );
    assert_eq!(
        control_after, control_before,
        "without an interval save a quiet stream's token stays where it was"
    );
    assert_eq!(quiet.stats().snapshot().events, 0, "no event was applied");
    within(SHUTDOWN, "the workers shut down", async {
        quiet.shutdown().await.unwrap();
        control.shutdown().await.unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_log_whose_index_the_server_refuses_still_records_and_moves_on() {
    let db = mongo_schema_testkit::database("scale_log_index").await;
    let schema = schema();
    schema.apply(&db).await.unwrap();
    let owner = owner("Ana");
    Owner::collection(&db).insert_one(&owner).await.unwrap();
    let docs: Vec<BsonDocument> = (0..3)
        .map(|n| holder(Bson::ObjectId(ObjectId::new()), n, &owner.id, "Ana"))
        .collect();
    let bad = docs[1].get("_id").unwrap().clone();
    insert_raw(&db, "items", docs).await;
    // another client leaves one holder its validator rejects
    db.collection::<BsonDocument>("items")
        .update_one(
            doc! { "_id": bad.clone() },
            doc! { "$set": { "n": "not a number" } },
        )
        .bypass_document_validation(true)
        .await
        .unwrap();
    // an operator's index of the same name as the library's TTL index, without the TTL: the
    // library's `createIndexes` on the failure log is refused
    db.run_command(doc! {
        "createIndexes": mongo_schema::FAILURES_COLLECTION,
        "indexes": [{ "key": { "at": -1 }, "name": "at_ttl" }],
    })
    .await
    .unwrap();
    let worker = common::ready_worker(&schema, &db, "log-index").await;
    rename_owner(&db, owner.id, "Ana 2").await;
    // (the holders are rewritten one by one once the chunk failed: the record can come first)
    eventually(
        CONVERGE,
        "the refused holder is recorded and the others converge",
        || async {
            schema.sync_failures(&db).await.unwrap().len() == 1
                && renamed(&db, "items", owner.id, "Ana 2").await == 2
        },
    )
    .await;
    assert_eq!(
        worker.stats().snapshot().reopened,
        0,
        "the worker never replayed the event: {:?}",
        worker.stats().last_error()
    );
    let indexes: Vec<BsonDocument> = common::all(
        db.collection::<BsonDocument>(mongo_schema::FAILURES_COLLECTION)
            .list_indexes(),
    )
    .await
    .into_iter()
    .map(|i| mongo_schema::bson::to_document(&i).unwrap())
    .collect();
    println!("the failure log's indexes: {indexes:?}");
    shut_down_within(worker, SHUTDOWN).await;
}

/// The lane documents of the worker `name`.
async fn lanes(db: &mongodb::Database, name: &str) -> Vec<BsonDocument> {
    common::all(
        db.collection::<BsonDocument>(mongo_schema::TOKENS_COLLECTION)
            .find(doc! { "_id.lease": name }),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_token_document_restarts_the_epoch_above_the_lanes_and_lanes_are_recorded() {
    const NAME: &str = "epochs";
    let db = mongo_schema_testkit::database("scale_epochs").await;
    let schema = schema();
    schema.apply(&db).await.unwrap();
    let owner = owner("Ana");
    Owner::collection(&db).insert_one(&owner).await.unwrap();
    let docs: Vec<BsonDocument> = (0..3)
        .map(|n| holder(Bson::ObjectId(ObjectId::new()), n, &owner.id, "Ana"))
        .collect();
    insert_raw(&db, "items", docs).await;
    let lease = Duration::from_millis(1000);
    let spawn = || {
        schema
            .sync_worker(&db)
            .name(NAME)
            .lease(lease)
            .max_await_time(Duration::from_millis(100))
            .spawn()
    };
    let worker = spawn();
    ready(&worker).await;
    let tokens = db.collection::<BsonDocument>(mongo_schema::TOKENS_COLLECTION);
    let token = tokens
        .find_one(doc! { "_id": NAME })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        token.get_i64("lanes"),
        Ok(8),
        "the lane count is recorded: {token}"
    );

    // a long history (the lanes at epoch 1,000, taken by another holder) and then the token
    // document deleted by an operator
    tokens
        .update_many(
            doc! { "_id.lease": NAME },
            doc! { "$set": { "epoch": 1_000_i64, "owner": "an old holder" } },
        )
        .await
        .unwrap();
    tokens.delete_one(doc! { "_id": NAME }).await.unwrap();
    let started = Instant::now();
    rename_owner(&db, owner.id, "Ana 2").await;
    eventually(
        Duration::from_secs(15),
        "the worker takes the lease back above the lanes' epoch and applies the rename",
        || async { renamed(&db, "items", owner.id, "Ana 2").await == 3 },
    )
    .await;
    let token = tokens
        .find_one(doc! { "_id": NAME })
        .await
        .unwrap()
        .unwrap();
    println!(
        "after the token document was deleted: applied in {:?}, epoch {:?}",
        started.elapsed(),
        token.get("epoch")
    );
    assert!(token.get_i64("epoch").unwrap() > 1_000, "{token}");

    // a newer release fenced with 12 lanes: the next takeover claims all 12
    tokens
        .update_one(doc! { "_id": NAME }, doc! { "$set": { "lanes": 12_i64 } })
        .await
        .unwrap();
    worker.kill();
    let next = spawn();
    ready(&next).await;
    eventually(
        Duration::from_secs(15),
        "the takeover claims the lanes",
        || async { next.stats().is_active() },
    )
    .await;
    let epoch = tokens
        .find_one(doc! { "_id": NAME })
        .await
        .unwrap()
        .unwrap()
        .get_i64("epoch")
        .unwrap();
    let claimed = lanes(&db, NAME).await;
    assert_eq!(claimed.len(), 12, "{claimed:?}");
    assert!(
        claimed.iter().all(|l| l.get_i64("epoch") == Ok(epoch)),
        "every lane at the new epoch {epoch}: {claimed:?}"
    );
    shut_down_within(next, SHUTDOWN).await;
}
