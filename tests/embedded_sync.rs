//! Copies kept in sync inside embedded values (issue 26): `#[extended_ref(sync = ...)]` on a
//! field of an order line, a `BsonSchema` struct that orders embed in a bounded array and in an
//! `Option`, with every strategy but `frozen` (tests/embedded_relations.rs has the snapshot).
//! Each rename is of a product held by several orders with several lines, some lines holding
//! another product: every matching line follows, every other line and every quantity stays as
//! it was, and a frozen snapshot beside the copy keeps the old name. The documents after are
//! compared whole with the ones before, so a test that changed nothing fails.

mod common;

use std::time::Duration;

use common::{eventually, ready_within, shut_down_within};
use mongo_schema::bson::{doc, Bson, Document as BsonDocument};
use mongo_schema::migrate;
use mongo_schema::prelude::*;
use mongo_schema::{IndexReason, SyncStrategy, FAN_OUT_CHUNK};
use serde::{Deserialize, Serialize};

/// How long a worker may take to stop.
const SHUTDOWN: Duration = Duration::from_secs(30);

#[derive(Document, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[collection(name = "products")]
pub struct Product {
    #[serde(rename = "_id")]
    pub id: String,
    pub name: String,
    pub price_cents: i64,
}

/// A line whose product copy changes with the product in one transaction, beside a snapshot
/// of the product as it was sold.
#[derive(BsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct TxLine {
    #[extended_ref(to = Product, fields = "name", sync = "transactional")]
    pub product: TxLineProduct,
    #[extended_ref(to = Product, fields = "name, price_cents", sync = "frozen")]
    pub sold_as: TxLineSoldAs,
    pub quantity: i32,
}

/// A line whose product copy the sync worker keeps.
#[derive(BsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct AsyncLine {
    #[extended_ref(to = Product, fields = "name, price_cents", sync = "async")]
    pub product: AsyncLineProduct,
    pub quantity: i32,
}

/// A line whose product copy the scheduled reconcile repairs.
#[derive(BsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct RecLine {
    #[extended_ref(to = Product, fields = "name, price_cents", sync = "reconcile")]
    pub product: RecLineProduct,
    pub quantity: i32,
}

#[derive(Document, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[collection(name = "tx_orders")]
pub struct TxOrder {
    #[serde(rename = "_id")]
    pub id: i64,
    #[embed(max = 50)]
    pub lines: Vec<TxLine>,
    /// One line shown first: the same struct in an `Option` (plain dotted paths).
    pub featured: Option<TxLine>,
}

#[derive(Document, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[collection(name = "async_orders")]
pub struct AsyncOrder {
    #[serde(rename = "_id")]
    pub id: i64,
    #[embed(max = 50)]
    pub lines: Vec<AsyncLine>,
}

#[derive(Document, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[collection(name = "rec_orders")]
pub struct RecOrder {
    #[serde(rename = "_id")]
    pub id: i64,
    #[embed(max = 50)]
    pub lines: Vec<RecLine>,
}

/// The lines behind an alias: the derive of the holder sees only `TxLines`.
pub type TxLines = Vec<TxLine>;

/// A generic wrapper of lines: the derive of the holder sees only `Batch<TxLine>`.
#[derive(BsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Batch<T> {
    pub label: String,
    #[embed(max = 10)]
    pub items: Vec<T>,
}

#[derive(Document, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[collection(name = "carts")]
pub struct Cart {
    #[serde(rename = "_id")]
    pub id: i64,
    #[embed(max = 50)]
    pub lines: TxLines,
    pub batch: Batch<TxLine>,
}

/// Seed 000's hybrid model one level down: an assembly of kits, each a bounded array of parts
/// with a quantity per part, the part's copy following renames and unset when it is deleted.
#[derive(BsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct KitPart {
    #[extended_ref(to = Product, fields = "name", sync = "transactional", on_delete = "unset")]
    pub part: Option<KitPartPart>,
    pub quantity: i32,
}

#[derive(BsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Kit {
    pub label: String,
    #[embed(max = 20)]
    pub parts: Vec<KitPart>,
}

#[derive(Document, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[collection(name = "assemblies")]
pub struct Assembly {
    #[serde(rename = "_id")]
    pub id: i64,
    #[embed(max = 10)]
    pub kits: Vec<Kit>,
}

