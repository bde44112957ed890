//! Evolving a live schema (the operator's trial of the issue, replayed): a `customers`/`orders`
//! service taken through three versions on one database whose data survives every deploy.
//!
//! - v1: 1,000 customers (20 names longer than v2 allows, 5 emails used twice) and 3,000 orders
//!   referencing them.
//! - v2: a required `tier`, `max_length = 40` on names and a unique email, with `set_default`,
//!   `truncate` and `dedupe` steps: one apply ends strict with no violator and the index built,
//!   the changelog records three steps, a second apply runs none, and a v1 instance with
//!   `on_newer(Continue)` keeps serving.
//! - v3: the order's `customer` reference becomes an extended reference filled by
//!   `reference_to_copy`: every order has its copy, reconcile finds nothing to repair.
//!
//! Also: a step that fails is recorded `failed` and resumes from its checkpoint; an apply killed
//! in the middle of a step resumes it.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mongo_schema::bson::{doc, Bson, Document as BsonDocument};
use mongo_schema::migrate::{self, Keep, MigrationState, StepCounts, MIGRATIONS_COLLECTION};
use mongo_schema::{field, Document as _, Error, OnNewer, ResultExt as _, VersionStatus, Warning};

/// The `Order` of versions 1 and 2: a plain reference to the module's own `Customer`.
macro_rules! referencing_order {
    () => {
        #[derive(Document, Serialize, Deserialize, Debug, Clone)]
        #[collection(name = "orders")]
        pub struct Order {
            #[serde(rename = "_id")]
            pub id: i64,
            #[reference]
            pub customer: Ref<Customer>,
            pub total: i64,
        }
    };
}

mod v1 {
    use mongo_schema::prelude::*;
    use serde::{Deserialize, Serialize};

    #[derive(Document, Serialize, Deserialize, Debug, Clone)]
    #[collection(name = "customers")]
    pub struct Customer {
        #[serde(rename = "_id")]
        pub id: i64,
        pub name: String,
        pub email: String,
    }

    referencing_order!();

    pub fn schema() -> Schema {
        Schema::new()
            .model::<Customer>()
            .model::<Order>()
            .version(1)
            .build()
            .unwrap()
    }
}

mod v2 {
    use mongo_schema::migrate::{self, Keep};
    use mongo_schema::prelude::*;
    use mongo_schema::query::Path;
    use mongo_schema::SchemaBuilder;
    use serde::{Deserialize, Serialize};

    #[derive(Document, Serialize, Deserialize, Debug, Clone)]
    #[collection(name = "customers")]
    #[index(keys(email = 1), unique)]
    pub struct Customer {
        #[serde(rename = "_id")]
        pub id: i64,
        #[schema(max_length = 40)]
        pub name: String,
        pub email: String,
        pub tier: String,
    }

    referencing_order!();

    /// v2's steps (v3 keeps declaring them: they are recorded done and never run again).
    /// The fields are typed paths of the version's own model (`field!(Customer, tier)`).
    pub fn steps<C: Document + Send + Sync + 'static>(
        builder: SchemaBuilder,
        tier: Path<C, String>,
        name: Path<C, String>,
        email: Path<C, String>,
    ) -> SchemaBuilder {
        builder
            .migration(2, "backfill tier", migrate::set_default(tier, "standard"))
            .migration(2, "shorten names", migrate::truncate(name, 40))
            .migration(
                2,
                "one account per email",
                migrate::dedupe(email, Keep::Oldest),
            )
    }

    pub fn schema() -> Schema {
        steps(
            Schema::new()
                .model::<Customer>()
                .model::<Order>()
                .version(2),
            field!(Customer, tier),
            field!(Customer, name),
            field!(Customer, email),
        )
        .build()
        .unwrap()
    }
}

mod v3 {
    use mongo_schema::migrate::{self, Keep};
    use mongo_schema::prelude::*;
    use serde::{Deserialize, Serialize};

    pub use super::v2::Customer;

