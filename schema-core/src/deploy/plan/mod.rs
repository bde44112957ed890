//! Pure planning: desired state (the schema) + observed state (the server) -> actions.
//!
//! Nothing here talks to a server, so every decision `apply` makes is unit-tested.

use std::fmt;

use mongodb::bson::{Bson, Document};

use super::observe::{Observed, ObservedCollection, Seen, Violations};
use super::record::{RecordedVersion, VersionStatus};
use super::sharding::{self, ShardState, ShardingStatus};
use super::terms;
use crate::model::index;
use crate::{json_schema, CollectionSpec, IndexSpec, ValidationAction, ValidationLevel};

/// A write `apply` performs. Reads are not actions: a plan with no action means a start-up that
/// sends no write command at all.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Action {
    /// `create` the collection with its validator.
    CreateCollection {
        /// Collection name.
        collection: String,
        /// Validator document.
        validator: Document,
        /// `validationLevel`.
        level: ValidationLevel,
        /// `validationAction`.
        action: ValidationAction,
        /// The collection's default collation (`collation`), which mongod cannot change later.
        collation: Option<crate::Collation>,
        /// A time series collection's options (`timeseries`, `expireAfterSeconds`): then no
        /// validator, level or action is sent (mongod refuses them on one).
        timeseries: Option<crate::TimeSeries>,
    },
    /// `collMod` of a time series collection's options mongod can change: the granularity
    /// (upward only) and the expiry of its measurements.
    ModifyTimeSeries {
        /// Collection name.
        collection: String,
        /// The new granularity (`None`: unchanged).
        granularity: Option<crate::Granularity>,
        /// The new expiry (`None`: unchanged; `Some(None)`: measurements kept forever, `"off"`).
        expire_after_secs: Option<Option<u64>>,
        /// What changes, in words.
        changes: Vec<String>,
    },
    /// `collMod` to the schema's validator, level and action.
    UpdateValidator {
        /// Collection name.
        collection: String,
        /// The server's current validator (`None`: it has none).
        current: Option<Document>,
        /// Validator document.
        validator: Document,
        /// `validationLevel`.
        level: ValidationLevel,
        /// `validationAction`.
        action: ValidationAction,
        /// What differs, in words.
        changes: Vec<String>,
        /// Existing documents the new validator would reject (counted by `plan` and `apply`
        /// against the server; `None` in a plan computed without one).
        violations: Option<Violations>,
    },
    /// `createIndexes` for the indexes the server does not have.
    CreateIndexes {
        /// Collection name.
        collection: String,
        /// Missing indexes.
        indexes: Vec<IndexSpec>,
    },
    /// `dropIndexes` of an index the schema does not declare; only planned with
    /// `drop_stale_indexes(true)`, never for `_id_`.
    DropIndex {
        /// Collection name.
        collection: String,
        /// Index name.
        name: String,
        /// Its keys, for the report.
        keys: Document,
    },
    /// `shardCollection` by the declared shard key, on a mongos, after the collection and an
    /// index that starts with the key exist; only with `shard_collections(true)`.
    ShardCollection {
        /// Collection name.
        collection: String,
        /// The declared shard key.
        key: Document,
    },
    /// `collMod` with `changeStreamPreAndPostImages: { enabled: true }`: the sync worker of a
    /// `#[subset(sync = "async")]` reads a deleted (or moved) child's parent from its pre-image.
    /// Never disabled by `apply`.
    EnablePreImages {
        /// Collection name.
        collection: String,
    },
}

impl Action {
    /// The collection the action writes to.
    pub fn collection(&self) -> &str {
        match self {
            Action::CreateCollection { collection, .. }
            | Action::ModifyTimeSeries { collection, .. }
            | Action::UpdateValidator { collection, .. }
            | Action::CreateIndexes { collection, .. }
            | Action::DropIndex { collection, .. }
            | Action::ShardCollection { collection, .. }
            | Action::EnablePreImages { collection } => collection,
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::CreateCollection { collection, timeseries: Some(timeseries), collation, .. } => {
                write!(
                    f,
                    "create time series collection `{collection}` ({timeseries}; no validator: mongod takes none on a time series collection)"
                )?;
                match collation {
                    Some(collation) => write!(f, " with the default collation {collation}"),
                    None => Ok(()),
                }
            }
            Action::ModifyTimeSeries { collection, changes, .. } => {
                write!(f, "collMod time series `{collection}`: {}", changes.join("; "))
            }
            Action::CreateCollection { collection, level, action, collation, .. } => {
                write!(
                    f,
                    "create collection `{collection}` with its validator (level {level}, action {action})"
                )?;
                match collation {
                    Some(collation) => write!(f, " and the default collation {collation}"),
                    None => Ok(()),
                }
            }
            Action::UpdateValidator { collection, changes, violations, .. } => {
                write!(f, "collMod `{collection}`: {}", changes.join("; "))?;
                match violations {
                    Some(v) if v.any() => write!(f, " ({v})"),
                    Some(_) => f.write_str(" (no existing document violates it)"),
                    None => Ok(()),
                }
            }
            Action::CreateIndexes { collection, indexes } => {
                write!(f, "create {} index(es) on `{collection}`:", indexes.len())?;
                for index in indexes {
                    write!(f, "\n    {index}")?;
                }
                Ok(())
            }
            Action::DropIndex { collection, name, keys } => {
                write!(f, "drop stale index `{name}` {keys} on `{collection}`")
            }
            Action::ShardCollection { collection, key } => {
                write!(f, "shard `{collection}` by {key}")
            }
            Action::EnablePreImages { collection } => write!(
                f,
                "collMod `{collection}`: changeStreamPreAndPostImages enabled (the sync worker of an async subset reads a deleted child's parent from it)"
            ),
        }
    }
}

