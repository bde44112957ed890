//! A shop's database as a Node service writes it (the Node driver stores integral numbers as
//! `int` and the others as `double`; Mongoose adds `__v`): 2,000 customers, 500 products, 7,000
//! orders, 1,000 reviews and 500 events of two kinds, 11,000 documents. Written for `pull` to find what was put in:
//! polymorphic payments, GeoJSON points, stock maps keyed by warehouse ids, int and double
//! mixes, fields missing in some documents and `null` in others, references, maintained and
//! frozen copies, duplicate values, and three rare shapes (one document each in orders,
//! customers and reviews) that a sample of 100 is all but sure to miss.

use mongodb::bson::{doc, oid::ObjectId, Bson, DateTime, Document};
use mongodb::options::IndexOptions;
use mongodb::{Database, IndexModel};

/// Documents written.
pub const DOCUMENTS: u64 = 11_000;

/// A Node number: `int` when integral, else `double`.
fn number(v: f64) -> Bson {
    if v.fract() == 0.0 && v.abs() < 2e9 {
        Bson::Int32(v as i32)
    } else {
        Bson::Double(v)
    }
}

/// The rare order that the small sample of the test does not see (its 9 items are the exact
/// maximum, one of them gift-wrapped).
pub const RARE_ORDER: i64 = 6_543;

/// Writes the data set and its indexes into `db`.
pub async fn seed(db: &Database) {
    seed_sized(db, 2000, 500, 7000, 1000).await;
    seed_events(db, 500).await;
}

/// An audit log of two kinds in one collection, told apart by `kind` (a whole-document enum).
pub async fn seed_events(db: &Database, n: i64) {
    let events: Vec<Document> = (0..n)
        .map(|i| {
            let at = DateTime::from_millis(1_700_000_000_000 + i * 1000);
            if i % 3 == 0 {
                doc! { "_id": ObjectId::from_bytes(id_bytes(5, i)), "kind": "refund", "order": ObjectId::from_bytes(id_bytes(3, i)), "cents": (100 + i % 900) as i32, "at": at }
            } else {
                doc! { "_id": ObjectId::from_bytes(id_bytes(5, i)), "kind": "login", "user": format!("c{}", i % 2000), "method": (["password", "sso"][(i % 2) as usize]), "at": at }
            }
        })
        .collect();
    db.collection::<Document>("events")
        .insert_many(events)
        .await
        .expect("events");
}

