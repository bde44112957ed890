//! Schema versions: the record in [`META_COLLECTION`], the fingerprint of a desired state, and
//! the apply lock that keeps an older version from undoing a newer one.
//!
//! The record's layout and the design of the lock are documented on [`META_COLLECTION`].

use std::fmt;
use std::time::Duration;

use mongodb::bson::{doc, Bson, DateTime, Document as BsonDocument};
use mongodb::options::ReturnDocument;
use mongodb::Collection;

use super::plan::{Action, Observed, Plan, Warning};
use crate::error::server_code;
use crate::lease::ServerLease;
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

/// The lease of the apply lock.
pub(crate) const LEASE: Duration = Duration::from_secs(10);

const APPLYING: &str = "applying";
const APPLIED: &str = "applied";
const FAILED: &str = "failed";

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

/// What the server had of each collection of `specs` when an apply completed, as one
/// fingerprint per collection name (sorted by name): the collection's type, validator,
/// validation level and action, change-stream pre-images, and every index (keys in order, other
/// options sorted, the index version and namespace left out). Recorded in the record's
/// `observed`; a start-up that computes other prints for the same version and fingerprint has
/// found drift (see [`drifted_collections`]). Computed from the server's own answers at both
/// ends, so the server's way of writing a validator or an index is no difference.
pub(crate) fn observed_prints(
    specs: &[CollectionSpec],
    observed: &Observed,
) -> Vec<(String, String)> {
    let mut names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    names
        .into_iter()
        .map(|name| {
            let mut out = Vec::new();
            match observed.collection(name) {
                None => out.extend_from_slice(b"absent"),
                Some(seen) => {
                    write_str(&mut out, &seen.kind);
                    let validator = seen.validator.clone().map_or(Bson::Null, Bson::Document);
                    write_value(&mut out, &validator, true);
                    write_str(
                        &mut out,
                        seen.validation_level.as_deref().unwrap_or("strict"),
                    );
                    write_str(
                        &mut out,
                        seen.validation_action.as_deref().unwrap_or("error"),
                    );
                    out.push(u8::from(seen.pre_images));
                    let mut indexes = seen.indexes.clone();
                    indexes.sort_by(|a, b| a.get_str("name").ok().cmp(&b.get_str("name").ok()));
                    for mut index in indexes {
                        index.remove("v");
                        index.remove("ns");
                        out.extend_from_slice(b"index");
                        let keys = index.remove("key").unwrap_or(Bson::Null);
                        write_value(&mut out, &keys, false);
                        write_value(&mut out, &Bson::Document(index), true);
                    }
                }
            }
            (name.to_owned(), format!("{:032x}", fnv1a_128(&out)))
        })
        .collect()
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

fn fnv1a_128(bytes: &[u8]) -> u128 {
    const OFFSET: u128 = 0x6c62272e07bb014262b821756295c58d;
    const PRIME: u128 = 0x0000000001000000000000000000013b;
    bytes.iter().fold(OFFSET, |hash, byte| {
        (hash ^ u128::from(*byte)).wrapping_mul(PRIME)
    })
}

/// Length-prefixed, so no two different sequences of strings serialise alike.
fn write_str(out: &mut Vec<u8>, text: &str) {
    out.extend_from_slice(&(text.len() as u64).to_le_bytes());
    out.extend_from_slice(text.as_bytes());
}

/// `sort`: whether this document's fields are written sorted (their order carries no meaning);
/// nested documents are always sorted, arrays keep their order.
fn write_value(out: &mut Vec<u8>, value: &Bson, sort: bool) {
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
    /// What the server had when the last apply completed ([`observed_prints`]); empty in a
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

impl fmt::Display for RecordedVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "version {} (fingerprint {}",
            self.version, self.fingerprint
        )?;
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
                "schema version {applying} is OLDER than the recorded version {recorded}: apply refuses and writes nothing, unless `allow_downgrade(true)`"
            ),
            VersionStatus::Failed { version, error } => write!(
                f,
                "schema version {version}: its apply FAILED ({error}); apply tries again (fix the cause first), or deploy the previous version to roll back"
            ),
            VersionStatus::Rollback { failed, applying, error } => write!(
                f,
                "schema version {failed} -> {applying}: the apply of {failed} FAILED ({error}); apply rolls back to {applying}"
            ),
        }
    }
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

/// Reads the record, `None` if there is none.
pub(crate) async fn read_record(
    meta: &Collection<BsonDocument>,
    name: &str,
) -> Result<Option<RecordedVersion>> {
    Ok(meta
        .find_one(doc! { "_id": name })
        .await?
        .as_ref()
        .and_then(RecordedVersion::from_document))
}