/// Something `apply` will not change by itself and reports instead.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Warning {
    /// The server has an index with the schema's keys but other options or name, or the
    /// schema's index name on other keys. Never dropped or rebuilt silently.
    IndexConflict {
        /// Collection name.
        collection: String,
        /// The schema's index.
        wanted: Box<IndexSpec>,
        /// The server's `listIndexes` entry.
        existing: Document,
        /// What differs.
        differences: Vec<String>,
    },
    /// A validator change was not applied because existing documents violate it
    /// ([`OnViolations::Refuse`]), or was applied another way ([`OnViolations::Moderate`],
    /// [`OnViolations::Override`]).
    ValidatorOverViolations {
        /// Collection name.
        collection: String,
        /// The violating documents.
        violations: Violations,
        /// What was done.
        decision: OnViolations,
    },
    /// The collection's default collation on the server is not the declared one (a collection
    /// created before its `#[collection(collation(...))]`, or by someone else). mongod cannot
    /// change it: the library sends the declared collation with every index it creates and
    /// every declared query it runs (and the simple one with its comparisons of held ids where
    /// the declared default is another), so its reads by `_id` (the `_id` index's collation)
    /// and the queries written by hand see the server's default.
    CollationDiffers {
        /// Collection name.
        collection: String,
        /// The declared default collation (`None`: the simple collation).
        declared: Option<crate::Collation>,
        /// The server's (`options.collation` of `listCollections`; `None`: the simple one).
        server: Option<Document>,
    },
    /// The schema declares a time series collection and the server holds a plain collection of
    /// that name, which mongod cannot turn into one: `apply` refuses ([`crate::Error::CannotApply`],
    /// nothing written). Move its documents and drop it, or rename one of them.
    NotTimeSeries {
        /// Collection name.
        collection: String,
    },
    /// A time series collection's options on the server differ from the declared ones where
    /// mongod cannot change them (the time or meta field, a granularity above the declared):
    /// left alone.
    TimeSeriesDiffers {
        /// Collection name.
        collection: String,
        /// What differs, in words.
        differences: Vec<String>,
    },
    /// A name of the schema is a view or time-series collection on the server.
    NotACollection {
        /// Collection name.
        collection: String,
        /// The `type` the server reports.
        kind: String,
    },
    /// The same schema version was recorded with another desired state: the models changed
    /// without a new version number (fine while developing; give a deployed change its own
    /// version). Applied anyway.
    SameVersionChanged {
        /// The version.
        version: u64,
        /// The recorded fingerprint.
        recorded_fingerprint: String,
        /// The fingerprint applied.
        fingerprint: String,
    },
    /// An older version was applied over a newer recorded one, by request
    /// (`allow_downgrade(true)`); the record now says the older version.
    Downgraded {
        /// The version that was recorded.
        recorded: u64,
        /// The version applied.
        applying: u64,
    },
    /// Stale indexes were not dropped because the recorded version is newer than the one
    /// applied: they may be the newer version's.
    DropsHeldBack {
        /// The recorded version.
        recorded: u64,
        /// The version applied.
        applying: u64,
        /// `collection.index` of each index kept.
        indexes: Vec<String>,
    },
    /// A declared index is a prefix (same keys first, same directions) of another index of the
    /// collection, which serves every query it serves: it costs writes and memory for nothing.
    /// Not reported for an index with an option (unique, sparse, partial, TTL).
    RedundantIndex {
        /// Collection name.
        collection: String,
        /// The redundant declared index.
        name: String,
        /// Its keys.
        keys: Document,
        /// The index that serves its queries.
        served_by: String,
    },
    /// The server has an index the schema does not declare whose keys are a prefix of another
    /// index's (one of the schema, or another of the server's), e.g. the index a declared
    /// index was before the schema extended it for a relationship. Dropped with
    /// `drop_stale_indexes(true)`; reported only without it.
    PrefixIndex {
        /// Collection name.
        collection: String,
        /// The server's index.
        name: String,
        /// Its keys.
        keys: Document,
        /// The longer index that serves its queries.
        served_by: String,
    },
    /// A new unique index would meet documents that share its key: its build fails (E11000)
    /// until they are resolved (a [`crate::migrate::dedupe`] step of the version does it).
    UniqueOverDuplicates {
        /// Collection name.
        collection: String,
        /// The index.
        index: String,
        /// Key values held by more than one document.
        groups: u64,
        /// A few of them, with how many documents hold each (`{ key..., count }`).
        examples: Vec<Document>,
    },
    /// The new validator requires a field the recorded one does not know: instances of the
    /// recorded version still running write documents without it, which the new validator
    /// rejects (expand/contract: ship it optional first, require it once no old instance
    /// writes).
    NewRequiredField {
        /// Collection name.
        collection: String,
        /// The field.
        field: String,
        /// Whether a `set_default` step of this schema fills existing documents (older
        /// instances' new writes still miss it).
        backfilled: bool,
    },
    /// The validator this version declares requires a field that the validator on the server
    /// does not know, while the record already says this version (or a newer one): the server
    /// holds an older validator than the record's (a rollback applied by hand, a downgrade
    /// applied since, or a validator change refused over violating documents). Instances of
    /// that older version may still write documents without the field, which the declared
    /// validator rejects once `apply` sends it.
    RequiredFieldNotOnServer {
        /// Collection name.
        collection: String,
        /// The field.
        field: String,
        /// The recorded version.
        recorded: u64,
    },
    /// A collection of the database that the schema does not mention (no longer, or not yet):
    /// left alone, never dropped.
    NotInSchema {
        /// Collection name.
        collection: String,
    },
    /// On a mongos, a collection is sharded by another key than the declared one; left alone.
    ShardKeyDiffers {
        /// Collection name.
        collection: String,
        /// The declared key.
        declared: Document,
        /// The key it is sharded by.
        sharded: Document,
    },
    /// An older version was applied over a newer one whose apply had failed for good (a
    /// rollback of a failed deploy, no `allow_downgrade` needed); the record now says the older
    /// version.
    RolledBack {
        /// The version whose apply had failed.
        failed: u64,
        /// The version applied.
        applying: u64,
        /// The failed apply's error, as recorded.
        error: String,
    },
    /// A named schema had no version record of its own and took over the record of the unnamed
    /// schema it was before (the default record held its collections or its fingerprint); the
    /// default record now points to the new one, so that an unnamed instance of this library
    /// still meets the same version fence.
    RecordAdopted {
        /// The record taken over ([`crate::DEFAULT_SCHEMA_NAME`]).
        from: String,
        /// The schema's name.
        to: String,
    },
    /// A step of the version being applied ran before the record was lowered to an older
    /// version (a rollback); it is not run again, because it is a [`crate::migrate::custom`]
    /// step, which is asked to resume from its checkpoint, not to run twice. (The built-in
    /// steps run again.)
    StepNotRerun {
        /// The step's version.
        version: u64,
        /// Its name.
        name: String,
        /// The version the record was lowered to.
        recorded: u64,
    },
    /// The server's state of these collections differs from the desired state of the version
    /// the record says was applied (same version and fingerprint), or, read again after an
    /// apply's last write, from what that apply wrote: something changed it since, such as a
    /// late command of an older apply that was paused past its lease, or an operator. `plan`
    /// reports it; `apply` repairs it (the actions listed).
    Drifted {
        /// The version recorded as applied, or being applied.
        version: u64,
        /// The collections whose validator or indexes differ.
        collections: Vec<String>,
        /// `true` when found on reading again after this apply's own last write (and written
        /// again at once); `false` when found at start-up against the record.
        after_own_write: bool,
    },
}