    #[derive(Document, Serialize, Deserialize, Debug, Clone)]
    #[collection(name = "orders")]
    pub struct Order {
        #[serde(rename = "_id")]
        pub id: i64,
        #[extended_ref(to = Customer, fields = "name", sync = "transactional")]
        pub customer: OrderCustomer,
        pub total: i64,
    }

    /// As the guide's "Evolving a live schema" (`docs/guide/deploying.md`) shows it.
    #[rustfmt::skip]
    #[allow(clippy::needless_question_mark)] // the guide's builder ends with `.build()?`
    pub fn declared() -> Result<Schema, mongo_schema::SchemaError> {
        Ok(
Schema::new()
    .model::<Customer>()
    .model::<Order>()
    .version(3)
    .migration(2, "backfill tier", migrate::set_default(field!(Customer, tier), "standard"))
    .migration(2, "shorten names", migrate::truncate(field!(Customer, name), 40))
    .migration(2, "one account per email", migrate::dedupe(field!(Customer, email), Keep::Oldest))
    .migration(3, "customer copy", migrate::reference_to_copy(field!(Order, customer)))
    .build()?
        )
    }

    pub fn schema() -> Schema {
        declared().unwrap()
    }
}

/// v1's data: customers 0..1000 (names of 10, 30 and one in 50 of 60 characters; customers
/// 995..1000 reuse the email of customers 0..5) and 3,000 orders of customers 0..995.
async fn seed_v1(db: &mongodb::Database) {
    let customers: Vec<v1::Customer> = (0..1000)
        .map(|i| v1::Customer {
            id: i,
            name: if i % 50 == 7 {
                format!("{:x<60}", format!("Customer {i} "))
            } else {
                format!("Customer {i}")
            },
            email: if i >= 995 {
                format!("c{}@example.com", i - 995)
            } else {
                format!("c{i}@example.com")
            },
        })
        .collect();
    v1::Customer::collection(db)
        .insert_many(&customers)
        .await
        .unwrap();
    let orders: Vec<v1::Order> = (0..3000)
        .map(|i| v1::Order {
            id: i,
            customer: mongo_schema::Ref::new(i % 995),
            total: i * 10,
        })
        .collect();
    v1::Order::collection(db)
        .insert_many(&orders)
        .await
        .unwrap();
}

/// A fresh database at v1 with v1's data.
async fn seeded_v1(name: &str) -> mongodb::Database {
    let db = mongo_schema_testkit::database(name).await;
    v1::schema().apply(&db).await.unwrap();
    seed_v1(&db).await;
    db
}

async fn count(db: &mongodb::Database, collection: &str, filter: BsonDocument) -> u64 {
    db.collection::<BsonDocument>(collection)
        .count_documents(filter)
        .await
        .unwrap()
}

/// The collection's options as `listCollections` reports them.
async fn options(db: &mongodb::Database, collection: &str) -> BsonDocument {
    let batch = common::first_batch(
        db,
        doc! { "listCollections": 1, "filter": { "name": collection } },
    )
    .await;
    batch[0].get_document("options").unwrap().clone()
}

/// The index `email_1` of `customers`, as `listIndexes` reports it.
async fn email_index(db: &mongodb::Database) -> BsonDocument {
    let batch = common::first_batch(db, doc! { "listIndexes": "customers" }).await;
    batch
        .iter()
        .find(|i| i.get_str("name").ok() == Some("email_1"))
        .unwrap_or_else(|| panic!("no index `email_1`: {batch:?}"))
        .clone()
}

/// The stored order `id`.
async fn stored_order(db: &mongodb::Database, id: i64) -> BsonDocument {
    db.collection::<BsonDocument>("orders")
        .find_one(doc! { "_id": id })
        .await
        .unwrap()
        .expect("the order")
}

async fn records(db: &mongodb::Database) -> Vec<BsonDocument> {
    common::all(
        db.collection::<BsonDocument>(MIGRATIONS_COLLECTION)
            .find(doc! {})
            .sort(doc! { "version": 1, "started": 1 }),
    )
    .await
}

