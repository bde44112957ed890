use super::*;
use crate::deploy::observe::ObservedCollection;
use crate::{CollectionSpec, IndexSpec};
use mongodb::bson::doc;

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
