//! What the server holds, read before anything is planned or written: the version record, the
//! schema's collections with their options and indexes, the documents a validator would reject,
//! the topology and shard keys, and the collections no model declares. The first stage of
//! `plan`, `apply` and `audit`, which all read it.

use std::fmt;

use futures_util::TryStreamExt;
use mongodb::bson::{doc, Bson, Document};
use mongodb::{Collection, Database};

use super::record::{self, RecordedVersion, DEFAULT_SCHEMA_NAME};
pub use super::violations::Violations;
use crate::concern::OPERATOR_TIME_LIMIT;
use crate::error::server_code;
use crate::migrate::{Migration, MigrationRecord};
use crate::{json_schema, CollectionSpec, Result, TOKENS_COLLECTION};

/// What the server has: the collections of the schema that exist, with their options and indexes.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Observed {
    /// Existing collections (only those the schema names are read).
    pub collections: Vec<ObservedCollection>,
    /// What the server is (`hello`), when it was asked: only to plan sharding.
    pub topology: Option<Topology>,
}

impl Observed {
    /// The observed collection called `name`.
    pub fn collection(&self, name: &str) -> Option<&ObservedCollection> {
        self.collections.iter().find(|c| c.name == name)
    }
}

/// One existing collection as `listCollections` and `listIndexes` describe it.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ObservedCollection {
    /// Name.
    pub name: String,
    /// `type` from `listCollections` (`collection`, `view`, `timeseries`).
    pub kind: String,
    /// `options.validator`, if any.
    pub validator: Option<Document>,
    /// `options.validationLevel` (absent means strict).
    pub validation_level: Option<String>,
    /// `options.validationAction` (absent means error).
    pub validation_action: Option<String>,
    /// `listIndexes` entries.
    pub indexes: Vec<Document>,
    /// The key the collection is sharded by (read from `config.collections` on a mongos).
    pub shard_key: Option<Document>,
    /// `options.changeStreamPreAndPostImages.enabled`.
    pub pre_images: bool,
    /// `options.collation`: the collection's default collation (`None`: the simple one).
    pub collation: Option<Document>,
    /// `options.timeseries` and `options.expireAfterSeconds` of a time series collection
    /// (mongod lists it with `type: "timeseries"`, SecantusDB with `type: "collection"` and
    /// the same options).
    pub timeseries: Option<crate::TimeSeries>,
}

impl ObservedCollection {
    /// An existing plain collection with no options and only the `_id_` index.
    pub fn new(name: impl Into<String>) -> Self {
        ObservedCollection {
            name: name.into(),
            kind: "collection".into(),
            indexes: vec![mongodb::bson::doc! { "v": 2, "key": { "_id": 1 }, "name": "_id_" }],
            ..Default::default()
        }
    }

    /// Parses a `listCollections` entry (indexes are added separately).
    pub fn from_list_collections(entry: &Document) -> Self {
        let options = entry.get_document("options").ok();
        let text = |key: &str| options.and_then(|o| o.get_str(key).ok()).map(str::to_owned);
        ObservedCollection {
            name: entry.get_str("name").unwrap_or_default().to_owned(),
            kind: entry.get_str("type").unwrap_or("collection").to_owned(),
            validator: options
                .and_then(|o| o.get_document("validator").ok())
                .cloned(),
            validation_level: text("validationLevel"),
            validation_action: text("validationAction"),
            indexes: Vec::new(),
            shard_key: None,
            pre_images: options
                .and_then(|o| o.get_document("changeStreamPreAndPostImages").ok())
                .and_then(|p| p.get_bool("enabled").ok())
                .unwrap_or(false),
            collation: options
                .and_then(|o| o.get_document("collation").ok())
                .cloned(),
            timeseries: options.and_then(crate::TimeSeries::from_options),
        }
    }

    /// Whether the server holds it as a time series collection.
    pub(crate) fn is_timeseries(&self) -> bool {
        self.timeseries.is_some() || self.kind == "timeseries"
    }

    pub(crate) fn level(&self) -> &str {
        self.validation_level.as_deref().unwrap_or("strict")
    }

