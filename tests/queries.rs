//! Declared queries on the real server (an order service, as the issue's trial): the indexes
//! `Schema::build` derives by ESR are created by `apply`, each declared query returns what the
//! hand-written query it replaces returns, in the same order, with its name as `comment`,
//! served by the fitted index; `prove` fails when that index is gone; client values never
//! become operators; a bad `index =`, and a partial filter on a value never stored, are
//! `Schema::build` errors.

mod common;

use futures_util::TryStreamExt;
use mongo_schema::bson::{doc, oid::ObjectId, DateTime, Document as BsonDocument};
use mongo_schema::field;
use mongo_schema::prelude::*;
use mongo_schema::query::{Filter, SortVerdict};
use mongo_schema::IndexReason;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "customers")]
pub struct Customer {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub name: String,
}

#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
#[serde(rename_all = "snake_case")]
pub enum OrderStatus {
    Placed,
    Paid,
    Shipped,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "orders")]
#[serde(rename_all = "camelCase")]
#[query(name = "by_status", eq(status), sort(placed_at = -1), limit = 10)]
#[query(name = "recent_of_customer", eq("customer._id"), range(placed_at), sort(placed_at = -1))]
#[query(name = "open_orders", any_of(status, max = 2), sort(placed_at = -1), limit = 15)]
#[query(name = "totals_by_status", eq(status), sort(total = -1), project = OrderRow, limit = 5)]
#[query(name = "customer_over_total", eq("customer._id"), range(total))]
pub struct Order {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[extended_ref(to = Customer, fields = "name", sync = "transactional")]
    pub customer: OrderCustomer,
    pub status: OrderStatus,
    pub total: i64,
    pub placed_at: DateTime,
    pub meta: mongo_schema::bson::Document,
}

/// The rows of `totals_by_status`: a projection of `Order`.
#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct OrderRow {
    pub status: OrderStatus,
    pub total: i64,
}

fn schema() -> Schema {
    Schema::new()
        .model::<Customer>()
        .model::<Order>()
        .build()
        .expect("the order schema is consistent")
}

async fn seeded(prefix: &str) -> (mongodb::Database, Vec<Customer>, Vec<Order>) {
    let db = mongo_schema_testkit::database(prefix).await;
    schema().apply(&db).await.unwrap();
    let customers: Vec<Customer> = (0..5)
        .map(|i| Customer {
            id: ObjectId::new(),
            name: format!("customer {i}"),
        })
        .collect();
    Customer::collection(&db)
        .insert_many(&customers)
        .await
        .unwrap();
    let statuses = [OrderStatus::Placed, OrderStatus::Paid, OrderStatus::Shipped];
    let orders: Vec<Order> = (0..300)
        .map(|i: i64| Order {
            id: ObjectId::new(),
            customer: OrderCustomer::from(&customers[(i % 5) as usize]),
            status: statuses[(i % 3) as usize],
            total: (i * 7919) % 1000,
            placed_at: DateTime::from_millis(1_700_000_000_000 + (i * 37 % 300) * 60_000),
            meta: doc! { "channel": if i % 2 == 0 { "web" } else { "shop" } },
        })
        .collect();
    Order::collection(&db).insert_many(&orders).await.unwrap();
    (db, customers, orders)
}

async fn hand_written<T: serde::de::DeserializeOwned + Send + Sync>(
    db: &mongodb::Database,
    filter: BsonDocument,
    sort: BsonDocument,
    limit: Option<i64>,
    projection: Option<BsonDocument>,
) -> Vec<T> {
    let orders = db.collection::<T>("orders");
    let mut find = orders.find(filter).sort(sort);
    if let Some(limit) = limit {
        find = find.limit(limit);
    }
    if let Some(projection) = projection {
        find = find.projection(projection);
    }
    find.await.unwrap().try_collect().await.unwrap()
}

