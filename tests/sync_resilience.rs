//! Sync when things go wrong, one fault at a time, each caused for real: a dropped handle, a
//! server that cannot be reached, bad credentials, a holder its validator rejects, two workers
//! of one name, deleted sources, a repair racing a transaction, the server stopped in the middle
//! of a transaction or of reconcile's holder stream, rebuilds racing writers, and pushes past a
//! bound.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::cases::*;
use common::{eventually, ready, shut_down_within, within};

/// How long a worker may take to stop.
const SHUTDOWN: Duration = Duration::from_secs(30);
use mongo_schema::bson::{doc, Bson, Document as BsonDocument};
use mongo_schema::error::WorkerStop;
use mongo_schema::prelude::*;
use mongo_schema::{Error, FAILURES_COLLECTION, TOKENS_COLLECTION};

/// The names in the copies at `path` of every case copying `id`.
async fn copied_names(db: &mongodb::Database, path: &str, id: impl Into<Bson>) -> Vec<String> {
    common::all(
        db.collection::<BsonDocument>("cases")
            .find(doc! { format!("{path}._id"): id.into() })
            .sort(doc! { "_id": 1 }),
    )
    .await
    .iter()
    .map(|c| {
        c.get_document(path)
            .unwrap()
            .get_str("name")
            .unwrap()
            .to_owned()
    })
    .collect()
}