fn schema() -> Schema {
    Schema::new()
        .model::<Product>()
        .model::<TxOrder>()
        .model::<AsyncOrder>()
        .model::<RecOrder>()
        .model::<Cart>()
        .model::<Assembly>()
        .build()
        .unwrap()
}

fn product(id: &str, name: &str, price_cents: i64) -> Product {
    Product {
        id: id.into(),
        name: name.into(),
        price_cents,
    }
}

fn tx_line(product: &Product, quantity: i32) -> TxLine {
    TxLine {
        product: TxLineProduct::from(product),
        sold_as: TxLineSoldAs::from(product),
        quantity,
    }
}

/// The bolt and the nut; order `i` has four lines: bolt, nut, bolt, nut (quantities `10 i + k`).
fn products() -> (Product, Product) {
    (product("bolt", "Bolt", 120), product("nut", "Nut", 40))
}

fn quantities(i: i64) -> [i32; 4] {
    let base = 10 * i as i32;
    [base + 1, base + 2, base + 3, base + 4]
}

/// The `update` commands of `collection` in `log`.
fn updates_of(log: &mongo_schema_testkit::CommandLog, collection: &str) -> Vec<BsonDocument> {
    log.commands()
        .into_iter()
        .filter(|c| c.name == "update" && c.command.get_str("update").ok() == Some(collection))
        .map(|c| c.command)
        .collect()
}

/// Applies the schema to `db` and inserts the bolt and the nut: the schema and the two.
async fn with_products(db: &mongodb::Database) -> (Schema, Product, Product) {
    let schema = schema();
    schema.apply(db).await.unwrap();
    let (bolt, nut) = products();
    Product::collection(db)
        .insert_many([&bolt, &nut])
        .await
        .unwrap();
    (schema, bolt, nut)
}

async fn stored(db: &mongodb::Database, collection: &str) -> Vec<BsonDocument> {
    common::all(
        db.collection::<BsonDocument>(collection)
            .find(doc! {})
            .sort(doc! { "_id": 1 }),
    )
    .await
}

/// `documents` as they should be after product `id` had `changes` set: in every line of every
/// array of lines (`arrays`) and every single line (`singles`), the copy `product` of `id`
/// changed, nothing else. Returns them with the number of copies changed.
fn followed(
    documents: &[BsonDocument],
    arrays: &[&str],
    singles: &[&str],
    id: &str,
    changes: &BsonDocument,
) -> (Vec<BsonDocument>, usize) {
    let mut changed = 0;
    let mut follow = |line: &mut BsonDocument| {
        if let Ok(copy) = line.get_document_mut("product") {
            if copy.get_str("_id") == Ok(id) {
                copy.extend(changes.clone());
                changed += 1;
            }
        }
    };
    let mut out = documents.to_vec();
    for document in &mut out {
        for path in arrays {
            let mut at: &mut BsonDocument = document;
            let segments: Vec<&str> = path.split('.').collect();
            for segment in &segments[..segments.len() - 1] {
                at = at.get_document_mut(segment).unwrap();
            }
            for line in at.get_array_mut(segments[segments.len() - 1]).unwrap() {
                follow(line.as_document_mut().unwrap());
            }
        }
        for path in singles {
            if let Some(Bson::Document(line)) = document.get_mut(*path) {
                follow(line);
            }
        }
    }
    (out, changed)
}

