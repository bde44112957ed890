//! A data migration against the hand-written code it replaces, on a real server (SecantusDB, or
//! `MONGODB_URI`): turning the `customer` reference of 3,000 orders (1,000 customers) into the
//! extended reference's copy `{ _id, name }`.
//!
//! ```text
//! cargo bench --bench migrate
//! BENCH_QUICK=1 cargo bench --bench migrate   # 100 customers, 300 orders (CI keeps it running)
//! ```
//!
//! - ours: `migrate::reference_to_copy(field!(Order, customer))`, run by `apply` of the version that
//!   declares it (the sources read 1,000 at a time, one `update` command per batch with one
//!   statement per customer);
//! - baseline: the loop an operator writes with the driver: read the customers, then one
//!   `updateMany` per customer.
//!
//! Each side runs on a freshly seeded database, three times alternately (once in quick mode);
//! the medians of the time and the round trips the migration itself sends are printed.

use std::time::{Duration, Instant};

use futures_util::TryStreamExt;
use mongo_schema::bson::{doc, Document as BsonDocument};
use mongo_schema::prelude::*;
use mongo_schema_testkit::CommandLog;
use serde::{Deserialize, Serialize};

mod before {
    use mongo_schema::prelude::*;
    use serde::{Deserialize, Serialize};

    #[derive(Document, Serialize, Deserialize, Debug, Clone)]
    #[collection(name = "customers")]
    pub struct Customer {
        #[serde(rename = "_id")]
        pub id: i64,
        pub name: String,
    }

    #[derive(Document, Serialize, Deserialize, Debug, Clone)]
    #[collection(name = "orders")]
    pub struct Order {
        #[serde(rename = "_id")]
        pub id: i64,
        #[reference]
        pub customer: Ref<Customer>,
        pub total: i64,
    }
}

#[derive(Document, Serialize, Deserialize, Debug, Clone)]
#[collection(name = "orders")]
pub struct Order {
    #[serde(rename = "_id")]
    pub id: i64,
    #[extended_ref(to = before::Customer, fields = "name", sync = "transactional")]
    pub customer: OrderCustomer,
    pub total: i64,
}

fn quick() -> bool {
    std::env::var_os("BENCH_QUICK").is_some()
}

async fn seed(db: &mongodb::Database, customers: i64) {
    db.drop().await.unwrap();
    Schema::new()
        .model::<before::Customer>()
        .model::<before::Order>()
        .version(1)
        .build()
        .unwrap()
        .apply(db)
        .await
        .unwrap();
    let people: Vec<before::Customer> = (0..customers)
        .map(|id| before::Customer {
            id,
            name: format!("Customer {id}"),
        })
        .collect();
    before::Customer::collection(db)
        .insert_many(&people)
        .await
        .unwrap();
    let orders: Vec<before::Order> = (0..customers * 3)
        .map(|id| before::Order {
            id,
            customer: Ref::new(id % customers),
            total: id,
        })
        .collect();
    before::Order::collection(db)
        .insert_many(&orders)
        .await
        .unwrap();
}

/// Round trips of the migration's own reads and writes (finds of customers, updates of
/// orders), without apply's observation of the schema.
fn round_trips(log: &CommandLog) -> usize {
    log.commands()
        .iter()
        .filter(|c| {
            let on = |key: &str, coll: &str| c.command.get_str(key) == Ok(coll);
            (c.name == "find" && on("find", "customers"))
                || (c.name == "getMore" && c.command.get_str("collection") == Ok("customers"))
                || (c.name == "update" && on("update", "orders"))
        })
        .count()
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

#[tokio::main]
async fn main() {
    let customers: i64 = if quick() { 100 } else { 1000 };
    let repetitions = if quick() { 1 } else { 3 };
    let (client, log) =
        mongo_schema_testkit::monitored_client_at(&mongo_schema_testkit::uri()).await;
    let db = client.database("mongo_schema_bench_migrate");
    let schema = Schema::new()
        .model::<before::Customer>()
        .model::<Order>()
        .version(2)
        .migration(
            2,
            "customer copy",
            mongo_schema::migrate::reference_to_copy(mongo_schema::field!(Order, customer)),
        )
        .build()
        .unwrap();
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    let (mut ours_trips, mut theirs_trips) = (0, 0);
    for _ in 0..repetitions {
        seed(&db, customers).await;
        log.clear();
        let start = Instant::now();
        let report = schema.apply(&db).await.unwrap();
        ours.push(start.elapsed());
        ours_trips = round_trips(&log);
        assert_eq!(report.migrations[0].counts.changed, (customers * 3) as u64);

        seed(&db, customers).await;
        log.clear();
        let start = Instant::now();
        let people: Vec<BsonDocument> = db
            .collection::<BsonDocument>("customers")
            .find(doc! {})
            .projection(doc! { "name": 1 })
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        let orders = db.collection::<BsonDocument>("orders");
        for person in &people {
            let id = person.get("_id").unwrap().clone();
            orders
                .update_many(
                    doc! { "customer": id.clone() },
                    doc! { "$set": { "customer": { "_id": id, "name": person.get_str("name").unwrap() } } },
                )
                // (v1's validator still says `customer` is an id: the operator's loop bypasses
                // it, where apply sets v2's at level moderate first)
                .bypass_document_validation(true)
                .await
                .unwrap();
        }
        theirs.push(start.elapsed());
        theirs_trips = round_trips(&log);
        let copied = orders
            .count_documents(doc! { "customer.name": { "$exists": true } })
            .await
            .unwrap();
        assert_eq!(copied, (customers * 3) as u64);
    }
    let (a, b) = (median(ours), median(theirs));
    println!(
        "{:<72} {:>10} {:>10}   ratio   round trips (ours / baseline)",
        "", "ours", "baseline"
    );
    println!(
        "{:<72} {:>7.1} ms {:>7.1} ms   {:.2}    {} / {}",
        format!(
            "reference_to_copy, {} orders of {customers} customers (apply) vs a loop",
            customers * 3
        ),
        a.as_secs_f64() * 1e3,
        b.as_secs_f64() * 1e3,
        a.as_secs_f64() / b.as_secs_f64(),
        ours_trips,
        theirs_trips
    );
    db.drop().await.unwrap();
}
