//! The version record in [`META_COLLECTION`]: its states, the fingerprint of a desired state,
//! how the version being applied relates to the recorded one, and the last stage of `apply`,
//! which writes the outcome ([`complete`], [`fail`]) under the apply lock.
//!
//! The record's layout and the design of the lock are documented on [`META_COLLECTION`].

use std::fmt;

use mongodb::bson::{doc, Bson, DateTime, Document as BsonDocument};
use mongodb::Collection;

use super::violations::Violations;
use crate::{CollectionSpec, Result};

/// The collection that records the applied schema version, its fingerprint and the time.
///
/// # The record
///
/// One document per schema, `{ _id: <name>, version, fingerprint, state, applied_at }` (the
/// name is [`crate::SchemaBuilder::name`], `"schema"` unless set, so services that share a
/// database each keep their own version), plus `locked_by` and `lock_expires` while an apply
/// holds the lock:
///
/// - `version` (int64) is the highest version whose apply has *started*: it is raised when an
///   apply takes the lock, before its first write, and never lowered except by
///   `allow_downgrade(true)`. It is the fence older versions are refused at.
/// - `fingerprint` is the [`crate::Schema::fingerprint`] of that version's desired state.
/// - `state` is `"applying"` from the moment a version or fingerprint is claimed until its apply
///   completed, then `"applied"`; an apply that was interrupted (server stopped, process killed,
///   a command refused) leaves `"applying"`, and the next apply of that version completes it.
///   `"applied"` means the apply ran to its end: what it reports and leaves alone (a validator
///   refused over violating documents, a conflicting index) stays visible in `plan`.
/// - `applied_at` is the server's time (`$$NOW`) when the last apply that changed something
///   completed. A start-up that finds nothing to do does not write it (nor anything else).
/// - `state: "failed"`, with `error` (the message) and `failed_at`, when an apply that claimed
///   a new version or fingerprint met a command the server refused for good (a unique index over
///   duplicates, a validator it rejects). An apply of the same version tries again; an older
///   version may take the lock without `allow_downgrade` (the rollback of a failed deploy), and
///   the next claim clears `error`.
/// - `observed`: `[{ collection, print }]`, a fingerprint of what the server had of each
///   collection (validator, level, action, pre-images, indexes) when the last apply completed.
///   A start-up of the recorded version and fingerprint that finds other prints has found
///   drift: `plan` reports it, `apply` repairs what its plan can.
/// - `collections`: the schema's collection names at the last claim. A schema given a name
///   after it ran unnamed finds no record of its own and takes over the unnamed one (`"schema"`)
///   when it holds one of its collections or its fingerprint: the record is copied under the
///   new name (`adopted_from: "schema"`) and the old one gets `renamed_to`, which an unnamed
///   instance of this library follows, so the version fence stays one record.
///
/// # Why a lock, and how an older apply is kept from undoing a newer one
///
/// Many instances of a service start at once, and during a rolling deploy some run version 1 and
/// some version 2. Raising the recorded version with a conditional update (`version <= N`) keeps
/// a v1 apply from *starting* after v2 recorded, but not from *finishing*: a v1 apply that read
/// `version: 1` a moment before v2 recorded could send its `collMod` after v2's and loosen the
/// validator back, and re-checking the version before each write only narrows that window. The
/// commands `apply` sends (`create`, `collMod`, `createIndexes`, `dropIndexes`,
/// `shardCollection`) cannot be made conditional on another document, and `collMod` cannot run
/// in a transaction.
///
/// So writes are serialised instead: an apply that has something to write first takes the lock
/// in the record, with one `findAndModify` that decides on the server whether the lock is free
/// (nobody holds it, its lease expired by the server's clock, or this apply holds it already)
/// *and* whether this version may apply (`version <= N`, unless downgrades are allowed), and in
/// the same write raises `version` and claims the new fingerprint. Only the lock holder raises
/// the version, so once v2 holds or held the lock, no v1 apply can take it: v1 applies that
/// wait behind it are refused with [`crate::Error::Downgrade`] when they look again. Under the
/// lock the apply observes the server again and plans from what it sees, so a waiter that finds
/// the work done writes nothing but the lock itself.
///
/// The lock is a lease (10 s, on the server's clock) renewed at a third of its length
/// while the apply runs, so a long index build keeps it. An apply that dies keeps it until the
/// lease expires; the next one then takes it over. Before each write the holder checks, on its
/// own monotonic clock measured from the moment it *sent* the last renewal, that the lease
/// cannot have lapsed; so a takeover can only happen after the previous holder stopped starting
/// writes. A command already sent, or one whose process was paused between that check and the
/// send (a VM pause, SIGSTOP) and resumed after a takeover, may still land late, after the new
/// holder's writes: the holder reads the state again after its last write and writes over such a
/// command, and every start-up compares the state with the one recorded as applied (`plan`
/// reports the drift, `apply` repairs it). DDL cannot be fenced on the server, so a late command
/// that lands after both is repaired at the next start-up, not prevented.
///
/// A start-up whose plan is empty and whose version and fingerprint are recorded as applied
/// takes no lock and writes nothing: the fast path needs only reads.
pub const META_COLLECTION: &str = "mongo_schema_meta";