    pub(crate) fn action(&self) -> &str {
        self.validation_action.as_deref().unwrap_or("error")
    }

    /// Whether the collection has `spec`'s validator, level and action (when it does not,
    /// `apply` counts the documents the declared validator would reject).
    pub(crate) fn validates_as(&self, spec: &CollectionSpec) -> bool {
        self.validator
            .as_ref()
            .is_some_and(|v| json_schema::same_document(v, &spec.validator))
            && self.level() == spec.validation_level.as_str()
            && self.action() == spec.validation_action.as_str()
    }
}

/// What kind of deployment the database is on, as `hello` tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Topology {
    /// A mongos router of a sharded cluster (`hello.msg == "isdbgrid"`).
    Mongos,
    /// A replica set member (`hello.setName`).
    ReplicaSet,
    /// A single server outside any replica set.
    Standalone,
}

impl Topology {
    /// Reads a `hello` reply.
    pub fn from_hello(hello: &Document) -> Topology {
        if hello.get_str("msg").ok() == Some("isdbgrid") {
            Topology::Mongos
        } else if hello.contains_key("setName") {
            Topology::ReplicaSet
        } else {
            Topology::Standalone
        }
    }
}

impl fmt::Display for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Topology::Mongos => "a mongos (sharded cluster)",
            Topology::ReplicaSet => "a replica set",
            Topology::Standalone => "a standalone server",
        })
    }
}

/// What the first stage of `apply` saw: the record, the schema's collections, the documents each
/// validator that differs from the declared one would reject, and the migration steps pending.
#[derive(Debug)]
pub(crate) struct Seen<'m> {
    /// The schema's record, found as [`resolve_record`] finds it.
    pub(crate) record: ResolvedRecord,
    /// The schema's collections (and, when asked, the topology and shard keys).
    pub(crate) observed: Observed,
    /// `(collection, violators)` for each existing collection whose validator, level or action
    /// differs from the declared one, counted against the declared validator.
    pub(crate) violations: Vec<(String, Violations)>,
    /// The migration steps not recorded done, in order.
    pub(crate) steps: Vec<(&'m Migration, Option<MigrationRecord>)>,
    /// The [`observed_prints`] of `observed`.
    pub(crate) prints: Vec<(String, String)>,
    /// The steps recorded done of versions above the recorded one, up to the one being applied:
    /// they ran before the record was lowered (a rollback).
    pub(crate) ran_before_rollback: Vec<&'m Migration>,
}

/// Which schema and version `apply` observes for.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Looking<'a> {
    /// The schema's name (the `_id` of its record).
    pub(crate) name: &'a str,
    /// The version being applied.
    pub(crate) version: u64,
    /// The fingerprint of its desired state.
    pub(crate) fingerprint: &'a str,
    /// Whether the topology and shard keys are read (`shard_collections(true)`).
    pub(crate) sharding: bool,
    /// Whether this apply may write over a newer recorded version; without it, a newer record
    /// is all there is to read (the apply writes nothing).
    pub(crate) downgrade: bool,
    /// Whether violators are counted even where the record of this version applied in part
    /// keeps their count (a start-up does not count them again; an operator's apply does).
    pub(crate) recount: bool,
}