/// Which record a schema uses, as [`resolve_record`] found it.
#[derive(Debug)]
pub(crate) struct ResolvedRecord {
    /// The `_id` of the record (the schema's name, or the name its default record was renamed
    /// to).
    pub(crate) name: String,
    /// The record, if there is one.
    pub(crate) recorded: Option<RecordedVersion>,
    /// The record this schema takes over: the unnamed schema's, for a schema that was given a
    /// name since.
    pub(crate) adopted_from: Option<String>,
}

/// Finds the record of the schema called `name` (with the collections `collections` and the
/// fingerprint `fingerprint`):
///
/// - its own record, if it has one; for the unnamed schema whose record was adopted by a named
///   one (`renamed_to`), that one's, so the version fence stays one record;
/// - for a named schema without a record, the unnamed schema's record when it is this
///   schema's: it records one of these collections, or this very fingerprint (a rename and
///   nothing else). With `adopt`, it is copied under `name` (without its lock) and the default
///   record is marked `renamed_to: name`; `plan` reads without adopting.
///
/// Another service's default record (other collections, another fingerprint) is never adopted.
pub(crate) async fn resolve_record(
    meta: &Collection<BsonDocument>,
    name: &str,
    collections: &[String],
    fingerprint: &str,
    adopt: bool,
) -> Result<ResolvedRecord> {
    let found =
        |name: &str, doc: Option<&BsonDocument>, adopted_from: Option<String>| ResolvedRecord {
            name: name.to_owned(),
            recorded: doc.and_then(RecordedVersion::from_document),
            adopted_from,
        };
    let own = meta.find_one(doc! { "_id": name }).await?;
    if let Some(own) = &own {
        if name == DEFAULT_SCHEMA_NAME {
            if let Ok(renamed) = own.get_str("renamed_to") {
                let target = meta.find_one(doc! { "_id": renamed }).await?;
                return Ok(found(renamed, target.as_ref(), None));
            }
        }
        return Ok(found(name, Some(own), None));
    }
    if name == DEFAULT_SCHEMA_NAME {
        return Ok(found(name, None, None));
    }
    let Some(default) = meta.find_one(doc! { "_id": DEFAULT_SCHEMA_NAME }).await? else {
        return Ok(found(name, None, None));
    };
    let recorded_collections = default.get_array("collections").ok();
    let ours = recorded_collections.is_some_and(|recorded| {
        recorded.iter().any(|c| {
            c.as_str()
                .is_some_and(|c| collections.iter().any(|o| o == c))
        })
    }) || default.get_str("fingerprint").ok() == Some(fingerprint);
    if default.contains_key("renamed_to")
        || !ours
        || RecordedVersion::from_document(&default).is_none()
    {
        return Ok(found(name, None, None));
    }
    let from = Some(DEFAULT_SCHEMA_NAME.to_owned());
    if !adopt {
        return Ok(found(name, Some(&default), from));
    }
    let mut copy = default.clone();
    copy.insert("_id", name);
    copy.insert("adopted_from", DEFAULT_SCHEMA_NAME);
    copy.remove("locked_by");
    copy.remove("lock_expires");
    match meta.insert_one(copy).await {
        Ok(_) => {}
        // another instance adopted it first: the same copy
        Err(e) if server_code(&e) == Some(11000) => {}
        Err(e) => return Err(e.into()),
    }
    meta.update_one(
        doc! { "_id": DEFAULT_SCHEMA_NAME, "renamed_to": { "$exists": false } },
        doc! { "$set": { "renamed_to": name } },
    )
    .await?;
    // read it back: another instance may have adopted and claimed it meanwhile
    let own = meta.find_one(doc! { "_id": name }).await?;
    Ok(found(name, own.as_ref(), from))
}

/// The outcome of one attempt to take the apply lock.
#[derive(Debug)]
pub(crate) enum Claim {
    /// This apply holds the lock; the record after the claim.
    Held(RecordedVersion),
    /// Another apply holds it.
    Busy,
    /// A newer version is recorded and downgrades are not allowed.
    Newer(u64),
}

/// The apply lock in the record (see the module documentation), held through the crate's
/// [`ServerLease`].
#[derive(Debug)]
pub(crate) struct ApplyLock {
    meta: Collection<BsonDocument>,
    /// The `_id` of the schema's record.
    name: String,
    lease: ServerLease,
}

impl ApplyLock {
    pub(crate) fn new(meta: Collection<BsonDocument>, name: &str, lease: Duration) -> Self {
        ApplyLock {
            meta,
            name: name.to_owned(),
            lease: ServerLease::new(lease),
        }
    }