#[test]
fn build_derives_one_index_per_group_of_queries_by_esr() {
    let schema = schema();
    let orders = schema.collection("orders").unwrap();
    let keys: Vec<String> = orders.indexes.iter().map(|i| i.keys.to_string()).collect();
    // by_status and open_orders share { status, placedAt: -1 }: `$in` with at most 2 values
    // merges 2 scans in sort order
    let status = orders
        .indexes
        .iter()
        .find(|i| i.keys == doc! { "status": 1, "placedAt": -1 })
        .unwrap_or_else(|| panic!("{keys:?}"));
    let IndexReason::Query { queries } = &status.reasons[0] else {
        panic!("{:?}", status.reasons)
    };
    assert_eq!(queries.len(), 2, "{queries:?}");
    assert!(
        queries.contains(&"by_status".to_owned()) && queries.contains(&"open_orders".to_owned())
    );
    // ESR: the customer's id (equality), then the sort on placedAt, which is also the range
    let customer = orders
        .indexes
        .iter()
        .find(|i| i.keys == doc! { "customer._id": 1, "placedAt": -1 })
        .unwrap_or_else(|| panic!("{keys:?}"));
    assert!(
        customer
            .reasons
            .iter()
            .any(|r| matches!(r, IndexReason::Query { .. })),
        "{:?}",
        customer.reasons
    );
    // the fan-out walks the holders in `_id` order: its own index, never the bare copied id
    let fan_out = orders
        .indexes
        .iter()
        .find(|i| i.keys == doc! { "customer._id": 1, "_id": 1 })
        .unwrap_or_else(|| panic!("{keys:?}"));
    assert!(fan_out
        .reasons
        .iter()
        .any(|r| matches!(r, IndexReason::FanOut { .. })));
    assert!(!orders
        .indexes
        .iter()
        .any(|i| i.keys == doc! { "customer._id": 1 }));
    assert!(orders
        .indexes
        .iter()
        .any(|i| i.keys == doc! { "status": 1, "total": -1 }));
    for query in &orders.queries {
        let fit = query.fit.as_ref().unwrap();
        if query.name == "customer_over_total" {
            // its equality is the prefix of the index derived for `recent_of_customer`
            assert_eq!(
                fit.index.as_deref(),
                Some("customer._id_1_placedAt_-1"),
                "{query:?}"
            );
            continue;
        }
        assert!(fit.index.is_some() && fit.derived, "{query:?}");
    }
    let open = common::declared_query(orders, "open_orders");
    assert_eq!(open.fit.as_ref().unwrap().merge_scans, 2);
    let report = schema.report();
    assert!(
        report.contains("| `by_status` | `status` = | `placedAt`: -1 |"),
        "{report}"
    );
}

#[tokio::test]
async fn declared_queries_return_what_the_hand_written_ones_do_through_the_fitted_index() {
    let (db, customers, _) = seeded("q_orders").await;
    let names: Vec<String> = Order::collection(&db).list_index_names().await.unwrap();
    assert!(
        names.contains(&"status_1_placedAt_-1".to_owned()),
        "{names:?}"
    );
    assert!(
        names.contains(&"customer._id_1_placedAt_-1".to_owned()),
        "{names:?}"
    );

    let (client, log) = mongo_schema_testkit::monitored_client().await;
    let monitored = client.database(db.name());
    let declared = Order::by_status(&monitored, &OrderStatus::Paid)
        .await
        .unwrap();
    let find = log
        .commands()
        .into_iter()
        .find(|c| c.name == "find")
        .unwrap();
    assert_eq!(find.command.get_str("comment").unwrap(), "by_status");
    assert_eq!(
        find.command.get_document("filter").unwrap(),
        &doc! { "status": "paid" }
    );
    let hand: Vec<Order> = hand_written(
        &db,
        doc! { "status": "paid" },
        doc! { "placedAt": -1 },
        Some(10),
        None,
    )
    .await;
    assert_eq!(declared.len(), 10);
    assert_eq!(declared, hand);

    let since = DateTime::from_millis(1_700_000_000_000 + 100 * 60_000);
    let declared = Order::recent_of_customer(&db, &customers[2].id, since..)
        .await
        .unwrap();
    let hand: Vec<Order> = hand_written(
        &db,
        doc! { "customer._id": customers[2].id, "placedAt": { "$gte": since } },
        doc! { "placedAt": -1 },
        None,
        None,
    )
    .await;
    assert!(!declared.is_empty());
    assert_eq!(declared, hand);

    let declared = Order::open_orders(&db, &[OrderStatus::Placed, OrderStatus::Paid])
        .await
        .unwrap();
    let hand: Vec<Order> = hand_written(
        &db,
        doc! { "status": { "$in": ["placed", "paid"] } },
        doc! { "placedAt": -1 },
        Some(15),
        None,
    )
    .await;
    assert_eq!(declared, hand);

    let rows = Order::totals_by_status(&db, &OrderStatus::Shipped)
        .await
        .unwrap();
    let hand: Vec<OrderRow> = hand_written(
        &db,
        doc! { "status": "shipped" },
        doc! { "total": -1 },
        Some(5),
        Some(doc! { "status": 1, "total": 1, "_id": 0 }),
    )
    .await;
    assert_eq!(rows.len(), 5);
    assert_eq!(rows, hand);

    // every declared query in explain, on the index the schema fitted
    for (name, plan) in [
        (
            "status_1_placedAt_-1",
            Order::by_status(&db, &OrderStatus::Paid)
                .explain()
                .await
                .unwrap(),
        ),
        (
            "customer._id_1_placedAt_-1",
            Order::recent_of_customer(&db, &customers[2].id, since..)
                .explain()
                .await
                .unwrap(),
        ),
    ] {
        assert_eq!(plan.indexes, [name], "{plan}");
    }
}

