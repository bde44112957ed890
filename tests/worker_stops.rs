//! A sync worker that cannot follow stops with a `WorkerStop` a service can match, caused for
//! real: a standalone server (no change streams, code 40573, as a standalone mongod refuses
//! `$changeStream`) and a server that requires authentication (code 13). The control: the
//! same schema and worker on the test server's replica set become ready.

mod common;

use std::time::Duration;

use common::helpdesk;
use mongo_schema::error::WorkerStop;
use mongo_schema::mongodb::Client;
use mongo_schema::Error;
use mongo_schema_testkit::TestServer;

const DEADLINE: Duration = Duration::from_secs(60);

/// Starts a dedicated server with `args`, spawns the help desk's worker on it and returns what
/// `ready` and then `shutdown` said, each under the deadline.
async fn worker_on(
    args: &[&str],
    apply: bool,
) -> (mongo_schema::Result<()>, mongo_schema::Result<()>) {
    let server = TestServer::start_with_args(None, args).expect("a dedicated SecantusDB server");
    let client = Client::with_uri_str(server.uri()).await.unwrap();
    let db = client.database("worker_stops");
    let schema = helpdesk::schema();
    if apply {
        schema.apply(&db).await.unwrap();
    }
    let worker = schema
        .sync_worker(&db)
        .name("stops")
        .ready_timeout(Duration::from_secs(30))
        .spawn();
    let ready = common::within(DEADLINE, "worker ready or stopped", worker.ready()).await;
    let shutdown = common::within(DEADLINE, "worker shutdown", worker.shutdown()).await;
    drop(server);
    (ready, shutdown)
}

fn stop_kind(result: &mongo_schema::Result<()>) -> Option<WorkerStop> {
    match result {
        Err(Error::Worker { kind, .. }) => Some(*kind),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_without_change_streams_stops_the_worker_with_its_kind() {
    // control: the replica set this project's tests run on follows
    let (ready, shutdown) = worker_on(&[], true).await;
    assert!(ready.is_ok(), "{ready:?}");
    assert!(shutdown.is_ok(), "{shutdown:?}");

    // a standalone: the same schema applies, the worker cannot open its stream
    let (ready, shutdown) = worker_on(&["--standalone"], true).await;
    assert_eq!(
        stop_kind(&ready),
        Some(WorkerStop::ChangeStreamsUnsupported),
        "{ready:?}"
    );
    assert_eq!(
        stop_kind(&shutdown),
        Some(WorkerStop::ChangeStreamsUnsupported),
        "{shutdown:?}"
    );
    // the server's own refusal is kept underneath
    let Err(Error::Worker {
        source: Some(source),
        ..
    }) = &ready
    else {
        panic!("no source kept: {ready:?}")
    };
    let code = source.code();
    assert_eq!(code, Some(40573), "{source:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_refuses_the_user_stops_the_worker_as_unauthorized() {
    let (ready, shutdown) = worker_on(&["--auth"], false).await;
    assert_eq!(
        stop_kind(&ready),
        Some(WorkerStop::Unauthorized),
        "{ready:?}"
    );
    assert_eq!(
        stop_kind(&shutdown),
        Some(WorkerStop::Unauthorized),
        "{shutdown:?}"
    );
}