/// `_id` of the record in [`META_COLLECTION`] of a schema that was given no name.
pub const DEFAULT_SCHEMA_NAME: &str = "schema";

/// The record's `state` from a claim until its apply completed.
pub(crate) const APPLYING: &str = "applying";
/// The record's `state` once its apply completed.
pub(crate) const APPLIED: &str = "applied";
/// The record's `state` once an apply ran to its end with a declared validator or index not on
/// the server (`missing` says which): not `applied`.
pub(crate) const PARTIAL: &str = "partial";
/// The record's `state` after an apply that failed for good.
pub(crate) const FAILED: &str = "failed";

/// A stable fingerprint of the desired state of `collections`: 32 hex digits of FNV-1a (128
/// bits) over a canonical serialisation of every collection's name, validator, validation level
/// and action, indexes (keys and options) and shard key.
///
/// Canonical means: collections and indexes sorted by name, document fields sorted by name
/// except where their order is meaning (index keys, shard keys), arrays in order, each value
/// tagged with its BSON type. The order models are added in, the order of a struct's fields and
/// the Rust code around them do not change it; a changed bound, index option or shard key does.
/// Copies, subsets and references are not part of it: they change no server state. FNV-1a is no
/// cryptographic hash; the fingerprint tells states apart, it does not authenticate them.
pub(crate) fn fingerprint(collections: &[CollectionSpec]) -> String {
    let mut sorted: Vec<&CollectionSpec> = collections.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    let mut out = Vec::new();
    for spec in sorted {
        out.extend_from_slice(b"collection");
        write_str(&mut out, &spec.name);
        write_value(&mut out, &Bson::Document(spec.validator.clone()), true);
        write_str(&mut out, spec.validation_level.as_str());
        write_str(&mut out, spec.validation_action.as_str());
        let mut indexes: Vec<BsonDocument> = spec.indexes.iter().map(|i| i.to_document()).collect();
        indexes.sort_by(|a, b| a.get_str("name").ok().cmp(&b.get_str("name").ok()));
        for mut index in indexes {
            out.extend_from_slice(b"index");
            let keys = index.remove("key").unwrap_or(Bson::Null);
            write_value(&mut out, &keys, false);
            write_value(&mut out, &Bson::Document(index), true);
        }
        if let Some(key) = &spec.shard_key {
            out.extend_from_slice(b"shard");
            write_value(&mut out, &Bson::Document(key.clone()), false);
        }
    }
    format!("{:032x}", fnv1a_128(&out))
}

pub(crate) fn fnv1a_128(bytes: &[u8]) -> u128 {
    const OFFSET: u128 = 0x6c62272e07bb014262b821756295c58d;
    const PRIME: u128 = 0x0000000001000000000000000000013b;
    bytes.iter().fold(OFFSET, |hash, byte| {
        (hash ^ u128::from(*byte)).wrapping_mul(PRIME)
    })
}

