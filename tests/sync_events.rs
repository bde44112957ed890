//! The sync worker survives any event and applies changes as they come (issue 38, items 1 and
//! 7), each fault caused on the test server:
//! - a child of about 9 MB, whose change events carry its pre- and post-image (and, for an
//!   update, its new value), updated while another source changes: the other change is applied
//!   within 30 s and the big child is counted in its parent. On mongod without the projection
//!   that event is over 16 MB (`BSONObjectTooLarge`, which wedged the worker); SecantusDB sends
//!   it whatever its size, so here the test shows the projected stream reads it, and
//!   `sync::events`' unit tests show the projection;
//! - an event too large to send even projected (`BSONObjectTooLarge` on its `getMore`, as
//!   mongod answers; a failpoint answers so here) is probed, recorded once with code 10334 and
//!   skipped;
//! - an event the worker cannot decode (made so by the worker's test hook: the test server
//!   refuses to store what the driver cannot decode) is recorded once with its document key and
//!   skipped, the changes after it are applied, and reconcile repairs what it would have done
//!   (and removes the record); a worker that lost its lease while it held such a record in
//!   hand records nothing (the record is written under the worker's fence);
//! - a trickle of one change every 300 ms: a rename is applied within a second (a batch no
//!   longer waits for 1,000 changes); and a shutdown while changes keep coming (one every 50 ms)
//!   returns at once (the stop is honoured while a batch is gathered).

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::cases::Agent;
use common::{eventually, held_database, ready, shut_down, within};
use mongo_schema::bson::{doc, Bson, Document as BsonDocument};
use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

/// The holder of an async copy of an agent's name.
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "cases")]
pub struct Case {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[extended_ref(to = Agent, fields = "name", sync = "async")]
    pub agent: Option<CaseAgent>,
}

/// The parent of an async subset.
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "threads")]
pub struct Thread {
    #[serde(rename = "_id")]
    pub id: i64,
    #[subset(of = Note, max = 2, sort = "-at", count = "notes", sync = "async")]
    pub newest: Vec<NotePreview>,
    pub notes: i64,
}

/// A child whose body can be large (the preview does not show it).
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "notes")]
#[index(keys(thread_id = 1, at = -1))]
pub struct Note {
    #[serde(rename = "_id")]
    pub id: i64,
    #[reference]
    pub thread_id: Ref<Thread>,
    pub at: i64,
    pub body: String,
}

#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct NotePreview {
    pub at: i64,
}

impl From<&Note> for NotePreview {
    fn from(note: &Note) -> Self {
        NotePreview { at: note.at }
    }
}

fn schema() -> Schema {
    Schema::new()
        .model::<Agent>()
        .model::<Case>()
        .model::<Thread>()
        .model::<Note>()
        .build()
        .unwrap()
}

/// A database with the schema applied, `agents` agents and one case of each.
async fn setup(prefix: &str, agents: usize) -> (mongodb::Database, Schema, Vec<Agent>, Vec<Case>) {
    setup_in(mongo_schema_testkit::database(prefix).await, agents).await
}

/// [`setup`] in `db`.
async fn setup_in(
    db: mongodb::Database,
    agents: usize,
) -> (mongodb::Database, Schema, Vec<Agent>, Vec<Case>) {
    let schema = schema();
    schema.apply(&db).await.unwrap();
    let agents: Vec<Agent> = (0..agents)
        .map(|i| Agent {
            id: ObjectId::new(),
            name: format!("agent {i}"),
        })
        .collect();
    Agent::collection(&db).insert_many(&agents).await.unwrap();
    let cases: Vec<Case> = agents
        .iter()
        .map(|agent| Case {
            id: ObjectId::new(),
            agent: Some(agent.into()),
        })
        .collect();
    Case::collection(&db).insert_many(&cases).await.unwrap();
    Thread::collection(&db)
        .insert_one(Thread {
            id: 1,
            newest: vec![],
            notes: 0,
        })
        .await
        .unwrap();
    (db, schema, agents, cases)
}

async fn rename(db: &mongodb::Database, agent: &Agent, name: &str) {
    Agent::collection(db)
        .update_one(doc! { "_id": agent.id }, doc! { "$set": { "name": name } })
        .await
        .unwrap();
}

