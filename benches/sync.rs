//! The sync machinery against the bare driver commands it replaces, side by side in one run on
//! a real server (SecantusDB, or `MONGODB_URI`); ratios are what to read.
//!
//! ```text
//! cargo bench --bench sync                 # 10,000 renames, 40,000 holders
//! BENCH_QUICK=1 cargo bench --bench sync   # small sizes, seconds (CI keeps it running)
//! BENCH_ONLY=shared cargo bench --bench sync  # sections 4 and 5 alone
//! ```
//!
//! 1. Worker throughput: 10,000 renames (100 agents x 100, 20 tickets each) written while the
//!    worker is down, then caught up from its token, against a bare loop of the same 10,000
//!    `updateMany` commands. Then the same renames with the worker following live: the lag of
//!    the applied changes, sampled.
//! 2. Reconcile: a dry run over 40,000 holders against reading those holders and their sources
//!    with plain finds.
//! 3. One rename of an agent that 20,000 tickets copy: the worker's fan-out in chunks of
//!    `FAN_OUT_CHUNK` fenced transactions (commands counted with command monitoring) against one
//!    bare `updateMany` of the same holders.
//! 4. Workers of one name that share the stream (`partitions(4)`): the catch-up rate of the
//!    same renames with 1, 2 and 4 workers of the name side by side (ratios to one worker).
//! 5. The lag of a rename of an agent with one ticket, made one second after the rename of an
//!    agent with 100,000 tickets (5,000 quick) started fanning out: per-lane progress.

use std::time::{Duration, Instant};