impl Warning {
    /// What of the declared state this warning says is not on the server, in a few words (a
    /// validator refused over, or held at `moderate` for, violating documents; a conflicting
    /// index; a view or time-series collection where a collection is declared); `None` for a
    /// warning that leaves the declared validators and indexes in place. An `apply` that ends
    /// with one is recorded `partial`, not `applied`.
    pub fn not_as_declared(&self) -> Option<String> {
        match self {
            Warning::ValidatorOverViolations {
                collection,
                decision: OnViolations::Refuse,
                ..
            } => Some(format!("the validator of `{collection}`")),
            Warning::ValidatorOverViolations {
                collection,
                decision: OnViolations::Moderate,
                ..
            } => Some(format!(
                "the validation level of `{collection}` (moderate, not strict)"
            )),
            Warning::IndexConflict {
                collection, wanted, ..
            } => Some(format!("index `{}` of `{collection}`", wanted.name)),
            Warning::NotACollection { collection, kind } => Some(format!(
                "collection `{collection}` (a {kind} on the server)"
            )),
            Warning::NotTimeSeries { collection } => Some(format!(
                "time series collection `{collection}` (a plain collection on the server)"
            )),
            Warning::TimeSeriesDiffers { collection, .. } => {
                Some(format!("the time series options of `{collection}`"))
            }
            _ => None,
        }
    }
}

impl Warning {
    /// Whether `apply` refuses the whole plan over this, writing nothing
    /// ([`crate::Error::CannotApply`]): a time series collection declared where the server holds
    /// a plain one. Not a part left off (`partial`): nothing at all is applied.
    pub(crate) fn refuses_apply(&self) -> bool {
        matches!(self, Warning::NotTimeSeries { .. })
    }
}