/// Length-prefixed, so no two different sequences of strings serialise alike.
pub(crate) fn write_str(out: &mut Vec<u8>, text: &str) {
    out.extend_from_slice(&(text.len() as u64).to_le_bytes());
    out.extend_from_slice(text.as_bytes());
}

/// `sort`: whether this document's fields are written sorted (their order carries no meaning);
/// nested documents are always sorted, arrays keep their order.
pub(crate) fn write_value(out: &mut Vec<u8>, value: &Bson, sort: bool) {
    out.push(value.element_type() as u8);
    match value {
        Bson::Document(doc) => {
            let mut fields: Vec<(&String, &Bson)> = doc.iter().collect();
            if sort {
                fields.sort_by(|a, b| a.0.cmp(b.0));
            }
            out.extend_from_slice(&(fields.len() as u64).to_le_bytes());
            for (key, value) in fields {
                write_str(out, key);
                write_value(out, value, true);
            }
        }
        Bson::Array(items) => {
            out.extend_from_slice(&(items.len() as u64).to_le_bytes());
            for item in items {
                write_value(out, item, true);
            }
        }
        Bson::String(text) => write_str(out, text),
        other => write_str(out, &other.clone().into_canonical_extjson().to_string()),
    }
}

/// What [`META_COLLECTION`] records: the version whose apply started last, its fingerprint,
/// whether that apply completed, and when.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RecordedVersion {
    /// The recorded version (0 for schemas declared without [`crate::SchemaBuilder::version`]).
    pub version: u64,
    /// The fingerprint of that version's desired state.
    pub fingerprint: String,
    /// `false` while an apply of it runs, or after one was interrupted before it completed.
    pub completed: bool,
    /// When the last apply that changed something completed (the server's clock).
    pub applied_at: Option<DateTime>,
    /// The error of an apply of this version that failed for good (a command the server
    /// refused, such as a unique index over duplicates): the record's state is `"failed"`, and
    /// an older version may apply without `allow_downgrade` (a rollback).
    pub failure: Option<String>,
    /// What the last apply of this version left not as declared (state `"partial"`): a
    /// validator refused over, or held at `moderate` for, violating documents, a conflicting
    /// index, a view where a collection is declared. Empty once it is all on the server.
    pub missing: Vec<String>,
    /// What the server had when the last apply completed ([`super::observe::observed_prints`]); empty in a
    /// record written before these were kept.
    pub(crate) observed: Vec<(String, String)>,
}

impl RecordedVersion {
    /// Reads the record document; `None` if it holds no version (only a lock, for example).
    pub(crate) fn from_document(doc: &BsonDocument) -> Option<RecordedVersion> {
        let version = match doc.get("version")? {
            Bson::Int64(v) => u64::try_from(*v).ok()?,
            Bson::Int32(v) => u64::try_from(*v).ok()?,
            Bson::Double(v) if v.fract() == 0.0 && *v >= 0.0 => *v as u64,
            _ => return None,
        };
        let failure = (doc.get_str("state").ok() == Some(FAILED)).then(|| {
            doc.get_str("error")
                .unwrap_or("no error recorded")
                .to_owned()
        });
        Some(RecordedVersion {
            version,
            fingerprint: doc.get_str("fingerprint").unwrap_or_default().to_owned(),
            completed: doc.get_str("state").ok() == Some(APPLIED),
            missing: if doc.get_str("state").ok() == Some(PARTIAL) {
                doc.get_array("missing")
                    .map(|m| {
                        m.iter()
                            .filter_map(|x| x.as_str().map(str::to_owned))
                            .collect()
                    })
                    .unwrap_or_default()
            } else {
                Vec::new()
            },
            applied_at: doc.get_datetime("applied_at").ok().copied(),
            failure,
            // `[{ collection, print }]`: a collection name may hold a dot, a field name should not
            observed: doc
                .get_array("observed")
                .map(|prints| {
                    prints
                        .iter()
                        .filter_map(|entry| {
                            let entry = entry.as_document()?;
                            Some((
                                entry.get_str("collection").ok()?.to_owned(),
                                entry.get_str("print").ok()?.to_owned(),
                            ))
                        })
                        .collect()
                })
                .unwrap_or_default(),
        })
    }
}

