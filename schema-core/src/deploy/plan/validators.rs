//! The validators of a plan: what differs from the server's (the writes of a change once the
//! documents it would reject are known are planned in `versions.rs`, with the pass of `apply`
//! that knows them).

use crate::deploy::observe::ObservedCollection;
use crate::{json_schema, CollectionSpec};

/// What differs between the collection's validator, level and action and `spec`'s, in
/// words; empty when they are the same.
pub(super) fn validator_changes(
    spec: &CollectionSpec,
    observed: &ObservedCollection,
) -> Vec<String> {
    let mut changes = Vec::new();
    let same_validator = observed
        .validator
        .as_ref()
        .is_some_and(|v| json_schema::same_document(v, &spec.validator));
    if !same_validator {
        changes.push(match observed.validator {
            None => "add the validator".to_owned(),
            Some(_) => "replace the validator".to_owned(),
        });
    }
    if observed.level() != spec.validation_level.as_str() {
        changes.push(format!(
            "validationLevel {} -> {}",
            observed.level(),
            spec.validation_level
        ));
    }
    if observed.action() != spec.validation_action.as_str() {
        changes.push(format!(
            "validationAction {} -> {}",
            observed.action(),
            spec.validation_action
        ));
    }
    changes
}
