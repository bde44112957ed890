//! Property test on the real server: every generated value of the derived types, serialized with
//! its serde attributes, is accepted by its own validator; values over a declared bound are
//! rejected with code 121 and the typed error names the field and the rule; and a document that
//! breaks any one keyword the derive emits (`pattern`, `minimum`/`maximum` and the ranges of
//! small integers, `minLength`/`maxLength` also on elements, `minItems`/`maxItems` of a
//! fixed-size array, `uniqueItems`, `maxProperties`, `enum`, `bsonType`, `required`,
//! `additionalProperties`) is rejected naming that path and rule.
//!
//! The library's own judge, `T::check` (mongod's `$jsonSchema` evaluated locally), is held to
//! the same cases: every generated value passes it, every over-bound value and every broken
//! document fails it with the same paths and rules as the server.

mod common;

use common::live::{set_path, Live};

use std::collections::{BTreeSet, HashMap};

use mongo_schema::bson::{doc, Bson, Document as BsonDocument};
use mongo_schema::prelude::*;
use mongo_schema::Error;
use mongodb::error::{ErrorKind, WriteFailure};
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
#[schema(additional_properties = false)]
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

/// Small integers: each is stored as a BSON int or long bounded by its Rust range.
#[derive(BsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Gauges {
    pub level: u8,
    pub offset: i8,
    pub delta: i16,
    pub count: u16,
    pub total: u32,
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
    pub gauges: Gauges,
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

fn gauges() -> impl Strategy<Value = Gauges> {
    (
        any::<u8>(),
        any::<i8>(),
        any::<i16>(),
        any::<u16>(),
        any::<u32>(),
    )
        .prop_map(|(level, offset, delta, count, total)| Gauges {
            level,
            offset,
            delta,
            count,
            total,
        })
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
        gauges(),
    )
        .prop_map(
            |(id, customer_name, lines, attachments, shipping, tier_at_order, gauges)| Order {
                id,
                customer_name,
                lines,
                attachments,
                shipping,
                tier_at_order,
                gauges,
                cached_total: 0.0,
            },
        )
}

fn live(prefix: &str) -> Live {
    Live::new(
        prefix,
        Schema::new()
            .model::<Customer>()
            .model::<Order>()
            .build()
            .unwrap(),
    )
}

fn config() -> ProptestConfig {
    common::live::config(96)
}

