//! `#[collection(name = "product_specs", same_id_as = Product)]`: seed 003's sixth outcome, a
//! large and cold part under its owner's `_id` in a second collection. Live: a product and its
//! 40 KB sheet are written in one transaction (both, or with an aborted transaction neither);
//! the listing of products never reads a sheet; `ProductSpec::of` reads it by the product's id;
//! `schema.delete_source::<Product>` deletes the sheet with its product; `audit` names an orphan
//! sheet and a product without its (required) sheet; the report draws the pair.

mod common;

use mongo_schema::bson::{doc, Document as BsonDocument};
use mongo_schema::prelude::*;
use mongo_schema::Error;
use serde::{Deserialize, Serialize};

#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "products")]
pub struct Product {
    #[serde(rename = "_id")]
    pub id: String,
    pub name: String,
    pub price: f64,
}

/// The specification sheet: read on the product's page, never in listings.
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "product_specs", same_id_as = Product)]
pub struct ProductSpec {
    #[serde(rename = "_id")]
    pub id: String,
    #[schema(max_length = 60000)]
    pub sheet: String,
}

/// A manual some products have.
#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[collection(name = "product_manuals", same_id_as = Product, optional_part)]
pub struct ProductManual {
    #[serde(rename = "_id")]
    pub id: String,
    pub pages: i32,
}

fn schema() -> Schema {
    Schema::new()
        .model::<Product>()
        .model::<ProductSpec>()
        .model::<ProductManual>()
        .build()
        .unwrap()
}

fn product(id: &str) -> Product {
    Product {
        id: id.into(),
        name: format!("Product {id}"),
        price: 9.5,
    }
}

/// A 40 KB sheet.
fn sheet(id: &str) -> ProductSpec {
    ProductSpec {
        id: id.into(),
        sheet: format!("{id}: ").repeat(40 * 1024 / (id.len() + 2)),
    }
}

/// A fresh database named after `prefix` with the schema applied, and the schema.
async fn applied(prefix: &str) -> (mongodb::Database, Schema) {
    let db = mongo_schema_testkit::database(prefix).await;
    let schema = schema();
    schema.apply(&db).await.unwrap();
    (db, schema)
}

async fn count(db: &mongodb::Database, collection: &str, id: &str) -> u64 {
    db.collection::<BsonDocument>(collection)
        .count_documents(doc! { "_id": id })
        .await
        .unwrap()
}

#[tokio::test]
async fn a_product_and_its_40_kb_sheet_live_under_one_id_and_the_listing_never_reads_it() {
    let (client, log) = mongo_schema_testkit::monitored_client().await;
    let db = client.database(&format!("cold_parts_listing_{}", std::process::id()));
    db.drop().await.unwrap();
    let schema = schema();
    schema.apply(&db).await.unwrap();
    for id in ["bike", "lamp"] {
        ProductSpec::OWNER
            .insert(&db, &product(id), &sheet(id))
            .await
            .unwrap();
        // both were written, under the one id
        assert_eq!(count(&db, "products", id).await, 1);
        assert_eq!(count(&db, "product_specs", id).await, 1);
    }
    let stored = db
        .collection::<BsonDocument>("product_specs")
        .find_one(doc! { "_id": "bike" })
        .await
        .unwrap()
        .unwrap();
    assert!(
        mongo_schema::bson::to_vec(&stored).unwrap().len() >= 40 * 1024,
        "a 40 KB sheet"
    );

    // the listing reads products only: no command names the sheets' collection, and no
    // document it returns is larger than a few hundred bytes
    log.clear();
    let listing: Vec<BsonDocument> =
        { common::all(db.collection::<BsonDocument>("products").find(doc! {})).await };
    assert_eq!(listing.len(), 2);
    assert!(listing
        .iter()
        .all(|p| mongo_schema::bson::to_vec(p).unwrap().len() < 512));
    let touched_specs = log.commands().iter().any(|c| {
        c.command
            .values()
            .any(|v| v.as_str() == Some("product_specs"))
    });
    assert!(!touched_specs, "{:?}", log.commands());

    // the page of one product reads its sheet by the product's id
    let bike = product("bike");
    log.clear();
    let read = ProductSpec::of(&db, &bike.to_ref()).await.unwrap();
    assert_eq!(read, Some(sheet("bike")));
    assert_eq!(log.names(), ["find"], "one command");
    assert_eq!(
        log.commands()[0].command.get_str("find").unwrap(),
        "product_specs"
    );
    // none for a product without one; several in one `$in`, the missing ones reported
    assert_eq!(ProductManual::of(&db, &bike.to_ref()).await.unwrap(), None);
    let owners = [
        product("lamp").to_ref(),
        Ref::new("chair".to_owned()),
        bike.to_ref(),
    ];
    let all = ProductSpec::of_all(&db, &owners).await.unwrap();
    assert_eq!(
        all.documents
            .iter()
            .map(|s| s.id.as_str())
            .collect::<Vec<_>>(),
        ["lamp", "bike"]
    );
    assert_eq!(all.missing.len(), 1);
    // owners joined with their part on `_id`
    let joined = ProductSpec::OWNER
        .lookup_in(&db)
        .filter(doc! { "_id": "lamp" })
        .await
        .unwrap();
    assert_eq!(joined.len(), 1);
    assert_eq!(joined[0].one(), Some(&sheet("lamp")));
    // inside a transaction, through the caller's session
    let mut session = client.start_session().await.unwrap();
    session.start_transaction().await.unwrap();
    let in_session = ProductSpec::of(&db, &bike.to_ref())
        .session(&mut session)
        .await
        .unwrap();
    session.commit_transaction().await.unwrap();
    assert!(in_session.is_some());
    // every query is served by `_id_`: the part needs no index of its own
    let specs = schema.collection("product_specs").unwrap();
    assert!(specs.indexes.is_empty(), "{:?}", specs.indexes);
    let of = specs
        .library_queries
        .iter()
        .find(|q| q.name == "part of a products document by _id")
        .expect("a library query");
    assert_eq!(of.fit.as_ref().unwrap().index.as_deref(), Some("_id_"));
    db.drop().await.unwrap();
}

