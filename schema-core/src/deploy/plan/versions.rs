//! The version decisions of one pass of `apply`: the recorded version against this one
//! ([`OnNewer`]), the migration steps, the drops a downgrade holds back, drift from the recorded
//! state and a late write that undid this apply's.

use crate::deploy::observe::{Observed, ObservedCollection, Seen};
use crate::deploy::record::{RecordedVersion, VersionStatus};
use crate::deploy::sharding::ShardingStatus;
use crate::{json_schema, CollectionSpec, ValidationLevel};

use super::indexes::{find_index, IndexState};
use super::{not_as_declared, Action, OnViolations, Plan, PlanOptions, Warning};

/// What an `apply` does when the database records a newer schema version than its own (an
/// instance of the previous release starting during a rolling deploy).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum OnNewer {
    /// Return [`crate::Error::Downgrade`] (the default): the caller decides.
    #[default]
    Fail,
    /// Keep serving: nothing is written, the report says so and a warning is logged. The
    /// newer version's validators and indexes stay; an older instance keeps working as long as
    /// its writes satisfy them (ship new required fields as optional first, see the README's
    /// expand/contract).
    Continue,
    /// Apply anyway (a deliberate rollback): the record then says this version. Indexes are
    /// never dropped over a newer recorded version. The same as
    /// [`crate::ApplyAction::allow_downgrade`]`(true)`.
    Downgrade,
}

/// The choices of one `apply` that its plan stage reads.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deciding<'a> {
    /// The version being applied.
    pub(crate) version: u64,
    /// The fingerprint of its desired state.
    pub(crate) fingerprint: &'a str,
    /// The plan's options.
    pub(crate) options: PlanOptions,
    /// What to do over a newer recorded version.
    pub(crate) on_newer: OnNewer,
}

/// What the plan stage of one pass of `apply` decided.
#[derive(Debug)]
pub(crate) struct Staged {
    /// How the version being applied relates to the record (the one this apply claimed, once it
    /// holds the lock).
    pub(crate) status: VersionStatus,
    /// What this pass does next.
    pub(crate) next: Next,
    /// Differences left alone, the violators of each validator change among them.
    pub(crate) warnings: Vec<Warning>,
    /// The sharding of the collections that declare a shard key.
    pub(crate) sharding: Vec<ShardingStatus>,
    /// Drift from the recorded state ([`drift`]), or, right after this apply's own writes,
    /// a write of someone else that landed after them.
    pub(crate) drift: Option<Warning>,
    /// What of the declared state stays off the server once this plan is carried out
    /// ([`not_as_declared`]).
    pub(crate) missing: Vec<String>,
}

/// What one pass of `apply` does after planning.
#[derive(Debug)]
pub(crate) enum Next {
    /// A newer version is recorded and this apply may not write over it.
    Refuse {
        /// The recorded version.
        recorded: u64,
        /// The version being applied.
        applying: u64,
    },
    /// A newer version is recorded; this instance writes nothing and serves on
    /// ([`OnNewer::Continue`]).
    ServeOn {
        /// The recorded version.
        recorded: u64,
        /// The version being applied.
        applying: u64,
    },
    /// Nothing to write and no migration step pending: record the outcome (or, with the
    /// record current, nothing at all).
    Settled,
    /// Send these writes. With migration steps pending, these are the writes that come before
    /// the steps: a tightened validator held at `moderate`, no new unique index.
    Write(Vec<Action>),
    /// The writes that come before the steps are on the server: run the pending steps.
    Steps {
        /// The unique indexes built after the steps, in words.
        held_back: Vec<String>,
    },
}