async fn case_of(db: &mongodb::Database, id: ObjectId) -> Case {
    Case::collection(db)
        .find_one(doc! { "_id": id })
        .await
        .unwrap()
        .expect("the case exists")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_handle_detaches_the_worker() {
    let db = applied("res_detach").await;
    let (_, bo, _, _) = desk(&db, 10).await;
    let schema = schema();

    // the README's one-liner, inside a function that returns: the worker must keep running
    fn start(schema: &Schema, db: &mongodb::Database) {
        drop(schema.sync_worker(db).name("detached").spawn());
    }
    start(&schema, &db);
    eventually(
        Duration::from_secs(20),
        "a worker holds the lease",
        || async {
            db.collection::<BsonDocument>(TOKENS_COLLECTION)
                .find_one(doc! { "_id": "detached", "owner": { "$ne": null } })
                .await
                .unwrap()
                .is_some()
        },
    )
    .await;
    rename_agent(&db, bo.id, "Bo 2").await;
    let took = eventually(
        Duration::from_secs(20),
        "the detached worker rewrites the copies",
        || async { copied_names(&db, "agent", bo.id).await == vec!["Bo 2"; 10] },
    )
    .await;
    println!("the detached worker converged {took:?} after the rename");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ready_gives_up_after_its_timeout_with_the_last_error() {
    // nothing listens on port 1: every attempt fails at server selection
    let client = mongodb::Client::with_uri_str(
        "mongodb://127.0.0.1:1/?directConnection=true&serverSelectionTimeoutMS=200",
    )
    .await
    .unwrap();
    let db = client.database("unreachable");
    let worker = schema()
        .sync_worker(&db)
        .ready_timeout(Duration::from_secs(2))
        .spawn();
    let start = Instant::now();
    let error = tokio::time::timeout(Duration::from_secs(20), worker.ready())
        .await
        .expect("ready() returns by its own timeout")
        .expect_err("no server: not ready");
    let waited = start.elapsed();
    println!("ready() gave up after {waited:?}: {error}");
    assert!(waited >= Duration::from_secs(2), "{waited:?}");
    match &error {
        Error::Timeout { last, .. } => {
            let last = last.as_ref().expect("the last error is carried");
            assert!(
                matches!(
                    last.as_driver().map(|e| e.kind.as_ref()),
                    Some(mongodb::error::ErrorKind::ServerSelection { .. })
                ),
                "{last:#?}"
            );
        }
        other => panic!("expected a timeout, got {other}"),
    }
    assert!(worker.stats().last_error().is_some());
    assert!(!worker.stats().is_active());
    assert!(
        worker.stats().snapshot().reopened >= 1,
        "transient errors are retried"
    );
    assert!(
        !worker.is_finished(),
        "a transient error does not end the worker"
    );
    tokio::time::timeout(Duration::from_secs(10), worker.shutdown())
        .await
        .expect("shutdown during a back-off returns at once")
        .expect("stopped on request");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permanent_error_ends_the_worker_and_shutdown_returns_it() {
    let uri = mongo_schema_testkit::uri();
    assert!(uri.starts_with("mongodb://"), "{uri}");
    let wrong = uri.replacen("mongodb://", "mongodb://nobody:wrong-password@", 1);
    let client = mongodb::Client::with_uri_str(&wrong).await.unwrap();
    let db = client.database("denied");
    let worker = schema().sync_worker(&db).name("denied").spawn();
    let error = tokio::time::timeout(Duration::from_secs(30), worker.ready())
        .await
        .expect("ready() returns")
        .expect_err("bad credentials: never ready");
    println!("ready(): {error}");
    eventually(Duration::from_secs(10), "the worker ends", || async {
        worker.is_finished()
    })
    .await;
    let last = worker.stats().last_error().expect("the last error is kept");
    assert!(
        matches!(
            last.as_driver().map(|e| e.kind.as_ref()),
            Some(mongodb::error::ErrorKind::Authentication { .. })
        ) || last.code() == Some(18),
        "{last:#?}"
    );
    let ended = worker
        .shutdown()
        .await
        .expect_err("shutdown returns the error");
    println!("shutdown(): {ended}");
    assert!(
        matches!(
            &ended,
            Error::Worker {
                kind: WorkerStop::Unauthorized,
                source: Some(_),
                ..
            }
        ),
        "{ended:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_invalid_holder_never_blocks_the_others() {
    let db = applied("res_invalid").await;
    let schema = schema();
    let (_, bo, _, cases) = desk(&db, 20).await;
    let cy = agent("Cy");
    Agent::collection(&db).insert_one(&cy).await.unwrap();
    let t = team(2, "Sales");
    Team::collection(&db).insert_one(&t).await.unwrap();
    let customer = customer("Di");
    Customer::collection(&db)
        .insert_one(&customer)
        .await
        .unwrap();
    let cy_cases: Vec<Case> = (0..5).map(|i| case(&customer, &cy, &t, 100 + i)).collect();
    Case::collection(&db).insert_many(&cy_cases).await.unwrap();
    // another client leaves one case that its validator rejects (a subject that is no string)
    let bad = cases[7].id;
    db.collection::<BsonDocument>("cases")
        .update_one(doc! { "_id": bad }, doc! { "$set": { "subject": 42 } })
        .bypass_document_validation(true)
        .await
        .unwrap();

    let worker = schema.sync_worker(&db).name("invalid").spawn();
    ready(&worker).await;
    rename_agent(&db, bo.id, "Bo 2").await;
    eventually(
        Duration::from_secs(20),
        "every other case of Bo converges",
        || async {
            let names = copied_names(&db, "agent", bo.id).await;
            names.iter().filter(|n| *n == "Bo 2").count() == 19
        },
    )
    .await;
    // and the worker is not stuck: a later change of another source is applied
    rename_agent(&db, cy.id, "Cy 2").await;
    eventually(
        Duration::from_secs(20),
        "a later rename converges",
        || async { copied_names(&db, "agent", cy.id).await == vec!["Cy 2"; 5] },
    )
    .await;
    let raw_bad = db
        .collection::<BsonDocument>("cases")
        .find_one(doc! { "_id": bad })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        raw_bad.get_document("agent").unwrap().get_str("name"),
        Ok("Bo"),
        "rejected"
    );
    assert!(worker.stats().snapshot().failed >= 1);

    let failures = schema.sync_failures(&db).await.unwrap();
    println!("recorded: {failures:#?}");
    assert_eq!(failures.len(), 1, "{failures:?}");
    let failure = &failures[0];
    assert_eq!(failure.copy, "cases.agent");
    assert_eq!(failure.holder, Bson::ObjectId(bad));
    assert_eq!(failure.source, Bson::ObjectId(bo.id));
    assert_eq!(failure.code, Some(121));
    assert_eq!(failure.worker, "invalid");

    // reconcile and audit report it
    let dry = schema.reconcile(&db).dry_run(true).await.unwrap();
    println!("{dry}");
    let agent_copy = dry.edges.iter().find(|e| e.copy == "cases.agent").unwrap();
    assert_eq!(agent_copy.drifted, 1);
    assert_eq!(agent_copy.recorded_failures, 1);
    let audit = schema.audit(&db).await.unwrap();
    assert_eq!(audit.drift.recorded_failures(), 1);
    assert!(!audit.is_clean());
    assert!(
        !audit
            .unknown_collections
            .contains(&FAILURES_COLLECTION.to_owned()),
        "the failures collection is the library's own"
    );

    // retried while the holder is still invalid: still failing, the record updated
    let retry = schema.retry_failures(&db).await.unwrap();
    println!("{retry}");
    assert_eq!((retry.retried, retry.still_failing), (1, 1));
    let attempts = schema.sync_failures(&db).await.unwrap()[0].attempts;
    assert!(attempts >= 2, "{attempts}");
    // the holder is mended by hand; the retry now succeeds and removes the record
    db.collection::<BsonDocument>("cases")
        .update_one(
            doc! { "_id": bad },
            doc! { "$set": { "subject": "mended" } },
        )
        .bypass_document_validation(true)
        .await
        .unwrap();
    let retry = schema.retry_failures(&db).await.unwrap();
    println!("{retry}");
    assert_eq!((retry.retried, retry.resolved), (1, 1));
    assert_eq!(case_of(&db, bad).await.agent.unwrap().name, "Bo 2");
    assert!(schema.sync_failures(&db).await.unwrap().is_empty());
    assert_eq!(
        schema.reconcile(&db).dry_run(true).await.unwrap().drifted(),
        0
    );
    shut_down_within(worker, SHUTDOWN).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_that_would_outgrow_16_mib_is_recorded_and_the_others_converge() {
    let db = applied("res_too_large").await;
    let schema = schema();
    let (_, _, billing, cases) = desk(&db, 6).await;
    // one case is a few hundred bytes short of the 16 MiB limit
    let big = cases[2].id;
    let subject = "x".repeat(16 * 1024 * 1024 - 600);
    db.collection::<BsonDocument>("cases")
        .update_one(doc! { "_id": big }, doc! { "$set": { "subject": subject } })
        .await
        .unwrap();
    let worker = schema.sync_worker(&db).name("too-large").spawn();
    ready(&worker).await;
    // a long team name no longer fits in it
    let long_name = "Billing and Collections ".repeat(60);
    Team::collection(&db)
        .update_one(
            doc! { "_id": billing.id },
            doc! { "$set": { "name": &long_name } },
        )
        .await
        .unwrap();
    eventually(
        Duration::from_secs(30),
        "the other cases converge and the big one is recorded",
        || async {
            let names = copied_names(&db, "team", billing.id).await;
            let failures = schema.sync_failures(&db).await.unwrap();
            names.iter().filter(|n| **n == long_name).count() == 5 && failures.len() == 1
        },
    )
    .await;
    let failure = schema.sync_failures(&db).await.unwrap().remove(0);
    println!("recorded: {failure}");
    assert_eq!(failure.copy, "cases.team");
    assert_eq!(failure.holder, Bson::ObjectId(big));
    assert!(
        matches!(failure.code, Some(10334 | 17419 | 17420)),
        "a document-too-large code: {failure}"
    );
    // the case is trimmed; the retry now fits
    db.collection::<BsonDocument>("cases")
        .update_one(
            doc! { "_id": big },
            doc! { "$set": { "subject": "trimmed" } },
        )
        .await
        .unwrap();
    let retry = schema.retry_failures(&db).await.unwrap();
    assert_eq!(retry.resolved, 1, "{retry}");
    assert_eq!(case_of(&db, big).await.team.unwrap().name, long_name);
    shut_down_within(worker, SHUTDOWN).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_workers_of_one_name_elect_one_and_the_standby_takes_over() {
    let db = applied("res_lease").await;
    let schema = schema();
    let (c, _, t, _) = desk(&db, 0).await;
    let agents: Vec<Agent> = (0..5).map(|i| agent(&format!("agent {i}"))).collect();
    Agent::collection(&db).insert_many(&agents).await.unwrap();
    let cases: Vec<Case> = (0..20).map(|i| case(&c, &agents[i % 5], &t, i)).collect();
    Case::collection(&db).insert_many(&cases).await.unwrap();

    let lease = Duration::from_millis(1500);
    let first = schema.sync_worker(&db).name("pair").lease(lease).spawn();
    ready(&first).await;
    let second = schema.sync_worker(&db).name("pair").lease(lease).spawn();
    ready(&second).await;
    assert!(first.stats().is_active());
    assert!(!second.stats().is_active() && second.stats().is_standby());

    for round in 0..10 {
        for a in &agents {
            rename_agent(&db, a.id, &format!("{} v{round}", a.name)).await;
        }
    }
    eventually(Duration::from_secs(30), "50 renames converge", || async {
        for a in &agents {
            if copied_names(&db, "agent", a.id).await != vec![format!("{} v9", a.name); 4] {
                return false;
            }
        }
        true
    })
    .await;
    let applied = |w: &mongo_schema::SyncWorkerHandle| w.stats().snapshot().applied;
    // the looked-up full documents of early events already carry late names: the copies can
    // converge before the last events are read, so wait for those too
    eventually(Duration::from_secs(30), "all 50 events applied", || async {
        applied(&first) >= 50
    })
    .await;
    println!(
        "50 renames: active worker applied {}, standby applied {}",
        applied(&first),
        applied(&second)
    );
    assert!(applied(&first) >= 50);
    assert_eq!(applied(&second), 0, "only the lease holder applies");
    let token_time =
        |doc: Option<BsonDocument>| doc.and_then(|d| d.get_timestamp("token_time").ok());
    let tokens = db.collection::<BsonDocument>(TOKENS_COLLECTION);
    // the token is saved once the batch in hand is applied
    eventually(Duration::from_secs(10), "the token is saved", || async {
        token_time(tokens.find_one(doc! { "_id": "pair" }).await.unwrap()).is_some()
    })
    .await;
    let before = token_time(tokens.find_one(doc! { "_id": "pair" }).await.unwrap()).unwrap();

    // the active worker dies: the standby takes over within the lease (plus one poll)
    let killed = Instant::now();
    first.kill();
    eventually(lease * 4, "the standby takes over", || async {
        second.stats().is_active()
    })
    .await;
    println!(
        "the standby took over {:?} after the kill",
        killed.elapsed()
    );
    rename_agent(&db, agents[0].id, "after the takeover").await;
    eventually(
        Duration::from_secs(20),
        "the new active worker applies",
        || async {
            copied_names(&db, "agent", agents[0].id).await == vec!["after the takeover"; 4]
        },
    )
    .await;
    let after = token_time(tokens.find_one(doc! { "_id": "pair" }).await.unwrap()).unwrap();
    assert!(
        after >= before,
        "the token never moves backwards: {before:?} -> {after:?}"
    );
    assert_eq!(second.stats().snapshot().takeovers, 1);
    shut_down_within(second, SHUTDOWN).await;
    let released = tokens
        .find_one(doc! { "_id": "pair" })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        released.get("owner"),
        Some(&Bson::Null),
        "shutdown releases the lease"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleted_sources_unset_or_keep_their_copies() {
    let db = applied("res_delete").await;
    let schema = schema();
    let (ana, bo, billing, cases) = desk(&db, 6).await;
    let worker = schema.sync_worker(&db).name("deletes").spawn();
    ready(&worker).await;

    // transactional + unset: in the deleting transaction
    let report = schema
        .delete_source::<Customer>(&db, &ana.id)
        .await
        .unwrap();
    assert!(report.source.is_some());
    assert_eq!(report.total_unset(), 6, "{report:?}");
    for c in &cases {
        assert_eq!(case_of(&db, c.id).await.customer, None);
    }
    // async + keep: the team is deleted first, then the agent (async + unset); once the agent's
    // copies are unset, the team's deletion has been seen too, and its copies were kept
    Team::collection(&db)
        .delete_one(doc! { "_id": billing.id })
        .await
        .unwrap();
    Agent::collection(&db)
        .delete_one(doc! { "_id": bo.id })
        .await
        .unwrap();
    eventually(
        Duration::from_secs(20),
        "the agent copies are unset",
        || async {
            let mut unset = true;
            for c in &cases {
                unset &= case_of(&db, c.id).await.agent.is_none();
            }
            unset
        },
    )
    .await;
    for c in &cases {
        let stored = case_of(&db, c.id).await;
        assert_eq!(stored.team.unwrap().name, "Billing", "kept");
    }
    assert!(worker.stats().snapshot().copies_unset >= 6);

    // reconcile counts the kept ones as missing sources, and unsets an `unset` copy whose
    // source is gone (here written by a client that skipped the library)
    let ghost = agent("Ghost");
    let mut orphan = case(&customer("Eve"), &ghost, &billing, 99);
    orphan.customer = None;
    Case::collection(&db).insert_one(&orphan).await.unwrap();
    let dry = schema.reconcile(&db).dry_run(true).await.unwrap();
    println!("{dry}");
    let figures = |copy: &str| dry.edges.iter().find(|e| e.copy == copy).unwrap().clone();
    assert_eq!(figures("cases.team").missing_sources, 7);
    assert_eq!(
        figures("cases.team").drifted,
        0,
        "kept copies are not drift"
    );
    assert_eq!(figures("cases.agent").missing_sources, 1);
    assert_eq!(
        figures("cases.agent").drifted,
        1,
        "an `unset` copy of a deleted source"
    );
    let repair = schema.reconcile(&db).await.unwrap();
    assert_eq!(repair.repaired(), 1);
    assert_eq!(case_of(&db, orphan.id).await.agent, None);
    // deleting what is not there
    let nothing = schema
        .delete_source::<Customer>(&db, &ObjectId::new())
        .await
        .unwrap();
    assert!(nothing.source.is_none() && nothing.total_unset() == 0);
    shut_down_within(worker, SHUTDOWN).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn a_reconcile_repair_never_overwrites_a_newer_copy() {
    let db = applied("res_repair_race").await;
    let schema = schema();
    let (ana, _, _, cases) = desk(&db, 3).await;
    // a drifted copy for reconcile to repair
    db.collection::<BsonDocument>("cases")
        .update_one(
            doc! { "_id": cases[0].id },
            doc! { "$set": { "customer.name": "Anna?" } },
        )
        .await
        .unwrap();
    // reconcile pauses just before sending its repair (it has read the copy and the source)
    let uri = tokio::task::spawn_blocking(mongo_schema_testkit::uri)
        .await
        .unwrap();
    let (client, paused, resume) = mongo_schema_testkit::holding_client(&uri, |started| {
        started.command_name == "update"
            && started
                .command
                .get_array("updates")
                .ok()
                .and_then(|u| u.first()?.as_document()?.get_document("q").ok())
                .is_some_and(|q| q.contains_key("customer.name"))
    })
    .await;
    let paused_db = client.database(db.name());
    let repair = {
        let schema = schema.clone();
        tokio::spawn(async move { schema.reconcile(&paused_db).await })
    };
    tokio::task::spawn_blocking(move || paused.recv_timeout(Duration::from_secs(30)))
        .await
        .unwrap()
        .expect("reconcile reached its repair");
    // meanwhile a transactional rename commits
    let renamed = schema
        .update_source::<Customer>(&db, &ana.id, doc! { "$set": { "name": "Ana 2" } })
        .await
        .unwrap();
    assert_eq!(renamed.total_rewritten(), 3);
    resume.send(()).unwrap();
    let report = within(Duration::from_secs(60), "reconcile", repair)
        .await
        .unwrap()
        .unwrap();
    println!("{report}");
    let customer_copy = report
        .edges
        .iter()
        .find(|e| e.copy == "cases.customer")
        .unwrap();
    assert_eq!(customer_copy.drifted, 1, "it saw the drift");
    assert_eq!(customer_copy.repaired, 0, "and left the newer copy alone");
    assert_eq!(
        copied_names(&db, "customer", ana.id).await,
        vec!["Ana 2"; 3],
        "the repair did not write the older name over the transaction's"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn update_source_gives_up_within_its_deadline_when_the_server_stops_and_agrees_after() {
    let storage = std::env::temp_dir().join(format!("mongo-schema-res-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&storage);
    std::fs::create_dir_all(&storage).unwrap();
    let server = mongo_schema_testkit::TestServer::start(Some(&storage)).expect("a server");
    let uri = format!("{}&serverSelectionTimeoutMS=1000", server.uri());
    let plain = mongodb::Client::with_uri_str(&uri).await.unwrap();
    let db = plain.database("deadline");
    let deadline = Duration::from_secs(8);
    let schema = Schema::new()
        .model::<Customer>()
        .model::<Agent>()
        .model::<Team>()
        .model::<Case>()
        .model::<Note>()
        .transaction_deadline(deadline)
        .build()
        .unwrap();
    schema.apply(&db).await.unwrap();
    let (ana, _, _, _) = desk(&db, 30).await;

    // the rename's first command pauses until the server is down
    let (paused_client, paused, resume) = mongo_schema_testkit::holding_client(&uri, |started| {
        started.command_name == "findAndModify"
    })
    .await;
    let paused_db = paused_client.database("deadline");
    let started = Instant::now();
    let rename = {
        let (schema, id) = (schema.clone(), ana.id);
        tokio::spawn(async move {
            schema
                .update_source::<Customer>(&paused_db, &id, doc! { "$set": { "name": "Ana 2" } })
                .await
        })
    };
    let mut server = tokio::task::spawn_blocking(move || {
        paused
            .recv_timeout(Duration::from_secs(30))
            .expect("the rename started");
        let mut server = server;
        server.stop();
        server
    })
    .await
    .unwrap();
    resume.send(()).unwrap();
    let outcome = tokio::time::timeout(deadline + Duration::from_secs(30), rename)
        .await
        .expect("update_source returns")
        .unwrap();
    let took = started.elapsed();
    let error = outcome.expect_err("the server is down");
    println!("update_source with the server stopped: error after {took:?}: {error}");
    assert!(
        took < deadline + Duration::from_secs(5),
        "returned within its deadline ({deadline:?}, plus the server's stop): {took:?}"
    );

    let server = tokio::task::spawn_blocking(move || {
        server.restart().expect("restart with the same storage");
        server
    })
    .await
    .unwrap();
    let db = mongodb::Client::with_uri_str(&uri)
        .await
        .unwrap()
        .database("deadline");
    let source = common::stored::<Customer>(&db, ana.id).await;
    println!("after the restart the customer is named {:?}", source.name);
    assert_eq!(
        copied_names(&db, "customer", ana.id).await,
        vec![source.name.clone(); 30],
        "source and copies agree"
    );
    let report = schema
        .update_source::<Customer>(&db, &ana.id, doc! { "$set": { "name": "Ana 3" } })
        .await
        .unwrap();
    assert_eq!(report.total_rewritten(), 30);
    assert_eq!(
        copied_names(&db, "customer", ana.id).await,
        vec!["Ana 3"; 30]
    );
    drop(server);
    let _ = std::fs::remove_dir_all(&storage);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rebuilds_racing_writers_lose_no_increment() {
    let db = applied("res_rebuild").await;
    let (_, _, _, cases) = desk(&db, 3).await;
    let writing = Arc::new(AtomicBool::new(true));
    let base = DateTime::now().timestamp_millis();
    let writers: Vec<_> = (0..8)
        .map(|w| {
            let (db, cases) = (db.clone(), cases.clone());
            tokio::spawn(async move {
                for i in 0..25 {
                    let note = Note {
                        id: ObjectId::new(),
                        case_id: cases[(i + w) % 3].to_ref(),
                        at: DateTime::from_millis(base + (i * 8 + w) as i64),
                        writer: w as i32,
                    };
                    Case::NOTES.add(&db, &note).await.unwrap();
                }
            })
        })
        .collect();
    let passes = Arc::new(AtomicU64::new(0));
    let rebuilder = {
        let (db, writing, passes) = (db.clone(), writing.clone(), passes.clone());
        tokio::spawn(async move {
            while writing.load(Ordering::Relaxed) {
                Case::NOTES.rebuild_all(&db).await.unwrap();
                passes.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    for writer in writers {
        within(Duration::from_secs(120), "a writer", writer)
            .await
            .unwrap();
    }
    let during = passes.load(Ordering::Relaxed);
    writing.store(false, Ordering::Relaxed);
    within(Duration::from_secs(120), "the rebuilds", rebuilder)
        .await
        .unwrap();
    println!("{during} rebuild_all passes ran while 8 writers added 200 notes");
    assert!(during >= 2, "the rebuilds overlapped the writers");
    let mut total = 0;
    for c in &cases {
        let stored = case_of(&db, c.id).await;
        let children = Note::collection(&db)
            .count_documents(doc! { "case_id": c.id })
            .await
            .unwrap();
        assert_eq!(stored.note_count as u64, children, "no increment lost");
        let newest: Vec<DateTime> = common::all(
            Note::collection(&db)
                .find(doc! { "case_id": c.id })
                .sort(doc! { "at": -1 })
                .limit(3),
        )
        .await
        .iter()
        .map(|n| n.at)
        .collect();
        assert_eq!(
            stored.notes.iter().map(|p| p.at).collect::<Vec<_>>(),
            newest,
            "the previews are the newest 3"
        );
        total += children;
    }
    assert_eq!(total, 200);

    // resumable: a progress that stopped after the first case continues from the second
    let mut progress = mongo_schema::RebuildProgress::default();
    Case::NOTES
        .resume_rebuild_all(&db, &mut progress)
        .await
        .unwrap();
    assert_eq!(progress.rebuilt, 3);
    let mut ids: Vec<ObjectId> = cases.iter().map(|c| c.id).collect();
    ids.sort();
    assert_eq!(progress.last_done, Some(Bson::ObjectId(ids[2])));
}

#[tokio::test]
async fn a_push_past_the_bound_or_around_it_is_refused() {
    let db = applied("res_push").await;
    let (_, _, _, cases) = desk(&db, 1).await;
    let id = cases[0].id;
    let four: Vec<String> = ["a", "b", "c", "d"].map(String::from).to_vec();
    let error = Case::LABELS
        .push(&db, doc! { "_id": id }, &four, None)
        .await
        .unwrap_err();
    println!("{error}");
    assert!(
        matches!(&error, Error::BoundExceeded { path, max: 3, attempted: 4, .. } if path == "cases.labels"),
        "{error:#?}"
    );
    let error = Case::LABELS
        .push(
            &db,
            doc! { "_id": id },
            &["a".to_owned()],
            Some(doc! { "$set": { "labels": ["x", "y", "z", "w"] } }),
        )
        .await
        .unwrap_err();
    println!("{error}");
    assert!(
        matches!(&error, Error::InvalidArgument { argument, .. } if argument == "extra"),
        "{error:#?}"
    );
    // within the bound: two fit, then two more do not
    let two = ["a".to_owned(), "b".to_owned()];
    let pushed = Case::LABELS
        .push(
            &db,
            doc! { "_id": id },
            &two,
            Some(doc! { "$set": { "subject": "labelled" } }),
        )
        .await
        .unwrap();
    assert_eq!(pushed.modified, 1);
    let full = Case::LABELS
        .push(&db, doc! { "_id": id }, &two, None)
        .await
        .unwrap();
    assert_eq!(full.matched, 0, "no room: the document is not matched");
    let stored = case_of(&db, id).await;
    assert_eq!(stored.labels, two);
    assert_eq!(stored.subject, "labelled");
}

/// Reconcile (not a dry run) on a server of its own holding 6,500 cases, 130 of them with a
/// stale customer name on both sides of the first batch of 5,000: the first command `hold`
/// picks is held while the server restarts. Returns the report after checking that every copy
/// agrees and a dry run finds nothing left.
async fn reconcile_across_a_restart(
    tag: &str,
    hold: impl Fn(&mongodb::event::command::CommandStartedEvent) -> bool + Send + Sync + 'static,
) -> mongo_schema::ReconcileReport {
    let storage = std::env::temp_dir().join(format!("mongo-schema-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&storage);
    std::fs::create_dir_all(&storage).unwrap();
    let server = mongo_schema_testkit::TestServer::start(Some(&storage)).expect("a server");
    let uri = format!("{}&serverSelectionTimeoutMS=2000", server.uri());
    let db = mongodb::Client::with_uri_str(&uri)
        .await
        .unwrap()
        .database("resume");
    let schema = schema();
    schema.apply(&db).await.unwrap();
    let (ana, _, _, cases) = desk(&db, 6_500).await;
    let stale: Vec<ObjectId> = cases.iter().step_by(50).map(|c| c.id).collect();
    db.collection::<BsonDocument>("cases")
        .update_many(
            doc! { "_id": { "$in": &stale } },
            doc! { "$set": { "customer.name": "stale" } },
        )
        .await
        .unwrap();
    assert_eq!(stale.len(), 130);

    let (held_client, held, release) = mongo_schema_testkit::holding_client(&uri, hold).await;
    let held_db = held_client.database("resume");
    let reconcile = {
        let schema = schema.clone();
        tokio::spawn(async move { schema.reconcile(&held_db).await })
    };
    let server = tokio::task::spawn_blocking(move || {
        held.recv_timeout(Duration::from_secs(60))
            .expect("the command to hold was sent");
        let mut server = server;
        server.restart().expect("restart with the same storage");
        server
    })
    .await
    .unwrap();
    release.send(()).unwrap();
    let report = tokio::time::timeout(Duration::from_secs(120), reconcile)
        .await
        .expect("reconcile returns")
        .unwrap()
        .expect("reconcile resumes after the restart");
    println!("{report}");
    for edge in &report.edges {
        assert_eq!(
            edge.checked, 6_500,
            "{}: every holder compared once",
            edge.copy
        );
    }
    assert_eq!(
        copied_names(&db, "customer", ana.id).await,
        vec!["Ana"; 6_500]
    );
    let again = schema.reconcile(&db).dry_run(true).await.unwrap();
    assert_eq!(again.drifted(), 0, "{again}");
    drop(server);
    let _ = std::fs::remove_dir_all(&storage);
    report
}

#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn a_reconcile_cut_by_a_server_restart_resumes_after_the_last_holder_compared() {
    // the stream's first getMore (the second batch) is held while the server restarts
    let report =
        reconcile_across_a_restart("rec-stream", |started| started.command_name == "getMore").await;
    let resumed: u64 = report.edges.iter().map(|e| e.resumed).sum();
    assert_eq!(resumed, 1, "the stream broke once and was opened again");
    let customers = &report.edges[0];
    assert_eq!(customers.copy, "cases.customer");
    assert_eq!(customers.resumed, 1, "the break was in this copy's stream");
    assert_eq!(
        (customers.drifted, customers.repaired),
        (130, 130),
        "each stale copy found once and repaired, before and after the break"
    );
    assert_eq!(report.drifted(), 130, "no other copy drifted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn a_reconcile_whose_repair_is_cut_by_a_server_restart_compares_that_batch_again() {
    // the first repair of the first batch is held while the server restarts: that batch is cut
    // short, and compared again from its start once the stream is opened again
    let report = reconcile_across_a_restart("rec-repair", |started| {
        started.command_name == "update"
            && started
                .command
                .get_str("update")
                .is_ok_and(|c| c == "cases")
    })
    .await;
    let customers = &report.edges[0];
    assert_eq!(customers.copy, "cases.customer");
    assert_eq!(
        customers.resumed, 1,
        "the cut batch was compared again once"
    );
    assert_eq!(
        (customers.drifted, customers.repaired),
        (130, 130),
        "the held repair was lost with the restart: every stale copy was repaired after it"
    );
}