/// What of the declared state `warnings` say is not on the server ([`Warning::not_as_declared`]).
pub(crate) fn not_as_declared(warnings: &[Warning]) -> Vec<String> {
    let mut missing: Vec<String> = Vec::new();
    for item in warnings.iter().filter_map(Warning::not_as_declared) {
        if !missing.contains(&item) {
            missing.push(item);
        }
    }
    missing
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::StepNotRerun {
                version,
                name,
                recorded,
            } => write!(
                f,
                "migration v{version} `{name}` ran before the version was rolled back to {recorded} and is NOT run again: a custom step is only known to resume from its checkpoint; run it by hand if the data written since needs it"
            ),
            Warning::UniqueOverDuplicates {
                collection,
                index,
                groups,
                examples,
            } => {
                let examples: Vec<String> = examples.iter().map(ToString::to_string).collect();
                write!(
                    f,
                    "the unique index `{index}` of `{collection}` would meet {groups} key value(s) held by more than one document (e.g. {}): its build fails until they are resolved; a `migrate::dedupe` step of this version keeps one of each",
                    examples.join(", ")
                )
            }
            Warning::NewRequiredField {
                collection,
                field,
                backfilled,
            } => write!(
                f,
                "`{collection}.{field}` is required from this version and unknown to the recorded one: instances of the recorded version still running write documents without it, which the new validator rejects{}; ship it optional first and require it once no older instance writes (expand/contract)",
                if *backfilled { " (the `set_default` step fills the existing ones only)" } else { "" }
            ),
            Warning::RequiredFieldNotOnServer {
                collection,
                field,
                recorded,
            } => write!(
                f,
                "`{collection}.{field}` is required by this version, and the validator on the server (an older one than recorded version {recorded}'s: rolled back, or refused over violating documents) does not know it: instances of an older version still running write documents without it, which `apply` then makes the validator reject"
            ),
            Warning::NotInSchema { collection } => write!(
                f,
                "collection `{collection}` is not in the schema: left alone (never dropped)"
            ),
            Warning::IndexConflict {
                collection,
                wanted,
                differences,
                ..
            } => write!(
                f,
                "index `{}` on `{collection}` differs from the server's and was left alone: {}",
                wanted.name,
                differences.join("; ")
            ),
            Warning::ValidatorOverViolations { collection, violations, decision } => match decision {
                OnViolations::Refuse => write!(
                    f,
                    "the new validator of `{collection}` was NOT applied: {violations}; migrate them, or apply with {} or {}",
                    terms::ON_VIOLATIONS_MODERATE,
                    terms::ON_VIOLATIONS_OVERRIDE
                ),
                OnViolations::Moderate => write!(
                    f,
                    "the new validator of `{collection}` was applied with validationLevel moderate: {violations}; after migrating them, apply again for the declared level"
                ),
                _ => write!(
                    f,
                    "the new validator of `{collection}` was applied over existing data by request: {violations}; they fail their next update"
                ),
            },
            Warning::NotACollection { collection, kind } => write!(
                f,
                "`{collection}` is a {kind} on the server, not a collection; left alone"
            ),
            Warning::NotTimeSeries { collection } => write!(
                f,
                "`{collection}` is declared a time series collection, and the server holds a plain collection of that name, which mongod cannot turn into one: apply writes nothing; move its documents into a new time series collection and drop it (or rename one of them)"
            ),
            Warning::TimeSeriesDiffers { collection, differences } => write!(
                f,
                "the time series options of `{collection}` differ where mongod cannot change them, left alone: {}",
                differences.join("; ")
            ),
            Warning::CollationDiffers { collection, declared, server } => write!(
                f,
                "`{collection}` has the default collation {} on the server, not the declared {}: mongod cannot change a collection's default collation (recreate the collection to change it); the library sends the declared collation with every index and declared query, so only its reads by `_id` and the queries written by hand see the server's",
                server.as_ref().map_or_else(|| "simple".to_owned(), ToString::to_string),
                declared.as_ref().map_or_else(|| "simple one".to_owned(), ToString::to_string)
            ),
            Warning::SameVersionChanged { version, recorded_fingerprint, fingerprint } => write!(
                f,
                "schema version {version} was recorded with other models (fingerprint {recorded_fingerprint}, now {fingerprint}); applied anyway: give a deployed change a new version number"
            ),
            Warning::Downgraded { recorded, applying } => write!(
                f,
                "schema version {applying} was applied over the newer recorded version {recorded} by request ({}); the record now says {applying}",
                terms::ALLOW_DOWNGRADE
            ),
            Warning::DropsHeldBack { recorded, applying, indexes } => write!(
                f,
                "stale indexes kept because the recorded version {recorded} is newer than {applying}: {}",
                indexes.join(", ")
            ),
            Warning::RedundantIndex { collection, name, keys, served_by } => write!(
                f,
                "declared index `{name}` {keys} on `{collection}` is redundant: it is a prefix of `{served_by}`, which serves every query it serves; remove its `#[index]`"
            ),
            Warning::PrefixIndex { collection, name, keys, served_by } => write!(
                f,
                "the server's index `{name}` {keys} on `{collection}` is not in the schema and is a prefix of `{served_by}`: redundant, drop it with {}",
                terms::DROP_STALE_INDEXES
            ),
            Warning::RolledBack { failed, applying, error } => write!(
                f,
                "schema version {applying} was applied over version {failed}, whose apply had failed ({error}): rolled back"
            ),
            Warning::RecordAdopted { from, to } => write!(
                f,
                "the schema `{to}` had no version record: it took over the record `{from}` of the unnamed schema it was before (which now points to `{to}`)"
            ),
            Warning::Drifted { version, collections, after_own_write } => {
                let collections = collections.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", ");
                if *after_own_write {
                    write!(f, "DRIFT: read again after this apply's last write, the server's state of {collections} was no longer schema version {version}'s (a late write of an older apply landed after it); written again")
                } else {
                    write!(f, "DRIFT: the server's state of {collections} differs from schema version {version}, recorded as applied (a late write of an older apply, or an operator, changed it); apply repairs it")
                }
            }
            Warning::ShardKeyDiffers { collection, declared, sharded } => write!(
                f,
                "`{collection}` is sharded by {sharded}, not by the declared {declared}; left alone (resharding is an operator's decision)"
            ),
        }
    }
}