#[tokio::test]
async fn an_in_list_longer_than_declared_is_refused_before_anything_is_sent() {
    let (db, _, _) = seeded("q_in_max").await;
    let (client, log) = mongo_schema_testkit::monitored_client().await;
    let monitored = client.database(db.name());
    log.clear();
    let error = Order::open_orders(
        &monitored,
        &[OrderStatus::Placed, OrderStatus::Paid, OrderStatus::Shipped],
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&error, mongo_schema::Error::BoundExceeded { path, max: 2, attempted: 3, .. } if path == "status"),
        "{error:#?}"
    );
    assert_eq!(log.count("find"), 0);
}

#[tokio::test]
async fn prove_names_the_index_of_every_query_and_fails_when_it_is_gone() {
    let (db, customers, _) = seeded("q_prove").await;
    let schema = schema();
    let proof = schema.prove(&db).await.unwrap();
    println!("{proof}");
    assert_eq!(proof.failures().count(), 0, "{proof}");
    let declared: Vec<_> = proof.queries.iter().filter(|q| q.declared).collect();
    assert_eq!(declared.len(), 5);
    for q in &declared {
        if q.note.is_some() && q.query == "customer_over_total" {
            // SecantusDB scans when a condition names a field outside the index; hinted, it
            // walks the index mongod's planner would choose: said, not failed
            assert!(proof.sorts_in_memory && q.collscan, "{proof}");
            assert!(q.failure.is_none(), "{proof}");
        } else if q.note.is_some() {
            // SecantusDB took another index with the query's equality (it does not rank
            // plans by sort order, mongod does): said, not failed
            assert!(proof.sorts_in_memory, "{proof}");
            assert_eq!(q.query, "totals_by_status", "{proof}");
            assert!(q.used_indexes[0].starts_with("status_1"), "{proof}");
        } else {
            assert_eq!(q.used_indexes.first(), q.expected_index.as_ref(), "{proof}");
        }
    }
    if proof.sorts_in_memory {
        // the scan of a condition outside the index was seen and said (the control: without the
        // hinted walk it is a failure above)
        assert!(
            declared
                .iter()
                .any(|q| q.query == "customer_over_total" && q.collscan && q.note.is_some()),
            "{proof}"
        );
        // SecantusDB adds a SORT where mongod walks the index: no verdict, said so
        assert!(declared
            .iter()
            .filter(|q| q.query != "customer_over_total") // no sort
            .all(|q| q.sort == SortVerdict::UnknownOnThisServer));
        // display-text: the proof's sentence, read by a person
        assert!(proof.to_string().contains("sorts in memory"));
    } else {
        assert!(
            declared.iter().all(|q| q.sort == SortVerdict::InIndexOrder),
            "{proof}"
        );
    }
    // the positive control: without its index the customer's query is a failure
    Order::collection(&db)
        .drop_index("customer._id_1_placedAt_-1")
        .await
        .unwrap();
    let proof = schema.prove(&db).await.unwrap();
    let failed: Vec<&str> = proof.failures().map(|q| q.query.as_str()).collect();
    assert!(failed.contains(&"recent_of_customer"), "{proof}");
    assert!(
        matches!(proof.clone().into_result(), Err(mongo_schema::Error::NotServed { queries, .. }) if queries.len() == failed.len()),
        "{proof}"
    );
    let _ = customers;
}

