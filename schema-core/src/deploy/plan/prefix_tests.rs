use super::*;
use crate::deploy::observe::ObservedCollection;
use crate::{CollectionSpec, IndexSpec};
use crate::{RefKind, ReferenceSpec};
use mongodb::bson::doc;
use mongodb::bson::Document;

/// The library-lending shape: the declared index was extended with the page's `_id`.
fn loans() -> CollectionSpec {
    CollectionSpec::new("loans", doc! {})
        .index(IndexSpec::new(doc! { "member_id": 1, "loaned_at": -1 }))
        .reference(
            ReferenceSpec::new("member_id", "members", "Member", RefKind::One).order(
                "loaned_at",
                -1,
                false,
            ),
        )
}

fn observed(indexes: &[Document]) -> ObservedCollection {
    let mut observed = ObservedCollection::new("loans");
    observed.validator = Some(doc! {});
    observed.indexes = indexes.to_vec();
    observed
}

fn id_index() -> Document {
    doc! { "key": { "_id": 1 }, "name": "_id_" }
}

fn page_index() -> Document {
    doc! { "key": { "member_id": 1, "loaned_at": -1, "_id": -1 }, "name": "member_id_1_loaned_at_-1__id_-1" }
}

fn old_index() -> Document {
    doc! { "key": { "member_id": 1, "loaned_at": -1 }, "name": "member_id_1_loaned_at_-1" }
}

#[test]
fn an_existing_prefix_of_the_schemas_index_is_reported_or_dropped_on_request() {
    let spec = loans();
    // the deployment made by the earlier release: both indexes
    let observed = observed(&[id_index(), old_index(), page_index()]);
    let plan = Plan::for_collection(&spec, Some(&observed));
    assert!(plan.is_empty(), "{plan}");
    match &plan.warnings[..] {
        [Warning::PrefixIndex {
            name, served_by, ..
        }] => {
            assert_eq!(name, "member_id_1_loaned_at_-1");
            assert_eq!(served_by, "member_id_1_loaned_at_-1__id_-1");
        }
        other => panic!("{other:?}"),
    }
    let text = plan.to_string();
    assert!(text.contains("drop_stale_indexes(true)"), "{text}");
    let options = PlanOptions {
        drop_stale_indexes: true,
        ..PlanOptions::default()
    };
    let plan = Plan::for_collection_with(&spec, Some(&observed), options);
    assert!(plan.warnings.is_empty(), "{plan}");
    assert!(
        matches!(&plan.actions[..], [Action::DropIndex { name, .. }] if name == "member_id_1_loaned_at_-1"),
        "{plan}"
    );
    // before the longer one exists, the shorter one is still a prefix of the schema's
    let plan = Plan::for_collection(&spec, Some(&self::observed(&[id_index(), old_index()])));
    assert!(
        matches!(&plan.actions[..], [Action::CreateIndexes { .. }]),
        "{plan}"
    );
    assert!(
        matches!(&plan.warnings[..], [Warning::PrefixIndex { .. }]),
        "{plan}"
    );
}

#[test]
fn other_server_indexes_are_not_prefixes() {
    let spec = loans();
    for other in [
        // another direction, another field, an option of its own
        doc! { "key": { "member_id": 1, "loaned_at": 1 }, "name": "asc" },
        doc! { "key": { "loaned_at": -1 }, "name": "loaned_at_-1" },
        doc! { "key": { "member_id": 1 }, "name": "u", "unique": true },
        doc! { "key": { "member_id": 1 }, "name": "p", "partialFilterExpression": { "x": 1 } },
    ] {
        let plan = Plan::for_collection(
            &spec,
            Some(&observed(&[id_index(), page_index(), other.clone()])),
        );
        assert!(plan.warnings.is_empty(), "{other}: {plan}");
    }
    // a prefix of another server index that is not in the schema either
    let plan = Plan::for_collection(
        &spec,
        Some(&observed(&[
            id_index(),
            page_index(),
            doc! { "key": { "title": 1 }, "name": "title_1" },
            doc! { "key": { "title": 1, "year": 1 }, "name": "title_1_year_1" },
        ])),
    );
    assert!(
        matches!(&plan.warnings[..], [Warning::PrefixIndex { name, served_by, .. }] if name == "title_1" && served_by == "title_1_year_1"),
        "{plan}"
    );
}

#[test]
fn a_redundant_declared_index_is_a_warning_of_every_plan() {
    let spec = CollectionSpec::new("loans", doc! {})
        .index(IndexSpec::new(doc! { "member_id": 1 }))
        .index(IndexSpec::new(doc! { "member_id": 1, "loaned_at": -1 }));
    let plan = Plan::for_collection(&spec, None);
    match &plan.warnings[..] {
        [Warning::RedundantIndex {
            name, served_by, ..
        }] => {
            assert_eq!(
                (name.as_str(), served_by.as_str()),
                ("member_id_1", "member_id_1_loaned_at_-1")
            );
        }
        other => panic!("{other:?}"),
    }
    // display-text: the plan's advice, read by a person
    assert!(plan.to_string().contains("remove its `#[index]`"), "{plan}");
    // control: no warning without the prefix
    let spec = CollectionSpec::new("loans", doc! {})
        .index(IndexSpec::new(doc! { "member_id": 1 }).unique(true))
        .index(IndexSpec::new(doc! { "member_id": 1, "loaned_at": -1 }));
    assert!(Plan::for_collection(&spec, None).warnings.is_empty());
}

#[test]
fn a_declared_name_on_the_shorter_keys_says_why_it_differs() {
    let spec = CollectionSpec::new("loans", doc! {})
        .index(IndexSpec::new(doc! { "member_id": 1, "loaned_at": -1 }).name("by_member"))
        .reference(
            ReferenceSpec::new("member_id", "members", "Member", RefKind::One).order(
                "loaned_at",
                -1,
                false,
            ),
        );
    let observed = observed(&[
        id_index(),
        doc! { "key": { "member_id": 1, "loaned_at": -1 }, "name": "by_member" },
    ]);
    let plan = Plan::for_collection(&spec, Some(&observed));
    assert!(plan.is_empty(), "{plan}");
    let text = plan.to_string();
    assert!(text.contains("a prefix of the schema's"), "{text}");
}
