//! The validators of a plan: what differs from the server's, and the writes of a change once
//! the documents it would reject are known.

use crate::deploy::observe::{ObservedCollection, Seen};
use crate::deploy::record::VersionStatus;
use crate::deploy::sharding::ShardingStatus;
use crate::{json_schema, CollectionSpec, ValidationLevel};

use super::versions::hold_back_drops;
use super::{Action, OnViolations, Plan, PlanOptions, Warning};

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

/// The writes a plan needs once the violations of its validator changes are known: a change
/// that existing documents violate is dropped ([`OnViolations::Refuse`]) or made moderate, with
/// a warning; a change the server already shows as decided is no write.
pub(super) fn writes_of(
    specs: &[CollectionSpec],
    seen: &Seen<'_>,
    options: PlanOptions,
    status: &VersionStatus,
) -> (Vec<Action>, Vec<Warning>, Vec<ShardingStatus>) {
    let mut plan = Plan::compute_with(specs, &seen.observed, options);
    hold_back_drops(&mut plan, status);
    let mut warnings = plan.warnings;
    let mut actions = Vec::with_capacity(plan.actions.len());
    for mut action in plan.actions {
        if let Action::UpdateValidator {
            collection,
            validator,
            level,
            action: validation_action,
            violations: slot,
            ..
        } = &mut action
        {
            let found = seen
                .violations
                .iter()
                .find(|(name, _)| name == collection)
                .map(|(_, found)| found.clone())
                .unwrap_or_default();
            if found.any() {
                warnings.push(Warning::ValidatorOverViolations {
                    collection: collection.clone(),
                    violations: found.clone(),
                    decision: options.on_violations,
                });
                match options.on_violations {
                    OnViolations::Refuse => continue,
                    OnViolations::Moderate => *level = ValidationLevel::Moderate,
                    _ => {}
                }
            }
            let already = seen.observed.collection(collection).is_some_and(|server| {
                server
                    .validator
                    .as_ref()
                    .is_some_and(|v| json_schema::same_document(v, validator))
                    && server.level() == level.as_str()
                    && server.action() == validation_action.as_str()
            });
            if already {
                continue;
            }
            *slot = Some(found);
        }
        actions.push(action);
    }
    (actions, warnings, plan.sharding)
}