#[test]
fn each_holder_declares_the_copies_of_its_lines_once_with_the_fan_out_index_on_the_full_path() {
    let schema = schema();
    let graph = schema.sync_graph();
    let mut edges: Vec<(String, SyncStrategy, Vec<String>)> = graph
        .copies_of("products")
        .map(|e| (e.label(), e.copy.strategy, e.copy.arrays.clone()))
        .collect();
    edges.sort_by(|a, b| a.0.cmp(&b.0));
    let arrays = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    assert_eq!(
        edges,
        [
            (
                "assemblies.kits.parts.part".to_owned(),
                SyncStrategy::Transactional,
                arrays(&["kits", "kits.parts"])
            ),
            (
                "async_orders.lines.product".to_owned(),
                SyncStrategy::Async,
                arrays(&["lines"])
            ),
            // through a generic wrapper and an alias: found through the types
            (
                "carts.batch.items.product".to_owned(),
                SyncStrategy::Transactional,
                arrays(&["batch.items"])
            ),
            (
                "carts.batch.items.sold_as".to_owned(),
                SyncStrategy::Frozen,
                arrays(&["batch.items"])
            ),
            (
                "carts.lines.product".to_owned(),
                SyncStrategy::Transactional,
                arrays(&["lines"])
            ),
            (
                "carts.lines.sold_as".to_owned(),
                SyncStrategy::Frozen,
                arrays(&["lines"])
            ),
            (
                "rec_orders.lines.product".to_owned(),
                SyncStrategy::Reconcile,
                arrays(&["lines"])
            ),
            (
                "tx_orders.featured.product".to_owned(),
                SyncStrategy::Transactional,
                arrays(&[])
            ),
            (
                "tx_orders.featured.sold_as".to_owned(),
                SyncStrategy::Frozen,
                arrays(&[])
            ),
            (
                "tx_orders.lines.product".to_owned(),
                SyncStrategy::Transactional,
                arrays(&["lines"])
            ),
            (
                "tx_orders.lines.sold_as".to_owned(),
                SyncStrategy::Frozen,
                arrays(&["lines"])
            ),
        ]
    );
    // the fan-out indexes, on the full paths; none for the snapshots
    for (spec, path) in [
        (TxOrder::collection_spec(), "lines.product"),
        (TxOrder::collection_spec(), "featured.product"),
        (AsyncOrder::collection_spec(), "lines.product"),
        (RecOrder::collection_spec(), "lines.product"),
        (Cart::collection_spec(), "lines.product"),
        (Cart::collection_spec(), "batch.items.product"),
    ] {
        let keys = doc! { format!("{path}._id"): 1, "_id": 1 };
        let index = spec
            .indexes
            .iter()
            .find(|i| i.keys == keys)
            .unwrap_or_else(|| panic!("{}: no index {keys}", spec.name));
        assert!(index
            .reasons
            .iter()
            .any(|r| matches!(r, IndexReason::FanOut { path: p, .. } if p == path)));
        assert!(spec
            .indexes
            .iter()
            .all(|i| !i.keys.keys().any(|k| k.contains("sold_as"))));
    }
    // the fan-out of the bolt's rename through the copy `label`
    let fan_out = |label: &str| {
        let edge = graph.edges.iter().find(|e| e.label() == label).unwrap();
        schema
            .fan_out_command(edge, &doc! { "_id": "bolt", "name": "Hex bolt" })
            .unwrap()
    };
    // the fan-out: one update on the copied id, every matching line through an array filter
    let command = fan_out("carts.batch.items.product");
    assert_eq!(
        command,
        doc! {
            "update": "carts",
            "updates": [{
                "q": { "batch.items.product._id": "bolt" },
                "u": { "$set": { "batch.items.$[e0].product.name": "Hex bolt" } },
                "multi": true,
                "arrayFilters": [{ "e0.product._id": "bolt" }],
            }],
        }
    );
    // in an `Option`: the plain dotted path
    let command = fan_out("tx_orders.featured.product");
    assert_eq!(
        command.get_array("updates").unwrap()[0],
        Bson::Document(doc! {
            "q": { "featured.product._id": "bolt" },
            "u": { "$set": { "featured.product.name": "Hex bolt" } },
            "multi": true,
        })
    );

    // the report's rows and the diagram say where each copy lives
    let report = schema.report().to_string();
    for shown in ["in `lines[]`", "in `batch.items[]`", "in `featured`"] {
        assert!(report.contains(shown), "{shown}: {report}");
    }
    // a transactional copy in every line is a wide fan-out (seed 003, question 4)
    assert!(
        report.contains("`tx_orders.lines[].product` is a transactional copy in an array"),
        "{report}"
    );
    assert!(!report.contains("`tx_orders.featured.product` is a transactional copy in an array"));
    let mermaid = schema.mermaid();
    for edge in [
        "tx_orders -.->|\"lines[].product {name} (transactional)\"| products",
        "carts -.->|\"batch.items[].product {name} (transactional)\"| products",
        "tx_orders -.->|\"featured.product {name} (transactional)\"| products",
        "async_orders -.->|\"lines[].product {name, price_cents} (async)\"| products",
    ] {
        assert!(mermaid.contains(edge), "{edge}: {mermaid}");
    }
}