#[tokio::test]
async fn a_client_value_never_becomes_an_operator() {
    let (db, _, orders) = seeded("q_hostile").await;
    // what a careless service would send: the client's JSON pasted into the filter
    let hostile = doc! { "$ne": null };
    let pasted = Order::collection(&db)
        .count_documents(doc! { "meta": hostile.clone() })
        .await
        .unwrap();
    assert_eq!(
        pasted as usize,
        orders.len(),
        "the control: an operator matches everything"
    );
    let filter = Filter::new()
        .eq(field!(Order, meta), &hostile)
        .build()
        .unwrap();
    assert_eq!(filter, doc! { "meta": { "$eq": { "$ne": null } } });
    let typed = Order::collection(&db)
        .count_documents(filter)
        .await
        .unwrap();
    assert_eq!(
        typed, 0,
        "compared as a value, it matches no stored document"
    );
    let web = Filter::new()
        .eq(field!(Order, meta), &doc! { "channel": "web" })
        .build()
        .unwrap();
    assert_eq!(
        Order::collection(&db).count_documents(web).await.unwrap() as usize,
        orders.len() / 2
    );
}

#[tokio::test]
async fn index_usage_counts_the_queries_of_the_derived_index() {
    let (db, _, _) = seeded("q_usage").await;
    let schema = schema();
    for _ in 0..3 {
        Order::by_status(&db, &OrderStatus::Placed).await.unwrap();
    }
    let usage = schema.index_usage(&db).await.unwrap();
    let status = usage
        .iter()
        .find(|u| u.collection == "orders" && u.index == "status_1_placedAt_-1")
        .unwrap_or_else(|| panic!("{usage:?}"));
    assert!(status.in_schema);
    assert_eq!(status.serves, ["by_status", "open_orders"]);
    assert!(usage.iter().any(|u| u.index == "_id_" && u.in_schema));
    if mongo_schema_testkit::is_secantus(&db).await {
        // SecantusDB lists the indexes but keeps no access counters (docs/secantus-leniencies.md)
        assert_eq!(status.ops, 0, "{status:?}");
    } else {
        assert!(status.ops >= 3, "{status:?}");
        assert!(status.since.is_some(), "{status:?}");
    }
}

// ---- Schema::build errors ------------------------------------------------------------------

#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Sending {
    pub sent_at: DateTime,
}

// a dotted path through an embedded struct is stored under names only that struct's derive
// knows: this index is fitted by `Schema::build` (one on the struct's own fields, or the `_id`
// of a copy, is fitted at compile time: tests/ui/query/index_cannot_serve*.rs)
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "shipments")]
#[index(keys("carrier" = 1, "sending.sentAt" = 1, "priority" = -1), name = "by_carrier")]
#[query(name = "late", eq(carrier), range(sending.sent_at), sort(priority = -1), index = "by_carrier")]
#[serde(rename_all = "camelCase")]
pub struct Shipment {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub carrier: String,
    pub sending: Sending,
    pub priority: i32,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "invoices")]
#[index(keys(due = 1), partial = r#"{ "status": "Paid" }"#)]
pub struct Invoice {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub status: OrderStatus,
    pub due: DateTime,
}

#[test]
fn an_index_that_cannot_serve_its_query_is_a_build_error_naming_the_rule_and_the_fix() {
    let error = Schema::new().model::<Shipment>().build().unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains("query `late` of `shipments` cannot be served by index `by_carrier`"),
        "{text}"
    );
    assert!(text.contains("sending.sentAt"), "{text}");
    assert!(
        text.contains("{ carrier: 1, priority: -1, sending.sentAt: 1 }"),
        "{text}"
    );
}

#[test]
fn a_partial_filter_on_a_value_never_stored_is_a_build_error() {
    let error = Schema::new().model::<Invoice>().build().unwrap_err();
    let text = error.to_string();
    assert!(text.contains("\"Paid\""), "{text}");
    assert!(text.contains("\"paid\""), "{text}");
    assert!(text.contains("stay empty"), "{text}");
}
