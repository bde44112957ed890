use super::*;
use crate::deploy::observe::ObservedCollection;
use crate::{CollectionSpec, IndexSpec};
use mongodb::bson::doc;

#[test]
fn stale_indexes_are_dropped_only_when_asked_and_never_id_or_conflicting() {
    let spec = CollectionSpec::new("c", doc! {}).index(IndexSpec::new(doc! { "a": 1 }));
    let mut observed = ObservedCollection::new("c");
    observed.validator = Some(doc! {});
    observed
        .indexes
        .push(doc! { "key": { "a": 1 }, "name": "legacy_a" }); // conflicting
    observed
        .indexes
        .push(doc! { "key": { "b": 1 }, "name": "b_1" }); // stale
    assert!(!Plan::for_collection(&spec, Some(&observed))
        .actions
        .iter()
        .any(|a| matches!(a, Action::DropIndex { .. })));
    let options = PlanOptions {
        drop_stale_indexes: true,
        ..PlanOptions::default()
    };
    let plan = Plan::for_collection_with(&spec, Some(&observed), options);
    let dropped: Vec<&str> = plan
        .actions
        .iter()
        .filter_map(|a| match a {
            Action::DropIndex { name, .. } => Some(name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(dropped, ["b_1"]);
    assert_eq!(plan.warnings.len(), 1, "the conflict stays reported");
}