#[tokio::test]
async fn a_transactional_rename_follows_every_matching_line_and_nothing_else() {
    let (client, log) = mongo_schema_testkit::monitored_client().await;
    let db = client.database(mongo_schema_testkit::database("embedded_tx").await.name());
    let (schema, bolt, nut) = with_products(&db).await;
    let orders: Vec<TxOrder> = (0..6)
        .map(|i| {
            let [a, b, c, d] = quantities(i);
            TxOrder {
                id: i,
                lines: vec![
                    tx_line(&bolt, a),
                    tx_line(&nut, b),
                    tx_line(&bolt, c),
                    tx_line(&nut, d),
                ],
                // every other order features the bolt, the others the nut
                featured: Some(tx_line(if i % 2 == 0 { &bolt } else { &nut }, 1)),
            }
        })
        .collect();
    TxOrder::collection(&db).insert_many(&orders).await.unwrap();
    // a cart holds the bolt behind the alias and in the generic batch
    let cart = Cart {
        id: 1,
        lines: vec![tx_line(&nut, 7), tx_line(&bolt, 8)],
        batch: Batch {
            label: "spares".into(),
            items: vec![tx_line(&bolt, 9), tx_line(&nut, 10), tx_line(&bolt, 11)],
        },
    };
    Cart::collection(&db).insert_one(&cart).await.unwrap();
    let before = stored(&db, "tx_orders").await;
    let carts_before = stored(&db, "carts").await;

    log.clear();
    let report = schema
        .update_source::<Product>(&db, &bolt.id, doc! { "$set": { "name": "Hex bolt" } })
        .await
        .unwrap();
    let rewritten: std::collections::HashMap<String, u64> =
        report.copies_rewritten.iter().cloned().collect();
    assert_eq!(rewritten["tx_orders.lines.product"], 6, "{report:?}");
    assert_eq!(rewritten["tx_orders.featured.product"], 3, "{report:?}");
    assert_eq!(rewritten["carts.lines.product"], 1, "{report:?}");
    assert_eq!(rewritten["carts.batch.items.product"], 1, "{report:?}");

    // every bolt line and featured bolt renamed; nut lines, quantities, snapshots as they were
    let (expected, changed) = followed(
        &before,
        &["lines"],
        &["featured"],
        "bolt",
        &doc! { "name": "Hex bolt" },
    );
    assert_eq!(changed, 6 * 2 + 3, "the positive control: copies to follow");
    assert_ne!(expected, before);
    assert_eq!(stored(&db, "tx_orders").await, expected);
    let (expected, changed) = followed(
        &carts_before,
        &["lines", "batch.items"],
        &[],
        "bolt",
        &doc! { "name": "Hex bolt" },
    );
    assert_eq!(changed, 3);
    assert_eq!(stored(&db, "carts").await, expected);
    let order = TxOrder::collection(&db)
        .find_one(doc! { "_id": 0 })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(order.lines[0].product.name, "Hex bolt");
    assert_eq!(order.lines[0].sold_as.name, "Bolt", "the snapshot stays");
    assert_eq!(order.lines[1].product.name, "Nut");

    // one update per copy, each with its array filter (6 orders are one batch of holders)
    let updates = updates_of(&log, "tx_orders");
    assert_eq!(updates.len(), 2, "{updates:?}");
    let statements: Vec<&BsonDocument> = updates
        .iter()
        .map(|u| u.get_array("updates").unwrap()[0].as_document().unwrap())
        .collect();
    assert!(statements.iter().any(|s| s.get_array("arrayFilters")
        == Ok(&vec![Bson::Document(doc! { "e0.product._id": "bolt" })])));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sync_worker_follows_a_rename_into_every_line_a_chunk_of_holders_at_a_time() {
    let (client, log) = mongo_schema_testkit::monitored_client().await;
    let db = client.database(
        mongo_schema_testkit::database("embedded_async")
            .await
            .name(),
    );
    let (schema, bolt, nut) = with_products(&db).await;
    // more holders than one chunk: two fenced updates
    let holders = FAN_OUT_CHUNK as i64 + 100;
    let orders: Vec<AsyncOrder> = (0..holders)
        .map(|i| {
            let [a, b, c, _] = quantities(i);
            let line = |p: &Product, quantity| AsyncLine {
                product: AsyncLineProduct::from(p),
                quantity,
            };
            AsyncOrder {
                id: i,
                lines: vec![line(&bolt, a), line(&nut, b), line(&bolt, c)],
            }
        })
        .collect();
    AsyncOrder::collection(&db)
        .insert_many(&orders)
        .await
        .unwrap();
    let before = stored(&db, "async_orders").await;

    let worker = schema.sync_worker(&db).name("embedded-async").spawn();
    ready_within(&worker, Duration::from_secs(60)).await;
    log.clear();
    // an ordinary write of the product: the worker rewrites the lines after it
    let update = schema
        .update_source::<Product>(
            &db,
            &bolt.id,
            doc! { "$set": { "name": "Hex bolt", "price_cents": 150_i64 } },
        )
        .await
        .unwrap();
    assert_eq!(update.total_rewritten(), 0);
    assert_eq!(update.pending_async, ["async_orders.lines.product"]);
    let (expected, changed) = followed(
        &before,
        &["lines"],
        &[],
        "bolt",
        &doc! { "name": "Hex bolt", "price_cents": 150_i64 },
    );
    assert_eq!(changed as i64, 2 * holders, "the positive control");
    let stats = worker.stats();
    eventually(
        Duration::from_secs(60),
        "every order was rewritten",
        || async { stats.snapshot().copies_rewritten >= holders as u64 },
    )
    .await;
    assert_eq!(stored(&db, "async_orders").await, expected);
    assert_eq!(stats.snapshot().copies_rewritten, holders as u64);
    shut_down_within(worker, SHUTDOWN).await;
    // one update per chunk of holders, each rewriting every matching line of its holders
    let updates = updates_of(&log, "async_orders");
    assert_eq!(updates.len(), 2, "{updates:?}");
    for update in &updates {
        let statement = update.get_array("updates").unwrap()[0]
            .as_document()
            .unwrap()
            .clone();
        assert_eq!(
            statement.get_array("arrayFilters").unwrap(),
            &vec![Bson::Document(doc! { "e0.product._id": "bolt" })]
        );
        assert_eq!(
            statement.get_document("u").unwrap(),
            &doc! { "$set": { "lines.$[e0].product.name": "Hex bolt", "lines.$[e0].product.price_cents": 150_i64 } }
        );
        // fenced: inside the worker's transaction
        assert!(update.contains_key("txnNumber"), "{update}");
    }
}

fn rec_line(product: &Product, quantity: i32) -> RecLine {
    RecLine {
        product: RecLineProduct::from(product),
        quantity,
    }
}

/// `count` orders of four lines each: bolt, nut, bolt, nut, with the quantities of `quantities`.
fn rec_orders(count: i64, bolt: &Product, nut: &Product) -> Vec<RecOrder> {
    (0..count)
        .map(|i| {
            let [a, b, c, d] = quantities(i);
            RecOrder {
                id: i,
                lines: vec![
                    rec_line(bolt, a),
                    rec_line(nut, b),
                    rec_line(bolt, c),
                    rec_line(nut, d),
                ],
            }
        })
        .collect()
}

#[tokio::test]
async fn reconcile_repairs_every_drifted_line_and_a_corrupted_element_alone() {
    let db = mongo_schema_testkit::database("embedded_reconcile").await;
    let (schema, bolt, nut) = with_products(&db).await;
    let orders = rec_orders(5, &bolt, &nut);
    RecOrder::collection(&db)
        .insert_many(&orders)
        .await
        .unwrap();
    let before = stored(&db, "rec_orders").await;

    // a rename the copies do not follow until reconcile runs
    Product::collection(&db)
        .update_one(
            doc! { "_id": "bolt" },
            doc! { "$set": { "name": "Hex bolt" } },
        )
        .await
        .unwrap();
    let edge = |report: &mongo_schema::ReconcileReport| {
        report
            .edges
            .iter()
            .find(|e| e.copy == "rec_orders.lines.product")
            .cloned()
            .unwrap()
    };
    let dry = schema.reconcile(&db).dry_run(true).await.unwrap();
    assert_eq!(
        (edge(&dry).checked, edge(&dry).drifted, edge(&dry).repaired),
        (5, 10, 0),
        "{dry}"
    );
    assert_eq!(
        stored(&db, "rec_orders").await,
        before,
        "a dry run writes nothing"
    );
    let repaired = schema.reconcile(&db).await.unwrap();
    assert_eq!(
        (edge(&repaired).drifted, edge(&repaired).repaired),
        (10, 5),
        "{repaired}"
    );
    let (expected, changed) = followed(
        &before,
        &["lines"],
        &[],
        "bolt",
        &doc! { "name": "Hex bolt" },
    );
    assert_eq!(changed, 10);
    assert_eq!(stored(&db, "rec_orders").await, expected);
    let again = schema.reconcile(&db).dry_run(true).await.unwrap();
    assert_eq!(edge(&again).drifted, 0, "{again}");

    // one element corrupted by a raw update: counted by the dry run (and the audit), then
    // repaired alone; the nut of the line beside it, with the same id, is left as it is
    let raw = db.collection::<BsonDocument>("rec_orders");
    raw.update_one(
        doc! { "_id": 3_i64 },
        doc! { "$set": { "lines.3.product.name": "Nutt", "lines.3.product.price_cents": 1_i64 } },
    )
    .await
    .unwrap();
    let corrupted = stored(&db, "rec_orders").await;
    assert_ne!(corrupted, expected);
    let dry = schema.reconcile(&db).dry_run(true).await.unwrap();
    assert_eq!((edge(&dry).drifted, edge(&dry).repaired), (1, 0), "{dry}");
    let audit = schema.audit(&db).await.unwrap();
    assert_eq!(audit.drift.drifted(), 1, "{audit}");
    assert_eq!(stored(&db, "rec_orders").await, corrupted);
    let repaired = schema.reconcile(&db).await.unwrap();
    assert_eq!(
        (edge(&repaired).drifted, edge(&repaired).repaired),
        (1, 1),
        "{repaired}"
    );
    assert_eq!(stored(&db, "rec_orders").await, expected);
}

#[tokio::test]
async fn fill_copies_in_a_migration_rewrites_every_line_from_its_product() {
    let db = mongo_schema_testkit::database("embedded_fill").await;
    schema().apply(&db).await.unwrap();
    let (bolt, nut) = products();
    // products renamed while the copies were written elsewhere: stale copies in every line
    Product::collection(&db)
        .insert_many([
            product("bolt", "Hex bolt", 150),
            product("nut", "Nut", 40),
            product("washer", "Washer", 5),
        ])
        .await
        .unwrap();
    let orders = rec_orders(4, &bolt, &nut);
    RecOrder::collection(&db)
        .insert_many(&orders)
        .await
        .unwrap();
    let before = stored(&db, "rec_orders").await;
    let v2 = Schema::new()
        .model::<Product>()
        .model::<TxOrder>()
        .model::<AsyncOrder>()
        .model::<RecOrder>()
        .model::<Cart>()
        .model::<Assembly>()
        .version(2)
        .migration(
            2,
            "line copies",
            migrate::fill_copies(field!(RecOrder, lines.product)),
        )
        .build()
        .unwrap();
    let report = v2.apply(&db).await.unwrap();
    let counts: Vec<u64> = report.migrations.iter().map(|r| r.counts.changed).collect();
    // every order holds a stale bolt; the nut is right already
    assert_eq!(counts, [4], "{report}");
    let (expected, changed) = followed(
        &before,
        &["lines"],
        &[],
        "bolt",
        &doc! { "name": "Hex bolt", "price_cents": 150_i64 },
    );
    assert_eq!(changed, 8);
    assert_eq!(stored(&db, "rec_orders").await, expected);
    let reconcile = v2.reconcile(&db).dry_run(true).await.unwrap();
    assert_eq!(reconcile.drifted(), 0, "{reconcile}");
}

#[tokio::test]
async fn the_fan_out_indexes_of_the_lines_are_on_the_server() {
    let db = mongo_schema_testkit::database("embedded_indexes").await;
    schema().apply(&db).await.unwrap();
    let keys = |collection: &'static str| {
        let db = db.clone();
        async move {
            common::all(db.collection::<BsonDocument>(collection).list_indexes())
                .await
                .into_iter()
                .map(|index| index.keys)
                .collect::<Vec<BsonDocument>>()
        }
    };
    let orders = keys("tx_orders").await;
    assert!(
        orders.contains(&doc! { "lines.product._id": 1, "_id": 1 }),
        "{orders:?}"
    );
    assert!(
        orders.contains(&doc! { "featured.product._id": 1, "_id": 1 }),
        "{orders:?}"
    );
    assert!(
        orders
            .iter()
            .all(|k| !k.keys().any(|k| k.contains("sold_as"))),
        "a snapshot has no fan-out index: {orders:?}"
    );
    for collection in ["async_orders", "rec_orders"] {
        let found = keys(collection).await;
        assert!(
            found.contains(&doc! { "lines.product._id": 1, "_id": 1 }),
            "{collection}: {found:?}"
        );
    }
    let carts = keys("carts").await;
    for wanted in [
        doc! { "lines.product._id": 1, "_id": 1 },
        doc! { "batch.items.product._id": 1, "_id": 1 },
    ] {
        assert!(carts.contains(&wanted), "{wanted}: {carts:?}");
    }
}