/// What `apply` does when a validator change would reject existing documents.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum OnViolations {
    /// Leave the collection's validator as it is and report it (the default): nothing is
    /// tightened over data that does not fit.
    #[default]
    Refuse,
    /// Apply the new validator with `validationLevel: "moderate"`, so existing invalid documents
    /// can still be updated while a migration fixes them; apply again afterwards for `strict`.
    Moderate,
    /// Apply the new validator as declared; the violating documents stay as they are and fail
    /// their next update.
    Override,
}

/// Choices that change what a plan contains.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PlanOptions {
    /// Drop indexes the schema does not declare (never `_id_`, never a conflicting one).
    pub drop_stale_indexes: bool,
    /// What to do with a validator change that existing documents violate.
    pub on_violations: OnViolations,
    /// On a mongos, shard the collections that declare a shard key and are not sharded.
    pub shard_collections: bool,
}

/// The actions that would bring the server to the schema, and what will be left alone.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Plan {
    /// Writes to perform, in order.
    pub actions: Vec<Action>,
    /// Differences reported but not acted on.
    pub warnings: Vec<Warning>,
    /// How the schema's version relates to the one recorded in the database (filled by
    /// [`crate::Schema::plan`]; `None` in a plan computed without a server).
    pub version: Option<VersionStatus>,
    /// The sharding of each collection that declares a shard key (filled when the topology was
    /// observed: by [`crate::Schema::plan`] whenever a collection declares a key).
    pub sharding: Vec<ShardingStatus>,
    /// The migration steps `apply` would run, in order, with the documents each would touch
    /// (filled by [`crate::Schema::plan`]).
    pub migrations: Vec<crate::migrate::PendingStep>,
    /// What of the declared state an `apply` with the same options would leave off the server
    /// (a validator change it refuses or holds at `moderate` over violating documents, a
    /// conflicting index; filled by [`crate::Schema::plan`]): that apply would record the
    /// version `partial`, and the CLI's `plan` exits 3.
    pub missing: Vec<String>,
}

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

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(version) = &self.version {
            writeln!(f, "{version}")?;
        }
        let differs = self.warnings.iter().any(|w| {
            matches!(
                w,
                Warning::IndexConflict { .. } | Warning::NotACollection { .. }
            )
        });
        if self.actions.is_empty() && self.migrations.is_empty() {
            if differs || !self.missing.is_empty() {
                writeln!(
                    f,
                    "nothing apply would write, but the database differs from the schema where apply changes nothing by itself (below)"
                )?;
            } else {
                writeln!(f, "nothing to do: the database matches the schema")?;
            }
        }
        for action in &self.actions {
            writeln!(f, "- {action}")?;
        }
        for step in &self.migrations {
            writeln!(f, "- {step}")?;
        }
        for status in &self.sharding {
            writeln!(f, "~ {status}")?;
        }
        for warning in &self.warnings {
            writeln!(f, "! {warning}")?;
        }
        if self.warnings.iter().any(Warning::refuses_apply) {
            writeln!(
                f,
                "apply would refuse and write nothing ({}): the warning above says what to do first",
                terms::REFUSED
            )?;
        } else if !self.missing.is_empty() {
            writeln!(f, "{}", missing_after_apply(&self.missing))?;
        }
        Ok(())
    }
}

/// The line of a plan whose apply would leave `missing` off the server, in the caller's terms
/// (what `apply` then returns: its report's `is_as_declared()`, or the CLI's exit code).
pub(crate) fn missing_after_apply(missing: &[String]) -> String {
    format!(
        "NOT AS DECLARED after apply: {} would not be on the server; apply would record the version `partial`, not `applied` ({})",
        missing.join("; "),
        terms::NOT_AS_DECLARED
    )
}

