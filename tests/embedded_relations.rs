//! References and frozen copies inside values embedded in documents: seed 003's snapshot, "the
//! price on an order line", as `#[extended_ref(sync = "frozen")]` on a field of the line, and a
//! `#[reference]` inside an embedded value, indexed on its full path.

mod common;

use mongo_schema::bson::{doc, Bson, Document as BsonDocument};
use mongo_schema::prelude::*;
use mongo_schema::{IndexReason, SyncStrategy};
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[collection(name = "products")]
pub struct Product {
    #[serde(rename = "_id")]
    pub id: String,
    pub name: String,
    pub price_cents: i64,
}

#[derive(Document, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[collection(name = "carriers")]
pub struct Carrier {
    #[serde(rename = "_id")]
    pub id: String,
    pub name: String,
}

/// One line of an order: what was bought, at the price of the day, and how many.
#[derive(BsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct OrderLine {
    #[extended_ref(to = Product, fields = "name, price_cents", sync = "frozen")]
    pub product: OrderLineProduct,
    pub quantity: i32,
}

#[derive(BsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Shipping {
    #[reference]
    pub carrier: Ref<Carrier>,
    pub eta: i64,
}

#[derive(Document, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[collection(name = "orders")]
pub struct Order {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[embed(max = 50)]
    pub lines: Vec<OrderLine>,
    pub shipping: Option<Shipping>,
}

fn schema() -> Schema {
    Schema::new()
        .model::<Product>()
        .model::<Carrier>()
        .model::<Order>()
        .build()
        .unwrap()
}

#[test]
fn the_holder_knows_the_copies_and_references_of_its_embedded_values() {
    let spec = Order::collection_spec();
    let copy = spec
        .copies
        .iter()
        .find(|c| c.path == "lines.product")
        .expect("the line's copy is the order's");
    assert_eq!(copy.strategy, SyncStrategy::Frozen);
    assert_eq!(copy.fields, ["name", "price_cents"]);
    assert_eq!(copy.within.as_deref(), Some("lines[]"));
    assert_eq!(copy.source, "products");
    let reference = spec
        .references
        .iter()
        .find(|r| r.field == "shipping.carrier")
        .expect("the shipping's reference is the order's");
    assert_eq!(reference.target, "carriers");
    let index = spec
        .indexes
        .iter()
        .find(|i| i.keys == doc! { "shipping.carrier": 1 })
        .expect("an index on the reference's full path");
    assert!(index
        .reasons
        .iter()
        .any(|r| matches!(r, IndexReason::Reference { field, .. } if field == "shipping.carrier")));
    // a frozen copy is never rewritten: no fan-out index
    assert!(spec
        .indexes
        .iter()
        .all(|i| !i.keys.contains_key("lines.product._id")));
    // the report's relationship row says where the copy lives
    let report = schema().report().to_string();
    assert!(report.contains("in `lines[]`"), "{report}");
    // a schema without the products is refused: the copy's source must be in it
    let error = Schema::new()
        .model::<Carrier>()
        .model::<Order>()
        .build()
        .unwrap_err();
    assert!(
        // display-text: a SchemaError is its problems in words: the one a person reads names the missing model
        error.to_string().contains("products") || error.to_string().contains("Product"),
        "{error}"
    );
}

#[tokio::test]
async fn the_price_on_an_order_line_is_a_snapshot_checked_by_the_validator() {
    let db = mongo_schema_testkit::database("embedded_relations").await;
    let schema = schema();
    schema.apply(&db).await.unwrap();
    let bolt = Product {
        id: "bolt".into(),
        name: "Bolt".into(),
        price_cents: 120,
    };
    Product::collection(&db).insert_one(&bolt).await.unwrap();
    Carrier::collection(&db)
        .insert_one(Carrier {
            id: "dhl".into(),
            name: "DHL".into(),
        })
        .await
        .unwrap();
    let order = Order {
        id: ObjectId::new(),
        lines: vec![OrderLine {
            product: OrderLineProduct::from(&bolt),
            quantity: 3,
        }],
        shipping: Some(Shipping {
            carrier: Ref::new("dhl".into()),
            eta: 5,
        }),
    };
    Order::collection(&db).insert_one(&order).await.unwrap();

    // the index on the embedded reference exists on the server
    let names: Vec<String> = Order::collection(&db).list_index_names().await.unwrap();
    assert!(
        names.iter().any(|n| n.contains("shipping.carrier")),
        "{names:?}"
    );

    // the validator checks the copied fields with the source's types: a price as text is refused
    let raw = db.collection::<BsonDocument>("orders");
    let mut broken = mongo_schema::bson_compat::to_document(&order).unwrap();
    broken.insert("_id", ObjectId::new());
    broken.insert(
        "lines",
        vec![Bson::Document(doc! {
            "product": { "_id": "bolt", "name": "Bolt", "price_cents": "1.20" },
            "quantity": 1,
        })],
    );
    let error = raw
        .insert_one(&broken)
        .await
        .in_collection("orders")
        .unwrap_err();
    let validation = error.as_validation().expect("a validation error");
    assert!(
        validation
            .paths()
            .iter()
            .any(|p| p.starts_with("lines.0.product.price_cents")),
        "{validation}"
    );

    // a new price for the product leaves the line's snapshot alone (the positive control: the
    // product itself changed)
    let report = schema
        .update_source::<Product>(
            &db,
            &bolt.id,
            doc! { "$set": { "name": "Hex bolt", "price_cents": 150_i64 } },
        )
        .await
        .unwrap();
    assert_eq!(report.total_rewritten(), 0, "{report:?}");
    let product = common::stored::<Product>(&db, "bolt").await;
    assert_eq!(
        (product.name.as_str(), product.price_cents),
        ("Hex bolt", 150)
    );
    let stored = common::stored::<Order>(&db, order.id).await;
    assert_eq!(stored.lines[0].product.name, "Bolt");
    assert_eq!(stored.lines[0].product.price_cents, 120);
    // and reconcile does not touch a snapshot
    let reconcile = schema.reconcile(&db).await.unwrap();
    assert_eq!(reconcile.repaired(), 0, "{reconcile}");
}