    /// The `_id` of the schema's record.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The record's collection.
    pub(crate) fn meta(&self) -> &Collection<BsonDocument> {
        &self.meta
    }

    /// Whether this apply took the lock and has not given it back (its lease may have lapsed).
    pub(crate) fn claimed(&self) -> bool {
        self.lease.claimed()
    }

    /// How often an apply waiting for the lock looks again.
    pub(crate) fn poll_interval(&self) -> Duration {
        (self.lease.duration() / 20).max(Duration::from_millis(50))
    }

    /// Whether this apply may still write as the lock holder.
    pub(crate) fn holds(&self) -> bool {
        self.lease.holds()
    }

    fn owned(&self) -> BsonDocument {
        doc! { "_id": &self.name, "locked_by": self.lease.owner() }
    }

    /// Takes the lock and, in the same write, raises the recorded version to `version` and
    /// claims `fingerprint` (marking the record `applying` when either changes). The server
    /// decides, on its own clock, whether the lock is free and whether the version may apply.
    /// `collections`: the schema's collection names, recorded so that a schema renamed later
    /// can tell its own default record from another service's.
    pub(crate) async fn claim(
        &self,
        version: u64,
        fingerprint: &str,
        collections: &[String],
        allow_downgrade: bool,
    ) -> Result<Claim> {
        let sent = crate::lease::LeaseInstant::now();
        let version = version as i64;
        let free = self.lease.free("locked_by", "lock_expires");
        // an older version may take the place of a newer one whose apply failed (a rollback)
        let allowed = if allow_downgrade {
            Bson::Boolean(true)
        } else {
            doc! { "$or": [
                { "$lte": [{ "$ifNull": ["$version", -1_i64] }, version] },
                { "$eq": ["$state", FAILED] },
            ] }
            .into()
        };
        let take = doc! { "$and": [free, allowed] };
        let same = doc! { "$and": [
            { "$eq": ["$version", version] },
            { "$eq": ["$fingerprint", fingerprint] },
            { "$ne": ["$state", FAILED] },
        ] };
        let restart = doc! { "$and": [take.clone(), { "$not": [same] }] };
        let update = vec![doc! { "$set": {
            "locked_by": { "$cond": [take.clone(), self.lease.owner(), "$locked_by"] },
            "lock_expires": { "$cond": [take.clone(), self.lease.expires(), "$lock_expires"] },
            "state": { "$cond": [restart.clone(), APPLYING, "$state"] },
            "error": { "$cond": [restart, "$$REMOVE", "$error"] },
            "version": { "$cond": [take.clone(), version, "$version"] },
            "fingerprint": { "$cond": [take.clone(), fingerprint, "$fingerprint"] },
            "collections": { "$cond": [take, { "$literal": collections }, "$collections"] },
        } }];
        let after = match self
            .meta
            .find_one_and_update(doc! { "_id": &self.name }, update)
            .upsert(true)
            .return_document(ReturnDocument::After)
            .await
        {
            Ok(after) => after,
            // two first applies upserted at once and the other one inserted: look again
            Err(e) if server_code(&e) == Some(11000) => return Ok(Claim::Busy),
            Err(e) => return Err(e.into()),
        };
        let Some(after) = after else {
            return Ok(Claim::Busy);
        };
        if after.get_str("locked_by").ok() == Some(self.lease.owner()) {
            self.lease.granted(sent);
            let recorded = RecordedVersion::from_document(&after).unwrap_or(RecordedVersion {
                version: version as u64,
                fingerprint: fingerprint.to_owned(),
                completed: false,
                applied_at: None,
                failure: None,
                observed: Vec::new(),
            });
            return Ok(Claim::Held(recorded));
        }
        self.lease.lost();
        match RecordedVersion::from_document(&after) {
            Some(recorded)
                if !allow_downgrade
                    && recorded.version > version as u64
                    && recorded.failure.is_none() =>
            {
                Ok(Claim::Newer(recorded.version))
            }
            _ => Ok(Claim::Busy),
        }
    }

    /// Extends the lease; `false` if this apply no longer holds the lock.
    pub(crate) async fn renew(&self) -> Result<bool> {
        self.lease
            .renew(&self.meta, self.owned(), "lock_expires")
            .await
    }

    /// Renews the lease at a third of its length, forever; run it beside the work that needs
    /// the lock. A failed renewal is retried at the next tick; [`ApplyLock::holds`] turns false
    /// once the lease may have lapsed.
    pub(crate) async fn keep_alive(&self) -> std::convert::Infallible {
        loop {
            tokio::time::sleep(self.lease.duration() / 3).await;
            if let Ok(false) = self.renew().await {
                return std::future::pending().await;
            }
        }
    }

