//! Migrations that fail safe: a failing step fails its version (recorded `failed`, so the older
//! version rolls back without `allow_downgrade`); dedupe groups exactly as the unique index keys
//! (sparse, partial, a missing key and `null` as one); and a unique index whose build meets
//! duplicates written meanwhile by an older instance makes the dedupe step run again, or, past
//! its bounded tries, fails the version with the step pending again.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use mongo_schema::bson::{doc, Bson, Document as BsonDocument};
use mongo_schema::migrate::{self, Keep, MIGRATIONS_COLLECTION};
use mongo_schema::{field, Error, META_COLLECTION};

/// An `Account` (an email, an optional code, whether active) in module `$version`, under the
/// unique index `#[index(...)]` declares if any, beside the module's other `$item`s.
macro_rules! account {
    (@ $version:ident [$($index:tt)*] $($item:item)*) => {
        mod $version {
            use mongo_schema::prelude::*;
            use serde::{Deserialize, Serialize};

            #[derive(Document, Serialize, Deserialize, Debug, Clone)]
            #[collection(name = "accounts")]
            $($index)*
            pub struct Account {
                #[serde(rename = "_id")]
                pub id: i64,
                pub email: String,
                #[serde(default, skip_serializing_if = "Option::is_none")]
                pub code: Option<String>,
                pub active: bool,
            }

            $($item)*
        }
    };
    ($version:ident, #[$($index:tt)*]) => {
        account!(@ $version [#[$($index)*]]);
    };
    ($version:ident $(, $item:item)*) => {
        account!(@ $version [] $($item)*);
    };
}

// Version 1: accounts with an optional code and an email, no unique index.
account!(
    v1,
    pub fn schema() -> Schema {
        Schema::new().model::<Account>().version(1).build().unwrap()
    }
);

// Version 2 with a unique email.
account!(unique_email, #[index(keys(email = 1), unique)]);
// Version 2 with a unique, sparse code.
account!(sparse_code, #[index(keys(code = 1), unique, sparse)]);
// Version 2 with a unique code that is not sparse: a missing code and `null` are one key.
account!(dense_code, #[index(keys(code = 1), unique)]);
// Version 2 with an email unique among active accounts only.
account!(active_email, #[index(keys(email = 1), unique, partial = "{\"active\": true}")]);

/// Version 3: one account per email *within a tenant*.
mod tenant_email {
    use mongo_schema::prelude::*;
    use serde::{Deserialize, Serialize};

    #[derive(Document, Serialize, Deserialize, Debug, Clone)]
    #[collection(name = "accounts")]
    #[index(keys(tenant = 1, email = 1), unique)]
    pub struct Account {
        #[serde(rename = "_id")]
        pub id: i64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub tenant: Option<String>,
        pub email: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub code: Option<String>,
        pub active: bool,
    }
}

/// Version 2 of `T`'s schema with the one migration `step`, named `name`.
fn version_2<T: mongo_schema::Document>(
    name: &str,
    step: impl Into<mongo_schema::migrate::Step>,
) -> mongo_schema::Schema {
    mongo_schema::Schema::new()
        .model::<T>()
        .version(2)
        .migration(2, name, step)
        .build()
        .unwrap()
}

fn account(id: i64, email: &str, code: Option<Option<&str>>, active: bool) -> BsonDocument {
    let mut account = doc! { "_id": id, "email": email, "active": active };
    match code {
        Some(Some(code)) => {
            account.insert("code", code);
        }
        Some(None) => {
            account.insert("code", Bson::Null);
        }
        None => {} // no code field at all
    }
    account
}

async fn seeded(prefix: &str, accounts: Vec<BsonDocument>) -> mongodb::Database {
    let db = mongo_schema_testkit::database(prefix).await;
    v1::schema().apply(&db).await.unwrap();
    if !accounts.is_empty() {
        db.collection::<BsonDocument>("accounts")
            .insert_many(accounts)
            .await
            .unwrap();
    }
    db
}

async fn ids(db: &mongodb::Database, collection: &str) -> Vec<i64> {
    common::all(
        db.collection::<BsonDocument>(collection)
            .find(doc! {})
            .sort(doc! { "_id": 1 }),
    )
    .await
    .iter()
    .map(|d| d.get_i64("_id").unwrap())
    .collect()
}

async fn meta(db: &mongodb::Database) -> BsonDocument {
    db.collection::<BsonDocument>(META_COLLECTION)
        .find_one(doc! { "_id": "schema" })
        .await
        .unwrap()
        .expect("a version record")
}

async fn step_record(db: &mongodb::Database) -> BsonDocument {
    db.collection::<BsonDocument>(MIGRATIONS_COLLECTION)
        .find_one(doc! {})
        .await
        .unwrap()
        .expect("a step record")
}

#[tokio::test]
async fn a_failing_step_fails_its_version_and_the_older_version_rolls_back() {
    let db = seeded("safe_failed_step", vec![account(1, "a@x", None, true)]).await;
    let v2 = version_2::<unique_email::Account>(
        "always fails",
        migrate::custom::<unique_email::Account>("refuses", |_cx| {
            Box::pin(async { Err(Error::other("this step always fails")) })
        }),
    );
    let failed = v2.apply(&db).await.unwrap_err();
    println!("version 2: {failed}");
    assert!(matches!(failed, Error::Migration { .. }), "{failed:?}");
    let record = meta(&db).await;
    assert_eq!(record.get_i64("version"), Ok(2), "{record}");
    assert_eq!(record.get_str("state"), Ok("failed"), "{record}");
    assert!(
        record.get_str("error").unwrap().contains("always fails"),
        "{record}"
    );
    assert!(!record.contains_key("locked_by"), "the lock is released");
    assert_eq!(step_record(&db).await.get_str("state"), Ok("failed"));

    // the previous binary starts again: it rolls back, no `allow_downgrade` needed
    let rollback = v1::schema().apply(&db).await.unwrap();
    println!("version 1 after the failed 2:\n{rollback}");
    assert!(common::rolled_back(&rollback, 2, 1), "{rollback}");
    let record = meta(&db).await;
    assert_eq!(record.get_i64("version"), Ok(1));
    assert_eq!(record.get_str("state"), Ok("applied"));
}

#[tokio::test]
async fn a_sparse_unique_index_keeps_every_document_without_the_key() {
    let db = seeded(
        "safe_sparse",
        vec![
            account(1, "a@x", None, true),
            account(2, "b@x", None, true),
            account(3, "c@x", None, true),
            account(4, "d@x", Some(Some("K")), true),
            account(5, "e@x", Some(Some("K")), true),
            account(6, "f@x", Some(Some("L")), true),
        ],
    )
    .await;
    let v2 = version_2::<sparse_code::Account>(
        "one account per code",
        migrate::dedupe(field!(sparse_code::Account, code), Keep::Oldest),
    );
    let plan = v2.plan(&db).await.unwrap();
    println!("{plan}");
    let report = v2.apply(&db).await.unwrap();
    println!("{report}");
    assert_eq!(
        ids(&db, "accounts").await,
        [1, 2, 3, 4, 6],
        "the documents without a code stay: the sparse index holds none of them"
    );
    assert_eq!(ids(&db, "accounts_dedupe_2").await, [5]);
    assert_eq!(report.migrations[0].counts.changed, 1, "{report}");
}

#[tokio::test]
async fn a_missing_key_and_null_are_one_group() {
    let db = seeded(
        "safe_null",
        vec![
            account(1, "a@x", None, true),
            account(2, "b@x", Some(None), true),
            account(3, "c@x", Some(Some("K")), true),
            account(4, "d@x", Some(None), true),
        ],
    )
    .await;
    let v2 = version_2::<dense_code::Account>(
        "one account per code",
        migrate::dedupe(field!(dense_code::Account, code), Keep::Oldest),
    );
    // the unique index keys a missing code and `null` alike: one group, the oldest kept
    let report = v2.apply(&db).await.unwrap();
    println!("{report}");
    assert_eq!(ids(&db, "accounts").await, [1, 3]);
    assert_eq!(ids(&db, "accounts_dedupe_2").await, [2, 4]);
}

#[tokio::test]
async fn a_partial_unique_index_dedupes_only_the_documents_it_holds() {
    let db = seeded(
        "safe_partial",
        vec![
            account(1, "a@x", None, false),
            account(2, "a@x", None, false),
            account(3, "a@x", None, true),
            account(4, "a@x", None, true),
        ],
    )
    .await;
    let v2 = version_2::<active_email::Account>(
        "one active account per email",
        migrate::dedupe(field!(active_email::Account, email), Keep::Newest),
    );
    let report = v2.apply(&db).await.unwrap();
    println!("{report}");
    assert_eq!(ids(&db, "accounts").await, [1, 2, 4]);
}

/// A client whose `createIndexes` commands building a unique index are each held, the first
/// `sabotaged` of them, while the test writes a duplicate through another client (an instance
/// of version 1 inserting during the build); the receiver gets a message per held command, and
/// the command goes on once the test replies.
async fn sabotaging_client(
    sabotaged: usize,
) -> (
    mongodb::Client,
    mpsc::Receiver<()>,
    mpsc::Sender<()>,
    Arc<AtomicUsize>,
) {
    use mongodb::event::{command::CommandEvent, EventHandler};
    let uri = tokio::task::spawn_blocking(mongo_schema_testkit::uri)
        .await
        .unwrap();
    let mut options = mongodb::options::ClientOptions::parse(&uri).await.unwrap();
    let (held_tx, held_rx) = mpsc::channel::<()>();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let (held_tx, go_rx) = (Mutex::new(held_tx), Mutex::new(go_rx));
    let builds = Arc::new(AtomicUsize::new(0));
    let seen = builds.clone();
    options.command_event_handler = Some(EventHandler::callback(move |event| {
        let CommandEvent::Started(started) = event else {
            return;
        };
        let unique = started.command_name == "createIndexes"
            && started.command.get_array("indexes").is_ok_and(|indexes| {
                indexes.iter().any(|i| {
                    i.as_document()
                        .is_some_and(|i| i.get_bool("unique") == Ok(true))
                })
            });
        if unique && seen.fetch_add(1, Ordering::SeqCst) < sabotaged {
            let _ = held_tx.lock().unwrap().send(());
            let _ = go_rx.lock().unwrap().recv_timeout(Duration::from_secs(30));
        }
    }));
    (
        mongodb::Client::with_options(options).unwrap(),
        held_rx,
        go_tx,
        builds,
    )
}

/// Writes a duplicate email each time a unique index build is held.
fn duplicate_at_each_build(
    db: mongodb::Database,
    held: mpsc::Receiver<()>,
    go: mpsc::Sender<()>,
) -> tokio::task::JoinHandle<usize> {
    tokio::spawn(async move {
        let held = Arc::new(Mutex::new(held));
        let mut written = 0;
        loop {
            let waiting = held.clone();
            let got = tokio::task::spawn_blocking(move || {
                waiting
                    .lock()
                    .unwrap()
                    .recv_timeout(Duration::from_secs(60))
            })
            .await
            .unwrap();
            if got.is_err() {
                return written;
            }
            written += 1;
            // a version-1 instance inserts an account whose email already exists
            db.collection::<BsonDocument>("accounts")
                .insert_one(account(1000 + written as i64, "a@x", None, true))
                .await
                .unwrap();
            go.send(()).unwrap();
        }
    })
}

/// `schema` applied to `db` through `client` (the sabotaging one), failing the test unless
/// the apply ends within 60 s.
async fn apply_through(
    client: &mongodb::Client,
    db: &mongodb::Database,
    schema: &mongo_schema::Schema,
) -> Result<mongo_schema::ApplyReport, Error> {
    tokio::time::timeout(
        Duration::from_secs(60),
        schema.apply(&client.database(db.name())),
    )
    .await
    .expect("the apply ends")
}

fn dedupe_v2() -> mongo_schema::Schema {
    version_2::<unique_email::Account>(
        "one account per email",
        migrate::dedupe(field!(unique_email::Account, email), Keep::Oldest),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicate_written_during_the_index_build_is_deduped_again_in_the_same_apply() {
    let db = seeded(
        "safe_live",
        vec![account(1, "a@x", None, true), account(2, "a@x", None, true)],
    )
    .await;
    let (client, held, go, builds) = sabotaging_client(1).await;
    let writer = duplicate_at_each_build(db.clone(), held, go);
    let report = apply_through(&client, &db, &dedupe_v2()).await.unwrap();
    println!("{report}");
    drop(client);
    let written = tokio::time::timeout(Duration::from_secs(90), writer)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        written, 1,
        "one duplicate was written during the first build"
    );
    assert_eq!(
        builds.load(Ordering::SeqCst),
        2,
        "the index was built twice"
    );
    assert!(
        // display-text: the report's sentence, read by a person
        report.to_string().contains("ran again"),
        "the report says the step ran again: {report}"
    );
    assert_eq!(ids(&db, "accounts").await, [1]);
    assert_eq!(ids(&db, "accounts_dedupe_2").await, [2, 1001]);
    assert_eq!(meta(&db).await.get_str("state"), Ok("applied"));
    assert_eq!(step_record(&db).await.get_str("state"), Ok("done"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicates_at_every_build_fail_the_version_with_the_dedupe_pending_again() {
    let db = seeded(
        "safe_live_fail",
        vec![account(1, "a@x", None, true), account(2, "a@x", None, true)],
    )
    .await;
    let (client, held, go, builds) = sabotaging_client(usize::MAX).await;
    let writer = duplicate_at_each_build(db.clone(), held, go);
    let failed = apply_through(&client, &db, &dedupe_v2()).await.unwrap_err();
    println!("version 2: {failed}");
    drop(client);
    assert_eq!(failed.code(), Some(11000), "{failed}");
    assert_eq!(builds.load(Ordering::SeqCst), 4, "one build and three more");
    let record = meta(&db).await;
    assert_eq!(record.get_str("state"), Ok("failed"), "{record}");
    let step = step_record(&db).await;
    assert_eq!(
        step.get_str("state"),
        Ok("failed"),
        "the dedupe step is pending again: {step}"
    );
    assert!(
        step.get_str("error")
            .unwrap()
            .contains("still met duplicates"),
        "{step}"
    );
    let _ = tokio::time::timeout(Duration::from_secs(90), writer).await;
    // once the older instances are gone, the next apply runs the dedupe again and builds
    let report = dedupe_v2().apply(&db).await.unwrap();
    println!("{report}");
    assert_eq!(ids(&db, "accounts").await, [1]);
    assert_eq!(meta(&db).await.get_str("state"), Ok("applied"));
}

#[tokio::test]
async fn next_batch_walks_every_id_type() {
    let db = seeded("safe_next_batch", Vec::new()).await;
    // ids of several types, as other tools write them
    let mut accounts = Vec::new();
    for i in 0..30_i64 {
        let id = match i % 3 {
            0 => Bson::Int64(i),
            1 => Bson::String(format!("s{i:02}")),
            _ => Bson::ObjectId(mongo_schema::bson::oid::ObjectId::new()),
        };
        accounts.push(doc! { "_id": id, "email": format!("{i}@x"), "active": true });
    }
    db.collection::<BsonDocument>("accounts")
        .insert_many(accounts)
        .bypass_document_validation(true)
        .await
        .unwrap();
    let seen = Arc::new(AtomicUsize::new(0));
    let step = {
        let seen = seen.clone();
        migrate::custom::<v1::Account>("count every account, 4 at a time", move |cx| {
            let seen = seen.clone();
            Box::pin(async move {
                loop {
                    let batch = cx.next_batch("accounts", doc! {}, 4).await?;
                    let Some(last) = batch.last().and_then(|a| a.get("_id")).cloned() else {
                        break;
                    };
                    seen.fetch_add(batch.len(), Ordering::SeqCst);
                    cx.save(last, migrate::StepCounts::new(batch.len() as u64, 0))
                        .await?;
                }
                Ok(cx.counts())
            })
        })
    };
    let v2 = version_2::<v1::Account>("count", step);
    let report = v2
        .apply(&db)
        .on_violations(mongo_schema::OnViolations::Moderate)
        .await
        .unwrap();
    println!("{report}");
    assert_eq!(
        seen.load(Ordering::SeqCst),
        30,
        "numbers, strings and ObjectIds"
    );
    assert_eq!(report.migrations[0].counts.matched, 30);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_that_loses_applys_lock_stops_before_writing_and_resumes_not_failed() {
    let db = seeded("safe_lock_lost", vec![account(1, "a@x", None, true)]).await;
    let held_at_first = Arc::new(Mutex::new(None));
    let runs = Arc::new(AtomicUsize::new(0));
    let resumed_from = Arc::new(Mutex::new(None));
    let (seen, counted, resumed) = (held_at_first.clone(), runs.clone(), resumed_from.clone());
    let v2 = version_2::<unique_email::Account>(
        "loses the lock",
        migrate::custom::<unique_email::Account>("loses the lock", move |cx| {
            let (seen, counted, resumed) = (seen.clone(), counted.clone(), resumed.clone());
            Box::pin(async move {
                if counted.fetch_add(1, Ordering::SeqCst) > 0 {
                    // the next pass claimed the lock again: resume from the checkpoint
                    *resumed.lock().unwrap() = cx.checkpoint().cloned();
                    cx.ensure_lock()?;
                    cx.db()
                        .collection::<BsonDocument>("accounts")
                        .update_many(doc! {}, doc! { "$set": { "written": true } })
                        .await?;
                    return Ok(migrate::StepCounts::new(1, 1));
                }
                // the positive control: the step starts under the lock
                *seen.lock().unwrap() = Some(cx.ensure_lock().is_ok());
                cx.save(Bson::Int64(1), migrate::StepCounts::default())
                    .await?;
                // another instance takes the lock over (as after a long pause of this one,
                // an election, a step that blocked past the lease)
                cx.db()
                    .collection::<BsonDocument>(META_COLLECTION)
                    .update_one(
                        doc! { "_id": "schema" },
                        doc! { "$set": {
                            "locked_by": "another instance",
                            "lock_expires": mongo_schema::bson::DateTime::now(),
                        } },
                    )
                    .await?;
                // apply renews its lease on its own task and finds it gone
                let started = std::time::Instant::now();
                while cx.ensure_lock().is_ok() {
                    assert!(
                        started.elapsed() < Duration::from_secs(30),
                        "the lost lock is never noticed"
                    );
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                cx.ensure_lock()?;
                unreachable!("the step stops at the check above")
            })
        }),
    );
    let report = tokio::time::timeout(Duration::from_secs(60), v2.apply(&db))
        .await
        .expect("apply returns")
        .expect("a lost lease is transient: the next pass claims and resumes");
    println!("version 2:\n{report}");
    assert_eq!(*held_at_first.lock().unwrap(), Some(true));
    assert_eq!(runs.load(Ordering::SeqCst), 2, "run once, resumed once");
    assert_eq!(*resumed_from.lock().unwrap(), Some(Bson::Int64(1)));
    assert!(report.retried >= 1, "{report}");
    let record = meta(&db).await;
    assert_eq!(record.get_str("state").unwrap(), "applied", "{record}");
    // what was written was written under the lock, once
    assert_eq!(
        db.collection::<BsonDocument>("accounts")
            .count_documents(doc! { "written": true })
            .await
            .unwrap(),
        1
    );
    // the version was never recorded failed: the older release is refused, not rolled back to
    let older = v1::schema().apply(&db).await.unwrap_err();
    assert!(
        matches!(
            older,
            Error::Downgrade {
                recorded: 2,
                applying: 1,
                ..
            }
        ),
        "{older:#?}"
    );
}

/// A step that blocks its thread for longer than the apply lock's lease (10 s): the lease is
/// renewed on a task of its own, so it never lapses, nothing is retried, and the version is
/// recorded applied.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_that_blocks_its_thread_past_the_lease_keeps_the_lock() {
    let db = seeded("safe_blocking_step", vec![account(1, "a@x", None, true)]).await;
    let held_after = Arc::new(Mutex::new(None));
    let seen = held_after.clone();
    let v2 = version_2::<unique_email::Account>(
        "blocks",
        migrate::custom::<unique_email::Account>("blocks its thread for 12 s", move |cx| {
            let seen = seen.clone();
            Box::pin(async move {
                std::thread::sleep(Duration::from_secs(12));
                *seen.lock().unwrap() = Some(cx.ensure_lock().is_ok());
                cx.ensure_lock()?;
                Ok(migrate::StepCounts::default())
            })
        }),
    );
    let report = tokio::time::timeout(Duration::from_secs(60), v2.apply(&db))
        .await
        .expect("apply returns")
        .unwrap();
    println!("{report}");
    assert_eq!(*held_after.lock().unwrap(), Some(true), "the lease held");
    assert_eq!(report.retried, 0, "{report}");
    let record = meta(&db).await;
    assert_eq!(record.get_str("state").unwrap(), "applied", "{record}");
}

/// After the unique rule changed from `email` to `(tenant, email)`, duplicates met by the new
/// index's build rerun only the dedupe of the version being applied, on the index's keys: the
/// older `dedupe(["email"])` would delete an account that is valid under the newer rule.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dedupe_rerun_is_the_one_of_the_failing_index_keys() {
    let db = seeded(
        "safe_rerun_keys",
        vec![
            doc! { "_id": 1_i64, "tenant": "t1", "email": "a@x", "active": true },
            doc! { "_id": 2_i64, "tenant": "t2", "email": "b@x", "active": true },
        ],
    )
    .await;
    let v3 = mongo_schema::Schema::new()
        .model::<tenant_email::Account>()
        .version(3)
        .migration(
            2,
            "one account per email",
            migrate::dedupe(field!(tenant_email::Account, email), Keep::Oldest),
        )
        .migration(
            3,
            "one account per email and tenant",
            migrate::dedupe(
                (
                    field!(tenant_email::Account, tenant),
                    field!(tenant_email::Account, email),
                ),
                Keep::Oldest,
            ),
        )
        .build()
        .unwrap();
    let (client, held, go, builds) = sabotaging_client(1).await;
    let writer = {
        let db = db.clone();
        tokio::spawn(async move {
            let got =
                tokio::task::spawn_blocking(move || held.recv_timeout(Duration::from_secs(60)))
                    .await
                    .unwrap();
            assert!(got.is_ok(), "the unique index build was held");
            let accounts = db.collection::<BsonDocument>("accounts");
            // valid under the (tenant, email) rule, a duplicate under the old email rule
            accounts
                .insert_one(doc! { "_id": 3_i64, "tenant": "t2", "email": "a@x", "active": true })
                .await
                .unwrap();
            // a duplicate under the new rule, written by an instance of an older version
            accounts
                .insert_one(doc! { "_id": 4_i64, "tenant": "t1", "email": "a@x", "active": true })
                .await
                .unwrap();
            go.send(()).unwrap();
        })
    };
    let report = apply_through(&client, &db, &v3).await.unwrap();
    println!("{report}");
    drop(client);
    tokio::time::timeout(Duration::from_secs(60), writer)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        builds.load(Ordering::SeqCst),
        2,
        "the index was built twice"
    );
    let reran: Vec<&str> = report.migrations.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(
        reran,
        [
            "one account per email",
            "one account per email and tenant",
            "one account per email and tenant"
        ],
        "{report}"
    );
    // the t2 account with another tenant's email is kept; the t1 duplicate is set aside
    assert_eq!(ids(&db, "accounts").await, [1, 2, 3]);
    assert_eq!(meta(&db).await.get_str("state"), Ok("applied"));
}