/// The data set with other sizes (the benchmark's); `seed` is 2,000 customers, 500 products,
/// 7,000 orders and 1,000 reviews.
pub async fn seed_sized(
    db: &Database,
    n_customers: i64,
    n_products: i64,
    n_orders: i64,
    n_reviews: i64,
) {
    let customers: Vec<Document> = (0..n_customers)
        .map(|i| {
            let id = ObjectId::from_bytes(id_bytes(1, i));
            let mut d = doc! {
                "_id": id,
                "name": format!("Customer {i}"),
                // duplicates: every 50th shares an address
                "email": if i % 50 == 0 { "shared@example.com".to_owned() } else { format!("c{i}@example.com") },
                "tier": (["bronze", "silver", "gold"][(i % 3) as usize]),
                "location": {
                    "type": "Point",
                    "coordinates": [number(13.0 + (i % 7) as f64 * 0.5), number(52.0 + (i % 4) as f64 * 0.25)],
                },
                "createdAt": DateTime::from_millis(1_600_000_000_000 + i * 86_400_000),
                "__v": 0,
            };
            if i == 1234 {
                d.insert("vip", true); // one in 2,000
            }
            match i % 3 {
                0 => {}
                1 => {
                    d.insert("phone", Bson::Null);
                }
                _ => {
                    d.insert("phone", format!("+49 30 {i:06}"));
                }
            }
            d
        })
        .collect();
    let products: Vec<Document> = (0..n_products)
        .map(|i| {
            let mut stock = Document::new();
            for w in 0..(1 + i % 4) {
                stock.insert(format!("wh{}", (i + w) % 12 + 1), ((i * 7 + w) % 40) as i32);
            }
            doc! {
                "_id": format!("sku-{i:04}"),
                "name": format!("Product {i}"),
                "price": number(if i % 2 == 0 { (10 + i % 90) as f64 } else { 9.99 + (i % 50) as f64 }),
                "stock": stock,
                "tags": (0..(i % 6)).map(|t| format!("tag{}", (i * 3 + t) % 400)).collect::<Vec<_>>(),
                // names that are no Rust identifiers: a keyword, a space, a leading digit
                "type": (["physical", "digital"][(i % 2) as usize]),
                "in stock": i % 7 != 0,
                "3d": i % 5 == 0,
            }
        })
        .collect();
    let orders: Vec<Document> = (0..n_orders)
        .map(|i| {
            let c = (i * 7) % n_customers;
            let items_count = if i == RARE_ORDER { 9 } else { 1 + i % 4 };
            let items: Vec<Bson> = (0..items_count)
                .map(|k| {
                    let mut item = doc! {
                        "productId": format!("sku-{:04}", (i + k * 13) % n_products),
                        "qty": (1 + (i + k) % 3) as i32,
                        "price": number(if k % 2 == 0 { 12.5 } else { 20.0 }),
                    };
                    if i == RARE_ORDER && k == 8 {
                        item.insert("giftWrap", true);
                    }
                    Bson::Document(item)
                })
                .collect();
            let payment = match i % 3 {
                0 => doc! { "type": "card", "brand": (["visa", "amex"][(i % 2) as usize]), "last4": format!("{:04}", i % 10_000) },
                1 => doc! { "type": "paypal", "email": format!("c{c}@example.com") },
                _ => doc! { "type": "cod" },
            };
            let mut d = doc! {
                "_id": ObjectId::from_bytes(id_bytes(3, i)),
                "customerId": ObjectId::from_bytes(id_bytes(1, c)),
                "customer": { "_id": ObjectId::from_bytes(id_bytes(1, c)), "name": format!("Customer {c}") },
                "status": (["pending", "paid", "shipped", "cancelled"][(i % 4) as usize]),
                "items": items,
                "payment": payment,
                "total": number(if i % 5 == 0 { 100.0 } else { 42.75 + (i % 10) as f64 }),
                "notes": if i % 10 == 0 { Bson::String("leave at the door".into()) } else { Bson::Null },
                "placedAt": DateTime::from_millis(1_700_000_000_000 + i * 60_000),
            };
            if i % 25 == 0 {
                d.insert("coupon", "SAVE10");
            }
            if i % 4 == 2 {
                d.insert("shippedAt", DateTime::from_millis(1_700_000_500_000 + i * 60_000));
                // a carrier's id: an ObjectId that is no `_id` of this database
                d.insert("trackingId", ObjectId::from_bytes(id_bytes(9, i)));
            }
            d
        })
        .collect();
    let reviews: Vec<Document> = (0..n_reviews)
        .map(|i| {
            let c = (i * 11) % n_customers;
            // a snapshot: the name at the time of the review, since changed for a tenth
            let name = if i % 10 == 0 {
                format!("Old name {c}")
            } else {
                format!("Customer {c}")
            };
            let mut d = doc! {
                "_id": ObjectId::from_bytes(id_bytes(4, i)),
                "productId": format!("sku-{:04}", i % n_products),
                "author": { "_id": ObjectId::from_bytes(id_bytes(1, c)), "name": name },
                "rating": (1 + i % 5) as i32,
                "body": format!("review {i}"),
            };
            if i == 777 {
                d.insert("photos", vec!["p1.jpg", "p2.jpg"]); // one in 1,000
            }
            d
        })
        .collect();
    for (name, docs) in [
        ("customers", customers),
        ("products", products),
        ("orders", orders),
        ("reviews", reviews),
    ] {
        for chunk in docs.chunks(1000) {
            db.collection::<Document>(name)
                .insert_many(chunk.to_vec())
                .await
                .unwrap_or_else(|e| panic!("seeding {name}: {e}"));
        }
    }
    let index = |keys: Document, options: Option<IndexOptions>| {
        IndexModel::builder().keys(keys).options(options).build()
    };
    db.collection::<Document>("customers")
        .create_index(index(
            doc! { "createdAt": -1 },
            Some(IndexOptions::builder().name("recent".to_owned()).build()),
        ))
        .await
        .expect("index");
    // a case-insensitive lookup by email (its own collation) and a geo index: kept by pull
    db.collection::<Document>("customers")
        .create_index(index(
            doc! { "email": 1 },
            Some(
                IndexOptions::builder()
                    .name("email_ci".to_owned())
                    .collation(
                        mongodb::options::Collation::builder()
                            .locale("en")
                            .strength(mongodb::options::CollationStrength::Secondary)
                            .build(),
                    )
                    .build(),
            ),
        ))
        .await
        .expect("index");
    db.collection::<Document>("customers")
        .create_index(index(doc! { "location": "2dsphere" }, None))
        .await
        .expect("index");
    db.collection::<Document>("orders")
        .create_index(index(doc! { "customerId": 1, "placedAt": -1 }, None))
        .await
        .expect("index");
    db.collection::<Document>("orders")
        .create_index(index(
            doc! { "shippedAt": 1 },
            Some(IndexOptions::builder().sparse(true).build()),
        ))
        .await
        .expect("index");
    db.collection::<Document>("products")
        .create_index(index(
            doc! { "name": 1 },
            Some(IndexOptions::builder().unique(true).build()),
        ))
        .await
        .expect("index");
}

fn id_bytes(kind: u8, i: i64) -> [u8; 12] {
    let mut bytes = [0u8; 12];
    bytes[0] = 0x65;
    bytes[3] = kind;
    bytes[4..12].copy_from_slice(&i.to_be_bytes());
    bytes
}