use futures_util::TryStreamExt;
use mongo_schema::bson::{doc, Document as BsonDocument};
use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[collection(name = "agents")]
pub struct Agent {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub name: String,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[collection(name = "tickets")]
pub struct Ticket {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub subject: String,
    #[extended_ref(to = Agent, fields = "name", sync = "async")]
    pub assignee: Option<TicketAssignee>,
}

/// The change stream's `maxAwaitTimeMS`. SecantusDB 0.7 answers a `getMore` only when this time
/// is up, even when a change is waiting (mongod answers at once), so its 1 s default would add up
/// to 1 s to every lag measured here.
const AWAIT: Duration = Duration::from_millis(100);

struct Sizes {
    agents: usize,
    renames_each: usize,
    tickets_each: usize,
    reconcile_holders: usize,
    big_fan_out: usize,
    huge_fan_out: usize,
}

fn schema() -> Schema {
    Schema::new()
        .model::<Agent>()
        .model::<Ticket>()
        .build()
        .expect("the bench schema builds")
}

async fn seed(db: &mongodb::Database, agents: usize, tickets_each: usize) -> Vec<Agent> {
    db.drop().await.unwrap();
    schema().apply(db).await.unwrap();
    let agents: Vec<Agent> = (0..agents)
        .map(|i| Agent {
            id: ObjectId::new(),
            name: format!("agent {i}"),
        })
        .collect();
    Agent::collection(db).insert_many(&agents).await.unwrap();
    let tickets: Vec<Ticket> = agents
        .iter()
        .flat_map(|a| {
            (0..tickets_each).map(move |i| Ticket {
                id: ObjectId::new(),
                subject: format!("ticket {i}"),
                assignee: Some(a.into()),
            })
        })
        .collect();
    for chunk in tickets.chunks(10_000) {
        Ticket::collection(db).insert_many(chunk).await.unwrap();
    }
    agents
}

async fn rename_all(db: &mongodb::Database, agents: &[Agent], rounds: usize) {
    for round in 0..rounds {
        for agent in agents {
            Agent::collection(db)
                .update_one(
                    doc! { "_id": agent.id },
                    doc! { "$set": { "name": format!("{} r{round}", agent.name) } },
                )
                .await
                .unwrap();
        }
    }
}

async fn converged(db: &mongodb::Database, agents: &[Agent], rounds: usize) -> bool {
    for agent in agents {
        let wrong = Ticket::collection(db)
            .count_documents(doc! {
                "assignee._id": agent.id,
                "assignee.name": { "$ne": format!("{} r{}", agent.name, rounds - 1) },
            })
            .await
            .unwrap();
        if wrong > 0 {
            return false;
        }
    }
    true
}

fn percentile(samples: &mut [u64], p: f64) -> u64 {
    if samples.is_empty() {
        return 0;
    }
    samples.sort_unstable();
    samples[((samples.len() - 1) as f64 * p).round() as usize]
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let quick = std::env::var_os("BENCH_QUICK").is_some();
    let sizes = if quick {
        Sizes {
            agents: 10,
            renames_each: 10,
            tickets_each: 5,
            reconcile_holders: 2_000,
            big_fan_out: 2_500,
            huge_fan_out: 5_000,
        }
    } else {
        Sizes {
            agents: 100,
            renames_each: 100,
            tickets_each: 20,
            reconcile_holders: 40_000,
            big_fan_out: 20_000,
            huge_fan_out: 100_000,
        }
    };
    let client = mongodb::Client::with_uri_str(mongo_schema_testkit::uri()).await?;
    let db = client.database("mongo_schema_bench_sync");
    let deadline = Duration::from_secs(600);
    let schema = schema();
    let tickets = db.collection::<BsonDocument>("tickets");
    if std::env::var("BENCH_ONLY").as_deref() != Ok("shared") {
        one_worker(&db, &schema, &sizes, deadline).await?;
    }
    shared_and_lanes(&db, &schema, &sizes, deadline, &tickets).await?;
    db.drop().await?;
    Ok(())
}

/// Sections 1 to 3: one worker against the bare commands.
async fn one_worker(
    db: &mongodb::Database,
    schema: &Schema,
    sizes: &Sizes,
    deadline: Duration,
) -> Result<(), Box<dyn std::error::Error>> {
    let db = db.clone();
    let renames = sizes.agents * sizes.renames_each;

    // 1a. catch-up throughput: the renames are written while the worker is down
    let agents = seed(&db, sizes.agents, sizes.tickets_each).await;
    let worker = schema
        .sync_worker(&db)
        .name("bench")
        .max_await_time(AWAIT)
        .spawn();
    worker.ready().await?;
    worker.shutdown().await?; // its token marks where to resume
    rename_all(&db, &agents, sizes.renames_each).await;
    let start = Instant::now();
    let worker = schema
        .sync_worker(&db)
        .name("bench")
        .max_await_time(AWAIT)
        .spawn();
    // caught up when the last change's rewrites are done (`applied` counts after the fan-outs)
    while worker.stats().snapshot().applied < renames as u64 {
        assert!(start.elapsed() < deadline, "the worker did not catch up");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let caught_up = start.elapsed();
    let coalesced = worker.stats().snapshot().coalesced;
    worker.shutdown().await?;
    assert!(converged(&db, &agents, sizes.renames_each).await);

    // 1b. the bare loop: the same updateMany commands, one per rename
    let tickets = db.collection::<BsonDocument>("tickets");
    let start = Instant::now();
    for round in 0..sizes.renames_each {
        for agent in &agents {
            tickets
                .update_many(
                    doc! { "assignee._id": agent.id },
                    doc! { "$set": { "assignee.name": format!("{} bare {round}", agent.name) } },
                )
                .await?;
        }
    }
    let bare = start.elapsed();
    let ours_rate = renames as f64 / caught_up.as_secs_f64();
    let bare_rate = renames as f64 / bare.as_secs_f64();
    println!(
        "{renames} renames ({} agents x {}, {} tickets each), worker catching up vs a bare updateMany loop:",
        sizes.agents, sizes.renames_each, sizes.tickets_each
    );
    println!(
        "  worker {:>8.0} renames/s ({caught_up:?}, {coalesced} coalesced)   bare loop {:>8.0} renames/s ({bare:?})   throughput ratio {:.2}",
        ours_rate,
        bare_rate,
        ours_rate / bare_rate
    );

    // 1c. lag while following live: renames written at full speed, the worker's lag sampled
    let agents = seed(&db, sizes.agents, sizes.tickets_each).await;
    let worker = schema
        .sync_worker(&db)
        .name("bench-live")
        .max_await_time(AWAIT)
        .spawn();
    worker.ready().await?;
    let mut samples = Vec::new();
    let start = Instant::now();
    let written = {
        let (db, agents) = (db.clone(), agents.clone());
        let rounds = sizes.renames_each;
        tokio::spawn(async move { rename_all(&db, &agents, rounds).await })
    };
    // sample the lag of each newly applied batch; query for convergence only once the writes
    // are done (a convergence query per agent would compete with the worker)
    let mut last_applied = 0;
    loop {
        assert!(start.elapsed() < deadline, "the worker did not converge");
        let applied = worker.stats().snapshot().applied;
        if applied != last_applied {
            last_applied = applied;
            samples.push(worker.stats().snapshot().last_lag_ms);
        }
        if written.is_finished() && applied >= renames as u64 {
            if converged(&db, &agents, sizes.renames_each).await {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let took = start.elapsed();
    samples.push(worker.stats().snapshot().last_lag_ms);
    println!(
        "  following live: {renames} renames converged in {took:?}; lag p50 {} ms, p99 {} ms, max {} ms ({} samples)",
        percentile(&mut samples, 0.5),
        percentile(&mut samples, 0.99),
        worker.stats().snapshot().max_lag_ms,
        samples.len()
    );
    worker.shutdown().await?;

    // 2. reconcile: a dry run against plain finds of the same holders and sources
    let holders_each = (sizes.reconcile_holders / 400).max(1);
    let agents = seed(&db, 400, holders_each).await;
    let holders = 400 * holders_each;
    let (mut ours, mut plain) = (Vec::new(), Vec::new());
    for round in 0..3 {
        for first in [round % 2 == 0, round % 2 != 0] {
            let start = Instant::now();
            if first {
                let report = schema.reconcile(&db).dry_run(true).await?;
                assert_eq!(report.drifted(), 0);
                ours.push(start.elapsed());
            } else {
                let read: Vec<BsonDocument> = tickets
                    .find(doc! {})
                    .projection(doc! { "assignee": 1 })
                    .await?
                    .try_collect()
                    .await?;
                let sources: Vec<BsonDocument> = db
                    .collection::<BsonDocument>("agents")
                    .find(doc! {})
                    .await?
                    .try_collect()
                    .await?;
                assert_eq!((read.len(), sources.len()), (holders, agents.len()));
                plain.push(start.elapsed());
            }
        }
    }
    ours.sort();
    plain.sort();
    println!(
        "reconcile dry run over {holders} holders vs plain finds of the holders and sources: {:?} vs {:?}, ratio {:.2}",
        ours[1],
        plain[1],
        ours[1].as_secs_f64() / plain[1].as_secs_f64()
    );

    // 3. one rename, 20,000 holders: chunked and fenced by the worker vs one bare updateMany
    let agents = seed(&db, 1, sizes.big_fan_out).await;
    let (monitored, log) = mongo_schema_testkit::monitored_client().await;
    let watched = monitored.database(db.name());
    let worker = schema
        .sync_worker(&watched)
        .name("bench-big")
        .max_await_time(AWAIT)
        .spawn();
    worker.ready().await?;
    log.clear();
    let start = Instant::now();
    rename_all(&db, &agents, 1).await;
    while worker.stats().snapshot().applied < 1 {
        assert!(
            start.elapsed() < deadline,
            "the worker did not apply the rename"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let chunked = start.elapsed();
    worker.shutdown().await?;
    assert!(converged(&db, &agents, 1).await);
    let commands = log.commands();
    let chunks = commands
        .iter()
        .filter(|c| c.name == "update" && c.command.get_str("update") == Ok("tickets"))
        .count();
    let start = Instant::now();
    tickets
        .update_many(
            doc! { "assignee._id": agents[0].id },
            doc! { "$set": { "assignee.name": "bare" } },
        )
        .await?;
    let bare = start.elapsed();
    println!(
        "one rename of {} holders: worker {chunked:?} in {chunks} chunks of at most {} ({} commands, {} commits) vs one bare updateMany {bare:?}, ratio {:.2}",
        sizes.big_fan_out,
        mongo_schema::FAN_OUT_CHUNK,
        commands.len(),
        commands.iter().filter(|c| c.name == "commitTransaction").count(),
        chunked.as_secs_f64() / bare.as_secs_f64()
    );
    Ok(())
}

/// Sections 4 and 5: workers of one name sharing the stream, and per-lane progress.
async fn shared_and_lanes(
    db: &mongodb::Database,
    schema: &Schema,
    sizes: &Sizes,
    deadline: Duration,
    tickets: &mongodb::Collection<BsonDocument>,
) -> Result<(), Box<dyn std::error::Error>> {
    let db = db.clone();
    let renames = sizes.agents * sizes.renames_each;

    // 4. workers of one name sharing the stream: 1, 2 and 4 workers of `partitions(4)`
    let partitions = 4;
    let shared = |name: &str| {
        schema
            .sync_worker(&db)
            .name(name)
            .partitions(partitions)
            .max_await_time(AWAIT)
            .token_save_interval(Duration::from_millis(200))
    };
    let mut rates = Vec::new();
    for workers in [1, 2, 4] {
        let agents = seed(&db, sizes.agents, sizes.tickets_each).await;
        let name = format!("bench-shared-{workers}");
        // a first run saves each partition's token, then every worker stops
        let running: Vec<_> = (0..workers).map(|_| shared(&name).spawn()).collect();
        for worker in &running {
            worker.ready().await?;
        }
        running[0].caught_up().await?;
        for worker in running {
            worker.shutdown().await?;
        }
        rename_all(&db, &agents, sizes.renames_each).await;
        let start = Instant::now();
        let running: Vec<_> = (0..workers).map(|_| shared(&name).spawn()).collect();
        let applied = |running: &[mongo_schema::SyncWorkerHandle]| -> u64 {
            running.iter().map(|w| w.stats().snapshot().applied).sum()
        };
        while applied(&running) < renames as u64 {
            assert!(start.elapsed() < deadline, "the workers did not catch up");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        while !converged(&db, &agents, sizes.renames_each).await {
            assert!(start.elapsed() < deadline, "the workers did not converge");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let took = start.elapsed();
        let each: Vec<u64> = running
            .iter()
            .map(|w| w.stats().snapshot().applied)
            .collect();
        let held: Vec<usize> = running
            .iter()
            .map(|w| w.stats().partitions_held())
            .collect();
        for worker in running {
            worker.shutdown().await?;
        }
        rates.push((
            workers,
            renames as f64 / took.as_secs_f64(),
            took,
            each,
            held,
        ));
    }
    println!("{renames} renames caught up by workers of one name with partitions({partitions}):");
    let one = rates[0].1;
    for (workers, rate, took, each, held) in &rates {
        println!(
            "  {workers} worker(s): {rate:>8.0} renames/s ({took:?}; applied per worker {each:?}, partitions held {held:?})   ratio to one worker {:.2}",
            rate / one
        );
    }

    // 5. per-lane progress: a one-holder rename while a huge fan-out runs
    let (huge, small) = (ObjectId::new(), ObjectId::new());
    db.drop().await?;
    schema.apply(&db).await?;
    Agent::collection(&db)
        .insert_many([
            Agent {
                id: huge,
                name: "huge".into(),
            },
            Agent {
                id: small,
                name: "small".into(),
            },
        ])
        .await?;
    let seeded = Instant::now();
    let copies = |id: ObjectId, name: &str, n: usize| -> Vec<Ticket> {
        (0..n)
            .map(|i| Ticket {
                id: ObjectId::new(),
                subject: format!("ticket {i}"),
                assignee: Some(TicketAssignee::from(&Agent {
                    id,
                    name: name.to_owned(),
                })),
            })
            .collect()
    };
    for chunk in copies(huge, "huge", sizes.huge_fan_out).chunks(10_000) {
        Ticket::collection(&db).insert_many(chunk).await?;
    }
    Ticket::collection(&db)
        .insert_many(copies(small, "small", 1))
        .await?;
    let seeded = seeded.elapsed();
    let worker = schema
        .sync_worker(&db)
        .name("bench-lanes")
        .max_await_time(AWAIT)
        .ready_timeout(Duration::from_secs(600))
        .spawn();
    worker.ready().await?;
    let rename = |id: ObjectId, name: &'static str| {
        let db = db.clone();
        async move {
            Agent::collection(&db)
                .update_one(doc! { "_id": id }, doc! { "$set": { "name": name } })
                .await
                .map(|_| ())
        }
    };
    let started = Instant::now();
    rename(huge, "huge 2").await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let made = Instant::now();
    rename(small, "small 2").await?;
    loop {
        assert!(made.elapsed() < deadline, "the small rename did not land");
        let landed = tickets
            .count_documents(doc! { "assignee._id": small, "assignee.name": "small 2" })
            .await?;
        if landed == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let small_lag = made.elapsed();
    let huge_then = tickets
        .count_documents(doc! { "assignee.name": "huge 2" })
        .await?;
    loop {
        assert!(started.elapsed() < deadline, "the huge fan-out did not end");
        let done = tickets
            .count_documents(doc! { "assignee.name": "huge 2" })
            .await?;
        if done == sizes.huge_fan_out as u64 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let huge_took = started.elapsed();
    worker.shutdown().await?;
    println!(
        "a one-holder rename made 1 s into a {}-holder fan-out (seeded in {seeded:?}): landed {small_lag:?} after it was made, when {huge_then} of the {} were rewritten; the fan-out took {huge_took:?}",
        sizes.huge_fan_out, sizes.huge_fan_out
    );
    Ok(())
}
