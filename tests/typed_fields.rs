//! Fields named by typed paths wherever the API names one (issue 49, item 3): a compare-and-set
//! takes `field!(T, f)` and a value of the field's type encoded as the field stores it, `set`
//! and `inc` borrow their values alike, and the migration steps take typed paths. Money
//! (item 7): a `rust_decimal::Decimal` stored as a BSON decimal by the crate's helper ranges
//! and sorts as a number.

mod common;

use mongo_schema::bson::{doc, Bson, Document as BsonDocument};
use mongo_schema::migrate;
use mongo_schema::prelude::*;
use mongo_schema::query::{Filter, Sort, Update};
use mongo_schema::Error;
use serde::{Deserialize, Serialize};

#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Paid,
    CheckedIn,
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "passes")]
#[serde(rename_all = "camelCase")]
pub struct Pass {
    #[serde(rename = "_id")]
    pub id: ObjectId,
    pub holder: String,
    pub status: Status,
    pub scans: i64,
}

fn check_in() -> BsonDocument {
    Update::<Pass>::new()
        .set(field!(Pass, status), &Status::CheckedIn)
        .inc(field!(Pass, scans), &1)
        .build()
        .unwrap()
}

async fn stored(db: &mongodb::Database, id: ObjectId) -> BsonDocument {
    db.collection::<BsonDocument>("passes")
        .find_one(doc! { "_id": id })
        .await
        .unwrap()
        .expect("the pass is stored")
}

#[tokio::test]
async fn a_typed_compare_and_set_moves_paid_to_checked_in_once() {
    let db = mongo_schema_testkit::database("typed_cas").await;
    let schema = Schema::new().model::<Pass>().build().unwrap();
    schema.apply(&db).await.unwrap();
    let pass = Pass {
        id: ObjectId::new(),
        holder: "Ada".into(),
        status: Status::Paid,
        scans: 0,
    };
    Pass::collection(&db).insert_one(&pass).await.unwrap();

    // `set` and `inc` borrow their values alike; the enum is written as stored
    assert_eq!(
        check_in(),
        doc! { "$set": { "status": "checked_in" }, "$inc": { "scans": 1_i64 } }
    );

    // the Rust spelling of the stored value, sent by name, never matches: the mistake the
    // typed form removes (the positive control of the encoding below)
    #[allow(deprecated)]
    let by_rust_name = pass
        .to_ref()
        .compare_and_set_by_name(&db, "status", "Paid", check_in())
        .await
        .unwrap_err();
    assert!(by_rust_name.is_condition_failed(), "{by_rust_name:#?}");
    assert_eq!(
        stored(&db, pass.id).await.get_str("status").ok(),
        Some("paid")
    );

    // `&Status::Paid` is sent as "paid": the first call wins and moves the pass once
    pass.to_ref()
        .compare_and_set(&db, field!(Pass, status), &Status::Paid, check_in())
        .await
        .expect("the pass is paid: won");
    let after = stored(&db, pass.id).await;
    assert_eq!(after.get_str("status").ok(), Some("checked_in"));
    assert_eq!(after.get_i64("scans").ok(), Some(1));

    // the second scan of the same pass loses: nothing is written
    let second = pass
        .to_ref()
        .compare_and_set(&db, field!(Pass, status), &Status::Paid, check_in())
        .await
        .unwrap_err();
    assert!(
        matches!(&second, Error::ConditionFailed { collection, position: None, .. } if collection == "passes"),
        "{second:#?}"
    );
    assert_eq!(stored(&db, pass.id).await.get_i64("scans").ok(), Some(1));

    // inside a transaction the typed form reads the same
    let lost = schema
        .transaction(&db)
        .compare_and_set(
            &pass.to_ref(),
            field!(Pass, status),
            &Status::Paid,
            check_in(),
        )
        .await
        .unwrap_err();
    assert!(lost.is_condition_failed(), "{lost:#?}");
    schema
        .transaction(&db)
        .compare_and_set(
            &pass.to_ref(),
            field!(Pass, status),
            &Status::CheckedIn,
            doc! { "$set": { "holder": "Ada L." } },
        )
        .await
        .expect("the pass is checked in: won");
    assert_eq!(
        stored(&db, pass.id).await.get_str("holder").ok(),
        Some("Ada L.")
    );
}

mod v2 {
    use mongo_schema::prelude::*;
    use serde::{Deserialize, Serialize};

    #[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
    #[serde(rename_all = "snake_case")]
    pub enum Tier {
        Standard,
        Gold,
    }

    /// v1 stored `text`; v2 calls it `body` and requires a `tier`.
    #[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
    #[collection(name = "reviews")]
    pub struct Review {
        #[serde(rename = "_id")]
        pub id: i64,
        pub body: String,
        pub tier: Tier,
    }
}