#[tokio::test]
async fn owner_and_part_are_written_together_or_not_at_all() {
    let (db, _) = applied("cold_parts_atomic").await;
    // ids that differ are refused before anything is sent
    let refused = ProductSpec::OWNER
        .insert(&db, &product("bike"), &sheet("lamp"))
        .await;
    assert!(
        matches!(refused, Err(Error::InvalidArgument { ref argument, .. }) if argument == "part._id"),
        "{refused:?}"
    );
    assert_eq!(count(&db, "products", "bike").await, 0);
    // a sheet the validator refuses (over its `max_length`) aborts the transaction: the
    // product is not stored either
    let too_long = ProductSpec {
        id: "bike".into(),
        sheet: "x".repeat(60001),
    };
    let refused = ProductSpec::OWNER
        .insert(&db, &product("bike"), &too_long)
        .await;
    assert!(matches!(refused, Err(Error::Validation(_))), "{refused:?}");
    assert_eq!(count(&db, "products", "bike").await, 0);
    assert_eq!(count(&db, "product_specs", "bike").await, 0);
    // the caller's transaction, aborted: neither
    let mut session = db.client().start_session().await.unwrap();
    session.start_transaction().await.unwrap();
    ProductSpec::OWNER
        .insert(&db, &product("bike"), &sheet("bike"))
        .session(&mut session)
        .await
        .unwrap();
    session.abort_transaction().await.unwrap();
    assert_eq!(count(&db, "products", "bike").await, 0);
    assert_eq!(count(&db, "product_specs", "bike").await, 0);
    // the control: the same insert, committed, stores both
    ProductSpec::OWNER
        .insert(&db, &product("bike"), &sheet("bike"))
        .await
        .unwrap();
    assert_eq!(count(&db, "products", "bike").await, 1);
    assert_eq!(count(&db, "product_specs", "bike").await, 1);
}

#[tokio::test]
async fn deleting_the_product_deletes_its_parts_in_the_same_transaction() {
    let (db, schema) = applied("cold_parts_delete").await;
    for id in ["bike", "lamp"] {
        ProductSpec::OWNER
            .insert(&db, &product(id), &sheet(id))
            .await
            .unwrap();
    }
    ProductManual::collection(&db)
        .insert_one(ProductManual {
            id: "bike".into(),
            pages: 12,
        })
        .await
        .unwrap();

    // the caller's transaction, aborted: all three stay
    let mut session = db.client().start_session().await.unwrap();
    session.start_transaction().await.unwrap();
    let deleted = schema
        .delete_source::<Product>(&db, &"bike".to_owned())
        .session(&mut session)
        .await
        .unwrap();
    assert!(deleted.source.is_some());
    session.abort_transaction().await.unwrap();
    assert_eq!(count(&db, "products", "bike").await, 1);
    assert_eq!(count(&db, "product_specs", "bike").await, 1);
    assert_eq!(count(&db, "product_manuals", "bike").await, 1);

    let deleted = schema
        .delete_source::<Product>(&db, &"bike".to_owned())
        .await
        .unwrap();
    assert!(deleted.source.is_some());
    let mut parts = deleted.parts_deleted.clone();
    parts.sort();
    assert_eq!(
        parts,
        [
            ("product_manuals".to_owned(), 1),
            ("product_specs".to_owned(), 1)
        ]
    );
    assert_eq!(count(&db, "products", "bike").await, 0);
    assert_eq!(count(&db, "product_specs", "bike").await, 0);
    assert_eq!(count(&db, "product_manuals", "bike").await, 0);
    // the other product keeps its sheet
    assert_eq!(count(&db, "product_specs", "lamp").await, 1);
}

