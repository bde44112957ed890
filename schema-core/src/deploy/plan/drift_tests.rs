use super::versions::undone;
use super::*;
use crate::deploy::observe::{Observed, ObservedCollection};
use crate::{CollectionSpec, IndexSpec};
use mongodb::bson::doc;

fn spec() -> CollectionSpec {
    CollectionSpec::new("c", doc! { "$jsonSchema": { "required": ["a"] } })
        .index(IndexSpec::new(doc! { "a": 1 }))
}

fn applied() -> ObservedCollection {
    let mut observed = ObservedCollection::new("c");
    observed.validator = Some(doc! { "$jsonSchema": { "required": ["a"] } });
    observed
        .indexes
        .push(doc! { "v": 2, "key": { "a": 1 }, "name": "a_1" });
    observed
}

#[test]
fn a_write_undone_by_a_late_one_is_found_on_reading_again() {
    let executed = Plan::for_collection(&spec(), None).actions;
    let observed = Observed {
        collections: vec![applied()],
        ..Observed::default()
    };
    assert!(undone(&executed, &observed).is_empty());
    let mut late = applied();
    late.validator = Some(doc! { "$jsonSchema": { "required": [] } });
    let observed = Observed {
        collections: vec![late],
        ..Observed::default()
    };
    assert_eq!(undone(&executed, &observed), ["c"]);
    let mut dropped = applied();
    dropped.indexes.pop();
    let observed = Observed {
        collections: vec![dropped],
        ..Observed::default()
    };
    assert_eq!(undone(&executed, &observed), ["c"]);
    assert_eq!(undone(&executed, &Observed::default()), ["c"]);
}
