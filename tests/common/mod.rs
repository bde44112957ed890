pub mod authors;
pub mod cases;
pub mod gate;
pub mod helpdesk;
pub mod live;
pub mod owners;

use std::sync::mpsc;
use std::time::{Duration, Instant};

use futures_util::TryStreamExt;
use mongo_schema::mongodb::event::command::CommandStartedEvent;
use mongo_schema::mongodb::{Cursor, Database};

/// Polls until `check` holds, failing the test after `timeout` with `what`. A check that hangs
/// (a read from a server that stopped answering) fails the test at the same deadline: each
/// check is cut at the time left.
#[allow(dead_code)]
pub async fn eventually<F, Fut>(timeout: Duration, what: &str, mut check: F) -> Duration
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let start = Instant::now();
    loop {
        let left = timeout.saturating_sub(start.elapsed());
        match tokio::time::timeout(left, check()).await {
            Ok(true) => return start.elapsed(),
            Ok(false) => {}
            Err(_) => panic!("{what}: a check still running at the deadline of {timeout:?}"),
        }
        assert!(
            start.elapsed() < timeout,
            "{what}: not reached within {timeout:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Awaits `future`, failing the test with `what` if it is not done within `timeout`.
#[allow(dead_code)]
pub async fn within<T>(
    timeout: Duration,
    what: &str,
    future: impl std::future::Future<Output = T>,
) -> T {
    tokio::time::timeout(timeout, future)
        .await
        .unwrap_or_else(|_| panic!("{what}: not done within {timeout:?}"))
}

/// Waits until `worker` is ready (holding its lease, or standing by), failing the test after
/// 30 s.
#[allow(dead_code)]
pub async fn ready(worker: &mongo_schema::SyncWorkerHandle) {
    ready_within(worker, Duration::from_secs(30)).await;
}

/// Waits until `worker` is ready, failing the test after `timeout` (a worker that starts
/// behind a large catch-up or on a loaded server).
#[allow(dead_code)]
pub async fn ready_within(worker: &mongo_schema::SyncWorkerHandle, timeout: Duration) {
    within(timeout, "the sync worker is ready", worker.ready())
        .await
        .expect("the sync worker is ready");
}

/// Shuts `worker` down, failing the test unless it ends cleanly within 30 s.
#[allow(dead_code)]
pub async fn shut_down(worker: mongo_schema::SyncWorkerHandle) {
    shut_down_within(worker, Duration::from_secs(30)).await;
}

/// Shuts `worker` down, failing the test unless it ends cleanly within `timeout` (a worker
/// that may be inside a long fan-out).
#[allow(dead_code)]
pub async fn shut_down_within(worker: mongo_schema::SyncWorkerHandle, timeout: Duration) {
    within(timeout, "the sync worker shuts down", worker.shutdown())
        .await
        .expect("the sync worker ends cleanly");
}

/// `db` through a client of its own whose first command for which `hold` is true is held, in
/// command monitoring before it is sent, until the returned sender sends (or 60 s pass); the
/// returned receiver hears when it is held (see `mongo_schema_testkit::holding_client`: the
/// hold blocks its thread, so a test uses a multi-threaded runtime and waits on the receiver in
/// `spawn_blocking`). A test runs another writer, a takeover or a server stop at exactly that
/// point.
#[allow(dead_code)]
pub async fn held_database(
    db: &Database,
    hold: impl Fn(&CommandStartedEvent) -> bool + Send + Sync + 'static,
) -> (Database, mpsc::Receiver<()>, mpsc::Sender<()>) {
    let uri = tokio::task::spawn_blocking(mongo_schema_testkit::uri)
        .await
        .expect("the test server's address");
    let (client, held, release) = mongo_schema_testkit::holding_client(&uri, hold).await;
    (client.database(db.name()), held, release)
}

/// A `hold` of [`held_database`]: the first `command` (`"update"`, `"find"`...) sent to
/// `collection`.
#[allow(dead_code)]
pub fn command_on(
    command: &'static str,
    collection: &'static str,
) -> impl Fn(&CommandStartedEvent) -> bool + Send + Sync + 'static {
    move |started| {
        started.command_name == command && started.command.get_str(command).ok() == Some(collection)
    }
}

/// Every item of the cursor `query` opens (a driver `find`, `aggregate` or `list_indexes`),
/// failing the test on an error.
#[allow(dead_code)]
pub async fn all<T>(
    query: impl std::future::IntoFuture<Output = mongo_schema::mongodb::error::Result<Cursor<T>>>,
) -> Vec<T>
where
    T: serde::de::DeserializeOwned + Send + Sync + Unpin,
{
    query.await.unwrap().try_collect().await.unwrap()
}

/// The document of `T` with `_id` `id`, failing the test if there is none.
#[allow(dead_code)]
pub async fn stored<T>(db: &Database, id: impl Into<mongo_schema::bson::Bson>) -> T
where
    T: mongo_schema::Document + serde::de::DeserializeOwned + Send + Sync,
{
    T::collection(db)
        .find_one(mongo_schema::bson::doc! { "_id": id.into() })
        .await
        .unwrap()
        .expect("the document is stored")
}

/// A dedicated test server with the failpoints (`--enable-test-commands`): `failCommand`,
/// `maxTimeAlwaysTimeOut`.
#[allow(dead_code)]
pub async fn failpoint_server() -> mongo_schema_testkit::TestServer {
    tokio::task::spawn_blocking(|| {
        mongo_schema_testkit::TestServer::start_with_args(None, &["--enable-test-commands"])
    })
    .await
    .unwrap()
    .expect("a dedicated server with the failpoints")
}

/// Waits (off the runtime's threads) until `held` hears that a command of a
/// [`held_database`] is held, failing the test with `what` after 30 s.
#[allow(dead_code)]
pub async fn wait_until_held(held: mpsc::Receiver<()>, what: &str) {
    tokio::task::spawn_blocking(move || held.recv_timeout(Duration::from_secs(30)))
        .await
        .unwrap()
        .expect(what);
}

/// Every command name that writes (the version record's too).
#[allow(dead_code)]
pub const WRITES: [&str; 8] = [
    "create",
    "collMod",
    "createIndexes",
    "dropIndexes",
    "insert",
    "update",
    "delete",
    "findAndModify",
];

/// Whether an apply's `report` warns that it rolled back from the failed version `failed`.
#[allow(dead_code)]
pub fn rolled_back(report: &mongo_schema::ApplyReport, failed: u64, applying: u64) -> bool {
    report.warnings.iter().any(|w| {
        matches!(w, mongo_schema::Warning::RolledBack { failed: f, applying: a, .. }
            if *f == failed && *a == applying)
    })
}

/// The options of `collection` in `db`, as `listCollections` reports them.
#[allow(dead_code)]
pub async fn collection_options(db: &Database, collection: &str) -> mongo_schema::bson::Document {
    let mut cursor = db
        .run_cursor_command(
            mongo_schema::bson::doc! { "listCollections": 1, "filter": { "name": collection } },
        )
        .await
        .unwrap();
    let entry = cursor
        .try_next()
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("{collection} exists"));
    entry.get_document("options").unwrap().clone()
}