#[test]
fn generated_values_are_accepted_by_their_own_validator_and_read_back_equal() {
    let live = live("round_trip_ok");
    let customers = Customer::collection(&live.db);
    let orders = Order::collection(&live.db);
    let accepted = std::cell::Cell::new(0);
    proptest!(config(), |(c in customer(0..4), o in order(0..11))| {
        Customer::check(&c).map_err(|e| TestCaseError::fail(format!("check: {e}\n{c:?}")))?;
        Order::check(&o).map_err(|e| TestCaseError::fail(format!("check: {e}\n{o:?}")))?;
        live.runtime.block_on(async {
            customers.insert_one(&c).await.in_collection(Customer::COLLECTION).map_err(|e| TestCaseError::fail(format!("{e}\n{c:?}")))?;
            let read = customers.find_one(mongo_schema::bson::doc! { "_id": c.id }).await.unwrap().unwrap();
            prop_assert_eq!(&read, &c);
            match orders.insert_one(&o).await.in_collection(Order::COLLECTION) {
                Ok(_) => {}
                // two generated orders can share an id
                Err(Error::Duplicate { .. }) => return Ok(()),
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
            same_verdict(Customer::check(&c), v)?;

            let error = orders.insert_one(&o).await.in_collection(Order::COLLECTION).unwrap_err();
            let v = error.as_validation().ok_or_else(|| TestCaseError::fail(format!("{error}")))?;
            prop_assert!(v.at("lines").any(|f| f.rule == "maxItems"), "{}", v);
            same_verdict(Order::check(&o), v)?;

            let mut named = c.clone();
            named.addresses.truncate(3);
            named.display_name = long.clone();
            let error = customers.insert_one(&named).await.in_collection(Customer::COLLECTION).unwrap_err();
            let v = error.as_validation().ok_or_else(|| TestCaseError::fail(format!("{error}")))?;
            prop_assert_eq!(v.paths(), ["displayName"]);
            prop_assert_eq!(&v.failures[0].rule, "maxLength");
            same_verdict(Customer::check(&named), v)?;
            Ok(())
        })?;
    });
    let count = live
        .runtime
        .block_on(async { customers.count_documents(mongo_schema::bson::doc! {}).await })
        .unwrap();
    assert_eq!(count, 0, "no over-bound value was stored");
}

/// One way to break one keyword of a valid stored document, and the failure the typed error
/// must report for it.
struct Breach {
    /// The keyword broken, for messages.
    keyword: &'static str,
    /// Sets (or removes, with `None`) the value at a dotted path of the serialized document.
    path_set: (&'static str, Option<Bson>),
    /// The failure the server reports, as the typed error reads it.
    failure: (&'static str, &'static str),
}

fn breach(
    keyword: &'static str,
    path: &'static str,
    value: Option<Bson>,
    failure: (&'static str, &'static str),
) -> Breach {
    Breach {
        keyword,
        path_set: (path, value),
        failure,
    }
}

/// Every keyword the derive emits for `Customer`, broken one at a time.
fn customer_breaches() -> Vec<Breach> {
    let strings = |items: &[&str]| Some(Bson::from(items.to_vec()));
    let ints = |items: &[i32]| Some(Bson::from(items.to_vec()));
    let five_counters = doc! { "a": 1_i64, "b": 2_i64, "c": 3_i64, "d": 4_i64, "e": 5_i64 };
    let address = doc! { "streetLine": "1 Main St", "city": "Springfield", "country": [1, 2] };
    vec![
        breach(
            "pattern",
            "email",
            Some("no-at-sign".into()),
            ("email", "pattern"),
        ),
        breach(
            "maxLength",
            "email",
            Some(format!("{}@x.org", "a".repeat(60)).into()),
            ("email", "maxLength"),
        ),
        breach(
            "maxLength",
            "displayName",
            Some("x".repeat(51).into()),
            ("displayName", "maxLength"),
        ),
        breach(
            "minLength",
            "displayName",
            Some("".into()),
            ("displayName", "minLength"),
        ),
        breach(
            "uniqueItems",
            "tags",
            strings(&["dup", "dup"]),
            ("tags", "uniqueItems"),
        ),
        breach(
            "element maxLength",
            "tags",
            strings(&["thirteen-char"]),
            ("tags.0", "maxLength"),
        ),
        breach(
            "maxItems",
            "tags",
            strings(&["a", "b", "c", "d", "e", "f"]),
            ("tags", "maxItems"),
        ),
        breach(
            "maxProperties",
            "counters",
            Some(five_counters.into()),
            ("counters", "maxProperties"),
        ),
        breach(
            "map value bsonType",
            "counters",
            Some(doc! { "a": "x" }.into()),
            ("counters.a", "bsonType"),
        ),
        breach(
            "fixed-array minItems",
            "addresses.0.country",
            ints(&[1]),
            ("addresses.0.country", "minItems"),
        ),
        breach(
            "fixed-array maxItems",
            "addresses.0.country",
            ints(&[1, 2, 3]),
            ("addresses.0.country", "maxItems"),
        ),
        breach(
            "u8 element maximum",
            "addresses.0.country",
            ints(&[1, 256]),
            ("addresses.0.country.1", "maximum"),
        ),
        breach(
            "u8 element minimum",
            "addresses.0.country",
            ints(&[-1, 2]),
            ("addresses.0.country.0", "minimum"),
        ),
        breach(
            "nested maxLength",
            "addresses.0.streetLine",
            Some("x".repeat(41).into()),
            ("addresses.0.streetLine", "maxLength"),
        ),
        breach(
            "nested additionalProperties",
            "addresses.0.extra",
            Some(true.into()),
            ("addresses.0.extra", "additionalProperties"),
        ),
        breach(
            "maxItems",
            "addresses",
            Some(vec![address.clone(), address.clone(), address.clone(), address].into()),
            ("addresses", "maxItems"),
        ),
        breach("enum", "tier", Some("GOLD".into()), ("tier", "enum")),
        breach(
            "bsonType",
            "createdAt",
            Some("yesterday".into()),
            ("createdAt", "bsonType"),
        ),
        breach("required", "createdAt", None, ("createdAt", "required")),
        breach(
            "additionalProperties",
            "zzz",
            Some(1.into()),
            ("zzz", "additionalProperties"),
        ),
    ]
}

/// Every keyword the derive emits for `Order` (and the small integers' ranges), broken one at a
/// time.
fn order_breaches() -> Vec<Breach> {
    let int = |v: i32| Some(Bson::Int32(v));
    let long = |v: i64| Some(Bson::Int64(v));
    let attachment = |size: i64| doc! { "file_name": "a.pdf", "size": size };
    vec![
        breach(
            "pattern",
            "lines.0.sku",
            Some("bad".into()),
            ("lines.0.sku", "pattern"),
        ),
        breach(
            "minimum",
            "lines.0.unit_price",
            Some((-0.5).into()),
            ("lines.0.unit_price", "minimum"),
        ),
        breach(
            "u16 maximum",
            "lines.0.quantity",
            int(65_536),
            ("lines.0.quantity", "maximum"),
        ),
        breach(
            "u16 minimum",
            "lines.0.quantity",
            int(-1),
            ("lines.0.quantity", "minimum"),
        ),
        breach(
            "u8 maximum",
            "gauges.level",
            int(256),
            ("gauges.level", "maximum"),
        ),
        breach(
            "u8 minimum",
            "gauges.level",
            int(-1),
            ("gauges.level", "minimum"),
        ),
        breach(
            "i8 maximum",
            "gauges.offset",
            int(128),
            ("gauges.offset", "maximum"),
        ),
        breach(
            "i8 minimum",
            "gauges.offset",
            int(-129),
            ("gauges.offset", "minimum"),
        ),
        breach(
            "i16 maximum",
            "gauges.delta",
            int(32_768),
            ("gauges.delta", "maximum"),
        ),
        breach(
            "i16 minimum",
            "gauges.delta",
            int(-32_769),
            ("gauges.delta", "minimum"),
        ),
        breach(
            "u16 maximum",
            "gauges.count",
            int(65_536),
            ("gauges.count", "maximum"),
        ),
        breach(
            "u32 maximum",
            "gauges.total",
            long(1 << 32),
            ("gauges.total", "maximum"),
        ),
        breach(
            "u32 minimum",
            "gauges.total",
            long(-1),
            ("gauges.total", "minimum"),
        ),
        breach(
            "u32 bsonType",
            "gauges.total",
            int(7),
            ("gauges.total", "bsonType"),
        ),
        breach(
            "nested minimum",
            "attachments",
            Some(vec![attachment(-1)].into()),
            ("attachments.0.size", "minimum"),
        ),
        breach(
            "maxItems",
            "attachments",
            Some(vec![attachment(1), attachment(2), attachment(3)].into()),
            ("attachments", "maxItems"),
        ),
        breach(
            "enum",
            "tier_at_order",
            Some("SMALL".into()),
            ("tier_at_order", "enum"),
        ),
        breach("required", "gauges", None, ("gauges", "required")),
    ]
}

/// The `(path, rule)` pairs of a verdict, in order.
fn failures(error: &mongo_schema::ValidationError) -> Vec<(String, String)> {
    error
        .failures
        .iter()
        .map(|f| (f.path.clone(), f.rule.clone()))
        .collect()
}

/// The local check refused the value with the server's paths and rules.
fn same_verdict(
    local: mongo_schema::Result<()>,
    server: &mongo_schema::ValidationError,
) -> Result<(), TestCaseError> {
    let local = match local {
        Err(Error::Validation(local)) => local,
        other => {
            return Err(TestCaseError::fail(format!(
                "the server refused ({server}) but the local check gave {other:?}"
            )))
        }
    };
    prop_assert_eq!(
        failures(&local),
        failures(server),
        "local: {}\nserver: {}",
        local,
        server
    );
    prop_assert_eq!(&local.collection, &server.collection);
    Ok(())
}

async fn expect_rejected(
    collection: &mongodb::Collection<BsonDocument>,
    local: &mongo_schema::LocalValidator,
    valid: &BsonDocument,
    breach: &Breach,
) -> Result<(), TestCaseError> {
    let (path, value) = &breach.path_set;
    let mut doc = Bson::Document(valid.clone());
    set_path(
        &mut doc,
        &path.split('.').collect::<Vec<_>>(),
        value.clone(),
    );
    let Bson::Document(doc) = doc else {
        unreachable!("the root stays a document")
    };
    let error = match collection.insert_one(&doc).await {
        Ok(_) => {
            return Err(TestCaseError::fail(format!(
                "{} broken at `{path}` was accepted: {doc}",
                breach.keyword
            )))
        }
        Err(error) => error,
    };
    let code = match error.kind.as_ref() {
        ErrorKind::Write(WriteFailure::WriteError(e)) => Some(e.code),
        _ => None,
    };
    prop_assert_eq!(code, Some(121), "{}: {}", breach.keyword, error);
    let typed = Err::<(), _>(error)
        .in_collection(collection.name())
        .unwrap_err();
    let validation = typed
        .as_validation()
        .ok_or_else(|| TestCaseError::fail(format!("not a validation error: {typed}")))?;
    let (path, rule) = breach.failure;
    prop_assert!(
        validation.at(path).any(|f| f.rule == rule),
        "{} at `{}`: expected `{}` fails `{}`, got {}",
        breach.keyword,
        breach.path_set.0,
        path,
        rule,
        validation
    );
    prop_assert_eq!(validation.paths(), [path], "{}", validation);
    let judged = local
        .check(&doc)
        .map_err(|e| e.with_collection(collection.name()));
    same_verdict(judged.map_err(Error::from), validation)
}

#[test]
fn a_document_breaking_any_emitted_keyword_is_rejected_with_121_naming_path_and_rule() {
    let live = live("round_trip_keywords");
    let customers = live.db.collection::<BsonDocument>(Customer::COLLECTION);
    let orders = live.db.collection::<BsonDocument>(Order::COLLECTION);
    let (customer_breaches, order_breaches) = (customer_breaches(), order_breaches());
    let local_customers = mongo_schema::LocalValidator::new(&Customer::validator()).unwrap();
    let local_orders = mongo_schema::LocalValidator::new(&Order::validator()).unwrap();
    let checked = std::cell::Cell::new(0);
    proptest!(config(), |(c in customer(1..4), o in order(1..11))| {
        live.runtime.block_on(async {
            let c = mongo_schema::bson::to_document(&c).unwrap();
            let o = mongo_schema::bson::to_document(&o).unwrap();
            for breach in &customer_breaches {
                expect_rejected(&customers, &local_customers, &c, breach).await?;
            }
            for breach in &order_breaches {
                expect_rejected(&orders, &local_orders, &o, breach).await?;
            }
            checked.set(checked.get() + customer_breaches.len() + order_breaches.len());
            Ok::<(), TestCaseError>(())
        })?;
    });
    println!(
        "{} broken documents rejected with 121, each naming its path and rule",
        checked.get()
    );
    let stored = live.runtime.block_on(async {
        customers.count_documents(doc! {}).await.unwrap()
            + orders.count_documents(doc! {}).await.unwrap()
    });
    assert_eq!(stored, 0, "no broken document was stored");
}
