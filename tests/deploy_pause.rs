//! A paused apply (stopped in command monitoring, as by a VM pause or SIGSTOP, not killed):
//! version 1 holds the apply lock and is stopped right before its `collMod`; its lease lapses;
//! version 2 takes the lock and applies; then version 1 resumes and its late `collMod` lands
//! over version 2's validator. Either the holder of version 2 reads again after its last write
//! and writes over it, or the next start-up finds the drift (`plan` reports it, `apply` repairs
//! it). Both end with version 2's validator, asserted.

mod common;

use std::sync::mpsc;
use std::time::Duration;

use common::gate::{Gate, Phase};
use futures_util::TryStreamExt;
use mongo_schema::bson::{doc, Document as BsonDocument};
use mongo_schema::prelude::*;
use mongo_schema::{Action, ApplyReport, Error, VersionStatus, Warning};
use mongodb::Database;
use serde::{Deserialize, Serialize};

mod v1 {
    use super::*;

    #[derive(Document, Serialize, Deserialize)]
    #[collection(name = "products")]
    pub struct Product {
        #[serde(rename = "_id")]
        pub id: String,
        #[schema(max_length = 40)]
        pub name: String,
    }

    pub fn schema() -> Schema {
        Schema::new().model::<Product>().version(1).build().unwrap()
    }
}

mod v2 {
    use super::*;

    #[derive(Document, Serialize, Deserialize)]
    #[collection(name = "products")]
    #[index(keys(price = -1))]
    pub struct Product {
        #[serde(rename = "_id")]
        pub id: String,
        #[schema(max_length = 20)]
        pub name: String,
        pub price: i64,
    }

    pub fn schema() -> Schema {
        Schema::new().model::<Product>().version(2).build().unwrap()
    }
}

/// A fresh database with the release before version 1: another validator.
async fn released_before_v1(prefix: &str) -> Database {
    let db = mongo_schema_testkit::database(prefix).await;
    db.run_command(doc! { "create": "products", "validator": { "name": { "$type": "string" } } })
        .await
        .unwrap();
    db
}

async fn validator(db: &Database) -> BsonDocument {
    let mut cursor = db
        .run_cursor_command(doc! { "listCollections": 1, "filter": { "name": "products" } })
        .await
        .unwrap();
    let entry = cursor.try_next().await.unwrap().expect("products exists");
    entry
        .get_document("options")
        .unwrap()
        .get_document("validator")
        .unwrap()
        .clone()
}

/// Runs `schema.apply` in an instance of its own (a thread with its own runtime and client,
/// like another process), through `gate`.
fn instance(
    uri: String,
    db: String,
    schema: Schema,
    gate: Gate,
) -> mpsc::Receiver<mongo_schema::Result<ApplyReport>> {
    let (done, outcome) = mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let result = runtime.block_on(async {
            let client = gate.connect(&uri).await;
            schema.apply(&client.database(&db)).await
        });
        let _ = done.send(result);
    });
    outcome
}

/// The outcome of an [`instance`], failing the test after `timeout`.
async fn outcome(
    of: mpsc::Receiver<mongo_schema::Result<ApplyReport>>,
    timeout: Duration,
    what: &'static str,
) -> mongo_schema::Result<ApplyReport> {
    tokio::task::spawn_blocking(move || of.recv_timeout(timeout))
        .await
        .unwrap()
        .unwrap_or_else(|_| panic!("{what}: no outcome within {timeout:?}"))
}

/// Whether `warnings` report drift of `products` from version 2, found after this apply's own
/// write (`after_own_write`) or at start-up.
fn drifted_when(warnings: &[Warning], after_own_write: bool) -> bool {
    warnings.iter().any(|w| {
        matches!(w, Warning::Drifted { version: 2, collections, after_own_write: after }
            if collections == &["products"] && *after == after_own_write)
    })
}

fn drifted(warnings: &[Warning]) -> bool {
    drifted_when(warnings, false) || drifted_when(warnings, true)
}

/// Version 1 paused before its `collMod`, holding the lock: returns its gate and outcome.
async fn paused_v1(
    uri: &str,
    db: &Database,
) -> (Gate, mpsc::Receiver<mongo_schema::Result<ApplyReport>>) {
    let gate = Gate::default();
    gate.hold(Phase::Started, "collMod");
    let v1 = instance(
        uri.to_owned(),
        db.name().to_owned(),
        v1::schema(),
        gate.clone(),
    );
    gate.held(Phase::Started, "collMod", Duration::from_secs(30))
        .await;
    (gate, v1)
}