/// With a record `partial`: the documents each refused (or moderate) validator was counted to
/// reject when the record was written, so that start-ups of the same version and fingerprint
/// do not count them again (`plan`, `audit` and the CLI's `apply` do).
pub(crate) fn violators(doc: &BsonDocument) -> Vec<(String, Violations)> {
    let Ok(entries) = doc.get_array("violators") else {
        return Vec::new();
    };
    entries
        .iter()
        .filter_map(|entry| {
            let entry = entry.as_document()?;
            let count = match entry.get("count")? {
                Bson::Int64(n) => u64::try_from(*n).ok()?,
                Bson::Int32(n) => u64::try_from(*n).ok()?,
                _ => return None,
            };
            let sample_rules = entry
                .get_array("sample_rules")
                .map(|r| {
                    r.iter()
                        .filter_map(|x| x.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            Some((
                entry.get_str("collection").ok()?.to_owned(),
                Violations {
                    count,
                    sample_ids: entry.get_array("sample_ids").cloned().unwrap_or_default(),
                    sample_rules,
                    unfinished_after: match entry.get("unfinished_after_ms") {
                        Some(Bson::Int64(ms)) => Some(std::time::Duration::from_millis(
                            u64::try_from(*ms).unwrap_or(0),
                        )),
                        _ => None,
                    },
                },
            ))
        })
        .collect()
}

impl fmt::Display for RecordedVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "version {} (fingerprint {}",
            self.version, self.fingerprint
        )?;
        if !self.missing.is_empty() {
            return write!(
                f,
                ", applied in part: NOT on the server as declared: {})",
                self.missing.join("; ")
            );
        }
        if let Some(failure) = &self.failure {
            return write!(f, ", apply FAILED: {failure})");
        }
        match (self.completed, self.applied_at) {
            (true, Some(at)) => write!(
                f,
                ", applied {})",
                at.try_to_rfc3339_string().unwrap_or_default()
            ),
            (true, None) => f.write_str(", applied)"),
            (false, _) => f.write_str(", apply started and not completed)"),
        }
    }
}

/// How the version being applied relates to the recorded one. `plan` shows it; `apply` acts on
/// it (see [`crate::Schema::apply`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum VersionStatus {
    /// Nothing is recorded yet: the first apply records this version.
    Unrecorded {
        /// The version being applied.
        applying: u64,
    },
    /// The same version and desired state are recorded as applied.
    Current {
        /// The version.
        version: u64,
    },
    /// The same version and desired state are recorded, but their apply did not complete: the
    /// next apply completes it.
    Interrupted {
        /// The version.
        version: u64,
    },
    /// The same version number with another desired state (the development loop: a model
    /// changed without a new version number). Applies, with a warning.
    Changed {
        /// The version.
        version: u64,
        /// The recorded fingerprint.
        recorded_fingerprint: String,
        /// The fingerprint being applied.
        fingerprint: String,
    },
    /// A newer version than the recorded one: applies and records it.
    Upgrade {
        /// The recorded version.
        recorded: u64,
        /// The version being applied.
        applying: u64,
    },
    /// An older version than the recorded one: `apply` writes nothing and returns
    /// [`crate::Error::Downgrade`], unless `allow_downgrade(true)`.
    Downgrade {
        /// The recorded version.
        recorded: u64,
        /// The version being applied.
        applying: u64,
    },
    /// The same version and desired state are recorded, and their apply failed for good: the
    /// next apply tries again (it fails the same way until the cause is fixed).
    Failed {
        /// The version.
        version: u64,
        /// The recorded error.
        error: String,
    },
    /// The same version and desired state are recorded, and their last apply ran to its end
    /// with part of the declared state not on the server (a validator refused over violating
    /// documents, a conflicting index): the record's state is `"partial"`, not `"applied"`.
    Partial {
        /// The version.
        version: u64,
        /// What is not on the server as declared.
        missing: Vec<String>,
    },
    /// An older version than the recorded one, whose apply failed for good: the rollback of a
    /// failed deploy. `apply` brings the schema back to this version's desired state and
    /// records it, without `allow_downgrade` (and drops no index, as a downgrade would not).
    Rollback {
        /// The version whose apply failed.
        failed: u64,
        /// The version being applied.
        applying: u64,
        /// The failed apply's error.
        error: String,
    },
}