#[tokio::test]
async fn a_service_through_three_versions_with_its_data_steps() {
    let db = seeded_v1("migrations_trial").await;

    // v2: plan names the steps and what each would touch
    let v2 = v2::schema();
    let plan = v2.plan(&db).await.unwrap();
    let pending: Vec<(&str, u64)> = plan
        .migrations
        .iter()
        .map(|s| (s.name.as_str(), s.documents))
        .collect();
    assert_eq!(
        pending,
        [
            ("backfill tier", 1000),
            ("shorten names", 20),
            ("one account per email", 5)
        ],
        "{plan}"
    );
    let report = v2.apply(&db).await.unwrap();
    let text = report.to_string();
    let ran: Vec<(&str, StepCounts)> = report
        .migrations
        .iter()
        .map(|r| (r.name.as_str(), r.counts))
        .collect();
    assert_eq!(
        ran,
        [
            ("backfill tier", StepCounts::new(1000, 1000)),
            ("shorten names", StepCounts::new(20, 20)),
            ("one account per email", StepCounts::new(5, 5)),
        ],
        "{text}"
    );
    assert!(
        text.contains("set at level moderate while the migration steps ran"),
        "{text}"
    );
    assert!(text.contains("built after the migration steps"), "{text}");
    // strict at the end, with no violator, and the unique index built
    let customers = options(&db, "customers").await;
    assert_eq!(
        customers.get_str("validationLevel").ok(),
        Some("strict"),
        "{customers}"
    );
    let validator = customers.get_document("validator").unwrap().clone();
    assert_eq!(
        count(&db, "customers", doc! { "$nor": [validator] }).await,
        0
    );
    // the validator is live: a name over v2's 40 characters is refused (code 121)
    let refused = db
        .collection::<BsonDocument>("customers")
        .insert_one(doc! {
            "_id": 5000_i64,
            "name": "x".repeat(41),
            "email": "long@example.com",
            "tier": "standard",
        })
        .await
        .in_collection("customers");
    assert!(matches!(refused, Err(Error::Validation(_))), "{refused:?}");
    assert_eq!(refused.unwrap_err().code(), Some(121));
    let email = email_index(&db).await;
    assert_eq!(
        email.get_document("key").unwrap(),
        &doc! { "email": 1 },
        "{email}"
    );
    assert_eq!(email.get_bool("unique"), Ok(true), "{email}");
    assert_eq!(count(&db, "customers", doc! {}).await, 995);
    // the removed duplicates are kept aside, never lost
    assert_eq!(count(&db, "customers_dedupe_2", doc! {}).await, 5);
    assert_eq!(
        count(&db, "customers", doc! { "tier": "standard" }).await,
        995
    );
    let records = records(&db).await;
    assert_eq!(records.len(), 3);
    assert!(
        records
            .iter()
            .all(|r| r.get_str("state").ok() == Some("done")),
        "{records:?}"
    );
    // a second apply runs none, writes nothing
    let again = v2.apply(&db).await.unwrap();
    assert!(again.migrations.is_empty());
    assert!(again.is_noop(), "{again}");

    // a v1 instance during the rolling deploy: refused by default, serving with Continue
    let old = v1::schema();
    assert!(matches!(
        old.apply(&db).await,
        Err(Error::Downgrade {
            recorded: 2,
            applying: 1,
            ..
        })
    ));
    let serving = old.apply(&db).on_newer(OnNewer::Continue).await.unwrap();
    assert!(serving.applied.is_empty() && serving.migrations.is_empty());
    // display-text: the report's sentence, read by a person
    assert!(serving.to_string().contains("serving on"), "{serving}");

    // v3: the reference becomes a copy, in two round trips per 1,000 customers
    let v3 = v3::schema();
    let plan = v3.plan(&db).await.unwrap();
    assert_eq!(plan.migrations.len(), 1, "{plan}");
    assert_eq!(plan.migrations[0].documents, 3000);
    let report = v3.apply(&db).await.unwrap();
    assert_eq!(report.migrations.len(), 1, "{report}");
    assert_eq!(report.migrations[0].counts, StepCounts::new(3000, 3000));
    assert_eq!(
        count(&db, "orders", doc! { "customer.name": { "$exists": true } }).await,
        3000
    );
    let order = stored_order(&db, 8).await;
    assert_eq!(
        order.get_document("customer").unwrap(),
        &doc! { "_id": 8_i64, "name": "Customer 8" }
    );
    // a customer whose name was shortened has the shortened name in its orders' copies
    let shortened = stored_order(&db, 7).await;
    assert_eq!(
        shortened
            .get_document("customer")
            .unwrap()
            .get_str("name")
            .unwrap()
            .chars()
            .count(),
        40
    );
    // the copy step's batches are the library's queries: the sources walked on `_id`, the
    // holders of a source found by the copy's id, each served by an index on the server
    let proof = v3.prove(&db).await.unwrap();
    let migration: Vec<_> = proof
        .queries
        .iter()
        .filter(|q| q.query.starts_with("migration 3 `customer copy`"))
        .collect();
    assert_eq!(migration.len(), 2, "{proof}");
    for query in &migration {
        assert!(query.failure.is_none(), "{proof}");
        // SecantusDB scans for a range on `_id` (noted); mongod walks `_id_`
        assert!(
            !query.collscan || (proof.sorts_in_memory && query.note.is_some()),
            "{proof}"
        );
        assert!(query.expected_index.is_some(), "{proof}");
    }
    let reconcile = v3.reconcile(&db).dry_run(true).await.unwrap();
    assert_eq!(reconcile.drifted(), 0, "{reconcile}");
    assert_eq!(reconcile.missing_sources(), 0, "{reconcile}");
    let orders = options(&db, "orders").await;
    assert_eq!(
        orders.get_str("validationLevel").ok(),
        Some("strict"),
        "{orders}"
    );
}