#[tokio::test]
async fn a_part_inside_kits_of_an_assembly_follows_renames_and_is_unset_when_deleted() {
    let db = mongo_schema_testkit::database("embedded_nested").await;
    let (schema, bolt, nut) = with_products(&db).await;
    let part = |p: &Product, quantity| KitPart {
        part: Some(KitPartPart::from(p)),
        quantity,
    };
    let assemblies: Vec<Assembly> = (0..3)
        .map(|i| {
            let [a, b, c, d] = quantities(i);
            Assembly {
                id: i,
                kits: vec![
                    Kit {
                        label: "frame".into(),
                        parts: vec![part(&bolt, a), part(&nut, b)],
                    },
                    Kit {
                        label: "wheel".into(),
                        parts: vec![part(&nut, c), part(&bolt, d), part(&bolt, a + d)],
                    },
                ],
            }
        })
        .collect();
    Assembly::collection(&db)
        .insert_many(&assemblies)
        .await
        .unwrap();
    let raw = |assembly: &Assembly| mongo_schema::bson::to_document(assembly).unwrap();
    let bolt_count = |assembly: &Assembly| {
        assembly
            .kits
            .iter()
            .flat_map(|k| &k.parts)
            .filter(|p| p.part.as_ref().is_some_and(|c| c.id == "bolt"))
            .count()
    };
    assert_eq!(assemblies.iter().map(bolt_count).sum::<usize>(), 9);

    // a rename: every bolt of every kit, nothing else
    let report = schema
        .update_source::<Product>(&db, &bolt.id, doc! { "$set": { "name": "Hex bolt" } })
        .await
        .unwrap();
    assert_eq!(report.total_rewritten(), 3, "{report:?}");
    let mut expected: Vec<Assembly> = assemblies.clone();
    for assembly in &mut expected {
        for kit in &mut assembly.kits {
            for part in &mut kit.parts {
                if let Some(copy) = part.part.as_mut().filter(|c| c.id == "bolt") {
                    copy.name = "Hex bolt".into();
                }
            }
        }
    }
    assert_ne!(expected, assemblies);
    assert_eq!(
        stored(&db, "assemblies").await,
        expected.iter().map(raw).collect::<Vec<_>>()
    );

    // a deletion: the bolts' copies unset in the same transaction, the nuts kept
    let deleted = schema
        .delete_source::<Product>(&db, &bolt.id)
        .await
        .unwrap();
    assert_eq!(deleted.total_unset(), 3, "{deleted:?}");
    for assembly in &mut expected {
        for kit in &mut assembly.kits {
            for part in &mut kit.parts {
                if part.part.as_ref().is_some_and(|c| c.id == "bolt") {
                    part.part = None;
                }
            }
        }
    }
    assert_eq!(
        stored(&db, "assemblies").await,
        expected.iter().map(raw).collect::<Vec<_>>()
    );
    assert_eq!(expected.iter().map(bolt_count).sum::<usize>(), 0);
    assert_eq!(
        Assembly::collection(&db)
            .count_documents(doc! { "kits.parts.part._id": "nut" })
            .await
            .unwrap(),
        3
    );
}