/// The validator of `collection` in `db`, as `listCollections` reports it.
#[allow(dead_code)]
pub async fn validator(db: &Database, collection: &str) -> mongo_schema::bson::Document {
    collection_options(db, collection)
        .await
        .get_document("validator")
        .unwrap()
        .clone()
}

/// The first batch of the reply to a cursor `command` (`find`, `aggregate`, `listIndexes`...).
#[allow(dead_code)]
pub async fn first_batch(
    db: &Database,
    command: mongo_schema::bson::Document,
) -> Vec<mongo_schema::bson::Document> {
    let reply = db.run_command(command).await.unwrap();
    reply
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap()
        .iter()
        .filter_map(|b| b.as_document().cloned())
        .collect()
}

/// Lets the paused worker behind `release` go on, and waits until `paused` finds it lost its
/// lease and stands by (`what` names it), failing the test after 20 s.
#[allow(dead_code)]
pub async fn resumed_and_standing_by(
    release: &mpsc::Sender<()>,
    paused: &mongo_schema::SyncWorkerHandle,
    what: &str,
) {
    release.send(()).unwrap();
    eventually(
        Duration::from_secs(20),
        &format!("{what} finds it lost the lease and stands by"),
        || async { !paused.stats().is_active() && paused.stats().is_standby() },
    )
    .await;
}

/// The declared query `name` of `collection`, failing the test if there is none.
#[allow(dead_code)]
pub fn declared_query<'a>(
    collection: &'a mongo_schema::spec::CollectionSpec,
    name: &str,
) -> &'a mongo_schema::query::QuerySpec {
    collection
        .queries
        .iter()
        .find(|q| q.name == name)
        .unwrap_or_else(|| panic!("query {name}"))
}

/// How `Schema::build` fitted the declared query `name` of `collection` to an index, failing the
/// test if the query is not there or not fitted.
#[allow(dead_code)]
pub fn fit_of(
    collection: &mongo_schema::spec::CollectionSpec,
    name: &str,
) -> mongo_schema::query::QueryFit {
    declared_query(collection, name)
        .fit
        .clone()
        .unwrap_or_else(|| panic!("no fit for {name}"))
}

/// `schema`'s sync worker `name` on `db`, its change stream's `getMore`s held up to 100 ms,
/// spawned and ready (within 30 s).
#[allow(dead_code)]
pub async fn ready_worker(
    schema: &mongo_schema::Schema,
    db: &Database,
    name: &str,
) -> mongo_schema::SyncWorkerHandle {
    let worker = schema
        .sync_worker(db)
        .name(name)
        .max_await_time(Duration::from_millis(100))
        .spawn();
    ready(&worker).await;
    worker
}
