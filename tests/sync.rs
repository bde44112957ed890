//! The four sync strategies on the real server: transactional copies never disagree with their
//! source after a commit; async copies converge, across a killed worker and a server restart;
//! reconcile repairs every drifted copy; frozen copies never change. Plus subsets under
//! concurrent writers, capped arrays, compare-and-set, and the fan-out indexes.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{eventually, ready, shut_down_within, within};

/// How long a worker may take to stop.
const SHUTDOWN: Duration = Duration::from_secs(30);
use common::helpdesk::*;
use futures_util::TryStreamExt;
use mongo_schema::bson::{doc, Bson, Document as BsonDocument};
use mongo_schema::prelude::*;
use mongo_schema::{explain, SyncStrategy, TOKENS_COLLECTION};
use serde::{Deserialize, Serialize};

async fn applied(prefix: &str) -> mongodb::Database {
    let db = mongo_schema_testkit::database(prefix).await;
    schema().apply(&db).await.unwrap();
    db
}

/// Inserts the customer Ana, `agents` and `tickets` tickets of Ana's, ticket `i` assigned to
/// agent `i % agents.len()` (to nobody without agents); returns Ana.
async fn seed(db: &mongodb::Database, agents: &[Agent], tickets: usize) -> Customer {
    let ana = customer("Ana");
    Customer::collection(db).insert_one(&ana).await.unwrap();
    if !agents.is_empty() {
        Agent::collection(db).insert_many(agents).await.unwrap();
    }
    let tickets: Vec<Ticket> = (0..tickets)
        .map(|i| ticket(&ana, agents.get(i % agents.len().max(1)), i))
        .collect();
    Ticket::collection(db).insert_many(&tickets).await.unwrap();
    ana
}