/// The name the case holds in its copy.
async fn copied_name(db: &mongodb::Database, case: &Case) -> Option<String> {
    let case = Case::collection(db)
        .find_one(doc! { "_id": case.id })
        .await
        .ok()??;
    case.agent.map(|a| a.name)
}

/// Waits until `case` holds `name` in its copy, failing the test with `what` after 30 s.
async fn copy_becomes(db: &mongodb::Database, case: &Case, name: &str, what: &str) {
    eventually(Duration::from_secs(30), what, || async {
        copied_name(db, case).await.as_deref() == Some(name)
    })
    .await;
}

/// The copy of `case` still holds the name it was set up with (`agent 0`): the change of the
/// event that was skipped was not applied.
async fn still_the_old_name(db: &mongodb::Database, case: &Case) {
    assert_eq!(copied_name(db, case).await.as_deref(), Some("agent 0"));
}

/// The one failure record of `db`, failing the test if there is none or more.
async fn the_one_record(
    schema: &Schema,
    db: &mongodb::Database,
) -> mongo_schema::sync::SyncFailure {
    let mut records = schema.sync_failures(db).await.unwrap();
    assert_eq!(records.len(), 1, "one record for the event: {records:#?}");
    records.remove(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_child_with_its_images_does_not_stop_the_other_changes() {
    let (db, schema, agents, cases) = setup("sync_events_large", 1).await;
    let worker = schema.sync_worker(&db).name("large").spawn();
    ready(&worker).await;

    // about 9 MB each: the update's event holds the pre-image, the post-image and the new body
    let body = |c: char| c.to_string().repeat(9 * 1024 * 1024);
    Note::collection(&db)
        .insert_one(Note {
            id: 1,
            thread_id: Ref::new(1),
            at: 10,
            body: body('a'),
        })
        .await
        .unwrap();
    db.collection::<BsonDocument>("notes")
        .update_one(
            doc! { "_id": 1 },
            doc! { "$set": { "body": body('b'), "at": 11_i64 } },
        )
        .await
        .unwrap();
    rename(&db, &agents[0], "after the large child").await;

    copy_becomes(
        &db,
        &cases[0],
        "after the large child",
        "the other source's change is applied",
    )
    .await;
    // the large child's own events were read and applied: it is counted and previewed
    eventually(Duration::from_secs(30), "the large child is counted", || async {
        let thread = Thread::collection(&db).find_one(doc! { "_id": 1 }).await;
        matches!(thread, Ok(Some(t)) if t.notes == 1 && t.newest == vec![NotePreview { at: 11 }])
    })
    .await;
    let stats = worker.stats().snapshot();
    assert_eq!(stats.unreadable, 0, "no event was skipped: {stats:?}");
    assert!(schema.sync_failures(&db).await.unwrap().is_empty());
    shut_down(worker).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_that_cannot_be_read_is_recorded_once_and_skipped() {
    let (db, schema, agents, cases) = setup("sync_events_unreadable", 2).await;
    let (bad, good) = (&agents[0], &agents[1]);
    let worker = schema
        .sync_worker(&db)
        .name("unreadable")
        .__unreadable_key(bad.id)
        .spawn();
    ready(&worker).await;

    rename(&db, bad, "unread").await;
    rename(&db, good, "read after it").await;
    copy_becomes(
        &db,
        &cases[1],
        "read after it",
        "the change after the unreadable one is applied",
    )
    .await;
    let record = &the_one_record(&schema, &db).await;
    assert_eq!(record.copy, "agents", "the collection of the event");
    assert_eq!(record.holder, Bson::ObjectId(bad.id), "its document key");
    assert_eq!(record.source, Bson::ObjectId(bad.id));
    assert_eq!(record.attempts, 1, "recorded once");
    assert_eq!(worker.stats().snapshot().unreadable, 1);
    // skipped, not applied: the copy still holds the old name (positive control of the hook)
    still_the_old_name(&db, &cases[0]).await;

    // reconcile repairs what the worker would have done
    let report = schema.reconcile(&db).await.unwrap();
    assert_eq!(report.repaired(), 1, "{report}");
    assert_eq!(copied_name(&db, &cases[0]).await.as_deref(), Some("unread"));
    assert!(
        schema.sync_failures(&db).await.unwrap().is_empty(),
        "the record goes with the reconcile that repaired what the event would have done"
    );
    shut_down(worker).await;
}

/// Whether `started` is the upsert of a sync failure record.
fn failure_record(started: &mongodb::event::command::CommandStartedEvent) -> bool {
    started.command_name == "update"
        && started.command.get_str("update") == Ok(mongo_schema::FAILURES_COLLECTION)
}

/// The record of an unreadable event is a write of the worker like its copies: a worker that
/// meets one and loses its lease before the record lands (paused with the record in hand, past
/// its lease, while a standby took over and applied the same change) records nothing. Without
/// the fence its upsert lands after the new holder's work and blames it on the name.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_worker_fenced_off_records_no_unreadable_event() {
    const LEASE: Duration = Duration::from_millis(1500);
    let (db, schema, agents, cases) = setup("sync_events_fenced", 2).await;
    let (bad, good) = (&agents[0], &agents[1]);
    // the first worker's record of the unreadable event is held, its whole task with it (the
    // renewals of its lease stop too, as in a VM pause)
    let (held_db, held, release) = held_database(&db, failure_record).await;
    let paused = schema
        .sync_worker(&held_db)
        .name("fenced")
        .lease(LEASE)
        .max_await_time(Duration::from_millis(100))
        .__unreadable_key(bad.id)
        .spawn();
    ready(&paused).await;
    assert!(paused.stats().is_active());
    // a standby of the same name, which reads every event
    let standby = schema
        .sync_worker(&db)
        .name("fenced")
        .lease(LEASE)
        .max_await_time(Duration::from_millis(100))
        .spawn();
    ready(&standby).await;
    assert!(standby.stats().is_standby());

    rename(&db, bad, "unread by the first").await;
    tokio::task::spawn_blocking(move || held.recv_timeout(Duration::from_secs(30)))
        .await
        .unwrap()
        .expect("the first worker reached the record of the unreadable event");
    // the standby takes over and applies that change and the next
    eventually(
        Duration::from_secs(20),
        "the standby takes over",
        || async { standby.stats().is_active() },
    )
    .await;
    rename(&db, good, "after the takeover").await;
    eventually(
        Duration::from_secs(20),
        "the new holder applies both changes",
        || async {
            copied_name(&db, &cases[0]).await.as_deref() == Some("unread by the first")
                && copied_name(&db, &cases[1]).await.as_deref() == Some("after the takeover")
        },
    )
    .await;

    // the first worker resumes: its held upsert goes out inside a transaction whose fence no
    // longer holds
    common::resumed_and_standing_by(&release, &paused, "the first worker").await;
    // a few renewals of the new holder later, nothing was recorded
    tokio::time::sleep(LEASE * 2).await;
    let records = schema.sync_failures(&db).await.unwrap();
    assert!(
        records.is_empty(),
        "a worker that lost its lease recorded a failure: {records:#?}"
    );
    assert_eq!(paused.stats().snapshot().unreadable, 0);
    assert!(standby.stats().is_active(), "the new holder kept the lease");
    shut_down(standby).await;
    shut_down(paused).await;
}

/// A dedicated server with the failpoints, and a client of it.
async fn failpoint_server() -> (mongo_schema_testkit::TestServer, mongodb::Client) {
    let server = common::failpoint_server().await;
    let client = mongodb::Client::with_uri_str(server.uri()).await.unwrap();
    (server, client)
}

/// Sets the `failCommand` failpoint of `client`'s server: the next two `command`s of the
/// client named `app` fail with `BSONObjectTooLarge` (10334).
async fn fail_twice_as_too_large(client: &mongodb::Client, command: &str, app: &str) {
    client
        .database("admin")
        .run_command(doc! {
            "configureFailPoint": "failCommand",
            "mode": { "times": 2 },
            "data": { "failCommands": [command], "appName": app, "errorCode": 10334 },
        })
        .await
        .unwrap();
}

/// An event too large to send, as mongod answers it: its `getMore` fails with
/// `BSONObjectTooLarge` (10334), before and after the worker reopens its stream one event at a
/// time (SecantusDB sends events of any size, so a `failCommand` of a server of the test's own
/// answers the worker's next two `getMore`s so, as mongod would while that event is next). The
/// worker probes the event's key with a stream that asks for no document, records it once with
/// code 10334 under its fence, goes on after it, and applies the next change; reconcile repairs
/// what it skipped. Before the fix this path retried from the same token for ever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_too_large_to_send_is_recorded_once_and_skipped() {
    const APP: &str = "too-large-worker";
    let (server, client) = failpoint_server().await;
    let (db, schema, agents, cases) = setup_in(client.database("too_large"), 2).await;
    let (big, next) = (&agents[0], &agents[1]);
    // the worker's own client: named, so that the failpoint answers its commands alone
    let (worker_client, log) =
        mongo_schema_testkit::monitored_client_at(&format!("{}&appName={APP}", server.uri())).await;
    let worker = schema
        .sync_worker(&worker_client.database(db.name()))
        .name("too-large")
        .max_await_time(Duration::from_millis(100))
        .spawn();
    ready(&worker).await;

    fail_twice_as_too_large(&client, "getMore", APP).await;
    // the worker reopens one event at a time, meets 10334 again, and probes from its position
    let probing = |c: &mongo_schema_testkit::StartedCommand| {
        c.name == "aggregate"
            && c.command.get_array("pipeline").is_ok_and(|stages| {
                stages.iter().any(|stage| {
                    stage
                        .as_document()
                        .and_then(|s| s.get_document("$project").ok())
                        .is_some_and(|p| {
                            // the probe's: the event's key and nothing else
                            let kept: Vec<&str> = p.keys().map(String::as_str).collect();
                            kept == ["_id", "operationType", "ns", "documentKey", "clusterTime"]
                        })
                })
            })
    };
    eventually(
        Duration::from_secs(20),
        "the worker probes the event it cannot read",
        || async { log.commands().iter().any(probing) },
    )
    .await;
    // the event the server cannot send
    rename(&db, big, "too large to send").await;
    rename(&db, next, "after the large one").await;
    copy_becomes(
        &db,
        &cases[1],
        "after the large one",
        "the change after it is applied",
    )
    .await;
    let record = &the_one_record(&schema, &db).await;
    assert_eq!(record.code, Some(10334), "{record}");
    assert_eq!(record.copy, "agents", "the collection of the event");
    assert_eq!(record.holder, Bson::ObjectId(big.id), "its document key");
    assert_eq!(record.attempts, 1, "recorded once");
    assert_eq!(worker.stats().snapshot().unreadable, 1);
    // skipped, not applied (the control: the failpoint made the worker skip it)
    still_the_old_name(&db, &cases[0]).await;
    let report = schema.reconcile(&db).await.unwrap();
    assert_eq!(report.repaired(), 1, "{report}");
    assert_eq!(
        copied_name(&db, &cases[0]).await.as_deref(),
        Some("too large to send")
    );
    assert!(schema.sync_failures(&db).await.unwrap().is_empty());
    shut_down(worker).await;
    drop(server);
}

/// Issue 48, item 1: an event too large to send even projected that is the first after the
/// saved position (the common case under light traffic). On mongod the reopening `aggregate`
/// fails with 10334 itself, not only a `getMore`, and again when opened one event at a time
/// (the event is then its first); the worker probes the event from the saved position, records
/// it and goes on after it. The failpoint answers the worker's next two `aggregate`s so, as
/// mongod would while that event is the first after the saved token. Before the fix the worker
/// reopened from the same token for ever on mongod (here: until the failpoint ran out, and then
/// applied the event).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_too_large_first_after_the_saved_token_is_recorded_and_skipped() {
    const APP: &str = "too-large-reopen";
    let (server, client) = failpoint_server().await;
    let (db, schema, agents, cases) = setup_in(client.database("too_large_reopen"), 2).await;
    let (big, next) = (&agents[0], &agents[1]);
    let (worker_client, _log) =
        mongo_schema_testkit::monitored_client_at(&format!("{}&appName={APP}", server.uri())).await;
    let worker_db = worker_client.database(db.name());
    // a first worker saves its token and stops
    let first = schema.sync_worker(&worker_db).name("reopen").spawn();
    ready(&first).await;
    shut_down(first).await;
    // the event the server cannot send, first after the saved token, and a change after it
    rename(&db, big, "too large to send").await;
    rename(&db, next, "after the large one").await;
    fail_twice_as_too_large(&client, "aggregate", APP).await;
    let worker = schema
        .sync_worker(&worker_db)
        .name("reopen")
        .max_await_time(Duration::from_millis(100))
        .spawn();
    copy_becomes(
        &db,
        &cases[1],
        "after the large one",
        "the change after it is applied",
    )
    .await;
    let record = the_one_record(&schema, &db).await;
    assert_eq!(record.code, Some(10334), "{record}");
    assert_eq!(record.holder, Bson::ObjectId(big.id), "its document key");
    assert_eq!(worker.stats().snapshot().unreadable, 1);
    // skipped, not applied (the control: without the fix the event was applied once the
    // failpoint ran out)
    still_the_old_name(&db, &cases[0]).await;
    shut_down(worker).await;
    drop(server);
}