#[tokio::test]
async fn a_failed_step_is_recorded_and_resumes_from_its_checkpoint() {
    let db = seeded_v1("migrations_resume").await;
    let runs = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(std::sync::Mutex::new(Vec::<Option<Bson>>::new()));
    let step = {
        let (runs, seen) = (runs.clone(), seen.clone());
        migrate::custom::<v1::Order>("double every total, 1,000 orders at a time", move |cx| {
            let (runs, seen) = (runs.clone(), seen.clone());
            Box::pin(async move {
                let run = runs.fetch_add(1, Ordering::SeqCst);
                seen.lock().unwrap().push(cx.checkpoint().cloned());
                let mut batches = 0;
                loop {
                    let batch = cx.next_batch("orders", doc! {}, 1000).await?;
                    let Some(last) = batch.last().and_then(|o| o.get("_id")).cloned() else {
                        break;
                    };
                    if run == 0 && batches == 1 {
                        return Err(Error::other("the first run fails in its second batch"));
                    }
                    let ids: Vec<Bson> =
                        batch.iter().filter_map(|o| o.get("_id").cloned()).collect();
                    let result = cx
                        .db()
                        .collection::<BsonDocument>("orders")
                        .update_many(
                            doc! { "_id": { "$in": ids } },
                            doc! { "$mul": { "total": 2_i64 } },
                        )
                        .await?;
                    cx.save(
                        last,
                        StepCounts::new(result.matched_count, result.modified_count),
                    )
                    .await?;
                    batches += 1;
                }
                Ok(cx.counts())
            })
        })
    };
    let schema = mongo_schema::Schema::new()
        .model::<v1::Customer>()
        .model::<v1::Order>()
        .version(2)
        .migration(2, "double totals", step)
        .build()
        .unwrap();
    let failed = schema.apply(&db).await.unwrap_err();
    assert!(
        matches!(&failed, Error::Migration { version: 2, name, .. } if name == "double totals"),
        "{failed}"
    );
    let record = records(&db).await.remove(0);
    assert_eq!(record.get_str("state"), Ok("failed"));
    assert!(record.get_str("error").unwrap().contains("second batch"));
    assert_eq!(record.get("checkpoint"), Some(&Bson::Int64(999)));
    // the version was not recorded as applied
    let report = schema.apply(&db).await.unwrap();
    assert_eq!(report.migrations.len(), 1);
    assert!(report.migrations[0].resumed);
    // the second run started after the first batch, and every order was doubled exactly once
    assert_eq!(seen.lock().unwrap().clone(), [None, Some(Bson::Int64(999))]);
    // (order 0's total is 0: matched, not changed)
    assert_eq!(report.migrations[0].counts, StepCounts::new(3000, 2999));
    let doubled = count(
        &db,
        "orders",
        doc! { "$expr": { "$eq": ["$total", { "$multiply": ["$_id", 20] }] } },
    )
    .await;
    assert_eq!(doubled, 3000);
    assert_eq!(
        records(&db).await[0].get_str("state"),
        Ok(MigrationState::Done.to_string().as_str())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_apply_killed_in_the_middle_of_a_step_resumes_it() {
    let db = seeded_v1("migrations_killed").await;
    let first_batch_done = Arc::new(tokio::sync::Notify::new());
    let calls = Arc::new(AtomicUsize::new(0));
    let step = {
        let (first_batch_done, calls) = (first_batch_done.clone(), calls.clone());
        migrate::custom::<v1::Customer>("lower-case every email, 100 at a time", move |cx| {
            let (first_batch_done, calls) = (first_batch_done.clone(), calls.clone());
            Box::pin(async move {
                let call = calls.fetch_add(1, Ordering::SeqCst);
                loop {
                    let batch = cx.next_batch("customers", doc! {}, 100).await?;
                    let Some(last) = batch.last().and_then(|c| c.get("_id")).cloned() else {
                        break;
                    };
                    let ids: Vec<Bson> =
                        batch.iter().filter_map(|c| c.get("_id").cloned()).collect();
                    let result = cx
                        .db()
                        .collection::<BsonDocument>("customers")
                        .update_many(
                            doc! { "_id": { "$in": ids } },
                            vec![doc! { "$set": { "email": { "$toLower": "$email" } } }],
                        )
                        .await?;
                    cx.save(
                        last,
                        StepCounts::new(result.matched_count, result.modified_count),
                    )
                    .await?;
                    if call == 0 {
                        // the first apply stops here, as a process would that is killed now
                        first_batch_done.notify_one();
                        std::future::pending::<()>().await;
                    }
                }
                Ok(cx.counts())
            })
        })
    };
    let schema = Arc::new(
        mongo_schema::Schema::new()
            .model::<v1::Customer>()
            .model::<v1::Order>()
            .version(2)
            .migration(2, "lower-case emails", step)
            .build()
            .unwrap(),
    );
    let killed = tokio::spawn({
        let (schema, db) = (schema.clone(), db.clone());
        async move { schema.apply(&db).await }
    });
    tokio::time::timeout(Duration::from_secs(30), first_batch_done.notified())
        .await
        .expect("the first batch within 30 s");
    killed.abort();
    assert_eq!(records(&db).await[0].get_str("state"), Ok("running"));
    // the next apply waits for the dead one's lock to lapse, then resumes after the first batch
    let report = tokio::time::timeout(Duration::from_secs(60), schema.apply(&db))
        .await
        .expect("the resumed apply within a minute")
        .unwrap();
    assert!(report.migrations[0].resumed, "{report}");
    assert_eq!(report.migrations[0].counts.matched, 1000, "{report}");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(records(&db).await[0].get_str("state"), Ok("done"));
}

/// The steps' batched reads are described for the schema's own version only: an older version's
/// ran on every database at that version, and an index derived for them would stay for good.
#[test]
fn only_the_current_versions_steps_are_library_queries() {
    let copy = || migrate::reference_to_copy(field!(v3::Order, customer));
    let builder = || {
        mongo_schema::Schema::new()
            .model::<v3::Customer>()
            .model::<v3::Order>()
    };
    let at_3 = builder()
        .version(3)
        .migration(2, "copy v2", copy())
        .migration(
            3,
            "walk v3",
            migrate::custom::<v3::Customer>("walk", |cx| Box::pin(async move { Ok(cx.counts()) })),
        )
        .build()
        .unwrap();
    let at_2 = builder()
        .version(2)
        .migration(2, "copy v2", copy())
        .build()
        .unwrap();
    let names = |schema: &mongo_schema::Schema| -> Vec<String> {
        schema
            .collections()
            .iter()
            .flat_map(|c| c.library_queries.iter().map(|q| q.name.clone()))
            .filter(|name| name.starts_with("migration"))
            .collect()
    };
    let v3 = names(&at_3);
    assert!(
        !v3.is_empty() && v3.iter().all(|n| n.starts_with("migration 3 `walk v3`")),
        "{v3:?}"
    );
    // the copy step with the schema at 2: its reads are described
    let v2 = names(&at_2);
    assert!(
        !v2.is_empty() && v2.iter().all(|n| n.starts_with("migration 2 `copy v2`")),
        "{v2:?}"
    );
}

#[test]
#[allow(deprecated)] // the string forms, whose misspelt field and unserializable value `Schema::build` refuses
fn steps_are_checked_against_the_models_at_build() {
    let problems = match mongo_schema::Schema::new()
        .model::<v2::Customer>()
        .model::<v2::Order>()
        .version(2)
        // a misspelt field is a compile error in the typed form; the string form (deprecated)
        // is checked by `Schema::build`
        .migration(
            2,
            "typo",
            migrate::set_default_by_name::<v2::Customer>("teir", "standard"),
        )
        .migration(
            2,
            "not a copy",
            migrate::reference_to_copy(field!(v2::Order, customer)),
        )
        .migration(
            3,
            "too new",
            migrate::truncate(field!(v2::Customer, name), 40),
        )
        .migration(
            2,
            "typo",
            migrate::dedupe(field!(v2::Customer, email), Keep::Newest),
        )
        // the typed form takes a value of the field's type; the string form any value
        .migration(
            2,
            "unserializable",
            migrate::set_default_by_name::<v2::Customer>(
                "tier",
                std::collections::BTreeMap::from([((1, 2), 3)]),
            ),
        )
        .build()
    {
        Err(e) => e.problems,
        Ok(_) => panic!("built"),
    };
    let text = problems.join("\n");
    assert!(
        text.contains(
            "`customers` stores no field `teir` (fields are named as stored: did you mean `tier`?)"
        ),
        "{text}"
    );
    assert!(
        text.contains("`orders.customer` is not an `#[extended_ref]`"),
        "{text}"
    );
    assert!(
        text.contains("a migration belongs to version 3, but the schema is version 2"),
        "{text}"
    );
    assert!(
        text.contains("two migrations of version 2 are named `typo`"),
        "{text}"
    );
    // a default the driver cannot store is refused, never written as `null`
    assert!(
        text.contains("migration v2 `unserializable`: the default of `tier` does not serialize"),
        "{text}"
    );
}

#[tokio::test]
async fn plan_foresees_duplicates_new_required_fields_and_collections_it_does_not_know() {
    let db = seeded_v1("migrations_foresee").await;
    db.collection::<BsonDocument>("legacy_exports")
        .insert_one(doc! { "at": 1 })
        .await
        .unwrap();
    // v2's models without its steps
    let bare = mongo_schema::Schema::new()
        .model::<v2::Customer>()
        .model::<v2::Order>()
        .version(2)
        .build()
        .unwrap();
    let plan = bare.plan(&db).await.unwrap();
    let text = plan.to_string();
    assert!(
        text.contains("the unique index `email_1` of `customers` would meet 5 key value(s) held by more than one document"),
        "{text}"
    );
    assert!(
        text.contains(
            "`customers.tier` is required from this version and unknown to the recorded one"
        ),
        "{text}"
    );
    assert!(
        text.contains("collection `legacy_exports` is not in the schema: left alone"),
        "{text}"
    );
    assert!(
        !text.contains("changelog") && !text.contains("mongo_schema_migrations"),
        "{text}"
    );
    // with the steps, the backfill is noted; plan with a decision on violations shows it
    let plan = v2::schema()
        .plan(&db)
        .on_violations(mongo_schema::OnViolations::Moderate)
        .await
        .unwrap();
    let text = plan.to_string();
    assert!(
        text.contains("(the `set_default` step fills the existing ones only)"),
        "{text}"
    );
    assert!(text.contains("validationLevel"), "{text}");
    // without the dedupe step, the index build fails: the error shows the server's message
    let failed = bare.apply(&db).await.unwrap_err();
    let message = failed.to_string();
    assert!(matches!(failed, Error::Apply { .. }), "{message}");
    assert_eq!(
        failed.code(),
        Some(11000),
        "the server's duplicate key: {message}"
    );
    // display-text: the sentence a person reads carries no raw reply
    assert!(!message.contains("RawDocumentBuf"), "{message}");
    assert!(message.len() < 600, "{message}");
}

/// The guide's migration block (`docs/guide/deploying.md`) builds its schema as `v3::declared`
/// of this file does, line for line.
#[test]
fn the_readme_block_is_in_this_file() {
    let guide = include_str!("../docs/guide/deploying.md");
    let trimmed = |text: &str| -> String {
        text.lines()
            .map(|l| format!("{}\n", l.trim_start()))
            .collect()
    };
    let start = guide
        .find("\n## Evolving a live schema\n")
        .expect("the guide's section");
    let body = &guide[start..];
    let block = &body[body.find("```rust\n").unwrap() + 8..];
    let block = trimmed(&block[..block.find("```").unwrap()]);
    let builder = &block[block.find("Schema::new()").expect("the builder")..];
    let builder = &builder[..builder.find(".build()?").expect("its end") + 9];
    assert!(
        trimmed(include_str!("migrations.rs")).contains(builder),
        "not in tests/migrations.rs:\n{builder}"
    );
}

mod renamed {
    use mongo_schema::prelude::*;
    use serde::{Deserialize, Serialize};

    pub use super::v1::Customer;

    /// v1's order with a copy of the customer's name added beside the reference, and `total`
    /// renamed `amount`.
    #[derive(Document, Serialize, Deserialize, Debug, Clone)]
    #[collection(name = "orders")]
    pub struct Order {
        #[serde(rename = "_id")]
        pub id: i64,
        #[reference]
        pub customer_id: Ref<Customer>,
        #[extended_ref(to = Customer, fields = "name", sync = "transactional")]
        pub customer: Option<OrderCustomer>,
        pub amount: i64,
    }
}

#[tokio::test]
async fn rename_field_and_fill_copies_from_a_reference() {
    let db = seeded_v1("migrations_fill").await;
    // v1's orders store the customer's id in `customer`: rename it, and `total` to `amount`
    let schema = mongo_schema::Schema::new()
        .model::<renamed::Customer>()
        .model::<renamed::Order>()
        .version(2)
        .migration(
            2,
            "customer id",
            migrate::rename_field("customer", field!(renamed::Order, customer_id)),
        )
        .migration(
            2,
            "amount",
            migrate::rename_field("total", field!(renamed::Order, amount)),
        )
        .migration(
            2,
            "customer copy",
            migrate::fill_copies(field!(renamed::Order, customer))
                .from_reference(field!(renamed::Order, customer_id)),
        )
        .build()
        .unwrap();
    let report = schema.apply(&db).await.unwrap();
    let counts: Vec<u64> = report.migrations.iter().map(|r| r.counts.changed).collect();
    assert_eq!(counts, [3000, 3000, 3000], "{report}");
    assert_eq!(
        count(&db, "orders", doc! { "total": { "$exists": true } }).await,
        0
    );
    assert_eq!(
        count(&db, "orders", doc! { "amount": { "$exists": true } }).await,
        3000
    );
    let order = stored_order(&db, 1001).await;
    assert_eq!(order.get_i64("customer_id").unwrap(), 6);
    assert_eq!(
        order.get_document("customer").unwrap(),
        &doc! { "_id": 6_i64, "name": "Customer 6" }
    );
    // recorded: never again (the rename's `from` is the copy's name now, which a second run
    // would move away)
    let again = schema.apply(&db).await.unwrap();
    assert!(again.migrations.is_empty(), "{again}");
    assert_eq!(
        count(&db, "orders", doc! { "customer.name": { "$exists": true } }).await,
        3000
    );
}

#[tokio::test]
async fn an_allowed_downgrade_reports_what_it_did() {
    let db = mongo_schema_testkit::database("migrations_downgrade_report").await;
    v2::schema().apply(&db).await.unwrap();
    // refused without the flag, as the error variant says
    let refused = v1::schema().apply(&db).await;
    assert!(
        matches!(
            refused,
            Err(Error::Downgrade {
                recorded: 2,
                applying: 1,
                ..
            })
        ),
        "{refused:?}"
    );
    let report = v1::schema().apply(&db).allow_downgrade(true).await.unwrap();
    assert!(
        matches!(
            report.version,
            Some(VersionStatus::Downgrade {
                recorded: 2,
                applying: 1
            })
        ),
        "{report}"
    );
    assert!(
        report.warnings.iter().any(|w| matches!(
            w,
            Warning::Downgraded {
                recorded: 2,
                applying: 1
            }
        )),
        "{report}"
    );
    let text = report.to_string();
    assert!(
        text.starts_with(
            "schema version 1 applied over the newer recorded version 2 (allow_downgrade)"
        ),
        "{text}"
    );
    assert!(!text.contains("refuses"), "{text}");
}

/// Issue 49, item 6: the server's validator older than the record (rolled back by hand, or
/// refused since): `plan` of the recorded version says so, and never that a field it requires
/// is "unknown to the recorded one", which is this very version.
#[tokio::test]
async fn a_validator_behind_the_record_is_not_called_new_to_the_recorded_version() {
    let db = mongo_schema_testkit::database("migrations_validator_behind").await;
    v2::schema().apply(&db).await.unwrap();
    let older = v1::schema()
        .collection("customers")
        .unwrap()
        .validator
        .clone();
    db.run_command(doc! { "collMod": "customers", "validator": older })
        .await
        .unwrap();
    let plan = v2::schema().plan(&db).await.unwrap();
    assert!(
        matches!(plan.version, Some(VersionStatus::Current { version: 2 })),
        "{plan}"
    );
    assert!(
        plan.warnings.iter().any(|w| matches!(
            w,
            Warning::RequiredFieldNotOnServer { collection, field, recorded: 2 }
                if collection == "customers" && field == "tier"
        )),
        "{plan}"
    );
    assert!(
        !plan
            .warnings
            .iter()
            .any(|w| matches!(w, Warning::NewRequiredField { .. })),
        "{plan}"
    );
    let text = plan.to_string();
    // display-text: the sentence an operator reads does not blame the recorded version
    assert!(!text.contains("unknown to the recorded one"), "{text}");
}

#[tokio::test]
async fn missing_copies_are_drift_that_reconcile_fills() {
    let db = seeded_v1("migrations_missing_copies").await;
    v2::schema().apply(&db).await.unwrap();
    // v3's models without the step that fills the copy: the orders still hold bare ids
    let bare = mongo_schema::Schema::new()
        .model::<v3::Customer>()
        .model::<v3::Order>()
        .version(3)
        .build()
        .unwrap();
    bare.apply(&db)
        .on_violations(mongo_schema::OnViolations::Moderate)
        .await
        .unwrap();
    let dry = bare.reconcile(&db).dry_run(true).await.unwrap();
    let orders = dry
        .edges
        .iter()
        .find(|e| e.copy == "orders.customer")
        .unwrap();
    assert_eq!(
        (orders.checked, orders.drifted, orders.missing_copies),
        (3000, 3000, 3000),
        "{dry}"
    );
    let audit = bare.audit(&db).await.unwrap().to_string();
    assert!(audit.contains("3000 of them without their copy"), "{audit}");
    let fixed = bare.reconcile(&db).await.unwrap();
    assert_eq!(fixed.repaired(), 3000, "{fixed}");
    assert_eq!(
        count(&db, "orders", doc! { "customer.name": { "$exists": true } }).await,
        3000
    );
    let again = bare.reconcile(&db).dry_run(true).await.unwrap();
    assert_eq!((again.drifted(), again.missing_copies()), (0, 0), "{again}");
}
