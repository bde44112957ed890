//! The plan of each collection: [`Plan::compute`] and [`Plan::for_collection`] (create, the
//! validator, the indexes, the time series options, the sharding).

use crate::deploy::observe::{Observed, ObservedCollection};
use crate::deploy::sharding::{self, ShardState};
use crate::model::index;
use crate::{json_schema, CollectionSpec};

use super::indexes::{find_index, prefix_indexes, IndexState};
use super::validators::validator_changes;
use super::{Action, Plan, PlanOptions, Warning};

impl Plan {
    /// Whether the server already matches the schema and no migration step is pending
    /// (warnings aside).
    pub fn is_empty(&self) -> bool {
        self.actions.is_empty() && self.migrations.is_empty()
    }

    #[doc(hidden)]
    /// Plans every collection of `desired` against `observed`.
    pub fn compute(desired: &[CollectionSpec], observed: &Observed) -> Plan {
        Plan::compute_with(desired, observed, PlanOptions::default())
    }

    #[doc(hidden)]
    /// [`Plan::compute`] with options.
    pub fn compute_with(
        desired: &[CollectionSpec],
        observed: &Observed,
        options: PlanOptions,
    ) -> Plan {
        let mut plan = Plan::default();
        for spec in desired {
            plan.extend(Plan::for_collection_with(
                spec,
                observed.collection(&spec.name),
                options,
            ));
        }
        let statuses = sharding::sharding_of(
            desired,
            observed,
            options.shard_collections,
            |collection, starts_with_key| {
                plan.actions.iter().any(|action| match action {
                    Action::CreateIndexes {
                        collection: c,
                        indexes,
                    } => c == collection && indexes.iter().any(|i| starts_with_key(&i.keys)),
                    _ => false,
                })
            },
        );
        for status in statuses {
            match &status.state {
                ShardState::OtherKey(sharded) => plan.warnings.push(Warning::ShardKeyDiffers {
                    collection: status.collection.clone(),
                    declared: status.key.clone(),
                    sharded: sharded.clone(),
                }),
                // right after the collection's other actions: its collection and index first
                ShardState::ToShard => {
                    let after = plan
                        .actions
                        .iter()
                        .rposition(|a| a.collection() == status.collection)
                        .map_or(plan.actions.len(), |i| i + 1);
                    plan.actions.insert(
                        after,
                        Action::ShardCollection {
                            collection: status.collection.clone(),
                            key: status.key.clone(),
                        },
                    );
                }
                _ => {}
            }
            plan.sharding.push(status);
        }
        plan
    }

    /// Plans one collection; `observed` is `None` when it does not exist.
    pub fn for_collection(spec: &CollectionSpec, observed: Option<&ObservedCollection>) -> Plan {
        Plan::for_collection_with(spec, observed, PlanOptions::default())
    }