async fn names_of_copies(db: &mongodb::Database, path: &str, id: ObjectId) -> Vec<String> {
    common::all(
        db.collection::<BsonDocument>("tickets")
            .find(doc! { format!("{path}._id"): id }),
    )
    .await
    .iter()
    .map(|t| {
        let copy = t.get_document(path).unwrap();
        copy.get_str("name")
            .or_else(|_| copy.get_str("displayName"))
            .unwrap()
            .to_owned()
    })
    .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactional_rename_is_never_seen_half_done() {
    let db = applied("sync_tx").await;
    let schema = schema();
    let ana = seed(&db, &[], 40).await;

    // a reader that checks, in snapshot transactions, that source and copies always agree
    let done = Arc::new(AtomicBool::new(false));
    let reader = {
        let (db, done, id) = (db.clone(), done.clone(), ana.id);
        tokio::spawn(async move {
            let mut session = db.client().start_session().await.unwrap();
            let mut reads = 0;
            let mut names = std::collections::BTreeSet::new();
            while !done.load(Ordering::Relaxed) {
                session
                    .start_transaction()
                    .read_concern(mongodb::options::ReadConcern::snapshot())
                    .await
                    .unwrap();
                let source = Customer::collection(&db)
                    .find_one(doc! { "_id": id })
                    .session(&mut session)
                    .await
                    .unwrap()
                    .unwrap();
                let copies: Vec<Ticket> = Ticket::collection(&db)
                    .find(doc! { "customer._id": id })
                    .session(&mut session)
                    .await
                    .unwrap()
                    .stream(&mut session)
                    .try_collect()
                    .await
                    .unwrap();
                session.commit_transaction().await.unwrap();
                assert_eq!(copies.len(), 40);
                for copy in &copies {
                    assert_eq!(
                        copy.customer.name, source.name,
                        "a reader saw a half-done rename"
                    );
                }
                names.insert(source.name);
                reads += 1;
            }
            (reads, names)
        })
    };

    let mut attempts = 0;
    for round in 0..30 {
        let report = schema
            .update_source::<Customer>(
                &db,
                &ana.id,
                doc! { "$set": { "name": format!("Ana {round}") } },
            )
            .await
            .unwrap();
        assert_eq!(report.total_rewritten(), 40, "{report:?}");
        attempts += report.attempts;
    }
    done.store(true, Ordering::Relaxed);
    let (reads, names) = within(Duration::from_secs(30), "the reader", reader)
        .await
        .unwrap();
    println!("30 transactional renames of a customer with 40 tickets: {attempts} transaction attempts; {reads} snapshot reads saw {} different names and no mismatch", names.len());
    assert!(
        names.len() >= 2,
        "the reader ran while the renames committed (it saw {names:?})"
    );
    assert_eq!(
        names_of_copies(&db, "customer", ana.id).await,
        vec!["Ana 29".to_owned(); 40]
    );

    // a rename of a field that is not copied rewrites nothing
    let report = schema
        .update_source::<Customer>(
            &db,
            &ana.id,
            doc! { "$set": { "email": "ana@new.example" } },
        )
        .await
        .unwrap();
    assert_eq!(report.total_rewritten(), 0);
    // an unknown id changes nothing and says so
    let report = schema
        .update_source::<Customer>(&db, &ObjectId::new(), doc! { "$set": { "name": "Nobody" } })
        .await
        .unwrap();
    assert!(report.source.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_copies_converge_and_lag_is_measured() {
    let db = applied("sync_async").await;
    let schema = schema();
    let agents: Vec<Agent> = (0..50)
        .map(|i| agent(format!("agent {i}"), "billing"))
        .collect();
    seed(&db, &agents, 1000).await;

    let worker = schema.sync_worker(&db).name("async-test").spawn();
    ready(&worker).await;

    // 1,000 renames: each of the 50 agents renamed 20 times
    let start = Instant::now();
    for round in 0..20 {
        for agent in &agents {
            rename_agent(&db, agent.id, format!("{} v{round}", agent.display_name)).await;
        }
    }
    let written = start.elapsed();
    // a change to a field that is not copied is seen but not applied (the full document is
    // looked up when an event is read, so early events already carry late names: convergence
    // is checked on every agent, not a sample)
    Agent::collection(&db)
        .update_one(
            doc! { "_id": agents[0].id },
            doc! { "$set": { "team": "sales" } },
        )
        .await
        .unwrap();
    let converged = eventually(Duration::from_secs(60), "async copies converge", || {
        let db = db.clone();
        let agents = agents.clone();
        async move {
            for agent in agents.iter() {
                let names = names_of_copies(&db, "assignee", agent.id).await;
                if names
                    .iter()
                    .any(|n| *n != format!("{} v19", agent.display_name))
                {
                    return false;
                }
            }
            true
        }
    })
    .await;
    // all of them
    for agent in &agents {
        assert_eq!(
            names_of_copies(&db, "assignee", agent.id).await,
            vec![format!("{} v19", agent.display_name); 20]
        );
    }
    let stats = worker.stats();
    let seen = eventually(
        Duration::from_secs(30),
        "the non-copied change is seen",
        || async { stats.snapshot().events >= 1001 },
    );
    let deadline = tokio::time::timeout(Duration::from_secs(31), seen).await;
    let now = stats.snapshot();
    assert!(
        deadline.is_ok(),
        "events {} applied {} reopened {} reconciles {}",
        now.events,
        now.applied,
        now.reopened,
        now.reconciles
    );
    println!(
        "1,000 async renames (50 agents x 20, 20 tickets each): written in {written:?}, copies converged {:?} after the last write; \
         events {}, applied {}, tickets rewritten {}, last lag {} ms, max lag {} ms",
        converged,
        now.events,
        now.applied,
        now.copies_rewritten,
        now.last_lag_ms,
        now.max_lag_ms,
    );
    // delivery is at least once: 1,000 renames are 1,000 applied events or more, never fewer
    // (every copy is right, checked above); the team change is seen and not applied
    let applied = stats.snapshot().applied;
    assert!(applied >= 1000, "{applied}");
    assert!(
        stats.snapshot().events > applied,
        "the team change touched no copied field"
    );
    assert!(stats.snapshot().max_lag_ms > 0, "the lag is measured");
    shut_down_within(worker, SHUTDOWN).await;

    // the token is stored in the library's collection
    let token = db
        .collection::<BsonDocument>(TOKENS_COLLECTION)
        .find_one(doc! { "_id": "async-test" })
        .await
        .unwrap();
    assert!(token.is_some_and(|t| t.contains_key("token")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_worker_resumes_from_its_token_and_a_lost_token_falls_back_to_reconcile() {
    let db = applied("sync_kill").await;
    let schema = schema();
    let bo = agent("Bo", "t");
    seed(&db, std::slice::from_ref(&bo), 30).await;
    let rename = |name: &'static str| {
        let db = db.clone();
        async move {
            rename_agent(&db, bo.id, name).await;
        }
    };

    let crashy = || {
        schema
            .sync_worker(&db)
            .name("crashy")
            .lease(Duration::from_secs(1))
            .spawn()
    };
    let worker = crashy();
    ready(&worker).await;
    rename("Bo 1").await;
    eventually(Duration::from_secs(20), "first rename", || async {
        names_of_copies(&db, "assignee", bo.id).await == vec!["Bo 1"; 30]
    })
    .await;

    // killed between the change and the update: the change is made, the worker dies at once
    rename("Bo 2").await;
    worker.kill();
    rename("Bo 3").await; // and more changes happen while no worker runs
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_ne!(
        names_of_copies(&db, "assignee", bo.id).await,
        vec!["Bo 3"; 30],
        "nobody applied it"
    );

    let worker = crashy();
    eventually(
        Duration::from_secs(20),
        "resumed worker converges",
        || async { names_of_copies(&db, "assignee", bo.id).await == vec!["Bo 3"; 30] },
    )
    .await;
    assert_eq!(
        worker.stats().snapshot().reconciles,
        0,
        "resumed from the token, no reconcile needed"
    );
    assert_eq!(
        worker.stats().snapshot().takeovers,
        1,
        "it took the lease the killed worker left to expire"
    );
    shut_down_within(worker, SHUTDOWN).await;

    // a token the server can no longer resume from: full reconcile, then follow from now
    db.collection::<BsonDocument>(TOKENS_COLLECTION)
        .update_one(
            doc! { "_id": "crashy" },
            doc! { "$set": { "token": { "_data": "00" } } },
        )
        .await
        .unwrap();
    rename("Bo 4").await;
    let worker = crashy();
    ready(&worker).await;
    assert_eq!(worker.stats().snapshot().reconciles, 1);
    assert_eq!(
        names_of_copies(&db, "assignee", bo.id).await,
        vec!["Bo 4"; 30],
        "the reconcile caught up"
    );
    rename("Bo 5").await;
    eventually(
        Duration::from_secs(20),
        "follows after the fallback",
        || async { names_of_copies(&db, "assignee", bo.id).await == vec!["Bo 5"; 30] },
    )
    .await;
    shut_down_within(worker, SHUTDOWN).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_that_is_behind_rewrites_each_renamed_source_once_per_batch() {
    let db = applied("sync_coalesce").await;
    let schema = schema();
    let agents = vec![agent("Bo", "t"), agent("Cy", "t")];
    seed(&db, &agents, 20).await;
    // 50 renames of each agent, interleaved, while no worker runs
    let rename_all = |round: &'static str| {
        let (db, agents) = (db.clone(), agents.clone());
        async move {
            for i in 1..=50 {
                for agent in &agents {
                    rename_agent(&db, agent.id, format!("{} {round}{i}", agent.display_name)).await;
                }
            }
        }
    };
    let converged = |round: &'static str| {
        let (db, agents) = (db.clone(), agents.clone());
        async move {
            for agent in &agents {
                let want = format!("{} {round}50", agent.display_name);
                if names_of_copies(&db, "assignee", agent.id).await != vec![want; 10] {
                    return false;
                }
            }
            true
        }
    };
    let worker = |max_batch: usize| {
        schema
            .sync_worker(&db)
            .name("behind")
            .max_batch(max_batch)
            .spawn()
    };
    let first = worker(1000);
    ready(&first).await;
    shut_down_within(first, SHUTDOWN).await;

    rename_all("a").await;
    let behind = worker(1000);
    eventually(Duration::from_secs(30), "caught up", || converged("a")).await;
    let stats = behind.stats();
    eventually(Duration::from_secs(30), "every change applied", || async {
        stats.snapshot().applied == 100
    })
    .await;
    let coalesced = stats.snapshot().coalesced;
    println!("default batches: 100 changes applied, {coalesced} coalesced");
    assert!(
        coalesced >= 50,
        "most of 50 renames per agent coalesce into one rewrite: {coalesced}"
    );
    shut_down_within(behind, SHUTDOWN).await;

    // the control: batches of one change coalesce nothing
    rename_all("b").await;
    let one_by_one = worker(1);
    eventually(Duration::from_secs(30), "caught up one by one", || {
        converged("b")
    })
    .await;
    // (the full document looked up for the first change already holds the last name)
    let stats = one_by_one.stats();
    eventually(Duration::from_secs(30), "every change applied", || async {
        stats.snapshot().applied == 100
    })
    .await;
    assert_eq!(stats.snapshot().coalesced, 0);
    shut_down_within(one_by_one, SHUTDOWN).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_await_time_is_sent_with_each_get_more_of_the_change_stream() {
    let (client, log) = mongo_schema_testkit::monitored_client().await;
    let plain = mongo_schema_testkit::database("sync_await").await;
    let db = client.database(plain.name());
    let schema = schema();
    schema.apply(&db).await.unwrap();
    // the getMores a worker sends while following, with the `maxTimeMS` each carried
    let waits = |name: &'static str, wait: Option<Duration>| {
        let (schema, db, log) = (schema.clone(), db.clone(), log.clone());
        async move {
            let mut worker = schema.sync_worker(&db).name(name);
            if let Some(wait) = wait {
                worker = worker.max_await_time(wait);
            }
            log.clear();
            let worker = worker.spawn();
            ready(&worker).await;
            let mut sent = Vec::new();
            eventually(Duration::from_secs(10), "two getMores", || {
                sent = log
                    .commands()
                    .into_iter()
                    .filter(|c| c.name == "getMore")
                    .map(|c| match c.command.get("maxTimeMS") {
                        Some(Bson::Int32(ms)) => Some(i64::from(*ms)),
                        Some(Bson::Int64(ms)) => Some(*ms),
                        _ => None,
                    })
                    .collect();
                std::future::ready(sent.len() >= 2)
            })
            .await;
            shut_down_within(worker, SHUTDOWN).await;
            sent
        }
    };
    let set = waits("await-set", Some(Duration::from_millis(100))).await;
    assert!(set.iter().all(|ms| *ms == Some(100)), "{set:?}");
    let unset = waits("await-unset", None).await;
    assert!(
        unset.iter().all(Option::is_none),
        "the server's default: {unset:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_copies_converge_across_a_server_restart() {
    let storage = std::env::temp_dir().join(format!("mongo-schema-restart-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&storage);
    std::fs::create_dir_all(&storage).unwrap();
    let mut server =
        mongo_schema_testkit::TestServer::start(Some(&storage)).expect("a dedicated server");
    // count the change streams opened: the driver's own resume and the worker's reopening
    // both send a new `aggregate` with `$changeStream`
    let opened = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut options = mongodb::options::ClientOptions::parse(server.uri())
        .await
        .unwrap();
    let counter = opened.clone();
    options.command_event_handler = Some(mongodb::event::EventHandler::callback(
        move |event: mongodb::event::command::CommandEvent| {
            if let mongodb::event::command::CommandEvent::Started(started) = event {
                let change_stream = started
                    .command
                    .get_array("pipeline")
                    .ok()
                    .and_then(|p| p.first()?.as_document().cloned())
                    .is_some_and(|stage| stage.contains_key("$changeStream"));
                if started.command_name == "aggregate" && change_stream {
                    counter.fetch_add(1, Ordering::SeqCst);
                }
            }
        },
    ));
    let client = mongodb::Client::with_options(options).unwrap();
    let db = client.database("restart");
    let schema = schema();
    schema.apply(&db).await.unwrap();
    let bo = agent("Bo", "t");
    seed(&db, std::slice::from_ref(&bo), 25).await;

    let worker = schema.sync_worker(&db).name("restart").spawn();
    ready(&worker).await;
    rename_agent(&db, bo.id, "Bo 1").await;
    eventually(Duration::from_secs(20), "before restart", || async {
        names_of_copies(&db, "assignee", bo.id).await == vec!["Bo 1"; 25]
    })
    .await;

    let streams_before = opened.load(Ordering::SeqCst);
    assert!(streams_before >= 1);
    let restart = Instant::now();
    server.restart().expect("restart with the same storage");
    println!(
        "server restarted in {:?} on the same port",
        restart.elapsed()
    );
    rename_agent(&db, bo.id, "Bo 2").await;
    let took = eventually(Duration::from_secs(60), "after restart", || async {
        names_of_copies(&db, "assignee", bo.id).await == vec!["Bo 2"; 25]
    })
    .await;
    // the driver resumes the stream by itself after a network error when it can; otherwise the
    // worker reopens it from its saved token
    let streams_after = opened.load(Ordering::SeqCst);
    println!(
        "after the restart the worker converged in {took:?}; change streams opened {streams_before} before, {streams_after} after (reopened by the worker {} time(s), the rest resumed by the driver)",
        worker.stats().snapshot().reopened
    );
    assert!(
        streams_after > streams_before,
        "the stream was reopened after the restart"
    );
    // and a worker started after a restart resumes from the stored token
    shut_down_within(worker, SHUTDOWN).await;
    rename_agent(&db, bo.id, "Bo 3").await;
    server.restart().expect("second restart");
    let worker = schema.sync_worker(&db).name("restart").spawn();
    eventually(
        Duration::from_secs(60),
        "resumed after a restart",
        || async { names_of_copies(&db, "assignee", bo.id).await == vec!["Bo 3"; 25] },
    )
    .await;
    assert_eq!(
        worker.stats().snapshot().reconciles,
        0,
        "resumed from the stored token"
    );
    shut_down_within(worker, SHUTDOWN).await;
    drop(client);
    server.stop();
    let _ = std::fs::remove_dir_all(&storage);
}

#[tokio::test]
async fn reconcile_repairs_every_drifted_copy_and_never_touches_frozen_ones() {
    let db = applied("sync_reconcile").await;
    let schema = schema();
    let bo = agent("Bo", "t");
    let ana = seed(&db, std::slice::from_ref(&bo), 20).await;
    let order = Order {
        id: ObjectId::new(),
        customer: (&ana).into(),
        total: 12.5,
    };
    Order::collection(&db).insert_one(&order).await.unwrap();
    let wheel = Part {
        id: "wheel-1".into(),
        name: "Wheel".into(),
    };
    let brake = Part {
        id: "brake-1".into(),
        name: "Disc Brake".into(),
    };
    Part::collection(&db)
        .insert_many([&wheel, &brake])
        .await
        .unwrap();
    let bike = Product {
        id: "bike-1".into(),
        name: "City Bike".into(),
        parts: vec![(&wheel).into(), (&brake).into()],
    };
    Product::collection(&db).insert_one(&bike).await.unwrap();

    // corrupt copies by hand: 7 ticket customers, 4 ticket assignees, one product part
    let tickets = db.collection::<BsonDocument>("tickets");
    let ids: Vec<Bson> = common::all(tickets.find(doc! {}))
        .await
        .iter()
        .map(|t| t.get("_id").unwrap().clone())
        .collect();
    tickets
        .update_many(
            doc! { "_id": { "$in": &ids[..7] } },
            doc! { "$set": { "customer.name": "Anna?" } },
        )
        .await
        .unwrap();
    tickets
        .update_many(
            doc! { "_id": { "$in": &ids[10..14] } },
            doc! { "$set": { "assignee.displayName": "Robert" } },
        )
        .await
        .unwrap();
    db.collection::<BsonDocument>("productsHybrid")
        .update_one(
            doc! { "_id": "bike-1" },
            doc! { "$set": { "parts.$[p].name": "Wheeel" } },
        )
        .array_filters(vec![doc! { "p._id": "wheel-1" }])
        .await
        .unwrap();
    // and rename the part at its source, as a reconcile-only copy would see it
    Part::collection(&db)
        .update_one(
            doc! { "_id": "brake-1" },
            doc! { "$set": { "name": "Hydraulic Brake" } },
        )
        .await
        .unwrap();

    let dry = schema.reconcile(&db).dry_run(true).await.unwrap();
    println!("dry run:\n{dry}");
    let figures = |report: &mongo_schema::ReconcileReport, copy: &str| {
        report
            .edges
            .iter()
            .find(|e| e.copy == copy)
            .cloned()
            .unwrap_or_else(|| panic!("no {copy} in {report}"))
    };
    assert_eq!(figures(&dry, "tickets.customer").drifted, 7);
    assert_eq!(figures(&dry, "tickets.assignee").drifted, 4);
    assert_eq!(
        figures(&dry, "productsHybrid.parts").drifted,
        2,
        "one hand-corrupted, one renamed at the source"
    );
    assert_eq!(dry.repaired(), 0);
    assert!(
        dry.edges.iter().all(|e| e.copy != "orders.customer"),
        "frozen copies are not even read"
    );

    let report = schema.reconcile(&db).await.unwrap();
    println!("repair:\n{report}");
    assert_eq!(report.repaired(), 7 + 4 + 2);
    assert_eq!(
        schema.reconcile(&db).dry_run(true).await.unwrap().drifted(),
        0
    );
    let product = common::stored::<Product>(&db, "bike-1").await;
    assert_eq!(
        product
            .parts
            .iter()
            .map(|p| p.name.as_str())
            .collect::<Vec<_>>(),
        ["Wheel", "Hydraulic Brake"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frozen_copies_survive_a_rename_under_every_strategy() {
    let db = applied("sync_frozen").await;
    let schema = schema();
    let ana = customer("Ana");
    Customer::collection(&db).insert_one(&ana).await.unwrap();
    let order = Order {
        id: ObjectId::new(),
        customer: (&ana).into(),
        total: 99.0,
    };
    Order::collection(&db).insert_one(&order).await.unwrap();
    let t = ticket(&ana, None, 0);
    Ticket::collection(&db).insert_one(&t).await.unwrap();
    let ticket_customer = |db: mongodb::Database| async move {
        common::stored::<Ticket>(&db, t.id).await.customer.name
    };

    // transactional path: the ticket's copy changes in the transaction, the order's does not
    let report = schema
        .update_source::<Customer>(&db, &ana.id, doc! { "$set": { "name": "Ana T" } })
        .await
        .unwrap();
    assert_eq!(report.total_rewritten(), 1, "{report:?}");
    assert_eq!(ticket_customer(db.clone()).await, "Ana T");
    // reconcile path: a rename the library did not see leaves the ticket's copy drifted;
    // reconcile repairs it and never reads the order's
    Customer::collection(&db)
        .update_one(
            doc! { "_id": ana.id },
            doc! { "$set": { "name": "Ana R", "email": "new@example.org" } },
        )
        .await
        .unwrap();
    let repaired = schema.reconcile(&db).await.unwrap();
    assert_eq!(repaired.repaired(), 1, "{repaired}");
    assert!(repaired.edges.iter().all(|e| e.copy != "orders.customer"));
    assert_eq!(ticket_customer(db.clone()).await, "Ana R");

    let stored = common::stored::<Order>(&db, order.id).await;
    assert_eq!(stored, order, "the order keeps the customer as they were");
    assert_eq!(stored.customer.name, "Ana");
    assert!(
        !Order::collection_spec()
            .indexes
            .iter()
            .any(|i| i.keys.contains_key("customer._id")),
        "no fan-out index for a frozen copy"
    );
    assert_eq!(
        schema
            .sync_graph()
            .by_strategy(SyncStrategy::Frozen)
            .count(),
        1
    );
}

// ---- subsets, capped arrays, compare-and-set -------------------------------------------------

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "threads")]
pub struct Thread {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[subset(of = Post, max = 3, sort = "-at", count = "post_count")]
    pub latest: Vec<PostPreview>,
    pub post_count: i64,
    #[subset(of = Post, max = 1, sort = "-at")]
    pub newest: Option<PostPreview>,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "posts")]
#[index(keys(thread_id = 1, at = -1))]
pub struct Post {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[reference]
    pub thread_id: Ref<Thread>,
    pub at: DateTime,
    pub writer: i32,
}

#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct PostPreview {
    pub at: DateTime,
    pub writer: i32,
}

impl From<&Post> for PostPreview {
    fn from(post: &Post) -> Self {
        PostPreview {
            at: post.at,
            writer: post.writer,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subsets_keep_the_newest_n_in_order_and_the_count_under_8_concurrent_writers() {
    let db = mongo_schema_testkit::database("sync_subset").await;
    let threads_schema = Schema::new()
        .model::<Thread>()
        .model::<Post>()
        .build()
        .unwrap();
    threads_schema.apply(&db).await.unwrap();
    schema().apply(&db).await.unwrap();
    let thread = Thread {
        id: ObjectId::new(),
        latest: vec![],
        post_count: 0,
        newest: None,
    };
    Thread::collection(&db).insert_one(&thread).await.unwrap();
    let ana = customer("Ana");
    let t = ticket(&ana, None, 0);
    Ticket::collection(&db).insert_one(&t).await.unwrap();

    let base = DateTime::now().timestamp_millis();
    let writers = (0..8).map(|w| {
        let (db, thread_id, ticket_ref) = (db.clone(), thread.id, t.to_ref());
        tokio::spawn(async move {
            for i in 0..25 {
                let at = DateTime::from_millis(base + (i * 8 + w) as i64); // distinct, interleaved
                let post = Post {
                    id: ObjectId::new(),
                    thread_id: Ref::new(thread_id),
                    at,
                    writer: w,
                };
                // two subsets of the same child, one insert, one transaction
                Thread::LATEST
                    .add_with(&db, &post, &[&Thread::NEWEST])
                    .await
                    .unwrap();
                let message = Message {
                    id: ObjectId::new(),
                    ticket_id: ticket_ref,
                    body: format!("writer {w} message {i}"),
                    at,
                };
                Ticket::LAST_MESSAGE.add(&db, &message).await.unwrap();
            }
        })
    });
    for writer in writers {
        within(Duration::from_secs(120), "a subset writer", writer)
            .await
            .unwrap();
    }
    let stored = common::stored::<Thread>(&db, thread.id).await;
    assert_eq!(stored.post_count, 200);
    let newest: Vec<i64> = stored
        .latest
        .iter()
        .map(|p| p.at.timestamp_millis() - base)
        .collect();
    assert_eq!(
        newest,
        [199, 198, 197],
        "exactly the newest 3, newest first"
    );
    let newest_one = stored.newest.as_ref().expect("the subset of one is set");
    assert_eq!(
        newest_one.at.timestamp_millis() - base,
        199,
        "the subset of one holds the newest post"
    );
    assert_eq!(newest_one.writer, 7);

    let stored = common::stored::<Ticket>(&db, t.id).await;
    assert_eq!(stored.message_count, 200);
    let last = stored.last_message.unwrap();
    assert_eq!(last.at.timestamp_millis() - base, 199);
    assert_eq!(last.preview, "writer 7 message 24");

    // the two-writes option, with a lost second write repaired by the rebuild job
    let lost = Post {
        id: ObjectId::new(),
        thread_id: Ref::new(thread.id),
        at: DateTime::from_millis(base + 500),
        writer: 9,
    };
    Post::collection(&db).insert_one(&lost).await.unwrap(); // parent never updated
    let later = Post {
        id: ObjectId::new(),
        thread_id: Ref::new(thread.id),
        at: DateTime::from_millis(base + 400),
        writer: 8,
    };
    Thread::LATEST.add_then_update(&db, &later).await.unwrap();
    let stored = common::stored::<Thread>(&db, thread.id).await;
    assert_eq!(stored.post_count, 201, "behind by the lost write");
    Thread::LATEST
        .rebuild(&db, &Ref::new(thread.id))
        .await
        .unwrap();
    let stored = common::stored::<Thread>(&db, thread.id).await;
    assert_eq!(stored.post_count, 202);
    assert_eq!(
        stored.latest.iter().map(|p| p.writer).collect::<Vec<_>>(),
        [9, 8, 7]
    );
    assert_eq!(Thread::LATEST.rebuild_all(&db).await.unwrap(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compare_and_set_lets_exactly_one_of_8_writers_win_and_capped_history_stays_bounded() {
    let db = applied("sync_cas").await;
    let ana = customer("Ana");
    let t = ticket(&ana, None, 0);
    Ticket::collection(&db).insert_one(&t).await.unwrap();

    // the 8 contenders are released together and each records when its CAS ran, to show
    // that they overlapped
    let barrier = Arc::new(tokio::sync::Barrier::new(8));
    let contenders: Vec<_> = (0..8)
        .map(|agent| {
            let (db, ticket, barrier) = (db.clone(), t.to_ref(), barrier.clone());
            tokio::spawn(async move {
                let change = StatusChange {
                    status: Status::Pending,
                    at: DateTime::now(),
                };
                let mut update = Ticket::HISTORY.push_update(&[change]).unwrap();
                update.insert(
                    "$set",
                    doc! { "status": "pending", "updated_at": DateTime::now() },
                );
                barrier.wait().await;
                let started = Instant::now();
                let won = match ticket
                    .compare_and_set(&db, field!(Ticket, status), &Status::Open, update)
                    .await
                {
                    Ok(()) => true,
                    Err(lost) if lost.is_condition_failed() => false,
                    Err(other) => panic!("{other}"),
                };
                (agent, won, started, Instant::now())
            })
        })
        .collect();
    let mut winners = Vec::new();
    let mut spans = Vec::new();
    for contender in contenders {
        let (agent, won, started, ended) = within(Duration::from_secs(30), "a CAS", contender)
            .await
            .unwrap();
        if won {
            winners.push(agent);
        }
        spans.push((started, ended));
    }
    let last_start = spans.iter().map(|s| s.0).max().unwrap();
    let first_end = spans.iter().map(|s| s.1).min().unwrap();
    println!(
        "8 CAS writers: the last started {:?} before the first finished",
        first_end.saturating_duration_since(last_start)
    );
    assert!(
        last_start < first_end,
        "all 8 compare-and-sets were in flight at once"
    );
    assert_eq!(
        winners.len(),
        1,
        "exactly one status change wins: {winners:?}"
    );
    let stored = common::stored::<Ticket>(&db, t.id).await;
    assert_eq!(stored.status, Status::Pending);
    assert_eq!(
        stored.history.len(),
        1,
        "the history entry went with the winning change only"
    );

    // a misbehaving integration pushes 12 changes: the cap keeps the newest 5
    for i in 0..12 {
        let change = StatusChange {
            status: if i % 2 == 0 {
                Status::Open
            } else {
                Status::Pending
            },
            at: DateTime::from_millis(i),
        };
        let outcome = Ticket::HISTORY
            .push(&db, doc! { "_id": t.id }, &[change], None)
            .await
            .unwrap();
        assert_eq!(outcome.modified, 1);
    }
    let stored = common::stored::<Ticket>(&db, t.id).await;
    assert_eq!(
        stored
            .history
            .iter()
            .map(|h| h.at.timestamp_millis())
            .collect::<Vec<_>>(),
        [7, 8, 9, 10, 11]
    );
}

#[tokio::test]
async fn fan_out_queries_use_the_copied_id_index() {
    let db = applied("sync_fanout").await;
    let agents: Vec<Agent> = (0..10).map(|i| agent(format!("a{i}"), "t")).collect();
    seed(&db, &agents, 200).await;
    let parts: Vec<Part> = (0..20)
        .map(|i| Part {
            id: format!("p{i}"),
            name: format!("part {i}"),
        })
        .collect();
    Part::collection(&db).insert_many(&parts).await.unwrap();
    Product::collection(&db)
        .insert_many((0..50).map(|i| Product {
            id: format!("prod{i}"),
            name: "x".into(),
            parts: vec![(&parts[i % 20]).into()],
        }))
        .await
        .unwrap();

    let schema = schema();
    for edge in &schema.sync_graph().edges {
        if edge.copy.strategy == SyncStrategy::Frozen {
            continue;
        }
        let source = db
            .collection::<BsonDocument>(&edge.copy.source)
            .find_one(doc! {})
            .await
            .unwrap()
            .unwrap();
        let command = schema.fan_out_command(edge, &source).expect("a fan-out");
        // the update's query, run as a find (SecantusDB 0.7.0b3's explain of an update reports
        // a COLLSCAN with an empty parsedQuery whatever the filter; a mongod explains it directly)
        let filter = command.get_array("updates").unwrap()[0]
            .as_document()
            .unwrap()
            .get_document("q")
            .unwrap()
            .clone();
        let summary = explain(&db, doc! { "find": &edge.holder, "filter": filter })
            .await
            .unwrap();
        println!(
            "fan-out {}.{} ({}): {summary}",
            edge.holder, edge.copy.path, edge.copy.strategy
        );
        assert!(summary.uses_index(), "{summary}");
        assert!(
            summary
                .indexes
                .iter()
                .any(|i| i.starts_with(&format!("{}._id", edge.copy.path))),
            "{summary}"
        );
    }
}

#[test]
fn build_rejects_copies_and_subsets_whose_source_is_outside_the_schema() {
    let error = Schema::new().model::<Ticket>().build().unwrap_err();
    let text = error.to_string();
    println!("{text}");
    assert!(
        text.contains("`tickets.customer` copies fields of `Customer` (collection `customers`)"),
        "{text}"
    );
    assert!(
        text.contains("`tickets.assignee` copies fields of `Agent`"),
        "{text}"
    );
    assert!(
        text.contains("`tickets.last_message` is a subset of `Message`"),
        "{text}"
    );
    assert!(text.contains(".model::<Customer>()"), "{text}");
}
