//! [`Warning`]: what `apply` will not change by itself and reports instead (its text is in
//! `text.rs`).

use mongodb::bson::Document;

use crate::deploy::observe::Violations;
use crate::IndexSpec;

use super::OnViolations;

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