/// Lets the paused version 1 go on and waits until its late `collMod` landed: the validator is
/// version 1's again (`fault` says where it landed).
async fn resume_v1(v1_gate: &Gate, db: &Database, fault: &str) {
    v1_gate.release(Phase::Started, "collMod");
    v1_gate
        .seen(Phase::Succeeded, "collMod", 1, Duration::from_secs(30))
        .await;
    assert_eq!(validator(db).await, v1::Product::validator(), "{fault}");
}

/// The outcome of the resumed version 1 (within 60 s): refused, version 2 being recorded.
async fn v1_finds_v2_recorded(v1: mpsc::Receiver<mongo_schema::Result<ApplyReport>>) {
    match outcome(v1, Duration::from_secs(60), "version 1").await {
        Err(Error::Downgrade {
            recorded: 2,
            applying: 1,
            ..
        }) => {}
        other => panic!("version 1 should find version 2 recorded: {other:?}"),
    }
}

async fn uri() -> String {
    tokio::task::spawn_blocking(mongo_schema_testkit::uri)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_coll_mod_after_the_newer_apply_is_drift_that_the_next_start_up_repairs() {
    let uri = uri().await;
    let db = released_before_v1("pause_drift").await;
    let (v1_gate, v1) = paused_v1(&uri, &db).await;
    // version 2 waits for version 1's lease to lapse, then applies
    let v2 = instance(
        uri.clone(),
        db.name().to_owned(),
        v2::schema(),
        Gate::default(),
    );
    let v2 = outcome(v2, Duration::from_secs(60), "version 2")
        .await
        .expect("version 2 applies once version 1's lease lapsed");
    println!("version 2 (waited {:?}):\n{v2}", v2.waited);
    assert!(v2.waited >= Duration::from_secs(5), "{:?}", v2.waited);
    assert_eq!(validator(&db).await, v2::Product::validator());
    // version 1 resumes: its late collMod lands over version 2's validator
    resume_v1(
        &v1_gate,
        &db,
        "the fault: the paused apply's collMod landed late",
    )
    .await;
    v1_finds_v2_recorded(v1).await;

    // the next start-up of version 2: plan reports the drift, apply repairs it
    let plan = v2::schema().plan(&db).await.unwrap();
    println!("{plan}");
    assert!(plan.version.as_ref().unwrap().is_current(), "{plan}");
    assert!(drifted(&plan.warnings), "{plan}");
    // display-text: the plan's sentence, read by a person
    assert!(plan.to_string().contains("DRIFT"), "{plan}");
    assert!(
        matches!(&plan.actions[..], [Action::UpdateValidator { .. }]),
        "{plan}"
    );
    let repair = v2::schema().apply(&db).await.unwrap();
    println!("{repair}");
    assert!(drifted_when(&repair.warnings, false), "{repair}");
    assert!(matches!(
        &repair.applied[..],
        [a] if matches!(a.action, Action::UpdateValidator { .. })
    ));
    assert_eq!(validator(&db).await, v2::Product::validator());
    let after = v2::schema().plan(&db).await.unwrap();
    assert!(after.is_empty() && !drifted(&after.warnings), "{after}");
    assert_eq!(after.version, Some(VersionStatus::Current { version: 2 }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_newer_holder_reads_again_after_its_last_write_and_writes_over_a_late_coll_mod() {
    let uri = uri().await;
    let db = released_before_v1("pause_reread").await;
    let (v1_gate, v1) = paused_v1(&uri, &db).await;
    // version 2 takes over and is stopped right after its own collMod
    let v2_gate = Gate::default();
    v2_gate.hold(Phase::Succeeded, "collMod");
    let v2 = instance(
        uri.clone(),
        db.name().to_owned(),
        v2::schema(),
        v2_gate.clone(),
    );
    v2_gate
        .held(Phase::Succeeded, "collMod", Duration::from_secs(60))
        .await;
    assert_eq!(validator(&db).await, v2::Product::validator());
    // version 1's late collMod lands after version 2's
    resume_v1(
        &v1_gate,
        &db,
        "the fault: the paused apply's collMod landed after the newer one's",
    )
    .await;
    v2_gate.release(Phase::Succeeded, "collMod");
    let v2 = outcome(v2, Duration::from_secs(60), "version 2")
        .await
        .expect("version 2 completes");
    println!("version 2:\n{v2}");
    assert!(drifted_when(&v2.warnings, true), "{v2}");
    assert_eq!(
        v2_gate.count(Phase::Started, "collMod"),
        2,
        "version 2 wrote its validator again"
    );
    assert_eq!(validator(&db).await, v2::Product::validator());
    v1_finds_v2_recorded(v1).await;
    let plan = v2::schema().plan(&db).await.unwrap();
    assert!(plan.is_empty() && !drifted(&plan.warnings), "{plan}");
    assert!(plan.version.unwrap().is_current());
}
