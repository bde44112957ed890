//! One stored form per id: for each family of `_id` (ObjectId, string, i64, a uuid through
//! bson's helper, a uuid kept as subtype 0 with `stored_as`, a composite struct, a newtype),
//! the copies of a customer in its orders, the order's reference, the customer's subset of
//! orders, the pages of a customer's orders through the extended reference's relation, and
//! `resolve_all` all write the id exactly as the customer's own `_id` is stored, so that a
//! rename by each sync strategy reaches every copy and reconcile repairs what was corrupted.
//!
//! Positive control: with the id encoded otherwise than stored (a uuid with a helper encoded by
//! its plain serde path, as before this round), `update_source` finds no customer, the copies
//! stay old, the page is empty and the resolve reports the customer missing; each step below
//! asserts its exact figures.

mod common;

use std::time::Duration;

use common::{eventually, ready};
use futures_util::TryStreamExt;
use mongo_schema::bson::{doc, Binary, Bson, Document as BsonDocument};
use mongo_schema::prelude::*;
use serde::{Deserialize, Serialize};

/// The `_id` of a composite key.
#[derive(BsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct CustomerKey {
    pub region: String,
    pub n: i32,
}

/// A newtype id.
#[derive(BsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct CustomerId(pub String);

macro_rules! id_family {
    ($family:ident, $id:ty, [$(#[$id_attr:meta])*], $fresh:expr) => {
        mod $family {
            use super::*;

            #[derive(Document, Serialize, Deserialize, Clone, Debug, PartialEq)]
            #[collection(name = "customers")]
            pub struct Customer {
                #[serde(rename = "_id")]
                $(#[$id_attr])*
                pub id: $id,
                pub name: String,
                #[subset(of = Order, max = 2, sort = "-placed_at", count = "order_count")]
                pub recent: Vec<OrderPreview>,
                pub order_count: i64,
            }

            #[derive(BsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
            pub struct OrderPreview {
                #[serde(rename = "_id")]
                pub id: ObjectId,
                pub placed_at: i64,
            }

            impl From<&Order> for OrderPreview {
                fn from(order: &Order) -> Self {
                    OrderPreview {
                        id: order.id,
                        placed_at: order.placed_at,
                    }
                }
            }

            #[derive(Document, Serialize, Deserialize, Clone, Debug, PartialEq)]
            #[collection(name = "orders")]
            #[index(keys("customer._id" = 1, placed_at = -1))]
            pub struct Order {
                #[serde(rename = "_id")]
                pub id: ObjectId,
                #[reference]
                pub buyer: Ref<Customer>,
                #[extended_ref(to = Customer, fields = "name", sync = "transactional")]
                pub customer: OrderCustomer,
                #[extended_ref(to = Customer, fields = "name", sync = "async")]
                pub watcher: OrderWatcher,
                #[extended_ref(to = Customer, fields = "name", sync = "reconcile")]
                pub auditor: OrderAuditor,
                pub placed_at: i64,
            }

            fn order(customer: &Customer, placed_at: i64) -> Order {
                Order {
                    id: ObjectId::new(),
                    buyer: customer.to_ref(),
                    customer: OrderCustomer::from(customer),
                    watcher: OrderWatcher::from(customer),
                    auditor: OrderAuditor::from(customer),
                    placed_at,
                }
            }

            #[tokio::test]
            async fn copies_pages_resolves_and_subsets_follow_the_stored_id() {
                let fresh = $fresh;
                let db = mongo_schema_testkit::database(concat!("identity_", stringify!($family))).await;
                let schema = Schema::new()
                    .model::<Customer>()
                    .model::<Order>()
                    .build()
                    .unwrap();
                schema.apply(&db).await.unwrap();
                let customer = |i: u32, name: &str| Customer {
                    id: fresh(i),
                    name: name.into(),
                    recent: Vec::new(),
                    order_count: 0,
                };
                let (ana, bob) = (customer(1, "Ana"), customer(2, "Bob"));
                Customer::collection(&db)
                    .insert_many([&ana, &bob])
                    .await
                    .unwrap();
                let mut anas = Vec::new();
                for k in 0..25 {
                    let o = order(&ana, 1_000 + k);
                    Customer::RECENT.add(&db, &o).await.unwrap();
                    anas.push(o);
                }
                for k in 0..5 {
                    Customer::RECENT.add(&db, &order(&bob, 2_000 + k)).await.unwrap();
                }

                // one stored form: the customer's `_id` is the copies' `_id` and the reference
                let raw = |name: &str| db.collection::<BsonDocument>(name);
                let stored_id = raw("customers")
                    .find_one(doc! { "name": "Ana" })
                    .await
                    .unwrap()
                    .unwrap()
                    .get("_id")
                    .cloned()
                    .unwrap();
                assert_eq!(ana.to_ref().to_bson(), stored_id, "Ref::to_bson");
                let holders = |path: &'static str, name: &'static str| {
                    let (db, stored_id) = (db.clone(), stored_id.clone());
                    async move {
                        db.collection::<BsonDocument>("orders")
                            .count_documents(doc! { format!("{path}._id"): &stored_id, format!("{path}.name"): name })
                            .await
                            .unwrap()
                    }
                };
                assert_eq!(holders("customer", "Ana").await, 25);
                assert_eq!(
                    raw("orders").count_documents(doc! { "buyer": &stored_id }).await.unwrap(),
                    25,
                    "the reference is stored as the id"
                );

                // transactional: the rename and every copy in one transaction
                let worker = schema.sync_worker(&db).name(concat!("identity-", stringify!($family))).spawn();
                ready(&worker).await;
                let renamed = schema
                    .update_source::<Customer>(&db, &ana.id, doc! { "$set": { "name": "Ana T" } })
                    .await
                    .unwrap();
                assert_eq!(renamed.total_rewritten(), 25, "{renamed:?}");
                assert_eq!(renamed.pending_async, ["orders.watcher"], "the worker's part is named");
                assert_eq!(holders("customer", "Ana T").await, 25);
                // async: the worker follows the same change
                eventually(Duration::from_secs(30), "async copies follow the rename", || {
                    let holders = holders("watcher", "Ana T");
                    async move { holders.await == 25 }
                })
                .await;
                common::shut_down(worker).await;

                // reconcile: Ana's 25 are stale after the rename, and 3 of Bob's are corrupted
                raw("orders")
                    .update_many(
                        doc! { "auditor.name": "Bob", "placed_at": { "$lt": 2_003 } },
                        doc! { "$set": { "auditor.name": "B0b" } },
                    )
                    .await
                    .unwrap();
                let report = schema.reconcile(&db).await.unwrap();
                let auditor = report.edges.iter().find(|e| e.copy == "orders.auditor").unwrap();
                assert_eq!((auditor.drifted, auditor.repaired, auditor.missing_sources), (28, 28, 0), "{report}");
                assert_eq!(holders("auditor", "Ana T").await, 25);
                assert_eq!(schema.reconcile(&db).dry_run(true).await.unwrap().drifted(), 0);

                // pages of Ana's orders through the extended reference, newest first, as the
                // hand-written query returns them
                let expected: Vec<ObjectId> = Order::collection(&db)
                    .find(doc! { "customer._id": &stored_id })
                    .sort(doc! { "placed_at": -1, "_id": -1 })
                    .await
                    .unwrap()
                    .try_collect::<Vec<Order>>()
                    .await
                    .unwrap()
                    .into_iter()
                    .map(|o| o.id)
                    .collect();
                assert_eq!(expected.len(), 25);
                let mut pages = Vec::new();
                let mut after = None;
                loop {
                    let result = Order::CUSTOMER.page_in(&db, &ana.to_ref()).limit(10).after(after.take()).await.unwrap();
                    pages.push(result.items.iter().map(|o| o.id).collect::<Vec<_>>());
                    match result.next {
                        Some(next) => after = Some(next),
                        None => break,
                    }
                }
                assert_eq!(pages.iter().map(Vec::len).collect::<Vec<_>>(), [10, 10, 5]);
                assert_eq!(pages.concat(), expected);

                // resolve, in reference order
                let resolved = Ref::resolve_all(&db, &[bob.to_ref(), ana.to_ref()]).await.unwrap();
                let names: Vec<&str> = resolved.documents.iter().map(|c| c.name.as_str()).collect();
                assert_eq!(names, ["Bob", "Ana T"]);
                assert!(resolved.missing.is_empty());

                // subset: deleting Ana's newest order refills her previews and moves the count
                assert!(Customer::RECENT.delete(&db, &anas[24].to_ref()).await.unwrap());
                let stored = Customer::collection(&db)
                    .find_one(ana.to_ref().filter())
                    .await
                    .unwrap()
                    .expect("found by its reference's filter");
                assert_eq!(stored.order_count, 24);
                let previews: Vec<i64> = stored.recent.iter().map(|p| p.placed_at).collect();
                assert_eq!(previews, [1_023, 1_022]);
                let _ = Bson::Null;
            }
        }
    };
}

id_family!(object_id, ObjectId, [], |_: u32| ObjectId::new());
id_family!(string, String, [], |i: u32| format!("customer-{i}"));
id_family!(long, i64, [], |i: u32| 10_000_000_000 + i64::from(i));
id_family!(
    uuid_subtype_4,
    uuid::Uuid,
    [#[serde(with = "mongo_schema::bson::serde_helpers::uuid_1_as_binary")]],
    |i: u32| uuid::Uuid::from_u128(0x5000_0000_0000_4000_8000_0000_0000_0000 + u128::from(i))
);
id_family!(
    uuid_subtype_0,
    uuid::Uuid,
    [#[schema(stored_as = Binary)]],
    |i: u32| uuid::Uuid::from_u128(0x6000_0000_0000_4000_8000_0000_0000_0000 + u128::from(i))
);
id_family!(composite, CustomerKey, [], |i: u32| CustomerKey {
    region: "eu".into(),
    n: i as i32,
});
id_family!(newtype, CustomerId, [], |i: u32| CustomerId(format!(
    "c{i}"
)));
