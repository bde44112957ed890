use super::*;
use crate::deploy::observe::ObservedCollection;
use crate::{CollectionSpec, IndexSpec};
use mongodb::bson::{doc, Document};

fn spec() -> CollectionSpec {
    CollectionSpec::new("tickets", doc! { "$jsonSchema": { "bsonType": "object" } })
        .index(IndexSpec::new(doc! { "team": 1, "status": 1 }).name("queue"))
        .index(IndexSpec::new(doc! { "code": 1 }).unique(true))
}

fn in_sync() -> ObservedCollection {
    let mut observed = ObservedCollection::new("tickets");
    observed.validator = Some(doc! { "$jsonSchema": { "bsonType": "object" } });
    observed.validation_level = Some("strict".into());
    observed.validation_action = Some("error".into());
    observed
        .indexes
        .push(doc! { "v": 2, "key": { "team": 1, "status": 1 }, "name": "queue" });
    observed
        .indexes
        .push(doc! { "v": 2, "key": { "code": 1_i64 }, "name": "code_1", "unique": true });
    observed
}

#[test]
fn missing_collection_is_created_with_its_indexes() {
    let plan = Plan::for_collection(&spec(), None);
    assert_eq!(plan.actions.len(), 2);
    assert!(matches!(plan.actions[0], Action::CreateCollection { .. }));
    assert!(
        matches!(&plan.actions[1], Action::CreateIndexes { indexes, .. } if indexes.len() == 2)
    );
}

#[test]
fn matching_collection_needs_nothing() {
    let plan = Plan::for_collection(&spec(), Some(&in_sync()));
    assert!(plan.is_empty(), "{plan}");
    assert!(plan.warnings.is_empty());
}

#[test]
fn absent_level_and_action_mean_the_defaults() {
    let mut observed = in_sync();
    observed.validation_level = None;
    observed.validation_action = None;
    assert!(Plan::for_collection(&spec(), Some(&observed)).is_empty());
}

#[test]
fn changed_validator_or_level_is_one_coll_mod() {
    let mut observed = in_sync();
    observed.validator = Some(doc! { "$jsonSchema": { "bsonType": "object", "required": ["a"] } });
    observed.validation_level = Some("moderate".into());
    let plan = Plan::for_collection(&spec(), Some(&observed));
    match &plan.actions[..] {
        [Action::UpdateValidator { changes, .. }] => {
            assert_eq!(changes.len(), 2, "{changes:?}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn only_missing_indexes_are_created() {
    let mut observed = in_sync();
    observed.indexes.pop();
    let plan = Plan::for_collection(&spec(), Some(&observed));
    match &plan.actions[..] {
        [Action::CreateIndexes { indexes, .. }] => assert_eq!(indexes[0].name, "code_1"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn index_with_other_options_is_reported_not_rebuilt() {
    let mut observed = in_sync();
    observed.indexes[2] = doc! { "v": 2, "key": { "code": 1 }, "name": "code_1" };
    let plan = Plan::for_collection(&spec(), Some(&observed));
    assert!(plan.is_empty());
    assert!(
        matches!(&plan.warnings[..], [Warning::IndexConflict { differences, .. }] if differences.len() == 1)
    );
}

#[test]
fn index_name_taken_by_other_keys_is_reported() {
    let mut observed = in_sync();
    observed.indexes[1] = doc! { "v": 2, "key": { "team": 1 }, "name": "queue" };
    let plan = Plan::for_collection(&spec(), Some(&observed));
    assert!(plan.is_empty());
    assert_eq!(plan.warnings.len(), 1);
}

#[test]
fn views_are_left_alone() {
    let mut observed = ObservedCollection::new("tickets");
    observed.kind = "view".into();
    let plan = Plan::for_collection(&spec(), Some(&observed));
    assert!(plan.is_empty());
    assert!(matches!(
        plan.warnings[..],
        [Warning::NotACollection { .. }]
    ));
}

/// `orders`, case-insensitive by default, with a declared index on `product` (under the
/// default) and the library's exact one on the same key (`product_1_simple`).
fn collated_orders() -> CollectionSpec {
    let en2 = crate::Collation::new("en").strength(2);
    CollectionSpec::new("orders", doc! { "$jsonSchema": { "bsonType": "object" } })
        .index(IndexSpec::new(doc! { "product": 1 }).collation(en2))
        .index(
            IndexSpec::new(doc! { "product": 1 })
                .name("product_1_simple")
                .collation(crate::Collation::simple()),
        )
}

fn observed_orders(indexes: Vec<Document>) -> ObservedCollection {
    let mut observed = ObservedCollection::new("orders");
    observed.validator = Some(doc! { "$jsonSchema": { "bsonType": "object" } });
    observed.indexes = indexes;
    observed
}

/// As mongod lists an index under `{ locale: "en", strength: 2 }`.
fn en2_listed() -> Document {
    doc! {
        "locale": "en", "caseLevel": false, "caseFirst": "off", "strength": 2,
        "numericOrdering": false, "alternate": "non-ignorable", "maxVariable": "punct",
        "normalization": false, "backwards": false, "version": "57.1",
    }
}

#[test]
fn two_indexes_of_one_key_pattern_and_two_collations_are_each_found_by_name() {
    let both = observed_orders(vec![
        doc! { "v": 2, "key": { "_id": 1 }, "name": "_id_", "collation": en2_listed() },
        doc! { "v": 2, "key": { "product": 1 }, "name": "product_1", "collation": en2_listed() },
        doc! { "v": 2, "key": { "product": 1 }, "name": "product_1_simple" },
    ]);
    let plan = Plan::for_collection(&collated_orders(), Some(&both));
    assert!(plan.is_empty(), "{plan}");
    assert!(plan.warnings.is_empty(), "{:?}", plan.warnings);
}

#[test]
fn an_index_of_the_same_keys_and_another_collation_is_not_the_one_wanted() {
    // mongod creates a collated time series' { meta: 1, time: 1 } index itself, under the
    // collection's default: the library's exact one is created beside it, not reported as a
    // conflict with it
    let only_default = observed_orders(vec![
        doc! { "v": 2, "key": { "_id": 1 }, "name": "_id_", "collation": en2_listed() },
        doc! { "v": 2, "key": { "product": 1 }, "name": "product_1", "collation": en2_listed() },
    ]);
    let plan = Plan::for_collection(&collated_orders(), Some(&only_default));
    assert!(plan.warnings.is_empty(), "{:?}", plan.warnings);
    match &plan.actions[..] {
        [Action::CreateIndexes { indexes, .. }] => {
            let names: Vec<&str> = indexes.iter().map(|i| i.name.as_str()).collect();
            assert_eq!(names, ["product_1_simple"]);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_index_of_the_same_keys_and_collation_under_another_name_is_a_conflict() {
    // one index for mongod (IndexOptionsConflict on a second): reported, not created
    let renamed = observed_orders(vec![
        doc! { "v": 2, "key": { "_id": 1 }, "name": "_id_", "collation": en2_listed() },
        doc! { "v": 2, "key": { "product": 1 }, "name": "product_1", "collation": en2_listed() },
        doc! { "v": 2, "key": { "product": 1 }, "name": "by_product_exactly" },
    ]);
    let plan = Plan::for_collection(&collated_orders(), Some(&renamed));
    assert!(plan.is_empty(), "{plan}");
    assert!(
        matches!(&plan.warnings[..], [Warning::IndexConflict { differences, .. }]
            if differences.len() == 1 && differences[0].contains("by_product_exactly")),
        "{:?}",
        plan.warnings
    );
}