#[tokio::test]
async fn audit_names_an_orphan_sheet_and_a_product_without_its_sheet() {
    let (db, schema) = applied("cold_parts_audit").await;
    ProductSpec::OWNER
        .insert(&db, &product("bike"), &sheet("bike"))
        .await
        .unwrap();
    let clean = schema.audit(&db).await.unwrap();
    assert!(clean.is_clean(), "{clean}");
    let specs = clean
        .parts
        .iter()
        .find(|p| p.part == "product_specs")
        .expect("the part is audited");
    assert_eq!((specs.orphans, specs.owners_without_part), (0, 0));

    // a sheet whose product is gone, and a product written without its sheet
    ProductSpec::collection(&db)
        .insert_one(sheet("ghost"))
        .await
        .unwrap();
    Product::collection(&db)
        .insert_one(product("lamp"))
        .await
        .unwrap();
    let found = schema.audit(&db).await.unwrap();
    assert!(!found.is_clean());
    let specs = found
        .parts
        .iter()
        .find(|p| p.part == "product_specs")
        .unwrap();
    assert_eq!(specs.orphans, 1);
    assert_eq!(specs.orphan_ids, [mongo_schema::bson::Bson::from("ghost")]);
    assert_eq!(specs.owners_without_part, 1);
    assert_eq!(
        specs.owners_without_part_ids,
        [mongo_schema::bson::Bson::from("lamp")]
    );
    // the manual is optional: products without one are not counted
    let manuals = found
        .parts
        .iter()
        .find(|p| p.part == "product_manuals")
        .unwrap();
    assert!(manuals.optional);
    assert_eq!((manuals.orphans, manuals.owners_without_part), (0, 0));
    let text = found.to_string();
    assert!(
        text.contains("orphan parts in `product_specs`: 1"),
        "{text}"
    );
    assert!(text.contains("\"ghost\""), "{text}");
    assert!(
        text.contains("owners without their part: 1 of `products`"),
        "{text}"
    );

    // deleting the orphan's id through its owner's delete cleans it up
    let gone = schema
        .delete_source::<Product>(&db, &"ghost".to_owned())
        .await
        .unwrap();
    assert!(gone.source.is_none());
    assert_eq!(count(&db, "product_specs", "ghost").await, 0);
}

#[tokio::test]
async fn the_report_draws_the_pair_as_the_sixth_outcome() {
    let schema = schema();
    let report = schema.report();
    assert!(
        report.contains(
            "products ---|\"_id: one part under the same _id (large and cold)\"| product_specs"
        ),
        "{report}"
    );
    assert!(
        report.contains(
            "products ---|\"_id: optional part under the same _id (large and cold)\"| product_manuals"
        ),
        "{report}"
    );
    assert!(
        report.contains(
            "reference with the same `_id` in a second collection (large and cold) to `product_specs` (`same_id_as = Product`)"
        ),
        "{report}"
    );
    assert!(
        report.contains("- **a part of `products`** (Product) stored under its `_id`"),
        "{report}"
    );
    // the page's diagram: an arrow of its own kind from the owner to each part, labelled
    let html = schema.report_html();
    assert_eq!(
        html.matches(r#"<g class="relationship part">"#).count(),
        2,
        "{html}"
    );
    assert!(html.contains(r#"class="label part""#), "{html}");
    // a schema without the owner does not build, and says how to fix it
    let error = Schema::new().model::<ProductSpec>().build().unwrap_err();
    assert!(
        error
            .problems
            .iter()
            .any(|p| p.contains("add `.model::<Product>()`")),
        "{error}"
    );
}