/// The first stage of `apply`: reads the record (adopting the unnamed schema's for a schema
/// named since), the server's state of `specs`, the violators of every validator change, and
/// the pending migration steps. Reads only, but for the one-time adoption of a record; over a
/// newer recorded version that this apply may not write over, the record only.
pub(crate) async fn observe_apply<'m>(
    db: &Database,
    specs: &[CollectionSpec],
    looking: Looking<'_>,
    migrations: &'m [Migration],
) -> Result<Seen<'m>> {
    let meta = db.collection::<Document>(record::META_COLLECTION);
    let names: Vec<String> = specs.iter().map(|s| s.name.clone()).collect();
    let record = resolve_record(&meta, looking.name, &names, looking.fingerprint, true).await?;
    let newer = record
        .recorded
        .as_ref()
        .is_some_and(|r| r.version > looking.version && r.failure.is_none());
    if newer && !looking.downgrade {
        return Ok(Seen {
            record,
            observed: Observed::default(),
            violations: Vec::new(),
            steps: Vec::new(),
            prints: Vec::new(),
            ran_before_rollback: Vec::new(),
        });
    }
    let observed = observe_all(db, specs, looking.sharding).await?;
    let mut counted = Vec::new();
    for spec in specs {
        let differs = observed.collection(&spec.name).is_some_and(|c| {
            // a time series collection takes no validator: nothing to count against
            c.kind == "collection" && spec.timeseries.is_none() && !c.validates_as(spec)
        });
        if !differs {
            continue;
        }
        let kept = record
            .recorded
            .as_ref()
            .filter(|r| {
                !looking.recount
                    && r.version == looking.version
                    && r.fingerprint == looking.fingerprint
                    && !r.missing.is_empty()
            })
            .and_then(|_| record.violators.iter().find(|(name, _)| *name == spec.name));
        let found = match kept {
            Some((_, found)) => found.clone(),
            None => {
                violations_or_unfinished(db, &spec.name, &spec.validator, OPERATOR_TIME_LIMIT)
                    .await?
            }
        };
        counted.push((spec.name.clone(), found));
    }
    let steps = crate::migrate::run::pending(db, looking.name, migrations, looking.version).await?;
    let ran_before_rollback = match &record.recorded {
        Some(recorded) => {
            crate::migrate::run::ran_before_rollback(
                db,
                looking.name,
                migrations,
                recorded.version,
                looking.version,
            )
            .await?
        }
        None => Vec::new(),
    };
    let prints = observed_prints(specs, &observed);
    Ok(Seen {
        record,
        observed,
        violations: counted,
        steps,
        prints,
        ran_before_rollback,
    })
}

/// [`observe`], plus `hello` and, on a mongos, the collections' shard keys when `sharding`.
pub(crate) async fn observe_all(
    db: &Database,
    specs: &[CollectionSpec],
    sharding: bool,
) -> Result<Observed> {
    let mut observed = observe(db, specs).await?;
    if sharding {
        observed.topology = Some(observe_topology(db).await?);
        observe_shard_keys(db, &mut observed).await?;
    }
    Ok(observed)
}

/// Reads the server's state of the schema's collections: one `listCollections`, then one
/// `listIndexes` per existing collection.
pub(crate) async fn observe(db: &Database, specs: &[CollectionSpec]) -> Result<Observed> {
    let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
    let mut observed = Observed::default();
    let mut cursor = db
        .run_cursor_command(doc! { "listCollections": 1, "filter": { "name": { "$in": names } } })
        .await?;
    while let Some(entry) = cursor.try_next().await? {
        observed
            .collections
            .push(ObservedCollection::from_list_collections(&entry));
    }
    for collection in &mut observed.collections {
        if collection.kind == "collection" {
            collection.indexes = list_indexes(db, &collection.name).await?;
        }
    }
    Ok(observed)
}

async fn list_indexes(db: &Database, collection: &str) -> Result<Vec<Document>> {
    let cursor = db
        .run_cursor_command(doc! { "listIndexes": collection })
        .await?;
    Ok(cursor.try_collect().await?)
}

const SAMPLE_VIOLATIONS: i64 = 5;

/// `MaxTimeMSExpired`: a command stopped at its `maxTimeMS`.
const MAX_TIME_EXPIRED: i32 = 50;

/// [`violations`] within `time_limit`, where a count stopped at the limit is an outcome, not an
/// error: [`Violations::unfinished`], which `apply` treats as violating documents (the validator
/// is refused, or held at `moderate`, as decided), so that a start-up over a collection too large
/// to count in time neither hangs nor fails, and records that the count did not finish.
pub(crate) async fn violations_or_unfinished(
    db: &Database,
    collection: &str,
    validator: &Document,
    time_limit: std::time::Duration,
) -> Result<Violations> {
    match violations(db, collection, validator, time_limit).await {
        Err(crate::Error::Driver(e)) if crate::error::server_code(&e) == Some(MAX_TIME_EXPIRED) => {
            tracing::warn!(in_result = true, collection, limit = ?time_limit, "counting the documents a new validator would reject did not finish within its time limit: treated as violating documents");
            Ok(Violations::unfinished(time_limit))
        }
        other => other,
    }
}

