//! One element per condition (issue 49, item 1): a declared query's conditions on paths under
//! one array of sub-documents are one `$elemMatch` on that array, so `range(items.price)`
//! 10..20 returns only the orders with one item priced in it and `eq(items.sku, items.qty)`
//! only those with one item holding both; `Filter::same_element` sends the same; and the fit
//! of such a query follows mongod's multikey rules (bounds compound within one element, a
//! bounded array path gives no sort).
//!
//! The control of each: the flat filter the query sent before, run on the same server, finds
//! the order whose items match across elements (the test server answers it as mongod does,
//! with the index as without it: the testkit's `array-conditions` rule).

mod common;

use mongo_schema::bson::{doc, oid::ObjectId};
use mongo_schema::field;
use mongo_schema::prelude::*;
use mongo_schema::query::{Filter, QuerySpec};
use serde::{Deserialize, Serialize};

#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Item {
    pub sku: String,
    pub qty: i32,
    pub price: i64,
}

// queries sharing arguments trip clippy's `duplicated_attributes` (rust-lang/rust-clippy#13238)
#[allow(clippy::duplicated_attributes)]
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "ac_orders")]
#[index(keys("items.sku" = 1, "items.qty" = 1), name = "sku_qty")]
#[query(name = "priced_between", range(items.price))]
#[query(name = "holding", eq(items.sku, items.qty), index = "sku_qty")]
#[query(name = "of_customer_priced", eq(customer), range(items.price), limit = 10)]
#[query(name = "sku_by_price", eq(items.sku), sort(items.price = 1))]
#[query(name = "customer_by_price", eq(customer), sort(items.price = 1))]
pub struct Order {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub customer: String,
    #[embed(max = 20)]
    pub items: Vec<Item>,
}

fn item(sku: &str, qty: i32, price: i64) -> Item {
    Item {
        sku: sku.to_owned(),
        qty,
        price,
    }
}

fn schema() -> Schema {
    Schema::new()
        .model::<Order>()
        .build()
        .expect("the orders schema is consistent")
}

/// The orders: `across` matches both queries only across its items (5 and 100; `a` with 1 and
/// `b` with 2), `priced` and `held` in one item, `neither` not at all.
struct Seeded {
    across: ObjectId,
    priced: ObjectId,
    held: ObjectId,
    neither: ObjectId,
}

async fn seed(db: &mongo_schema::mongodb::Database) -> Seeded {
    let order = |items: Vec<Item>| Order {
        id: ObjectId::new(),
        customer: "ada".to_owned(),
        items,
    };
    let across = order(vec![item("a", 1, 5), item("b", 2, 100)]);
    let priced = order(vec![item("c", 7, 15)]);
    let held = order(vec![item("a", 2, 30), item("d", 1, 40)]);
    let neither = order(vec![item("e", 2, 30)]);
    let seeded = Seeded {
        across: across.id,
        priced: priced.id,
        held: held.id,
        neither: neither.id,
    };
    Order::collection(db)
        .insert_many([across, priced, held, neither])
        .await
        .unwrap();
    seeded
}

fn ids(orders: &[Order]) -> Vec<ObjectId> {
    let mut ids: Vec<ObjectId> = orders.iter().map(|o| o.id).collect();
    ids.sort();
    ids
}

fn sorted(mut ids: Vec<ObjectId>) -> Vec<ObjectId> {
    ids.sort();
    ids
}

/// The ids the flat `filter` finds, sent as it is.
async fn ids_of(
    db: &mongo_schema::mongodb::Database,
    filter: mongo_schema::bson::Document,
) -> Vec<ObjectId> {
    let found: Vec<Order> = common::all(Order::collection(db).find(filter)).await;
    ids(&found)
}

#[tokio::test]
async fn a_range_under_an_array_is_one_items_and_sends_elem_match() {
    let db = mongo_schema_testkit::database("array_conditions_range").await;
    schema().apply(&db).await.unwrap();
    let seeded = seed(&db).await;

    let query = Order::priced_between(&db, 10..20);
    let sent = query.command().unwrap();
    // the orders first (what a caller sees), then the filter that gives them
    let found = query.await.unwrap();
    assert_eq!(ids(&found), [seeded.priced]);
    assert_eq!(
        sent.get_document("filter").unwrap(),
        &doc! { "items": { "$elemMatch": { "price": { "$gte": 10_i64, "$lt": 20_i64 } } } }
    );
    assert_eq!(Order::priced_between(&db, 10..20).count().await.unwrap(), 1);

    // the control: the flat filter it sent before finds the order whose items cost 5 and 100
    let flat = ids_of(
        &db,
        doc! { "items.price": { "$gte": 10_i64, "$lt": 20_i64 } },
    )
    .await;
    assert_eq!(flat, sorted(vec![seeded.across, seeded.priced]));

    // beside a condition outside the array, in the function's argument order
    let query = Order::of_customer_priced(&db, "ada", 10..=30);
    assert_eq!(
        query.filter().unwrap(),
        &doc! {
            "customer": "ada",
            "items": { "$elemMatch": { "price": { "$gte": 10_i64, "$lte": 30_i64 } } },
        }
    );
    let found = query.await.unwrap();
    assert_eq!(
        ids(&found),
        sorted(vec![seeded.priced, seeded.held, seeded.neither])
    );
}