/// Renames of one agent, one every period, until stopped.
struct Trickle {
    done: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

/// Renames `agent` every `period` until the trickle is stopped.
fn trickle(db: mongodb::Database, agent: Agent, period: Duration) -> Trickle {
    let done = Arc::new(AtomicBool::new(false));
    let stop = done.clone();
    let task = tokio::spawn(async move {
        let mut n = 0;
        while !stop.load(Ordering::Relaxed) {
            n += 1;
            rename(&db, &agent, &format!("trickle {n}")).await;
            tokio::time::sleep(period).await;
        }
    });
    Trickle { done, task }
}

impl Trickle {
    /// Stops the renames and waits for the last one.
    async fn stop(self) {
        self.done.store(true, Ordering::Relaxed);
        self.task.await.unwrap();
    }
}

/// The schema's worker `name` on `db`, its `getMore`s held up to [`AWAIT`], ready.
async fn awaiting_worker(
    schema: &Schema,
    db: &mongodb::Database,
    name: &str,
) -> mongo_schema::SyncWorkerHandle {
    let worker = schema
        .sync_worker(db)
        .name(name)
        .max_await_time(AWAIT)
        .spawn();
    ready(&worker).await;
    worker
}

/// The server holds a `getMore` for up to this long when nothing waits: longer than the
/// trickle's period, so no reply of the stream comes back empty while it runs (as on mongod,
/// which answers as soon as a change arrives). A batch that waited for an empty reply, or for
/// 1,000 changes, would never end.
const AWAIT: Duration = Duration::from_millis(400);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rename_during_a_trickle_is_applied_within_a_second() {
    let (db, schema, agents, cases) = setup("sync_events_trickle", 2).await;
    let worker = awaiting_worker(&schema, &db, "trickle").await;
    let trickling = trickle(db.clone(), agents[0].clone(), Duration::from_millis(300));
    tokio::time::sleep(Duration::from_secs(1)).await;
    for n in 0..3 {
        let name = format!("renamed {n}");
        rename(&db, &agents[1], &name).await;
        let took = eventually(
            Duration::from_secs(1),
            "a rename during the trickle is applied within a second",
            || async { copied_name(&db, &cases[1]).await.as_deref() == Some(name.as_str()) },
        )
        .await;
        println!("rename {n} applied after {took:?}");
        tokio::time::sleep(Duration::from_millis(450)).await;
    }
    trickling.stop().await;
    shut_down(worker).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shutdown_during_a_trickle_returns_at_once() {
    let (db, schema, agents, cases) = setup("sync_events_stop", 1).await;
    let worker = awaiting_worker(&schema, &db, "stop").await;
    // a change every 50 ms: no reply of the stream comes back empty, and a batch that
    // gathered until one did (or until 1,000 changes) would hold the shutdown for minutes
    let trickling = trickle(db.clone(), agents[0].clone(), Duration::from_millis(50));
    // the worker is following the trickle
    eventually(
        Duration::from_secs(10),
        "the trickle is applied",
        || async {
            copied_name(&db, &cases[0])
                .await
                .is_some_and(|name| name.starts_with("trickle"))
        },
    )
    .await;
    let asked = Instant::now();
    within(
        Duration::from_secs(3),
        "a shutdown asked while changes keep coming",
        worker.shutdown(),
    )
    .await
    .unwrap();
    println!("shutdown returned after {:?}", asked.elapsed());
    trickling.stop().await;
}