/// The plan stage of one pass of `apply`, pure: what was seen + this apply's choices -> what to
/// do next. `claimed`: the status of the version when this apply took the lock (its later
/// passes plan as that status says: a downgrade still holds back index drops); `executed`: the
/// writes of the previous pass, which the server must now show.
pub(crate) fn plan_apply(
    specs: &[CollectionSpec],
    seen: &Seen<'_>,
    deciding: Deciding<'_>,
    claimed: Option<&VersionStatus>,
    executed: &[Action],
) -> Staged {
    let status = match claimed {
        Some(status) => status.clone(),
        None => VersionStatus::of(
            deciding.version,
            deciding.fingerprint,
            seen.record.recorded.as_ref(),
        ),
    };
    let mut staged = Staged {
        status: status.clone(),
        next: Next::Settled,
        warnings: Vec::new(),
        sharding: Vec::new(),
        drift: None,
        missing: Vec::new(),
    };
    if let (None, VersionStatus::Downgrade { recorded, applying }) = (claimed, &status) {
        let (recorded, applying) = (*recorded, *applying);
        match deciding.on_newer {
            OnNewer::Downgrade => {}
            OnNewer::Continue => {
                staged.next = Next::ServeOn { recorded, applying };
                return staged;
            }
            OnNewer::Fail => {
                staged.next = Next::Refuse { recorded, applying };
                return staged;
            }
        }
    }
    let late = undone(executed, &seen.observed);
    staged.drift = if !late.is_empty() {
        Some(Warning::Drifted {
            version: deciding.version,
            collections: late,
            after_own_write: true,
        })
    } else {
        seen.record
            .recorded
            .as_ref()
            .and_then(|recorded| drift(&status, recorded, &seen.prints))
    };
    let before_steps = !seen.steps.is_empty();
    let mut options = deciding.options;
    if before_steps {
        // the steps fix the documents that violate the new validator: keep them writable
        options.on_violations = OnViolations::Moderate;
    }
    let (writes, mut warnings, sharding) = writes_of(specs, seen, options, &status);
    staged.sharding = sharding;
    staged.missing = not_as_declared(&warnings);
    if claimed.is_none() {
        if let Some(recorded) = &seen.record.recorded {
            warnings.extend(
                seen.ran_before_rollback
                    .iter()
                    .filter(|m| !m.step.0.reruns())
                    .map(|m| Warning::StepNotRerun {
                        version: m.version,
                        name: m.name.clone(),
                        recorded: recorded.version,
                    }),
            );
        }
    }
    if !before_steps {
        staged.warnings = warnings;
        staged.next = if writes.is_empty() {
            Next::Settled
        } else {
            Next::Write(writes)
        };
        return staged;
    }
    let mut held_back = Vec::new();
    let mut first = Vec::new();
    for action in writes {
        match action {
            Action::CreateIndexes {
                collection,
                indexes,
            } => {
                let (unique, other): (Vec<_>, Vec<_>) = indexes.into_iter().partition(|i| i.unique);
                if !unique.is_empty() {
                    held_back.push(format!(
                        "unique index(es) {} on `{collection}` built after the migration steps",
                        unique
                            .iter()
                            .map(|i| format!("`{}`", i.name))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
                if !other.is_empty() {
                    first.push(Action::CreateIndexes {
                        collection,
                        indexes: other,
                    });
                }
            }
            other => first.push(other),
        }
    }
    staged.next = if first.is_empty() {
        Next::Steps { held_back }
    } else {
        Next::Write(first)
    };
    staged
}

/// A downgrade that is allowed must not drop what the newer version created: with a newer
/// version recorded, `DropIndex` actions are taken out of the plan and reported instead.
pub(crate) fn hold_back_drops(plan: &mut Plan, status: &VersionStatus) {
    let (recorded, applying) = match *status {
        VersionStatus::Downgrade { recorded, applying } => (recorded, applying),
        VersionStatus::Rollback {
            failed, applying, ..
        } => (failed, applying),
        _ => return,
    };
    let mut held = Vec::new();
    plan.actions.retain(|action| match action {
        Action::DropIndex {
            collection, name, ..
        } => {
            held.push(format!("{collection}.{name}"));
            false
        }
        _ => true,
    });
    if !held.is_empty() {
        plan.warnings.push(Warning::DropsHeldBack {
            recorded,
            applying,
            indexes: held,
        });
    }
}

/// The collections whose print in `now` differs from the one `recorded` (collections the record
/// has no print of are not compared: a record written before prints were kept, or a collection
/// added since).
pub(crate) fn drifted_collections(
    recorded: &[(String, String)],
    now: &[(String, String)],
) -> Vec<String> {
    now.iter()
        .filter(|(name, print)| {
            recorded.iter().any(|(recorded_name, recorded_print)| {
                recorded_name == name && recorded_print != print
            })
        })
        .map(|(name, _)| name.clone())
        .collect()
}

/// The drift a start-up finds: with this version and fingerprint recorded as applied, the
/// collections whose state differs from what the server had when that apply completed.
pub(crate) fn drift(
    status: &VersionStatus,
    recorded: &RecordedVersion,
    now: &[(String, String)],
) -> Option<Warning> {
    let VersionStatus::Current { version } = *status else {
        return None;
    };
    let collections = drifted_collections(&recorded.observed, now);
    (!collections.is_empty()).then_some(Warning::Drifted {
        version,
        collections,
        after_own_write: false,
    })
}

/// The collections where an action of `executed` is not what `observed` shows: read again after
/// an apply's last write, a validator or index that differs means a late write of someone else
/// (an older apply paused past its lease) landed after this apply's.
pub(crate) fn undone(executed: &[Action], observed: &Observed) -> Vec<String> {
    let mut collections: Vec<String> = Vec::new();
    for action in executed {
        let seen = observed.collection(action.collection());
        let holds = match action {
            Action::CreateCollection {
                timeseries: Some(_),
                ..
            } => seen.is_some_and(ObservedCollection::is_timeseries),
            Action::ModifyTimeSeries {
                granularity,
                expire_after_secs,
                ..
            } => seen.is_some_and(|seen| {
                seen.timeseries.as_ref().is_some_and(|ts| {
                    granularity.is_none_or(|g| ts.effective_granularity() == g)
                        && expire_after_secs.is_none_or(|e| ts.expire_after_secs == e)
                })
            }),
            Action::CreateCollection {
                validator,
                level,
                action,
                ..
            }
            | Action::UpdateValidator {
                validator,
                level,
                action,
                ..
            } => seen.is_some_and(|seen| {
                seen.validator
                    .as_ref()
                    .is_some_and(|v| json_schema::same_document(v, validator))
                    && seen.level() == level.as_str()
                    && seen.action() == action.as_str()
            }),
            Action::CreateIndexes { indexes, .. } => seen.is_some_and(|seen| {
                indexes
                    .iter()
                    .all(|wanted| matches!(find_index(wanted, &seen.indexes), IndexState::Present))
            }),
            Action::DropIndex { name, .. } => seen.is_none_or(|seen| {
                !seen
                    .indexes
                    .iter()
                    .any(|index| index.get_str("name").ok() == Some(name.as_str()))
            }),
            Action::EnablePreImages { .. } => seen.is_some_and(|seen| seen.pre_images),
            Action::ShardCollection { .. } => true,
        };
        let collection = action.collection().to_owned();
        if !holds && !collections.contains(&collection) {
            collections.push(collection);
        }
    }
    collections
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
