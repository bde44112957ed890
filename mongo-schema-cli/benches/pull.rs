//! `cargo bench -p mongo-schema-cli --bench pull`: `pull` of 100,000 documents in 5 collections
//! (the shop of the tests, larger, and a fifth collection of carts), on the test server. Prints
//! the wall time per stage, the commands sent and the gate's rounds. `BENCH_QUICK=1`: 10,000.

#[allow(dead_code)] // the tests use all of it
#[path = "../tests/common/shop.rs"]
mod shop;

use std::time::Instant;

use mongo_schema_cli::pull::{pull, PullConfig};
use mongodb::bson::{doc, oid::ObjectId, Document};

#[tokio::main]
async fn main() {
    let quick = std::env::var("BENCH_QUICK").is_ok_and(|v| !v.is_empty() && v != "0");
    let scale = if quick { 1 } else { 10 };
    let db = mongo_schema_testkit::database("bench_pull").await;
    let seeding = Instant::now();
    let (customers, products, orders, reviews, carts) = (
        1_800 * scale,
        200 * scale,
        7_000 * scale,
        500 * scale,
        500 * scale,
    );
    shop::seed_sized(&db, customers, products, orders, reviews).await;
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
    let documents = customers + products + orders + reviews + carts;
    println!(
        "seeded {documents} documents in 5 collections in {:.1} s",
        seeding.elapsed().as_secs_f64()
    );
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
}