    /// Marks the claimed version applied and releases the lock. `touched`: whether the record's
    /// `applied_at` moves to now (something was written, or the record said `applying`).
    /// `false` if the lock was lost meanwhile (nothing recorded).
    /// `observed`: the [`observed_prints`] of the state this apply leaves.
    pub(crate) async fn complete(
        &self,
        touched: bool,
        observed: &[(String, String)],
    ) -> Result<bool> {
        let applied_at: Bson = if touched {
            "$$NOW".into()
        } else {
            "$applied_at".into()
        };
        let prints: Vec<Bson> = observed
            .iter()
            .map(|(name, print)| doc! { "collection": name, "print": print }.into())
            .collect();
        let result = self
            .meta
            .update_one(
                self.owned(),
                vec![
                    doc! { "$set": {
                        "state": APPLIED,
                        "applied_at": applied_at,
                        "observed": { "$literal": prints },
                    } },
                    doc! { "$unset": ["locked_by", "lock_expires"] },
                ],
            )
            .await?;
        self.lease.lost();
        Ok(result.matched_count == 1)
    }

    /// Records that the claimed version's apply failed for good (state `"failed"`, the error and
    /// the server's time) and releases the lock; an older version may then apply (a rollback).
    /// `false` if the lock was lost meanwhile (nothing recorded).
    pub(crate) async fn fail(&self, error: &str) -> Result<bool> {
        let result = self
            .meta
            .update_one(
                self.owned(),
                vec![
                    doc! { "$set": { "state": FAILED, "error": error, "failed_at": "$$NOW" } },
                    doc! { "$unset": ["locked_by", "lock_expires"] },
                ],
            )
            .await;
        self.lease.lost();
        Ok(result?.matched_count == 1)
    }

    /// Releases the lock without recording completion (the record stays `applying` if this
    /// apply claimed a new version or fingerprint).
    pub(crate) async fn release(&self) -> Result<()> {
        self.lease.lost();
        self.meta
            .update_one(
                self.owned(),
                doc! { "$unset": { "locked_by": "", "lock_expires": "" } },
            )
            .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::IndexSpec;

    fn spec(name: &str) -> CollectionSpec {
        CollectionSpec::new(
            name,
            doc! { "$jsonSchema": { "bsonType": "object", "required": ["a", "b"], "properties": {
                "a": { "bsonType": "string", "maxLength": 10_i64 },
                "b": { "bsonType": "int" },
            } } },
        )
        .index(IndexSpec::new(doc! { "a": 1, "b": -1 }))
        .index(IndexSpec::new(doc! { "b": 1 }).unique(true))
    }

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

    #[test]
    fn observed_prints_see_validators_levels_and_indexes_and_nothing_else() {
        use crate::ObservedCollection;
        let specs = [spec("x"), spec("y")];
        let mut x = ObservedCollection::new("x");
        x.validator = Some(doc! { "$jsonSchema": { "required": ["a"] } });
        x.indexes
            .push(doc! { "v": 2, "key": { "a": 1, "b": -1 }, "name": "a_1_b_-1" });
        let observed = |x: ObservedCollection| Observed {
            collections: vec![x],
            ..Observed::default()
        };
        let base = observed_prints(&specs, &observed(x.clone()));
        assert_eq!(base.len(), 2, "one print per collection, an absent one too");
        assert_eq!(base[0].0, "x");
        // the index version and the order of the server's index list are no difference
        let mut same = x.clone();
        same.indexes.reverse();
        same.indexes[0].insert("v", 1);
        assert_eq!(observed_prints(&specs, &observed(same)), base);
        let mut changes = Vec::new();
        let mut validator = x.clone();
        validator.validator = Some(doc! { "$jsonSchema": { "required": [] } });
        changes.push(validator);
        let mut level = x.clone();
        level.validation_level = Some("moderate".into());
        changes.push(level);
        let mut dropped = x.clone();
        dropped.indexes.pop();
        changes.push(dropped);
        let mut unique = x.clone();
        unique.indexes[1].insert("unique", true);
        changes.push(unique);
        for changed in changes {
            let now = observed_prints(&specs, &observed(changed.clone()));
            assert_eq!(drifted_collections(&base, &now), ["x"], "{changed:?}");
        }
        assert!(drifted_collections(&base, &base).is_empty());
        assert!(
            drifted_collections(&[], &base).is_empty(),
            "a record without prints is not compared"
        );
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
