//! Property test on the real server: every generated value of the derived types, serialized with
//! its serde attributes, is accepted by its own validator; values over a declared bound are
//! rejected with code 121 and the typed error names the field and the rule.

use std::collections::{BTreeSet, HashMap};

use mongo_schema::prelude::*;
use mongo_schema::Error;
use proptest::collection::{btree_set, hash_map, vec};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(BsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Tier {
    Free,
    SmallBusiness,
    #[serde(rename = "corp")]
    Enterprise,
}

#[derive(BsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(transparent)]
pub struct Email(#[schema(max_length = 60, pattern = "^[^@]+@[^@]+$")] String);

#[derive(BsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Address {
    #[schema(max_length = 40)]
    pub street_line: String,
    pub city: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub postal_code: Option<String>,
    pub country: [u8; 2],
}

#[derive(BsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct LineItem {
    #[schema(pattern = "^[A-Z]{3}-[0-9]{3}$")]
    pub sku: String,
    pub quantity: u16,
    #[schema(minimum = 0)]
    pub unit_price: f64,
    pub discount: Option<f64>,
}

#[derive(BsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Attachment {
    #[schema(max_length = 100)]
    pub file_name: String,
    #[schema(minimum = 0)]
    pub size: i64,
}

#[derive(Document, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[collection(name = "customers", additional_properties = false)]
#[serde(rename_all = "camelCase")]
pub struct Customer {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    #[schema(min_length = 1, max_length = 50)]
    pub display_name: String,
    pub email: Email,
    pub tier: Tier,
    #[embed(max = 3)]
    pub addresses: Vec<Address>,
    #[embed(max = 5)]
    #[schema(max_length = 12)]
    pub tags: BTreeSet<String>,
    #[embed(max = 4)]
    pub counters: HashMap<String, i64>,
    pub note: Option<String>,
    pub created_at: DateTime,
}

#[derive(Document, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[collection(name = "orders", additional_properties = false)]
pub struct Order {
    #[serde(rename = "_id")]
    pub id: i64,
    #[serde(rename = "customer")]
    pub customer_name: String,
    #[embed(max = 10)]
    pub lines: Vec<LineItem>,
    #[embed(max = 2)]
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub attachments: Option<Vec<Attachment>>,
    pub shipping: Option<Address>,
    pub tier_at_order: Tier,
    #[serde(skip)]
    pub cached_total: f64,
}

fn text(max: usize) -> impl Strategy<Value = String> {
    proptest::string::string_regex(&format!("[a-zA-Z0-9 éüß-]{{0,{max}}}")).unwrap()
}

fn tier() -> impl Strategy<Value = Tier> {
    prop_oneof![
        Just(Tier::Free),
        Just(Tier::SmallBusiness),
        Just(Tier::Enterprise)
    ]
}

fn date() -> impl Strategy<Value = DateTime> {
    (0i64..4_102_444_800_000).prop_map(DateTime::from_millis)
}

fn address() -> impl Strategy<Value = Address> {
    (
        text(40),
        text(30),
        proptest::option::of(text(10)),
        any::<[u8; 2]>(),
    )
        .prop_map(|(street_line, city, postal_code, country)| Address {
            street_line,
            city,
            postal_code,
            country,
        })
}

fn line_item() -> impl Strategy<Value = LineItem> {
    (
        "[A-Z]{3}-[0-9]{3}",
        any::<u16>(),
        0.0f64..1e9,
        proptest::option::of(-1e3f64..1e3),
    )
        .prop_map(|(sku, quantity, unit_price, discount)| LineItem {
            sku,
            quantity,
            unit_price,
            discount,
        })
}

fn customer(addresses: std::ops::Range<usize>) -> impl Strategy<Value = Customer> {
    (
        proptest::string::string_regex("[a-zA-Z0-9 éü]{1,50}").unwrap(),
        "[a-z]{1,20}@[a-z]{1,20}\\.org",
        tier(),
        vec(address(), addresses),
        btree_set("[a-z]{0,12}", 0..=5),
        hash_map("[a-z]{1,8}", any::<i64>(), 0..=4),
        proptest::option::of(text(200)),
        date(),
    )
        .prop_map(
            |(display_name, email, tier, addresses, tags, counters, note, created_at)| Customer {
                id: ObjectId::new(),
                display_name,
                email: Email(email),
                tier,
                addresses,
                tags,
                counters,
                note,
                created_at,
            },
        )
}