/// The server's indexes that the schema does not declare (by name or keys) and that are a
/// prefix of a longer index, with that index's name: one of the schema that holds every
/// document, or another of the server's that does.
fn prefix_indexes<'a>(
    spec: &'a CollectionSpec,
    observed: &'a ObservedCollection,
) -> impl Iterator<Item = (&'a Document, String)> + 'a {
    let keys_of = |index: &Document| index.get_document("key").cloned().unwrap_or_default();
    observed.indexes.iter().filter_map(move |existing| {
        let name = existing.get_str("name").unwrap_or_default();
        let keys = keys_of(existing);
        let declared = spec
            .indexes
            .iter()
            .any(|wanted| wanted.name == name || json_schema::same_ordered(&wanted.keys, &keys));
        if name == "_id_" || declared {
            return None;
        }
        let wanted = spec
            .indexes
            .iter()
            .filter(|wanted| !wanted.sparse && wanted.partial_filter.is_none())
            .find(|wanted| index::server_index_is_prefix(existing, &wanted.keys))
            .map(|wanted| wanted.name.clone());
        let holds_every_document = |other: &Document| {
            !other.get_bool("sparse").unwrap_or(false)
                && !other.contains_key("partialFilterExpression")
        };
        let server = || {
            observed
                .indexes
                .iter()
                .filter(|other| holds_every_document(other))
                .find(|other| index::server_index_is_prefix(existing, &keys_of(other)))
                .map(|other| other.get_str("name").unwrap_or_default().to_owned())
        };
        wanted
            .or_else(server)
            .map(|served_by| (existing, served_by))
    })
}

/// A time series collection's options against the declared ones: a `collMod` of what mongod
/// changes (the granularity upward, the expiry: `timeseries_collmod.js`), a warning for the
/// rest (the time and meta fields, a lower granularity).
fn timeseries_changes(
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

/// What differs between the collection's validator, level and action and `spec`'s, in
/// words; empty when they are the same.
fn validator_changes(spec: &CollectionSpec, observed: &ObservedCollection) -> Vec<String> {
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

enum IndexState {
    Present,
    Missing,
    Conflict {
        existing: Document,
        differences: Vec<String>,
    },
}

fn find_index(wanted: &IndexSpec, existing: &[Document]) -> IndexState {
    let keys_of = |index: &Document| index.get_document("key").ok().cloned().unwrap_or_default();
    if let Some(index) = existing
        .iter()
        .find(|index| json_schema::same_ordered(&keys_of(index), &wanted.keys))
    {
        let differences = wanted.differences(index);
        return if differences.is_empty() {
            IndexState::Present
        } else {
            IndexState::Conflict {
                existing: index.clone(),
                differences,
            }
        };
    }
    if let Some(index) = existing
        .iter()
        .find(|index| index.get_str("name").ok() == Some(wanted.name.as_str()))
    {
        return IndexState::Conflict {
            existing: index.clone(),
            differences: vec![format!(
                "the server's index `{}` has keys {}, the schema's has {}{}",
                wanted.name,
                index.get("key").cloned().unwrap_or(Bson::Null),
                wanted.keys,
                if index::server_index_is_prefix(index, &wanted.keys) {
                    " (the server's keys are a prefix of the schema's: the declared index was \
                     extended so that one index also serves a relationship; drop the server's \
                     and apply again to create the longer one under this name)"
                } else {
                    ""
                }
            )],
        };
    }
    IndexState::Missing
}

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

/// The writes a plan needs once the violations of its validator changes are known: a change
/// that existing documents violate is dropped ([`OnViolations::Refuse`]) or made moderate, with
/// a warning; a change the server already shows as decided is no write.
fn writes_of(
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

#[cfg(test)]
mod tests {
    use super::*;
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
        observed.validator =
            Some(doc! { "$jsonSchema": { "bsonType": "object", "required": ["a"] } });
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
}

#[cfg(test)]
mod drift_tests {
    use super::*;
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
}

#[cfg(test)]
mod drop_tests {
    use super::*;
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
}

#[cfg(test)]
mod prefix_tests {
    use super::*;
    use crate::{RefKind, ReferenceSpec};
    use mongodb::bson::doc;

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
}

#[cfg(test)]
mod held_back_tests {
    use super::*;
    use crate::IndexSpec;
    use mongodb::bson::doc;

    #[test]
    fn a_downgrade_holds_back_index_drops() {
        let drop = Action::DropIndex {
            collection: "c".into(),
            name: "v2_index".into(),
            keys: doc! { "x": 1 },
        };
        let create = Action::CreateIndexes {
            collection: "c".into(),
            indexes: vec![IndexSpec::new(doc! { "y": 1 })],
        };
        let mut plan = Plan {
            actions: vec![create.clone(), drop.clone()],
            ..Plan::default()
        };
        hold_back_drops(
            &mut plan,
            &VersionStatus::Upgrade {
                recorded: 1,
                applying: 2,
            },
        );
        assert_eq!(plan.actions.len(), 2);
        hold_back_drops(
            &mut plan,
            &VersionStatus::Downgrade {
                recorded: 2,
                applying: 1,
            },
        );
        assert_eq!(plan.actions, [create]);
        assert!(matches!(
            &plan.warnings[..],
            [Warning::DropsHeldBack { recorded: 2, applying: 1, indexes }] if indexes == &["c.v2_index"]
        ));
    }
}

#[cfg(test)]
mod sharding_tests {
    use super::*;
    use crate::deploy::observe::Topology;
    use crate::IndexSpec;
    use mongodb::bson::{doc, Document as BsonDocument};

    fn messages() -> CollectionSpec {
        CollectionSpec::new("messages", doc! {})
            .index(IndexSpec::new(doc! { "ticket_id": 1, "at": 1 }))
            .shard_key(doc! { "ticket_id": 1, "at": 1 })
    }

    fn plan(topology: Topology, server: Option<ObservedCollection>, shard: bool) -> Plan {
        let mut plain = ObservedCollection::new("plain");
        plain.validator = Some(doc! {});
        let observed = Observed {
            collections: match server {
                Some(server) => vec![server, plain],
                None => Vec::new(),
            },
            topology: Some(topology),
        };
        let options = PlanOptions {
            shard_collections: shard,
            ..PlanOptions::default()
        };
        Plan::compute_with(
            &[messages(), CollectionSpec::new("plain", doc! {})],
            &observed,
            options,
        )
    }

    fn existing(shard_key: Option<BsonDocument>) -> ObservedCollection {
        let mut c = ObservedCollection::new("messages");
        c.validator = Some(doc! {});
        c.indexes
            .push(doc! { "key": { "ticket_id": 1, "at": 1 }, "name": "ticket_id_1_at_1" });
        c.shard_key = shard_key;
        c
    }

    #[test]
    fn hello_tells_a_mongos_from_a_replica_set() {
        assert_eq!(
            Topology::from_hello(&doc! { "ismaster": true, "msg": "isdbgrid" }),
            Topology::Mongos
        );
        assert_eq!(
            Topology::from_hello(&doc! { "isWritablePrimary": true, "setName": "rs0" }),
            Topology::ReplicaSet
        );
        assert_eq!(
            Topology::from_hello(&doc! { "isWritablePrimary": true }),
            Topology::Standalone
        );
    }

    #[test]
    fn on_a_mongos_a_new_collection_is_sharded_after_its_index() {
        let plan = plan(Topology::Mongos, None, true);
        let kinds: Vec<String> = plan
            .actions
            .iter()
            .map(|a| format!("{} {}", kind(a), a.collection()))
            .collect();
        assert_eq!(
            kinds,
            [
                "create messages",
                "createIndexes messages",
                "shardCollection messages",
                "create plain"
            ]
        );
        assert_eq!(plan.sharding.len(), 1, "only collections with a key");
        assert_eq!(plan.sharding[0].state, ShardState::ToShard);
    }

    fn kind(action: &Action) -> &'static str {
        match action {
            Action::CreateCollection { .. } => "create",
            Action::CreateIndexes { .. } => "createIndexes",
            Action::ShardCollection { .. } => "shardCollection",
            Action::UpdateValidator { .. } => "collMod",
            Action::DropIndex { .. } => "dropIndexes",
            Action::EnablePreImages { .. } => "collMod",
            Action::ModifyTimeSeries { .. } => "collMod",
        }
    }

    fn readings() -> CollectionSpec {
        crate::deploy::test_spec("readings").timeseries(
            crate::TimeSeries::new("at")
                .meta("sensor")
                .granularity(crate::Granularity::Minutes)
                .expire_after_secs(600),
        )
    }

    fn timeseries_on_server(options: Document) -> ObservedCollection {
        ObservedCollection::from_list_collections(&doc! {
            "name": "readings", "type": "timeseries", "options": options,
        })
    }

    #[test]
    fn a_time_series_is_created_without_a_validator_and_refused_over_a_plain_collection() {
        let spec = readings();
        let plan = Plan::for_collection(&spec, None);
        let Action::CreateCollection { timeseries, .. } = &plan.actions[0] else {
            panic!("{plan}")
        };
        assert_eq!(timeseries.as_ref(), spec.timeseries.as_ref());
        // display-text: the plan line tells the operator no validator is sent
        assert!(plan.actions[0].to_string().contains("no validator"));
        // mongod's `{ meta: 1, time: 1 }` is declared with the collection's indexes
        assert!(spec
            .indexes
            .iter()
            .any(|i| i.keys == doc! { "sensor": 1, "at": 1 }
                && i.reasons.contains(&crate::IndexReason::TimeSeries)));
        // a plain collection of the name: nothing planned, the refusal reported
        let plain = ObservedCollection::new("readings");
        let plan = Plan::for_collection(&spec, Some(&plain));
        assert!(plan.actions.is_empty(), "{plan}");
        assert!(matches!(
            &plan.warnings[..],
            [Warning::NotTimeSeries { .. }]
        ));
        assert!(plan.warnings[0].not_as_declared().is_some());
        // the other way round: a time series where a plain collection is declared
        let server = timeseries_on_server(doc! { "timeseries": { "timeField": "at" } });
        let plan = Plan::for_collection(&crate::deploy::test_spec("readings"), Some(&server));
        assert!(matches!(
            &plan.warnings[..],
            [Warning::NotACollection { kind, .. }] if kind == "timeseries"
        ));
    }

    #[test]
    fn time_series_options_are_changed_as_mongod_changes_them() {
        let spec = readings();
        let same = timeseries_on_server(doc! {
            "timeseries": { "timeField": "at", "metaField": "sensor", "granularity": "minutes" },
            "expireAfterSeconds": 600_i64,
        });
        let mut indexed = same.clone();
        indexed.indexes = spec.indexes.iter().map(IndexSpec::to_document).collect();
        let plan = Plan::for_collection(&spec, Some(&indexed));
        assert!(
            plan.actions.is_empty() && plan.warnings.is_empty(),
            "{plan}"
        );
        // upward and the expiry: one collMod
        let lower = timeseries_on_server(doc! {
            "timeseries": { "timeField": "at", "metaField": "sensor" },
        });
        let plan = Plan::for_collection(&spec, Some(&lower));
        let modify = plan
            .actions
            .iter()
            .find(|a| kind(a) == "collMod")
            .unwrap_or_else(|| panic!("{plan}"));
        assert_eq!(
            modify,
            &Action::ModifyTimeSeries {
                collection: "readings".into(),
                granularity: Some(crate::Granularity::Minutes),
                expire_after_secs: Some(Some(600)),
                changes: vec![
                    "granularity seconds -> minutes".into(),
                    "expireAfterSeconds off -> 600 s".into()
                ],
            }
        );
        // downward and another meta field: reported, not changed
        let higher = timeseries_on_server(doc! {
            "timeseries": { "timeField": "at", "metaField": "host", "granularity": "hours" },
            "expireAfterSeconds": 600_i64,
        });
        let plan = Plan::for_collection(&spec, Some(&higher));
        assert!(!plan.actions.iter().any(|a| kind(a) == "collMod"), "{plan}");
        let Some(Warning::TimeSeriesDiffers { differences, .. }) = plan
            .warnings
            .iter()
            .find(|w| matches!(w, Warning::TimeSeriesDiffers { .. }))
        else {
            panic!("{plan}")
        };
        assert_eq!(differences.len(), 2, "{differences:?}");
        // an expiry removed: `off`
        let spec = crate::deploy::test_spec("readings")
            .timeseries(crate::TimeSeries::new("at").meta("sensor"));
        let expiring = timeseries_on_server(doc! {
            "timeseries": { "timeField": "at", "metaField": "sensor" },
            "expireAfterSeconds": 60_i64,
        });
        let plan = Plan::for_collection(&spec, Some(&expiring));
        assert!(plan.actions.iter().any(|a| matches!(
            a,
            Action::ModifyTimeSeries {
                expire_after_secs: Some(None),
                ..
            }
        )));
    }

    #[test]
    fn on_a_mongos_only_when_asked_and_not_twice() {
        let plan_unasked = plan(Topology::Mongos, Some(existing(None)), false);
        assert!(plan_unasked.is_empty());
        assert_eq!(plan_unasked.sharding[0].state, ShardState::NotRequested);
        // display-text: the plan's advice, read by a person
        assert!(plan_unasked.to_string().contains("shard_collections(true)"));

        let asked = plan(Topology::Mongos, Some(existing(None)), true);
        assert!(
            matches!(&asked.actions[..], [Action::ShardCollection { key, .. }] if key == &doc! { "ticket_id": 1, "at": 1 })
        );

        let done = plan(
            Topology::Mongos,
            Some(existing(Some(doc! { "ticket_id": 1_i64, "at": 1_i64 }))),
            true,
        );
        assert!(done.is_empty(), "{done}");
        assert_eq!(done.sharding[0].state, ShardState::Sharded);
    }

    #[test]
    fn another_key_is_reported_and_left_alone() {
        let plan = plan(
            Topology::Mongos,
            Some(existing(Some(doc! { "_id": "hashed" }))),
            true,
        );
        assert!(plan.is_empty());
        assert!(matches!(plan.sharding[0].state, ShardState::OtherKey(_)));
        assert!(matches!(
            &plan.warnings[..],
            [Warning::ShardKeyDiffers { .. }]
        ));
    }

    #[test]
    fn without_a_supporting_index_nothing_is_sharded() {
        let mut server = existing(None);
        server.indexes.truncate(1);
        // the schema's index conflicts with one of the server's (same name, other keys)
        server
            .indexes
            .push(doc! { "key": { "at": 1 }, "name": "ticket_id_1_at_1" });
        let plan = plan(Topology::Mongos, Some(server), true);
        assert!(plan.is_empty(), "{plan}");
        assert_eq!(plan.sharding[0].state, ShardState::NoSupportingIndex);
    }

    #[test]
    fn on_a_replica_set_there_is_nothing_to_shard() {
        for shard in [false, true] {
            let plan = plan(Topology::ReplicaSet, Some(existing(None)), shard);
            assert!(plan.is_empty());
            assert_eq!(
                plan.sharding[0].state,
                ShardState::NotAShardedCluster(Topology::ReplicaSet)
            );
            // display-text: the plan's advice, read by a person
            assert!(plan.to_string().contains(
                "`messages` declares the shard key { \"ticket_id\": 1, \"at\": 1 }; the database is on a replica set: nothing to shard"
            ), "{plan}");
        }
    }

    #[test]
    fn unobserved_topology_plans_no_sharding() {
        let observed = Observed::default();
        let plan = Plan::compute_with(
            &[messages()],
            &observed,
            PlanOptions {
                shard_collections: true,
                ..PlanOptions::default()
            },
        );
        assert!(plan.sharding.is_empty());
        assert!(!plan
            .actions
            .iter()
            .any(|a| matches!(a, Action::ShardCollection { .. })));
    }

    #[tokio::test]
    async fn a_plan_says_what_apply_would_leave_off_the_server_in_the_callers_terms() {
        let plan = Plan {
            missing: vec![
                "the validator of `gadgets`".to_owned(),
                "index `sku_1` of `gadgets`".to_owned(),
            ],
            ..Plan::default()
        };
        let text = plan.to_string();
        assert!(
            text.contains("NOT AS DECLARED after apply: the validator of `gadgets`; index `sku_1` of `gadgets` would not be on the server"),
            "{text}"
        );
        assert!(
            text.contains("`ApplyReport::is_as_declared()` is false"),
            "{text}"
        );
        let from_the_cli = super::super::terms::in_cli_terms(async { plan.to_string() }).await;
        assert!(from_the_cli.contains("(`apply` exits 3)"), "{from_the_cli}");
        assert!(!from_the_cli.contains("is_as_declared"), "{from_the_cli}");
        // the control: nothing missing, no such line
        // display-text: the plan an operator reads
        assert!(!Plan::default().to_string().contains("NOT AS DECLARED"));
    }
}
