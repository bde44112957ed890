//! `cargo bench -p mongo-schema-cli --bench pull`: `pull` of 100,000 documents in 5 collections
//! (the shop of the tests, larger, and a fifth collection of carts), on the test server. Prints
//! the wall time per stage, the commands sent, the gate's rounds and the process's peak resident
//! memory during the pull. `BENCH_QUICK=1`: 10,000; `BENCH_PULL_SCALE=100`: 1,000,000 (the
//! scale is tens of thousands of documents).
//!
//! To see the pull's own peak memory, seed in one process and pull in another, on one server:
//! `BENCH_PULL_DB=<name>` names the database (on `MONGODB_URI`'s server, e.g. the `test-server`
//! binary's), `BENCH_PULL_STAGE=seed` seeds it and stops, `BENCH_PULL_STAGE=pull` pulls it as
//! seeded (the scale must be the same).

#[allow(dead_code)] // the tests use all of it
#[path = "../tests/common/shop.rs"]
mod shop;

use std::time::Instant;

use mongo_schema_cli::pull::{pull, PullConfig};
use mongodb::bson::{doc, oid::ObjectId, Document};

#[tokio::main]
async fn main() {
    let quick = std::env::var("BENCH_QUICK").is_ok_and(|v| !v.is_empty() && v != "0");
    let scale: i64 = match std::env::var("BENCH_PULL_SCALE") {
        Ok(scale) => scale.parse().expect("BENCH_PULL_SCALE is a whole number"),
        Err(_) if quick => 1,
        Err(_) => 10,
    };
    let stage = std::env::var("BENCH_PULL_STAGE").unwrap_or_default();
    let db = match std::env::var("BENCH_PULL_DB") {
        Ok(name) => mongo_schema_testkit::client().await.database(&name),
        Err(_) if !stage.is_empty() => {
            panic!("BENCH_PULL_STAGE needs BENCH_PULL_DB (one database for both)")
        }
        Err(_) => mongo_schema_testkit::database("bench_pull").await,
    };
    let seeding = Instant::now();
    let (customers, products, orders, reviews, carts) = (
        1_800 * scale,
        200 * scale,
        7_000 * scale,
        500 * scale,
        500 * scale,
    );
    let documents = customers + products + orders + reviews + carts;
    if stage == "pull" {
        let mut stored = 0;
        for name in db.list_collection_names().await.expect("collections") {
            stored += db
                .collection::<Document>(&name)
                .estimated_document_count()
                .await
                .expect("count");
        }
        assert_eq!(stored, documents as u64, "BENCH_PULL_STAGE=pull: the database holds what BENCH_PULL_STAGE=seed wrote at this scale");
    } else {
        seed(&db, (customers, products, orders, reviews, carts)).await;
        println!(
            "seeded {documents} documents in 5 collections in {:.1} s",
            seeding.elapsed().as_secs_f64()
        );
        if stage == "seed" {
            return;
        }
    }
    // the peak of the pull alone: the seeding's vectors are freed, its peak forgotten
    let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    let before = status_kib("VmRSS:");
    let started = Instant::now();
    let pulled = pull(&db, &PullConfig::default()).await.expect("pull");
    let seconds = started.elapsed().as_secs_f64();
    let report = &pulled.report;
    let commands: u64 = report.commands.values().sum();
    for c in &report.collections {
        assert_eq!((c.server_violators, c.local_violators), (0, 0), "{c:?}");
    }
    println!(
        "pull of {documents} documents in 5 collections: {seconds:.1} s, {commands} commands ({:?}), {} gate rounds",
        report.commands, report.gate_rounds
    );
    for (phase, s) in &report.phases {
        println!("  {phase}: {s:.1} s");
    }
    match (reset, before, status_kib("VmHWM:")) {
        (true, Some(before), Some(peak)) => println!(
            "peak resident memory during the pull: {:.1} MiB ({:.1} MiB before it)",
            peak as f64 / 1024.0,
            before as f64 / 1024.0
        ),
        _ => println!("peak resident memory: not readable here (Linux's /proc/self only)"),
    }
}

/// Seeds the shop of the tests at these sizes and a collection of carts.
async fn seed(
    db: &mongodb::Database,
    (customers, products, orders, reviews, carts): (i64, i64, i64, i64, i64),
) {
    shop::seed_sized(db, customers, products, orders, reviews).await;
    let carts_docs: Vec<Document> = (0..carts)
        .map(|i| {
            let mut lines = Document::new();
            for k in 0..(1 + i % 3) {
                lines.insert(format!("sku-{:04}", (i + k) % products), (1 + k) as i32);
            }
            doc! { "_id": ObjectId::new(), "owner": format!("session-{i}"), "lines": lines }
        })
        .collect();
    for chunk in carts_docs.chunks(1000) {
        db.collection::<Document>("carts")
            .insert_many(chunk.to_vec())
            .await
            .expect("carts");
    }
}

/// A `kB` figure of `/proc/self/status` (`VmRSS:`, `VmHWM:`).
fn status_kib(key: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(key))?;
    line[key.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}