fn order(lines: std::ops::Range<usize>) -> impl Strategy<Value = Order> {
    (
        any::<i64>(),
        text(30),
        vec(line_item(), lines),
        proptest::option::of(vec(
            (text(100), 0i64..i64::MAX)
                .prop_map(|(file_name, size)| Attachment { file_name, size }),
            0..=2,
        )),
        proptest::option::of(address()),
        tier(),
    )
        .prop_map(
            |(id, customer_name, lines, attachments, shipping, tier_at_order)| Order {
                id,
                customer_name,
                lines,
                attachments,
                shipping,
                tier_at_order,
                cached_total: 0.0,
            },
        )
}

struct Live {
    runtime: tokio::runtime::Runtime,
    db: mongodb::Database,
}

fn live(prefix: &str) -> Live {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let db = runtime.block_on(async {
        let db = mongo_schema_testkit::database(prefix).await;
        let schema = Schema::new()
            .model::<Customer>()
            .model::<Order>()
            .build()
            .unwrap();
        schema.apply(&db).await.unwrap();
        db
    });
    Live { runtime, db }
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 96,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

#[test]
fn generated_values_are_accepted_by_their_own_validator_and_read_back_equal() {
    let live = live("round_trip_ok");
    let customers = Customer::collection(&live.db);
    let orders = Order::collection(&live.db);
    let accepted = std::cell::Cell::new(0);
    proptest!(config(), |(c in customer(0..4), o in order(0..11))| {
        live.runtime.block_on(async {
            customers.insert_one(&c).await.in_collection(Customer::COLLECTION).map_err(|e| TestCaseError::fail(format!("{e}\n{c:?}")))?;
            let read = customers.find_one(mongo_schema::bson::doc! { "_id": c.id }).await.unwrap().unwrap();
            prop_assert_eq!(&read, &c);
            match orders.insert_one(&o).await.in_collection(Order::COLLECTION) {
                Ok(_) => {}
                // two generated orders can share an id
                Err(Error::Driver(e)) if e.to_string().contains("E11000") => return Ok(()),
                Err(e) => return Err(TestCaseError::fail(format!("{e}\n{o:?}"))),
            }
            let read = orders.find_one(mongo_schema::bson::doc! { "_id": o.id }).await.unwrap().unwrap();
            prop_assert_eq!(read, o);
            accepted.set(accepted.get() + 1);
            Ok(())
        })?;
    });
    println!(
        "{} generated customers and orders accepted and read back equal",
        accepted.get()
    );
    assert!(accepted.get() > 0);
}

#[test]
fn values_over_a_bound_are_rejected_with_121_naming_field_and_rule() {
    let live = live("round_trip_over");
    let customers = Customer::collection(&live.db);
    let orders = Order::collection(&live.db);
    proptest!(config(), |(c in customer(4..8), o in order(11..16), long in "[a-z]{51,80}")| {
        live.runtime.block_on(async {
            let error = customers.insert_one(&c).await.in_collection(Customer::COLLECTION).unwrap_err();
            let v = error.as_validation().ok_or_else(|| TestCaseError::fail(format!("{error}")))?;
            prop_assert!(v.at("addresses").any(|f| f.rule == "maxItems"), "{}", v);

            let error = orders.insert_one(&o).await.in_collection(Order::COLLECTION).unwrap_err();
            let v = error.as_validation().ok_or_else(|| TestCaseError::fail(format!("{error}")))?;
            prop_assert!(v.at("lines").any(|f| f.rule == "maxItems"), "{}", v);

            let mut named = c.clone();
            named.addresses.truncate(3);
            named.display_name = long.clone();
            let error = customers.insert_one(&named).await.in_collection(Customer::COLLECTION).unwrap_err();
            let v = error.as_validation().ok_or_else(|| TestCaseError::fail(format!("{error}")))?;
            prop_assert_eq!(v.paths(), ["displayName"]);
            prop_assert_eq!(&v.failures[0].rule, "maxLength");
            Ok(())
        })?;
    });
    let count = live
        .runtime
        .block_on(async { customers.count_documents(mongo_schema::bson::doc! {}).await })
        .unwrap();
    assert_eq!(count, 0, "no over-bound value was stored");
}