#[tokio::test]
async fn typed_migration_steps_write_values_as_the_field_stores_them() {
    let db = mongo_schema_testkit::database("typed_steps").await;
    db.collection::<BsonDocument>("reviews")
        .insert_many([
            doc! { "_id": 1_i64, "text": "a very long review body" },
            doc! { "_id": 2_i64, "body": "kept", "tier": "gold" },
        ])
        .await
        .unwrap();
    let schema = Schema::new()
        .model::<v2::Review>()
        .version(2)
        .migration(
            2,
            "body",
            migrate::rename_field("text", field!(v2::Review, body)),
        )
        .migration(
            2,
            "tier",
            migrate::set_default(field!(v2::Review, tier), &v2::Tier::Standard),
        )
        .migration(2, "short", migrate::truncate(field!(v2::Review, body), 6))
        .build()
        .unwrap();
    schema.apply(&db).await.unwrap();
    let reviews: Vec<v2::Review> = common::all(
        v2::Review::collection(&db)
            .find(doc! {})
            .sort(doc! { "_id": 1 }),
    )
    .await;
    assert_eq!(
        reviews,
        [
            v2::Review {
                id: 1,
                body: "a very".into(),
                tier: v2::Tier::Standard,
            },
            v2::Review {
                id: 2,
                body: "kept".into(),
                tier: v2::Tier::Gold,
            },
        ]
    );
    // the default was written as the enum stores it, not as its Rust name
    let raw = db
        .collection::<BsonDocument>("reviews")
        .find_one(doc! { "_id": 1_i64 })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(raw.get("tier"), Some(&Bson::String("standard".into())));
}

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "products")]
#[index(keys(tag = 1, price = 1))]
#[query(
    name = "priced_between",
    eq(tag),
    range(price),
    sort(price = 1),
    limit = 50
)]
pub struct Product {
    #[serde(rename = "_id")]
    pub id: i64,
    pub tag: String,
    #[serde(with = "mongo_schema::serde_helpers::rust_decimal_as_decimal128")]
    pub price: rust_decimal::Decimal,
    #[serde(with = "mongo_schema::serde_helpers::rust_decimal_as_decimal128_optional")]
    pub was: Option<rust_decimal::Decimal>,
}

/// Prices whose text sorts unlike their values ("103.99" < "6.99", "10.00" vs "10", "-1.25").
const PRICES: [&str; 10] = [
    "6.99", "103.99", "10", "10.00", "9.5", "-1.25", "0.001", "19.999", "20", "7",
];

fn price(text: &str) -> rust_decimal::Decimal {
    text.parse().unwrap()
}

#[tokio::test]
async fn money_stored_as_decimal128_ranges_and_sorts_as_a_number() {
    let db = mongo_schema_testkit::database("typed_money").await;
    let schema = Schema::new().model::<Product>().build().unwrap();
    schema.apply(&db).await.unwrap();
    let products: Vec<Product> = PRICES
        .iter()
        .enumerate()
        .map(|(i, text)| Product {
            id: i as i64,
            tag: "shop".into(),
            price: price(text),
            was: (i % 2 == 0).then(|| price(text) + price("1.5")),
        })
        .collect();
    Product::collection(&db)
        .insert_many(&products)
        .await
        .unwrap();

    // stored as BSON decimals, exactly (scale kept), and read back as they were written
    let raw = db
        .collection::<BsonDocument>("products")
        .find_one(doc! { "_id": 3_i64 })
        .await
        .unwrap()
        .unwrap();
    assert!(
        matches!(raw.get("price"), Some(Bson::Decimal128(_))),
        "{raw}"
    );
    let read: Vec<Product> = common::all(
        Product::collection(&db)
            .find(doc! {})
            .sort(doc! { "_id": 1 }),
    )
    .await;
    assert_eq!(read, products);
    assert_eq!(read[3].price.to_string(), "10.00");

    // the expected ids, by the Rust values: [6.99, 20) ascending, ties by id
    let (low, high) = (price("6.99"), price("20"));
    let mut expected: Vec<(rust_decimal::Decimal, i64)> = products
        .iter()
        .filter(|p| p.price >= low && p.price < high)
        .map(|p| (p.price, p.id))
        .collect();
    expected.sort();
    let expected: Vec<i64> = expected.into_iter().map(|(_, id)| id).collect();
    // the premise: as rust_decimal's own serde form (text) these prices sort otherwise, and the
    // range [6.99, 20) holds none of them as text ("6.99" > "20"); stored so, the query below
    // would return no row, and the raw check above would fail
    let mut as_text: Vec<&str> = PRICES.to_vec();
    as_text.sort_unstable();
    let mut as_numbers: Vec<&str> = PRICES.to_vec();
    as_numbers.sort_by_key(|text| price(text));
    assert_ne!(as_text, as_numbers);
    assert!(!expected.is_empty());

    // the declared query: a range and a sort on the decimal, served by the index
    let declared: Vec<i64> = Product::priced_between(&db, "shop", low..high)
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.id)
        .collect();
    let declared_prices: Vec<rust_decimal::Decimal> = declared
        .iter()
        .map(|id| products[*id as usize].price)
        .collect();
    assert!(
        declared_prices.windows(2).all(|w| w[0] <= w[1]),
        "sorted as numbers: {declared_prices:?}"
    );
    let mut declared_sorted = declared.clone();
    declared_sorted.sort_unstable();
    let mut expected_sorted = expected.clone();
    expected_sorted.sort_unstable();
    assert_eq!(declared_sorted, expected_sorted, "the ids in the range");

    // the typed builders: a range and a descending sort on the same path
    let filter = Filter::<Product>::new()
        .range(field!(Product, price), price("-2")..=price("10"))
        .build()
        .unwrap();
    let sort = Sort::<Product>::new()
        .desc(field!(Product, price))
        .asc(field!(Product, id))
        .build();
    let built: Vec<i64> = common::all(Product::collection(&db).find(filter).sort(sort))
        .await
        .into_iter()
        .map(|p| p.id)
        .collect();
    let mut wanted: Vec<(std::cmp::Reverse<rust_decimal::Decimal>, i64)> = products
        .iter()
        .filter(|p| p.price >= price("-2") && p.price <= price("10"))
        .map(|p| (std::cmp::Reverse(p.price), p.id))
        .collect();
    wanted.sort();
    let wanted: Vec<i64> = wanted.into_iter().map(|(_, id)| id).collect();
    assert_eq!(built, wanted);
    // 10 and 10.00 are one value: both in, ordered by id
    assert!(built.starts_with(&[2, 3]), "{built:?}");
}