    /// [`Plan::for_collection`] with options.
    pub fn for_collection_with(
        spec: &CollectionSpec,
        observed: Option<&ObservedCollection>,
        options: PlanOptions,
    ) -> Plan {
        let mut plan = Plan::default();
        for (index, served_by) in index::redundant(&spec.indexes) {
            plan.warnings.push(Warning::RedundantIndex {
                collection: spec.name.clone(),
                name: index.name.clone(),
                keys: index.keys.clone(),
                served_by: served_by.name.clone(),
            });
        }
        let Some(observed) = observed else {
            plan.actions.push(Action::CreateCollection {
                collection: spec.name.clone(),
                validator: spec.validator.clone(),
                level: spec.validation_level,
                action: spec.validation_action,
                collation: spec.collation.clone(),
                timeseries: spec.timeseries.clone(),
            });
            if !spec.indexes.is_empty() {
                plan.actions.push(Action::CreateIndexes {
                    collection: spec.name.clone(),
                    indexes: spec.indexes.clone(),
                });
            }
            if spec.change_stream_pre_images {
                plan.actions.push(Action::EnablePreImages {
                    collection: spec.name.clone(),
                });
            }
            return plan;
        };
        match (&spec.timeseries, observed.is_timeseries()) {
            (Some(_), false) if observed.kind == "collection" => {
                plan.warnings.push(Warning::NotTimeSeries {
                    collection: spec.name.clone(),
                });
                return plan;
            }
            (None, true) => {
                plan.warnings.push(Warning::NotACollection {
                    collection: spec.name.clone(),
                    kind: "timeseries".to_owned(),
                });
                return plan;
            }
            (Some(_), true) => {}
            _ if observed.kind != "collection" => {
                plan.warnings.push(Warning::NotACollection {
                    collection: spec.name.clone(),
                    kind: observed.kind.clone(),
                });
                return plan;
            }
            _ => {}
        }
        if !crate::Collation::same_as_server(spec.collation.as_ref(), observed.collation.as_ref()) {
            plan.warnings.push(Warning::CollationDiffers {
                collection: spec.name.clone(),
                declared: spec.collation.clone(),
                server: observed.collation.clone(),
            });
        }
        if let Some(wanted) = &spec.timeseries {
            plan.extend(timeseries_changes(&spec.name, wanted, observed));
        }
        // mongod takes no validator on a time series collection
        let changes = if spec.timeseries.is_some() {
            Vec::new()
        } else {
            validator_changes(spec, observed)
        };
        if !changes.is_empty() {
            plan.actions.push(Action::UpdateValidator {
                collection: spec.name.clone(),
                current: observed.validator.clone(),
                validator: spec.validator.clone(),
                level: spec.validation_level,
                action: spec.validation_action,
                changes,
                violations: None,
            });
        }
        if spec.change_stream_pre_images && !observed.pre_images {
            plan.actions.push(Action::EnablePreImages {
                collection: spec.name.clone(),
            });
        }
        let mut missing = Vec::new();
        for wanted in &spec.indexes {
            match find_index(wanted, &observed.indexes) {
                IndexState::Present => {}
                IndexState::Missing => missing.push(wanted.clone()),
                IndexState::Conflict {
                    existing,
                    differences,
                } => plan.warnings.push(Warning::IndexConflict {
                    collection: spec.name.clone(),
                    wanted: Box::new(wanted.clone()),
                    existing,
                    differences,
                }),
            }
        }
        if !missing.is_empty() {
            plan.actions.push(Action::CreateIndexes {
                collection: spec.name.clone(),
                indexes: missing,
            });
        }
        if !options.drop_stale_indexes {
            plan.warnings
                .extend(prefix_indexes(spec, observed).map(|(existing, served_by)| {
                    Warning::PrefixIndex {
                        collection: spec.name.clone(),
                        name: existing.get_str("name").unwrap_or_default().to_owned(),
                        keys: existing.get_document("key").cloned().unwrap_or_default(),
                        served_by,
                    }
                }));
        }
        if options.drop_stale_indexes {
            for existing in &observed.indexes {
                let name = existing.get_str("name").unwrap_or_default();
                let keys = existing.get_document("key").cloned().unwrap_or_default();
                let declared = spec.indexes.iter().any(|wanted| {
                    wanted.name == name || json_schema::same_ordered(&wanted.keys, &keys)
                });
                if name != "_id_" && !declared {
                    plan.actions.push(Action::DropIndex {
                        collection: spec.name.clone(),
                        name: name.to_owned(),
                        keys,
                    });
                }
            }
        }
        plan
    }

    fn extend(&mut self, other: Plan) {
        self.actions.extend(other.actions);
        self.warnings.extend(other.warnings);
    }
}

/// A time series collection's options against the declared ones: a `collMod` of what mongod
/// changes (the granularity upward, the expiry: `timeseries_collmod.js`), a warning for the
/// rest (the time and meta fields, a lower granularity).
pub(super) fn timeseries_changes(
    collection: &str,
    wanted: &crate::TimeSeries,
    observed: &ObservedCollection,
) -> Plan {
    let mut plan = Plan::default();
    let Some(server) = &observed.timeseries else {
        return plan;
    };
    let mut differences = Vec::new();
    if server.time_field != wanted.time_field {
        differences.push(format!(
            "time field `{}` on the server, `{}` declared",
            server.time_field, wanted.time_field
        ));
    }
    if server.meta_field != wanted.meta_field {
        let name = |m: &Option<String>| m.as_ref().map_or("none".to_owned(), |m| format!("`{m}`"));
        differences.push(format!(
            "meta field {} on the server, {} declared",
            name(&server.meta_field),
            name(&wanted.meta_field)
        ));
    }
    let mut changes = Vec::new();
    let (has, wants) = (
        server.effective_granularity(),
        wanted.effective_granularity(),
    );
    let granularity = match has.cmp(&wants) {
        std::cmp::Ordering::Less => {
            changes.push(format!("granularity {has} -> {wants}"));
            Some(wants)
        }
        std::cmp::Ordering::Greater => {
            differences.push(format!(
                "granularity {has} on the server, {wants} declared (mongod raises a granularity, never lowers it)"
            ));
            None
        }
        std::cmp::Ordering::Equal => None,
    };
    let expire_after_secs = (server.expire_after_secs != wanted.expire_after_secs).then(|| {
        let show = |e: Option<u64>| e.map_or("off".to_owned(), |s| format!("{s} s"));
        changes.push(format!(
            "expireAfterSeconds {} -> {}",
            show(server.expire_after_secs),
            show(wanted.expire_after_secs)
        ));
        wanted.expire_after_secs
    });
    if !differences.is_empty() {
        plan.warnings.push(Warning::TimeSeriesDiffers {
            collection: collection.to_owned(),
            differences,
        });
    }
    if !changes.is_empty() {
        plan.actions.push(Action::ModifyTimeSeries {
            collection: collection.to_owned(),
            granularity,
            expire_after_secs,
            changes,
        });
    }
    plan
}