/// The rules each sample fails, in words: a rule as the validator states it (the whole
/// `required` list, a `maxLength`) is shown with its first sample only, and named alone after
/// that, so that a list of examples does not repeat it per document.
fn sample_rule_texts(samples: &[Vec<crate::RuleFailure>]) -> Vec<String> {
    let mut stated: Vec<(String, Bson)> = Vec::new();
    samples
        .iter()
        .map(|failures| {
            failures
                .iter()
                .map(|failure| {
                    let Some(specified) = &failure.specified else {
                        return failure.to_string();
                    };
                    let key = (failure.rule.clone(), specified.clone());
                    if stated.contains(&key) {
                        let mut named = failure.clone();
                        named.specified = None;
                        named.to_string()
                    } else {
                        stated.push(key);
                        failure.to_string()
                    }
                })
                .collect::<Vec<_>>()
                .join("; ")
        })
        .collect()
}

/// Counts the existing documents of `collection` that `validator` would reject (a validator is
/// a query: `{ $nor: [validator] }` matches them), with a few of their ids, within `time_limit`
/// ([`OPERATOR_TIME_LIMIT`]).
pub(crate) async fn violations(
    db: &Database,
    collection: &str,
    validator: &Document,
    time_limit: std::time::Duration,
) -> Result<Violations> {
    let filter = doc! { "$nor": [validator.clone()] };
    let coll = db.collection::<Document>(collection);
    let counting = coll.count_documents(filter.clone()).max_time(time_limit);
    let count = counting.await?;
    let samples: Vec<Document> = if count == 0 {
        Vec::new()
    } else {
        coll.find(filter)
            .limit(SAMPLE_VIOLATIONS)
            .max_time(time_limit)
            .await?
            .try_collect()
            .await?
    };
    // which rule each sample fails, by mongod's semantics evaluated here
    let local = crate::LocalValidator::new(validator).ok();
    let failures: Vec<Vec<crate::RuleFailure>> = samples
        .iter()
        .map(
            |sample| match local.as_ref().and_then(|v| v.check(sample).err()) {
                Some(failed) => failed.failures.into_iter().take(3).collect(),
                None => Vec::new(),
            },
        )
        .collect();
    let sample_rules = sample_rule_texts(&failures);
    let sample_ids = samples
        .iter()
        .filter_map(|d| d.get("_id").cloned())
        .collect();
    Ok(Violations {
        count,
        sample_ids,
        sample_rules,
        unfinished_after: None,
    })
}

/// The collections of `db` that are neither `known` nor the library's own (sync tokens and
/// failures, the version record, the migration changelog, the copies `dedupe` kept aside of a
/// known collection), sorted.
pub(crate) async fn unknown_collections(
    db: &Database,
    known: impl Fn(&str) -> bool,
) -> crate::Result<Vec<String>> {
    let mut names: Vec<String> = db
        .list_collection_names()
        .await?
        .into_iter()
        .filter(|n| {
            let archive = n.rsplit_once("_dedupe_").is_some_and(|(base, version)| {
                known(base) && version.bytes().all(|b| b.is_ascii_digit())
            });
            !n.starts_with("system.")
                && n != TOKENS_COLLECTION
                && n != crate::FAILURES_COLLECTION
                && n != record::META_COLLECTION
                && n != crate::migrate::MIGRATIONS_COLLECTION
                && !archive
                && !known(n)
        })
        .collect();
    names.sort();
    Ok(names)
}

/// Asks the server what it is (`hello`).
pub(crate) async fn observe_topology(db: &Database) -> Result<Topology> {
    let hello = db.run_command(doc! { "hello": 1 }).await?;
    Ok(Topology::from_hello(&hello))
}

