//! `pull` finds seed 003's sixth outcome in the data: a collection whose every `_id` is an `_id`
//! of another is a part under its owner's `_id` (`same_id_as`), written when no part is an
//! orphan (with `optional_part` when some owners have none), proposed in a comment when a few
//! are. Integer `_id`s without a name that hints at the pair are never paired (they match by
//! chance).

use mongo_schema_cli::pull::{pull, PullConfig};
use mongodb::bson::{doc, Document};

async fn insert(db: &mongodb::Database, name: &str, docs: Vec<Document>) {
    db.collection::<Document>(name)
        .insert_many(docs)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn pull_proposes_a_part_whose_ids_lie_inside_its_owners() {
    let db = mongo_schema_testkit::database("pull_parts").await;
    // 150 products; 120 spec sheets under their products' ids (more than a sample checks)
    insert(
        &db,
        "products",
        (0..150)
            .map(|i| doc! { "_id": format!("p{i}"), "name": format!("Product {i}") })
            .collect(),
    )
    .await;
    insert(
        &db,
        "product_specs",
        (0..120)
            .map(|i| doc! { "_id": format!("p{i}"), "sheet": "x".repeat(200) })
            .collect(),
    )
    .await;
    // notes of products, one of them an orphan: proposed, not written
    insert(
        &db,
        "product_notes",
        (0..120)
            .map(|i| doc! { "_id": format!("p{}", if i == 7 { 999 } else { i }), "note": "n" })
            .collect(),
    )
    .await;
    // integer ids that match by chance, and no name pairing them
    insert(
        &db,
        "users",
        (0..50).map(|i| doc! { "_id": i, "name": "u" }).collect(),
    )
    .await;
    insert(
        &db,
        "tickets",
        (0..30).map(|i| doc! { "_id": i, "title": "t" }).collect(),
    )
    .await;

    let pulled = pull(&db, &PullConfig::default())
        .await
        .unwrap_or_else(|e| panic!("pull: {e}"));
    let module = &pulled.module;
    assert!(
        module.contains(
            r#"#[collection(name = "product_specs", same_id_as = Products, optional_part, additional_properties = false)]"#
        ) || module.contains(
            r#"#[collection(name = "product_specs", same_id_as = Product, optional_part, additional_properties = false)]"#
        ),
        "{module}"
    );
    assert!(
        module.contains("every one of the 120 `_id`s of `product_specs` is an `_id` of `products`"),
        "{module}"
    );
    // one orphan: a comment proposes the pair, the attribute is not written
    assert!(
        module.contains("// perhaps: `#[collection(..., same_id_as = "),
        "{module}"
    );
    assert!(
        !module.contains(r#"name = "product_notes", same_id_as"#),
        "{module}"
    );
    // users and tickets share integer ids by chance: never paired
    assert!(
        !module.contains(r#"name = "tickets", same_id_as"#),
        "{module}"
    );
    let specs = pulled
        .report
        .parts
        .iter()
        .find(|p| p.part == "product_specs")
        .expect("checked");
    assert_eq!(
        (specs.orphans, specs.owners_without_part, specs.written),
        (0, 30, true)
    );
    let notes = pulled
        .report
        .parts
        .iter()
        .find(|p| p.part == "product_notes" && p.owner == "products")
        .expect("checked");
    assert_eq!(
        (notes.orphans, notes.proposed, notes.written),
        (1, true, false),
        "{notes:?}"
    );
    assert!(
        pulled.report.summary().contains(
            "part: the `_id`s of `product_notes` lie inside those of `products` (1 orphans"
        ),
        "{}",
        pulled.report.summary()
    );
    assert!(pulled.report.parts.iter().all(|p| p.part != "tickets"));
}
