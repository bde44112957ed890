//! A case-insensitive collection that holds references, copies (transactional and async),
//! counters and a part of `String`-id documents (issue 47): mongod runs every command sent
//! without a collation under the collection's default, so the library states the collation it
//! means. Ids held in documents are compared exactly (the simple collation, by indexes of the
//! simple collation); a collection's own `_id` under its `_id` index's collation. Live, through
//! the test server's rules, which apply the collection's default as mongod does.
//!
//! - the schema builds, and `apply` leaves no second `{ _id: 1 }` index and no two indexes of
//!   one key pattern (`listIndexes`);
//! - renaming product `"abc"` leaves the copies of product `"ABC"` as they were, in a
//!   transaction and by the sync worker;
//! - a filtered counter counts on the server what the helper counts (`"Active"` is not
//!   `"active"`): reconcile finds no drift;
//! - the lookup of an order's product `"abc"` does not return product `"ABC"`;
//! - the commands of the joins and reads state the collation of their ids, a declared index of
//!   a reference's key pattern keeps its name beside the library's exact one, and the designs
//!   no index can serve (a part compared otherwise than its owner, a query of `_id` under
//!   another collation than the `_id` index's) are `Schema::build` errors.

mod common;

use std::time::Duration;

use common::{eventually, ready_within, shut_down};
use mongo_schema::bson::{doc, Document as BsonDocument};
use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

/// Products, keyed by a code whose case matters ("abc" and "ABC" are two products).
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "products")]
pub struct Product {
    #[serde(rename = "_id")]
    pub id: String,
    pub name: String,
}

/// Orders, compared case-insensitively (a customer's email, their notes), holding a reference
/// and two copies of a product, and the counts of their lines.
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "orders", collation(locale = "en", strength = 2))]
pub struct Order {
    #[serde(rename = "_id")]
    pub id: String,
    pub email: String,
    #[reference]
    pub product: Ref<Product>,
    #[extended_ref(to = Product, fields = "name", sync = "transactional")]
    pub item: OrderItem,
    #[extended_ref(to = Product, fields = "name", sync = "async")]
    pub gift: OrderGift,
    /// Every line.
    #[counter(of = Line)]
    pub lines: i64,
    /// The lines whose state is exactly "active".
    #[counter(of = Line, filter = r#"{ "state": "active" }"#)]
    pub active_lines: i64,
}

/// An order's lines, in a collection of the same collation.
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "order_lines", collation(locale = "en", strength = 2))]
pub struct Line {
    #[serde(rename = "_id")]
    pub id: String,
    #[reference]
    pub order: Ref<Order>,
    pub state: String,
}

/// A part stored under its order's `_id`, compared as its order's.
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(
    name = "order_notes",
    same_id_as = Order,
    optional_part,
    collation(locale = "en", strength = 2)
)]
pub struct OrderNote {
    #[serde(rename = "_id")]
    pub id: String,
    pub note: String,
}

fn schema() -> Schema {
    Schema::new()
        .model::<Product>()
        .model::<Order>()
        .model::<Line>()
        .model::<OrderNote>()
        .build()
        .unwrap_or_else(|e| panic!("the case-insensitive orders build: {e}"))
}

fn product(id: &str, name: &str) -> Product {
    Product {
        id: id.into(),
        name: name.into(),
    }
}

fn order(id: &str, product: &Product) -> Order {
    Order {
        id: id.into(),
        email: format!("{id}@x.io"),
        product: Ref::new(product.id.clone()),
        item: product.into(),
        gift: product.into(),
        lines: 0,
        active_lines: 0,
    }
}

/// Products "abc" and "ABC", and one order of each.
async fn applied(prefix: &str) -> (mongodb::Database, Schema) {
    let db = mongo_schema_testkit::database(prefix).await;
    let schema = schema();
    schema.apply(&db).await.unwrap();
    let (lower, upper) = (product("abc", "Nut"), product("ABC", "Bolt"));
    Product::collection(&db)
        .insert_many([&lower, &upper])
        .await
        .unwrap();
    Order::collection(&db)
        .insert_many([order("o-lower", &lower), order("o-upper", &upper)])
        .await
        .unwrap();
    (db, schema)
}