impl VersionStatus {
    #[doc(hidden)]
    /// Compares the version and fingerprint being applied with the record.
    pub fn of(applying: u64, fingerprint: &str, recorded: Option<&RecordedVersion>) -> Self {
        let Some(recorded) = recorded else {
            return VersionStatus::Unrecorded { applying };
        };
        use std::cmp::Ordering::*;
        match applying.cmp(&recorded.version) {
            Less => match &recorded.failure {
                Some(error) => VersionStatus::Rollback {
                    failed: recorded.version,
                    applying,
                    error: error.clone(),
                },
                None => VersionStatus::Downgrade {
                    recorded: recorded.version,
                    applying,
                },
            },
            Greater => VersionStatus::Upgrade {
                recorded: recorded.version,
                applying,
            },
            Equal if recorded.fingerprint != fingerprint => VersionStatus::Changed {
                version: applying,
                recorded_fingerprint: recorded.fingerprint.clone(),
                fingerprint: fingerprint.to_owned(),
            },
            Equal if recorded.completed => VersionStatus::Current { version: applying },
            Equal if recorded.failure.is_some() => VersionStatus::Failed {
                version: applying,
                error: recorded.failure.clone().unwrap_or_default(),
            },
            Equal if !recorded.missing.is_empty() => VersionStatus::Partial {
                version: applying,
                missing: recorded.missing.clone(),
            },
            Equal => VersionStatus::Interrupted { version: applying },
        }
    }

    /// Whether the record already says this version and state were applied.
    pub fn is_current(&self) -> bool {
        matches!(self, VersionStatus::Current { .. })
    }

    /// Whether the recorded version is newer than the one being applied.
    pub fn is_downgrade(&self) -> bool {
        matches!(self, VersionStatus::Downgrade { .. })
    }
}

impl fmt::Display for VersionStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VersionStatus::Unrecorded { applying } => write!(
                f,
                "schema version {applying}: no version recorded yet, apply records it"
            ),
            VersionStatus::Current { version } => {
                write!(f, "schema version {version}: recorded as applied")
            }
            VersionStatus::Interrupted { version } => write!(
                f,
                "schema version {version}: an apply of it started and did not complete; apply completes it"
            ),
            VersionStatus::Changed {
                version,
                recorded_fingerprint,
                fingerprint,
            } => write!(
                f,
                "schema version {version}: the models changed since it was recorded (fingerprint {recorded_fingerprint} -> {fingerprint}); apply applies them with a warning (give the change a new version number before deploying it)"
            ),
            VersionStatus::Upgrade { recorded, applying } => write!(
                f,
                "schema version {recorded} -> {applying}: apply records version {applying}"
            ),
            VersionStatus::Downgrade { recorded, applying } => write!(
                f,
                "schema version {applying} is OLDER than the recorded version {recorded}: apply refuses and writes nothing, unless {}",
                crate::terms::ALLOW_DOWNGRADE
            ),
            VersionStatus::Failed { version, error } => write!(
                f,
                "schema version {version}: its apply FAILED ({error}); apply tries again (fix the cause first), or deploy the previous version to roll back"
            ),
            VersionStatus::Partial { version, missing } => write!(
                f,
                "schema version {version}: applied in PART, not on the server as declared: {}",
                missing.join("; ")
            ),
            VersionStatus::Rollback { failed, applying, error } => write!(
                f,
                "schema version {failed} -> {applying}: the apply of {failed} FAILED ({error}); apply rolls back to {applying}"
            ),
        }
    }
}