/// On a mongos, reads the shard keys of the schema's collections from `config.collections`.
pub(crate) async fn observe_shard_keys(db: &Database, observed: &mut Observed) -> Result<()> {
    if observed.topology != Some(Topology::Mongos) || observed.collections.is_empty() {
        return Ok(());
    }
    let namespaces: Vec<String> = observed
        .collections
        .iter()
        .map(|c| format!("{}.{}", db.name(), c.name))
        .collect();
    let entries: Vec<Document> = db
        .client()
        .database("config")
        .collection::<Document>("collections")
        .find(doc! { "_id": { "$in": &namespaces }, "dropped": { "$ne": true } })
        .await?
        .try_collect()
        .await?;
    for entry in entries {
        let Some(name) = entry
            .get_str("_id")
            .ok()
            .and_then(|ns| ns.strip_prefix(db.name()))
            .and_then(|rest| rest.strip_prefix('.'))
        else {
            continue;
        };
        if let (Some(collection), Ok(key)) = (
            observed.collections.iter_mut().find(|c| c.name == name),
            entry.get_document("key"),
        ) {
            collection.shard_key = Some(key.clone());
        }
    }
    Ok(())
}

/// What the server had of each collection of `specs` when an apply completed, as one
/// fingerprint per collection name (sorted by name): the collection's type, validator,
/// validation level and action, change-stream pre-images, and every index (keys in order, other
/// options sorted, the index version and namespace left out). Recorded in the record's
/// `observed`; a start-up that computes other prints for the same version and fingerprint has
/// found drift (see `plan::drifted_collections`). Computed from the server's own answers at both
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
                    record::write_str(&mut out, &seen.kind);
                    let validator = seen.validator.clone().map_or(Bson::Null, Bson::Document);
                    record::write_value(&mut out, &validator, true);
                    record::write_str(
                        &mut out,
                        seen.validation_level.as_deref().unwrap_or("strict"),
                    );
                    record::write_str(
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
                        record::write_value(&mut out, &keys, false);
                        record::write_value(&mut out, &Bson::Document(index), true);
                    }
                }
            }
            (name.to_owned(), format!("{:032x}", record::fnv1a_128(&out)))
        })
        .collect()
}

/// Reads the record, `None` if there is none.
#[cfg_attr(not(feature = "cli"), allow(dead_code))] // used by the schema commands
pub(crate) async fn read_record(
    meta: &Collection<Document>,
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
    /// The violators the record kept of a version applied in part ([`record::violators`]).
    pub(crate) violators: Vec<(String, Violations)>,
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
    meta: &Collection<Document>,
    name: &str,
    collections: &[String],
    fingerprint: &str,
    adopt: bool,
) -> Result<ResolvedRecord> {
    let found = |name: &str, doc: Option<&Document>, adopted_from: Option<String>| ResolvedRecord {
        name: name.to_owned(),
        recorded: doc.and_then(RecordedVersion::from_document),
        adopted_from,
        violators: doc.map(record::violators).unwrap_or_default(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deploy::test_spec as spec;

    #[test]
    fn each_violator_example_states_the_required_list_once() {
        let validator = doc! { "$jsonSchema": {
            "bsonType": "object",
            "required": ["name", "tier", "email", "since"],
        } };
        let local = crate::LocalValidator::new(&validator).unwrap();
        let failures: Vec<Vec<crate::RuleFailure>> = (0..3)
            .map(|i| {
                let sample = doc! { "_id": i, "name": "a", "email": "e", "since": 1 };
                local.check(&sample).unwrap_err().failures
            })
            .collect();
        let texts = sample_rule_texts(&failures);
        assert_eq!(texts.len(), 3);
        let list = "\"since\"";
        // display-text: the first example states the list, as the validator has it
        assert!(texts[0].contains(list), "{texts:?}");
        // display-text: the others name the missing field and the rule, not the list again
        for text in &texts[1..] {
            assert!(text.contains("`tier` fails `required`"), "{texts:?}");
            assert!(!text.contains(list), "{texts:?}");
        }
    }

    #[test]
    fn observed_prints_see_validators_levels_and_indexes_and_nothing_else() {
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
            assert_eq!(
                crate::deploy::plan::drifted_collections(&base, &now),
                ["x"],
                "{changed:?}"
            );
        }
        assert!(crate::deploy::plan::drifted_collections(&base, &base).is_empty());
        assert!(
            crate::deploy::plan::drifted_collections(&[], &base).is_empty(),
            "a record without prints is not compared"
        );
    }
}