async fn stored_order(db: &mongodb::Database, id: &str) -> Order {
    Order::collection(db)
        .find_one(doc! { "_id": id })
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("order {id}"))
}

async fn list_indexes(db: &mongodb::Database, collection: &str) -> Vec<BsonDocument> {
    let reply = db
        .run_command(doc! { "listIndexes": collection })
        .await
        .unwrap();
    reply
        .get_document("cursor")
        .and_then(|c| c.get_array("firstBatch"))
        .unwrap()
        .iter()
        .filter_map(|i| i.as_document().cloned())
        .collect()
}

#[tokio::test]
async fn the_case_insensitive_orders_build_and_apply_one_index_per_key_pattern() {
    let (db, schema) = applied("collated_ids_apply").await;
    for collection in ["orders", "order_lines", "order_notes"] {
        let indexes = list_indexes(&db, collection).await;
        let keys: Vec<String> = indexes
            .iter()
            .map(|i| i.get_document("key").unwrap().to_string())
            .collect();
        // no second `{ _id: 1 }`, no two indexes of one key pattern
        let on_id = keys.iter().filter(|k| *k == "{ \"_id\": 1 }").count();
        assert_eq!(on_id, 1, "{collection}: {indexes:?}");
        let mut distinct = keys.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(distinct.len(), keys.len(), "{collection}: {indexes:?}");
        // the indexes of the library's comparisons of ids are of the simple collation, every
        // other one (the `_id` index) of the collection's
        for index in &indexes {
            let name = index.get_str("name").unwrap();
            let simple = index
                .get_document("collation")
                .map_or(true, |c| c.get_str("locale").ok() == Some("simple"));
            if name == "_id_" {
                continue;
            }
            assert!(simple, "{collection}.{name} compares ids exactly: {index}");
        }
    }
    let orders = list_indexes(&db, "orders").await;
    let mut names: Vec<&str> = orders.iter().map(|i| i.get_str("name").unwrap()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        ["_id_", "gift._id_1__id_1", "item._id_1__id_1", "product_1"],
        "{orders:?}"
    );
    // the fit describes each library query under the collation it runs with
    let spec = schema.collection("orders").unwrap();
    for query in &spec.library_queries {
        let fit = query.fit.as_ref().unwrap();
        assert!(fit.problem.is_none(), "{}: {fit:?}", query.name);
        let on_id = query.paths().all(|p| p == "_id");
        if on_id {
            assert_eq!(query.collation, spec.collation, "{}", query.name);
            assert_eq!(fit.index.as_deref(), Some("_id_"), "{}", query.name);
        } else {
            assert_eq!(
                query.collation,
                Some(mongo_schema::spec::Collation::simple()),
                "{}",
                query.name
            );
        }
    }
    // the server serves each under that collation by the index fitted (a line of each
    // collection, so that every query is explained over documents)
    Line::collection(&db)
        .insert_one(Line {
            id: "l1".into(),
            order: Ref::new("o-lower".into()),
            state: "active".into(),
        })
        .await
        .unwrap();
    OrderNote::collection(&db)
        .insert_one(OrderNote {
            id: "o-lower".into(),
            note: "fragile".into(),
        })
        .await
        .unwrap();
    let proof = schema.prove(&db).await.unwrap();
    assert!(proof.clone().into_result().is_ok(), "{proof}");
    // a second apply finds nothing to do
    let again = schema.apply(&db).await.unwrap();
    assert!(again.is_noop(), "{again}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renaming_product_abc_in_a_transaction_leaves_the_copies_of_abc_upper() {
    let (db, schema) = applied("collated_ids_tx").await;
    let report = schema
        .update_source::<Product>(
            &db,
            &"abc".to_owned(),
            doc! { "$set": { "name": "Hex nut" } },
        )
        .await
        .unwrap();
    assert_eq!(
        report.copies_rewritten,
        [("orders.item".to_owned(), 1)],
        "{report:?}"
    );
    assert_eq!(stored_order(&db, "o-lower").await.item.name, "Hex nut");
    let upper = stored_order(&db, "o-upper").await;
    assert_eq!(
        upper.item.name, "Bolt",
        "the copy of \"ABC\" is another product's"
    );
    assert_eq!(upper.gift.name, "Bolt");
    // reconcile agrees: nothing drifted but the async copy the worker did not run for
    let drift = schema.reconcile(&db).dry_run(true).await.unwrap();
    let item = drift
        .edges
        .iter()
        .find(|e| e.copy == "orders.item")
        .unwrap();
    assert_eq!((item.checked, item.drifted), (2, 0), "{drift}");
    // and a delete unsets nothing of "ABC"'s copies either
    schema
        .delete_source::<Product>(&db, &"abc".to_owned())
        .await
        .unwrap();
    assert_eq!(stored_order(&db, "o-upper").await.item.name, "Bolt");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renaming_product_abc_for_the_worker_leaves_the_copies_of_abc_upper() {
    let (db, schema) = applied("collated_ids_async").await;
    let worker = schema
        .sync_worker(&db)
        .name("collated-ids")
        .max_await_time(Duration::from_millis(100))
        .spawn();
    ready_within(&worker, Duration::from_secs(60)).await;
    // a plain driver write of the source: the worker follows it
    Product::collection(&db)
        .update_one(
            doc! { "_id": "abc" },
            doc! { "$set": { "name": "Hex nut" } },
        )
        .await
        .unwrap();
    eventually(
        Duration::from_secs(30),
        "the async copy of \"abc\"",
        || async { stored_order(&db, "o-lower").await.gift.name == "Hex nut" },
    )
    .await;
    // one fan-out wrote the copies of "abc": had it matched "ABC"'s, they would be rewritten
    // by now
    let upper = stored_order(&db, "o-upper").await;
    assert_eq!(
        upper.gift.name, "Bolt",
        "the copy of \"ABC\" is another product's"
    );
    assert_eq!(upper.item.name, "Bolt");
    shut_down(worker).await;
}

#[tokio::test]
async fn a_filtered_counter_counts_on_the_server_what_the_helper_counts() {
    let (db, schema) = applied("collated_ids_counter").await;
    let line = |id: &str, state: &str| Line {
        id: id.into(),
        order: Ref::new("o-lower".into()),
        state: state.into(),
    };
    for (id, state) in [("l1", "active"), ("l2", "Active"), ("l3", "closed")] {
        Order::LINES
            .add_with(&db, &line(id, state), &[&Order::ACTIVE_LINES])
            .await
            .unwrap();
    }
    // the helper tests the filter exactly: "Active" is not "active"
    let counted = stored_order(&db, "o-lower").await;
    assert_eq!((counted.lines, counted.active_lines), (3, 1));
    // reconcile recounts on the server (one aggregation of the lines), under the same
    // comparison: no drift
    let drift = schema.reconcile(&db).dry_run(true).await.unwrap();
    for subset in &drift.subsets {
        assert_eq!(subset.drifted, 0, "{drift}");
    }
    // the other order's counts were never touched
    let other = stored_order(&db, "o-upper").await;
    assert_eq!((other.lines, other.active_lines), (0, 0));
    // deleting the "Active" line moves the plain count only
    assert!(Order::LINES
        .delete_with(&db, &Ref::new("l2".into()), &[&Order::ACTIVE_LINES])
        .await
        .unwrap());
    let counted = stored_order(&db, "o-lower").await;
    assert_eq!((counted.lines, counted.active_lines), (2, 1));
}

#[tokio::test]
async fn the_lookup_of_product_abc_does_not_return_product_abc_upper() {
    let (db, _schema) = applied("collated_ids_lookup").await;
    let joined = Order::PRODUCT
        .lookup_in(&db)
        .filter(doc! { "_id": "o-lower" })
        .await
        .unwrap();
    assert_eq!(joined.len(), 1);
    let products: Vec<&str> = joined[0].related.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(products, ["abc"], "{joined:?}");
    // the other way: the orders of product "abc", from the products (no default collation)
    let joined = Order::PRODUCT
        .children_in(&db)
        .filter(doc! { "_id": "abc" })
        .await
        .unwrap();
    let orders: Vec<&str> = joined[0].related.iter().map(|o| o.id.as_str()).collect();
    assert_eq!(orders, ["o-lower"], "{joined:?}");
    // resolving the reference by `_id`
    let resolved = Ref::<Product>::new("abc".into())
        .resolve(&db)
        .await
        .unwrap();
    assert_eq!(resolved.map(|p| p.name), Some("Nut".to_owned()));
    // the library's commands on the orders state the simple collation
    let command = Order::PRODUCT.lookup().aggregate_command();
    assert_eq!(
        command.get_document("collation").ok(),
        Some(&doc! { "locale": "simple" }),
        "{command}"
    );
    let raw: Vec<BsonDocument> = common::all(
        db.collection::<BsonDocument>("orders")
            .find(doc! { "product": "abc" }),
    )
    .await;
    // (a query of one's own, sent without a collation, runs under the orders' default)
    assert_eq!(raw.len(), 2, "{raw:?}");
}

#[test]
fn the_library_s_joins_and_reads_state_the_collation_of_their_ids() {
    let simple = doc! { "locale": "simple" };
    // orders (case-insensitive) joined to their products on the products' `_id` (simple):
    // the aggregation on the orders states the simple collation, the products' find none
    let lookup = Order::PRODUCT.lookup();
    assert_eq!(
        lookup.aggregate_command().get_document("collation").ok(),
        Some(&simple)
    );
    let related = lookup.related_find_command("abc".into());
    assert!(!related.contains_key("collation"), "{related}");
    // the products' orders: the aggregation on the products needs none, the orders' find the
    // simple one (the reference's index has it)
    let children = Order::PRODUCT.children();
    assert!(!children.aggregate_command().contains_key("collation"));
    let related = children.related_find_command("abc".into());
    assert_eq!(related.get_document("collation").ok(), Some(&simple));
    // an order's lines: both collections case-insensitive, the join on held ids exact
    let lines = Line::ORDER.children();
    assert_eq!(
        lines.aggregate_command().get_document("collation").ok(),
        Some(&simple)
    );
    // a find of one's own of an order's lines: the collation to send with it
    assert_eq!(
        Line::ORDER.children_collation(),
        Some(mongo_schema::spec::Collation::simple())
    );
    assert_eq!(
        Order::PRODUCT.children_collation(),
        Some(mongo_schema::spec::Collation::simple())
    );
}

/// Designs the schema refuses or serves apart on a collection with a default collation.
mod designs {
    use mongo_schema::prelude::*;
    use serde::{Deserialize, Serialize};

    #[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
    #[collection(name = "skus")]
    pub struct Sku {
        #[serde(rename = "_id")]
        pub id: String,
    }

    /// A declared index of the reference's key pattern, under the collection's collation (for
    /// the service's case-insensitive lookups by the code), beside the library's exact one.
    #[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
    #[collection(name = "baskets", collation(locale = "en", strength = 2))]
    #[index(keys(sku = 1))]
    pub struct Basket {
        #[serde(rename = "_id")]
        pub id: ObjectId,
        #[reference]
        pub sku: Ref<Sku>,
    }

    /// A team's members, by an `ObjectId` reference under a declared case-insensitive index.
    #[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
    #[collection(name = "teams")]
    pub struct Team {
        #[serde(rename = "_id")]
        pub id: ObjectId,
    }

    #[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
    #[collection(name = "members", collation(locale = "en", strength = 2))]
    #[index(keys(team = 1, joined = -1))]
    pub struct Member {
        #[serde(rename = "_id")]
        pub id: ObjectId,
        #[reference]
        pub team: Ref<Team>,
        pub name: String,
        pub joined: DateTime,
    }

    /// A part compared otherwise than its owner.
    #[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
    #[collection(name = "sku_sheets", same_id_as = Sku, collation(locale = "en", strength = 2))]
    pub struct SkuSheet {
        #[serde(rename = "_id")]
        pub id: String,
    }

    /// Looked up by `_id` under another collation than the `_id` index's.
    #[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
    #[collection(name = "codes", collation(locale = "en", strength = 2))]
    #[query(name = "by_code_exactly", eq(id), collation(locale = "simple"))]
    pub struct Code {
        #[serde(rename = "_id")]
        pub id: String,
    }
}

#[tokio::test]
async fn a_declared_index_and_the_exact_one_of_its_key_pattern_apply_as_declared_once() {
    use designs::*;
    let db = mongo_schema_testkit::database("collated_twin_indexes").await;
    let schema = Schema::new()
        .model::<Sku>()
        .model::<Basket>()
        .build()
        .unwrap();
    let first = schema.apply(&db).await.unwrap();
    assert!(first.is_as_declared(), "{first}");
    let mut names: Vec<String> = list_indexes(&db, "baskets")
        .await
        .iter()
        .map(|i| i.get_str("name").unwrap().to_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["_id_", "sku_1", "sku_1_simple"]);
    // the plan found each by its name: the exact one was not taken for the collated one's
    // other name (a conflict, "not as declared", the record `partial` for good)
    let again = schema.apply(&db).await.unwrap();
    assert!(again.is_noop() && again.is_as_declared(), "{again}");
}

#[test]
fn a_declared_index_of_the_references_key_pattern_keeps_its_name_beside_the_exact_one() {
    use designs::*;
    let schema = Schema::new()
        .model::<Sku>()
        .model::<Basket>()
        .build()
        .unwrap();
    let baskets = schema.collection("baskets").unwrap();
    let indexes: Vec<(String, Option<String>)> = baskets
        .indexes
        .iter()
        .map(|i| {
            (
                i.name.clone(),
                i.collation.as_ref().map(ToString::to_string),
            )
        })
        .collect();
    assert_eq!(
        indexes,
        [
            (
                "sku_1".to_owned(),
                Some("{ locale: \"en\", strength: 2 }".to_owned())
            ),
            (
                "sku_1_simple".to_owned(),
                Some("{ locale: \"simple\" }".to_owned())
            ),
        ]
    );
    let children = baskets
        .library_queries
        .iter()
        .find(|q| q.name == "children by sku")
        .unwrap();
    assert_eq!(
        children.fit.as_ref().and_then(|f| f.index.as_deref()),
        Some("sku_1_simple")
    );
}

#[test]
fn an_objectid_reference_is_served_by_a_declared_index_of_the_collections_collation() {
    use designs::*;
    let schema = Schema::new()
        .model::<Team>()
        .model::<Member>()
        .build()
        .unwrap();
    let members = schema.collection("members").unwrap();
    // an ObjectId and a date compare alike under every collation: the declared index takes
    // the `_id` tie-break of the team's pages and serves the library's exact reads too
    assert_eq!(members.indexes.len(), 1, "{:?}", members.indexes);
    let index = &members.indexes[0];
    assert_eq!(index.name, "team_1_joined_-1__id_-1");
    assert_eq!(
        index.collation,
        Some(mongo_schema::spec::Collation::new("en").strength(2))
    );
    for query in &members.library_queries {
        assert_eq!(
            query.collation,
            Some(mongo_schema::spec::Collation::simple()),
            "{}",
            query.name
        );
        assert_eq!(
            query.fit.as_ref().and_then(|f| f.index.as_deref()),
            Some("team_1_joined_-1__id_-1"),
            "{}",
            query.name
        );
    }
}

#[test]
fn a_part_compared_otherwise_than_its_owner_and_an_id_query_of_another_collation_are_refused() {
    use designs::*;
    let error = Schema::new()
        .model::<Sku>()
        .model::<SkuSheet>()
        .build()
        .unwrap_err()
        .to_string();
    assert!(
        // display-text: the build error names both collations of the part and its owner
        error.contains("`sku_sheets` is stored under the `_id` of `skus`, but compares `_id`s under { locale: \"en\", strength: 2 } where `skus` compares them under the simple collation"),
        "{error}"
    );
    let error = Schema::new()
        .model::<Code>()
        .build()
        .unwrap_err()
        .to_string();
    assert!(
        // display-text: the build error names the query, both collations and mongod's rule
        error.contains("query `by_code_exactly` of `codes` compares `_id` under { locale: \"simple\" }, and the `_id` index compares it under { locale: \"en\", strength: 2 }: mongod allows no other index on `{ _id: 1 }`"),
        "{error}"
    );
}