/// Marks the claimed version applied, or applied in part when `missing` names what is not on
/// the server as declared, and releases the lock (the last stage of `apply`).
/// `fence`: the filter that matches the record only while this apply holds the lock
/// ([`super::lock::ApplyLock::fence`]). `touched`: whether the record's `applied_at` moves to
/// now (something was written, or the record said `applying`). `observed`: the
/// [`super::observe::observed_prints`] of the state this apply leaves. `false` if the lock was
/// lost meanwhile (nothing recorded).
pub(crate) async fn complete(
    meta: &Collection<BsonDocument>,
    fence: BsonDocument,
    touched: bool,
    observed: &[(String, String)],
    missing: &[String],
    violators: &[(String, Violations)],
) -> Result<bool> {
    let violators: Vec<Bson> = violators
        .iter()
        .filter(|(_, found)| found.any() && !missing.is_empty())
        .map(|(collection, found)| {
            let mut entry = doc! {
                "collection": { "$literal": collection },
                "count": found.count as i64,
                "sample_ids": { "$literal": found.sample_ids.clone() },
                "sample_rules": { "$literal": found.sample_rules.clone() },
                "counted_at": "$$NOW",
            };
            if let Some(limit) = found.unfinished_after {
                // the count was cut off: kept as such, so start-ups do not scan again
                entry.insert("unfinished_after_ms", limit.as_millis() as i64);
            }
            entry.into()
        })
        .collect();
    let applied_at: Bson = if touched {
        "$$NOW".into()
    } else {
        "$applied_at".into()
    };
    let prints: Vec<Bson> = observed
        .iter()
        .map(|(name, print)| doc! { "collection": name, "print": print }.into())
        .collect();
    let result = meta
        .update_one(
            fence,
            vec![
                doc! { "$set": {
                    "state": if missing.is_empty() { APPLIED } else { PARTIAL },
                    "missing": if missing.is_empty() {
                        Bson::String("$$REMOVE".to_owned())
                    } else {
                        doc! { "$literal": missing.to_vec() }.into()
                    },
                    "applied_at": applied_at,
                    "observed": { "$literal": prints },
                    "violators": if violators.is_empty() {
                        Bson::String("$$REMOVE".to_owned())
                    } else {
                        Bson::Array(violators)
                    },
                } },
                doc! { "$unset": ["locked_by", "lock_expires"] },
            ],
        )
        .await?;
    Ok(result.matched_count == 1)
}