#[tokio::test]
async fn two_equalities_under_an_array_hold_for_one_item() {
    let db = mongo_schema_testkit::database("array_conditions_eq").await;
    schema().apply(&db).await.unwrap();
    let seeded = seed(&db).await;

    let query = Order::holding(&db, "a", &2);
    let sent = query.filter().unwrap().clone();
    let found = query.await.unwrap();
    assert_eq!(ids(&found), [seeded.held]);
    assert_eq!(
        sent,
        doc! { "items": { "$elemMatch": { "sku": "a", "qty": 2 } } }
    );

    // the control: `a` with quantity 1 and `b` with 2 match the flat filter
    let flat = ids_of(&db, doc! { "items.sku": "a", "items.qty": 2 }).await;
    assert_eq!(flat, sorted(vec![seeded.across, seeded.held]));
    assert!(!flat.contains(&seeded.neither));
}

#[tokio::test]
async fn filter_same_element_sends_one_elem_match() {
    let db = mongo_schema_testkit::database("array_conditions_filter").await;
    schema().apply(&db).await.unwrap();
    let seeded = seed(&db).await;

    let across = Filter::<Order>::new()
        .eq(field!(Order, items.sku), "a")
        .eq(field!(Order, items.qty), &2);
    let one_item = Filter::<Order>::new()
        .eq(field!(Order, items.sku), "a")
        .same_element(field!(Order, items))
        .eq(field!(Order, items.qty), &2)
        .build()
        .unwrap();
    assert_eq!(ids_of(&db, one_item.clone()).await, [seeded.held]);
    assert_eq!(
        one_item,
        doc! { "items": { "$elemMatch": { "sku": "a", "qty": 2 } } }
    );
    // the same without `same_element`: across items
    assert_eq!(
        ids_of(&db, across.build().unwrap()).await,
        sorted(vec![seeded.across, seeded.held])
    );
    // and as the element type's own filter
    let element = Filter::<Order>::new()
        .elem_match(
            field!(Order, items),
            Filter::<Item>::new()
                .range(field!(Item, price), 10..20)
                .eq(field!(Item, sku), "c"),
        )
        .build()
        .unwrap();
    let ranged = Filter::<Order>::new()
        .range(field!(Order, items.price), 10_i64..20)
        .eq(field!(Order, items.sku), "c")
        .same_element(field!(Order, items))
        .build()
        .unwrap();
    assert_eq!(element, ranged);
    assert_eq!(ids_of(&db, ranged).await, [seeded.priced]);
}

#[test]
fn the_fit_compounds_the_bounds_within_one_element() {
    let schema = schema();
    let orders = schema.collection("ac_orders").unwrap();
    let query = |name: &str| {
        orders
            .queries
            .iter()
            .find(|q| q.name == name)
            .unwrap_or_else(|| panic!("query {name}"))
    };
    // pinned to `{ items.sku: 1, items.qty: 1 }`: both keys bounded, within one item
    let holding = query("holding");
    let fit = holding.fit.as_ref().expect("fitted");
    assert_eq!(fit.index.as_deref(), Some("sku_qty"), "{fit:?}");
    assert_eq!(fit.problem, None);
    // the control: the same conditions without `$elemMatch` (a spec of the flat filter) are
    // not both bounded by that index: mongod bounds one predicate per array outside one
    let flat = QuerySpec::library("flat holding")
        .eq("items.sku")
        .eq("items.qty")
        .index("sku_qty");
    let pinned = Schema::new()
        .collection(Order::collection_spec().query(flat))
        .build();
    let error = pinned
        .expect_err("the flat conditions are not both bounded")
        .to_string();
    // display-text: the build error names the query the index cannot serve
    assert!(error.contains("flat holding"), "{error}");

    // a sort on a path under the array beside a bound one: the index gives no order, and
    // `Schema::build` says so (mongod sorts it in memory)
    let sorted = query("sku_by_price");
    let fit = sorted.fit.as_ref().expect("fitted");
    assert!(fit.problem.is_some() && fit.index.is_none(), "{fit:?}");
    // the control: the same sort beside a condition outside the array is the index's order
    // (an unbounded multikey key gives one: jstests sort_array.js)
    let fit = query("customer_by_price").fit.as_ref().expect("fitted");
    assert!(fit.problem.is_none() && fit.index.is_some(), "{fit:?}");
}

#[tokio::test]
async fn prove_explains_the_elem_match_each_query_sends() {
    let db = mongo_schema_testkit::database("array_conditions_prove").await;
    let schema = schema();
    schema.apply(&db).await.unwrap();
    seed(&db).await;
    let proof = schema.prove(&db).await.unwrap();
    let holding = proof
        .queries
        .iter()
        .find(|q| q.query == "holding")
        .expect("holding proven");
    assert!(holding.failure.is_none(), "{proof}");
}

/// Orders read in pages by an item's price: a page's start would compare every item.
mod paged {
    use super::Item;
    use mongo_schema::prelude::*;
    use serde::{Deserialize, Serialize};

    #[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
    #[collection(name = "ac_paged_orders")]
    #[query(name = "by_price", eq(customer), sort(items.price = 1), limit = 10, pages)]
    pub struct PagedOrder {
        #[serde(rename = "_id")]
        pub id: ObjectId,
        pub customer: String,
        #[embed(max = 20)]
        pub items: Vec<Item>,
    }
}

#[test]
fn pages_sorted_on_a_path_under_an_array_are_a_build_error() {
    let error = Schema::new()
        .model::<paged::PagedOrder>()
        .build()
        .unwrap_err()
        .to_string();
    assert!(
        // display-text: the build error names the query, the sort path and the array it crosses
        error.contains(
            "query `by_price` of `ac_paged_orders` is read in pages and sorts on `items.price`, under the array `items`"
        ),
        "{error}"
    );
    // the control: the same sort without pages builds (`customer_by_price` of `schema()`)
    schema();
}