/// Records that the claimed version's apply failed for good (state `"failed"`, the error and
/// the server's time) and releases the lock; an older version may then apply (a rollback).
/// `false` if the lock was lost meanwhile (nothing recorded).
pub(crate) async fn fail(
    meta: &Collection<BsonDocument>,
    fence: BsonDocument,
    error: &str,
) -> Result<bool> {
    let result = meta
        .update_one(
            fence,
            vec![
                doc! { "$set": { "state": FAILED, "error": error, "failed_at": "$$NOW" } },
                doc! { "$unset": ["locked_by", "lock_expires"] },
            ],
        )
        .await?;
    Ok(result.matched_count == 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deploy::test_spec as spec;
    use crate::IndexSpec;

    #[test]
    fn the_fingerprint_is_stable_and_ignores_what_changes_no_server_state() {
        let a = fingerprint(&[spec("x"), spec("y")]);
        assert_eq!(a.len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(a, fingerprint(&[spec("y"), spec("x")]), "model order");
        let mut reordered = spec("x");
        reordered.validator = doc! { "$jsonSchema": { "properties": {
            "b": { "bsonType": "int" },
            "a": { "maxLength": 10_i64, "bsonType": "string" },
        }, "required": ["a", "b"], "bsonType": "object" } };
        reordered.indexes.reverse();
        assert_eq!(
            a,
            fingerprint(&[reordered, spec("y")]),
            "field and index order"
        );
        // a pinned value: the algorithm must not change between releases
        assert_eq!(
            fingerprint(&[CollectionSpec::new("t", doc! {})]),
            "9567aff5451f55f3ddffe456e020f4bb"
        );
    }

    #[test]
    fn the_fingerprint_sees_every_change_of_server_state() {
        let base = fingerprint(&[spec("x")]);
        let mut changes = Vec::new();
        let mut bound = spec("x");
        bound.validator = doc! { "$jsonSchema": { "bsonType": "object", "required": ["a", "b"], "properties": {
            "a": { "bsonType": "string", "maxLength": 11_i64 },
            "b": { "bsonType": "int" },
        } } };
        changes.push(bound);
        let mut required = spec("x");
        required.validator = doc! { "$jsonSchema": { "bsonType": "object", "required": ["b", "a"], "properties": {
            "a": { "bsonType": "string", "maxLength": 10_i64 },
            "b": { "bsonType": "int" },
        } } };
        changes.push(required);
        let mut key_order = spec("x");
        key_order.indexes[0] = IndexSpec::new(doc! { "b": -1, "a": 1 }).name("a_1_b_-1");
        changes.push(key_order);
        let mut unique = spec("x");
        unique.indexes[1].unique = false;
        changes.push(unique);
        let mut level = spec("x");
        level.validation_level = crate::ValidationLevel::Moderate;
        changes.push(level);
        changes.push(spec("x").shard_key(doc! { "a": 1 }));
        changes.push(spec("z"));
        let mut seen = vec![base];
        for changed in changes {
            let print = fingerprint(&[changed]);
            assert!(!seen.contains(&print), "{print} seen before");
            seen.push(print);
        }
    }

    #[test]
    fn fnv_1a_128_matches_its_reference_values() {
        // from the FNV reference test vectors (draft-eastlake-fnv)
        assert_eq!(fnv1a_128(b""), 0x6c62272e07bb014262b821756295c58d);
        assert_eq!(fnv1a_128(b"a"), 0xd228cb696f1a8caf78912b704e4a8964);
    }

    fn recorded(version: u64, fingerprint: &str, completed: bool) -> RecordedVersion {
        RecordedVersion {
            version,
            fingerprint: fingerprint.into(),
            completed,
            applied_at: None,
            failure: None,
            missing: Vec::new(),
            observed: Vec::new(),
        }
    }

    #[test]
    fn version_status_compares_version_then_fingerprint_then_completion() {
        assert_eq!(
            VersionStatus::of(2, "f", None),
            VersionStatus::Unrecorded { applying: 2 }
        );
        assert!(VersionStatus::of(2, "f", Some(&recorded(2, "f", true))).is_current());
        assert_eq!(
            VersionStatus::of(2, "f", Some(&recorded(2, "f", false))),
            VersionStatus::Interrupted { version: 2 }
        );
        assert!(matches!(
            VersionStatus::of(2, "g", Some(&recorded(2, "f", true))),
            VersionStatus::Changed { version: 2, .. }
        ));
        assert_eq!(
            VersionStatus::of(3, "g", Some(&recorded(2, "f", true))),
            VersionStatus::Upgrade {
                recorded: 2,
                applying: 3
            }
        );
        let down = VersionStatus::of(1, "f", Some(&recorded(2, "f", false)));
        assert!(down.is_downgrade());
        assert!(down
            .to_string()
            .contains("version 1 is OLDER than the recorded version 2"));
    }

    #[test]
    fn records_are_read_whatever_the_number_type() {
        for version in [Bson::Int64(7), Bson::Int32(7), Bson::Double(7.0)] {
            let record = RecordedVersion::from_document(
                &doc! { "_id": "schema", "version": version, "fingerprint": "f", "state": "applied" },
            )
            .unwrap();
            assert_eq!(record, recorded(7, "f", true));
        }
        assert!(
            RecordedVersion::from_document(&doc! { "_id": "schema", "locked_by": "x" }).is_none()
        );
    }
}
