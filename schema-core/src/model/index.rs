//! Index descriptions: what the derive declares and what `apply` compares with the server.

use std::fmt;
use std::time::Duration;

use mongodb::bson::{Bson, Document};
use mongodb::options::IndexOptions;
use mongodb::IndexModel;

use crate::json_schema;
use crate::model::collation::Collation;

/// Why an index exists. Shown in plans and reports; several reasons can lead to one index.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum IndexReason {
    /// Declared with `#[index(...)]`.
    Declared,
    /// Supports the collection's shard key.
    ShardKey,
    /// Serves the queries for the documents that reference one parent (`$lookup` from the
    /// parent, child pages): the field holds ids of `target`.
    Reference {
        /// The referencing field (stored path).
        field: String,
        /// The referenced collection.
        target: String,
    },
    /// Serves the bucket pattern: finding a parent's open bucket, or reading its buckets in key
    /// order.
    Bucket {
        /// What the index serves.
        purpose: String,
    },
    /// Derived by `Schema::build` for declared queries that no other index serves without a
    /// blocking sort (ESR: equalities, then the sort, then the range).
    Query {
        /// The queries it serves.
        queries: Vec<String>,
    },
    /// The index mongod (6.3 and later) creates with a time series collection that has a meta
    /// field: `{ <meta>: 1, <time>: 1 }`, one series' measurements in time order.
    TimeSeries,
    /// Serves the fan-out update of a copy (`<path>._id`) when its source changes.
    FanOut {
        /// Stored path of the copy.
        path: String,
        /// The source collection.
        source: String,
    },
}

impl fmt::Display for IndexReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IndexReason::Declared => f.write_str("declared"),
            IndexReason::ShardKey => f.write_str("shard key"),
            IndexReason::Reference { field, target } => {
                write!(f, "reference `{field}` -> `{target}`")
            }
            IndexReason::Bucket { purpose } => write!(f, "bucket: {purpose}"),
            IndexReason::Query { queries } => {
                write!(f, "queries `{}`", queries.join("`, `"))
            }
            IndexReason::TimeSeries => {
                f.write_str("time series: one series' measurements in time order")
            }
            IndexReason::FanOut { path, source } => {
                write!(f, "fan-out of `{source}` copies at `{path}`")
            }
        }
    }
}

/// One index of a collection: ordered keys, the options the library manages, and its reasons.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct IndexSpec {
    /// Ordered key document, e.g. `{ team: 1, status: 1, priority: -1 }`.
    pub keys: Document,
    /// Index name; the server's default (`team_1_status_1_priority_-1`) unless declared.
    pub name: String,
    /// `unique`.
    pub unique: bool,
    /// `sparse`.
    pub sparse: bool,
    /// `partialFilterExpression`.
    pub partial_filter: Option<Document>,
    /// `expireAfterSeconds` (a TTL index).
    pub expire_after_secs: Option<u64>,
    /// `collation`: how the index compares strings (`None`: the collection's default, which the
    /// schema gives every index of a collection that declares one).
    pub collation: Option<Collation>,
    /// Why the index exists.
    pub reasons: Vec<IndexReason>,
    name_declared: bool,
    renamed_from: Option<String>,
}

impl IndexSpec {
    /// An index on `keys` with the server's default name and no options.
    pub fn new(keys: Document) -> Self {
        IndexSpec {
            name: default_name(&keys),
            keys,
            unique: false,
            sparse: false,
            partial_filter: None,
            expire_after_secs: None,
            collation: None,
            reasons: vec![IndexReason::Declared],
            name_declared: false,
            renamed_from: None,
        }
    }

    /// Sets the collation (`createIndexes`' `collation`): a string predicate or sort uses the
    /// index only under the same collation.
    pub fn collation(mut self, collation: Collation) -> Self {
        self.collation = Some(collation);
        self
    }

    /// Sets the index name.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self.name_declared = true;
        self
    }

    /// Makes the index unique.
    pub fn unique(mut self, unique: bool) -> Self {
        self.unique = unique;
        self
    }

    /// Makes the index sparse.
    pub fn sparse(mut self, sparse: bool) -> Self {
        self.sparse = sparse;
        self
    }

    /// Sets `partialFilterExpression`.
    pub fn partial_filter(mut self, filter: Document) -> Self {
        self.partial_filter = Some(filter);
        self
    }

    /// Makes it an index of one kind of a whole-document enum: a partial index on the kind's tag
    /// (`{ <tag>: "<kind>" }`, an equality mongod accepts in a partial filter), before any filter
    /// of its own. An undeclared name gets the kind as a suffix, so that two kinds may index the
    /// same keys.
    pub fn kind(mut self, tag: &str, kind: &str) -> Self {
        let mut filter = mongodb::bson::doc! { tag: kind };
        if let Some(own) = self.partial_filter.take() {
            filter.extend(own);
        }
        self.partial_filter = Some(filter);
        if !self.name_declared {
            self.name = format!("{}_{kind}", self.name);
        }
        self
    }

    /// Makes it a TTL index.
    pub fn expire_after_secs(mut self, secs: u64) -> Self {
        self.expire_after_secs = Some(secs);
        self
    }

    /// Replaces the reasons with one.
    pub fn reason(mut self, reason: IndexReason) -> Self {
        self.reasons = vec![reason];
        self
    }

    /// Whether the name was given explicitly rather than derived from the keys.
    pub fn has_declared_name(&self) -> bool {
        self.name_declared
    }

    /// Same key pattern (same fields, same order, same directions or types).
    pub fn same_keys(&self, other: &IndexSpec) -> bool {
        json_schema::same_ordered(&self.keys, &other.keys)
    }

    /// Whether this index can serve every query on `keys`: `keys` is a prefix of this index's
    /// keys, and the index holds every document. A sparse or partial index leaves documents
    /// out, so the planner uses it only for queries that repeat its filter; it never covers a
    /// relationship's or a shard key's index (mongod also refuses a sparse or partial index as
    /// the shard key's).
    pub fn covers(&self, keys: &Document) -> bool {
        !self.sparse
            && self.partial_filter.is_none()
            && keys.len() <= self.keys.len()
            && keys
                .iter()
                .zip(self.keys.iter())
                .all(|((ka, va), (kb, vb))| ka == kb && json_schema::same(va, vb))
    }

    /// Whether the index holds every document and has no option that changes what it means
    /// (unique, sparse, partial, TTL): such an index only serves queries, so a longer index
    /// that starts with its keys serves every query it serves.
    pub fn is_plain(&self) -> bool {
        !self.unique
            && !self.sparse
            && self.partial_filter.is_none()
            && self.expire_after_secs.is_none()
    }

    /// Whether mongod lets the index have a collation: a btree (directions, a wildcard's
    /// `$**`), `2dsphere` or `hashed` index. mongod refuses any collation, the spec's or the
    /// collection's default, on another type (`text`, `2d`): `IndexCatalogImpl::_isSpecOk`,
    /// "Index type 'text' does not support collation" (CannotCreateIndex).
    pub(crate) fn takes_collation(&self) -> bool {
        self.keys.values().all(|v| match v {
            mongodb::bson::Bson::String(kind) => matches!(kind.as_str(), "2dsphere" | "hashed"),
            _ => true,
        })
    }

    /// Whether the index has the simple collation on a collection whose default is another: an
    /// index of a type that takes no collation ([`IndexSpec::takes_collation`]), and a shard
    /// key's (mongod's `shardCollection` finds no index of a non-simple collation useful for
    /// the key, `validateShardKeyAgainstExistingIndexes`).
    pub(crate) fn needs_simple_collation(&self) -> bool {
        !self.takes_collation() || self.reasons.contains(&IndexReason::ShardKey)
    }

    /// Whether it exists only for the library's comparisons of ids held in documents (a
    /// reference, a copy's fan-out, a bucket's parent), which the library runs under the simple
    /// collation on a collection whose default is another.
    pub(crate) fn is_for_identities(&self) -> bool {
        !self.reasons.is_empty()
            && self.reasons.iter().all(|r| {
                matches!(
                    r,
                    IndexReason::Reference { .. }
                        | IndexReason::FanOut { .. }
                        | IndexReason::Bucket { .. }
                )
            })
    }

    /// Whether the two indexes compare strings alike (the same collation, or both none).
    pub(crate) fn same_collation(&self, other: &IndexSpec) -> bool {
        let key = |i: &IndexSpec| Collation::planner_key(i.collation.as_ref());
        key(self) == key(other)
    }

    /// Whether this index is redundant next to `other`: it is plain (see [`IndexSpec::is_plain`])
    /// and its keys are a strict prefix of `other`'s, with the same directions, and `other`
    /// holds every document. `other` then serves every query this one serves.
    pub fn is_prefix_of(&self, other: &IndexSpec) -> bool {
        self.is_plain()
            && self.same_collation(other)
            && self.keys.len() < other.keys.len()
            && other.covers(&self.keys)
    }

    /// Gives a plain index the longer `keys` it is a prefix of (see [`CollectionSpec::require_index`]):
    /// a declared name is kept, a default name follows the keys.
    ///
    /// [`CollectionSpec::require_index`]: crate::CollectionSpec::require_index
    pub(crate) fn extend_to(&mut self, keys: Document) {
        if !self.name_declared {
            self.name = default_name(&keys);
        }
        self.keys = keys;
    }

    /// Gives an index the library adds another name than its default one (which another index
    /// of the collection has), remembering the default.
    pub(crate) fn rename(&mut self, name: String) {
        self.renamed_from = Some(std::mem::replace(&mut self.name, name));
    }

    /// The default name an index was renamed from ([`IndexSpec::rename`]).
    pub(crate) fn renamed_from(&self) -> Option<&String> {
        self.renamed_from.as_ref()
    }

    pub(crate) fn merge_reasons(&mut self, other: &IndexSpec) {
        for reason in &other.reasons {
            if !self.reasons.contains(reason) {
                self.reasons.push(reason.clone());
            }
        }
    }

    /// The driver's model of this index, for `createIndexes`.
    pub fn to_model(&self) -> IndexModel {
        let mut options = IndexOptions::builder().name(self.name.clone()).build();
        if self.unique {
            options.unique = Some(true);
        }
        if self.sparse {
            options.sparse = Some(true);
        }
        options.partial_filter_expression = self.partial_filter.clone();
        options.expire_after = self.expire_after_secs.map(Duration::from_secs);
        options.collation = self.collation.as_ref().and_then(Collation::to_driver);
        IndexModel::builder()
            .keys(self.keys.clone())
            .options(options)
            .build()
    }

    /// The index as `createIndexes` and `listIndexes` spell it (`{ key, name, unique?, ... }`).
    pub fn to_document(&self) -> Document {
        let mut doc = Document::new();
        doc.insert("key", self.keys.clone());
        doc.insert("name", self.name.clone());
        if self.unique {
            doc.insert("unique", true);
        }
        if self.sparse {
            doc.insert("sparse", true);
        }
        if let Some(filter) = &self.partial_filter {
            doc.insert("partialFilterExpression", filter.clone());
        }
        if let Some(secs) = self.expire_after_secs {
            doc.insert("expireAfterSeconds", secs as i64);
        }
        if let Some(collation) = &self.collation {
            doc.insert("collation", collation.to_document());
        }
        doc
    }

    #[doc(hidden)]
    /// The differences between this index and one the server reports with the same keys (a
    /// `listIndexes` entry), as human-readable option names; empty when they are equivalent.
    pub fn differences(&self, existing: &Document) -> Vec<String> {
        let mut diffs = Vec::new();
        if existing.get_str("name").ok() != Some(self.name.as_str()) {
            diffs.push(format!(
                "name: server has {:?}, schema wants {:?}",
                existing.get_str("name").unwrap_or("?"),
                self.name
            ));
        }
        let flag = |key: &str| existing.get_bool(key).unwrap_or(false);
        if flag("unique") != self.unique {
            diffs.push(format!(
                "unique: server has {}, schema wants {}",
                flag("unique"),
                self.unique
            ));
        }
        if flag("sparse") != self.sparse {
            diffs.push(format!(
                "sparse: server has {}, schema wants {}",
                flag("sparse"),
                self.sparse
            ));
        }
        let wanted = self.partial_filter.clone().map(Bson::Document);
        let found = existing.get("partialFilterExpression").cloned();
        let same_filter = match (&wanted, &found) {
            (Some(a), Some(b)) => json_schema::same(a, b),
            (None, None) => true,
            _ => false,
        };
        if !same_filter {
            diffs.push(format!(
                "partialFilterExpression: server has {}, schema wants {}",
                show(found.as_ref()),
                show(wanted.as_ref())
            ));
        }
        let ttl = existing.get("expireAfterSeconds").cloned();
        let wanted_ttl = self.expire_after_secs.map(|s| Bson::Int64(s as i64));
        let same_ttl = match (&wanted_ttl, &ttl) {
            (Some(a), Some(b)) => json_schema::same(a, b),
            (None, None) => true,
            _ => false,
        };
        if !same_ttl {
            diffs.push(format!(
                "expireAfterSeconds: server has {}, schema wants {}",
                show(ttl.as_ref()),
                show(wanted_ttl.as_ref())
            ));
        }
        let found = existing.get_document("collation").ok();
        if !Collation::same_as_server(self.collation.as_ref(), found) {
            diffs.push(format!(
                "collation: server has {}, schema wants {} (mongod changes no index's collation: drop the index and apply again)",
                found.map_or_else(|| "the simple collation".to_owned(), ToString::to_string),
                self.collation
                    .as_ref()
                    .map_or_else(|| "the simple collation".to_owned(), ToString::to_string)
            ));
        }
        diffs
    }
}

/// The pairs of `indexes` that mongod cannot hold together, one sentence each: the same key
/// pattern and the same partial filter (or none) make one index for mongod, so a second one
/// with other options is refused (`IndexOptionsConflict`). This happens when a relationship
/// needs an index on keys that a declared sparse index already uses.
pub(crate) fn conflicts(collection: &str, indexes: &[IndexSpec]) -> Vec<String> {
    let mut problems = Vec::new();
    for (i, first) in indexes.iter().enumerate() {
        for second in &indexes[i + 1..] {
            let same_filter = match (&first.partial_filter, &second.partial_filter) {
                (Some(a), Some(b)) => json_schema::same_document(a, b),
                (None, None) => true,
                _ => false,
            };
            // mongod keeps indexes of one key pattern apart by their collation too
            if !first.same_keys(second) || !same_filter || !first.same_collation(second) {
                continue;
            }
            let describe = |index: &IndexSpec| {
                let mut traits: Vec<String> = Vec::new();
                if index.sparse {
                    traits.push("sparse".into());
                }
                if index.unique {
                    traits.push("unique".into());
                }
                if let Some(secs) = index.expire_after_secs {
                    traits.push(format!("ttl {secs}s"));
                }
                traits.extend(index.reasons.iter().map(ToString::to_string));
                format!("`{}` ({})", index.name, traits.join(", "))
            };
            let fix = if first.sparse || second.sparse {
                ": a sparse index leaves documents out, so it cannot serve a relationship or a \
                 shard key; drop `sparse`, or give the declared index more keys or a \
                 `partial` filter"
            } else {
                ": declare one index with the options both need"
            };
            problems.push(format!(
                "indexes {} and {} of `{collection}` have the same keys {}; mongod keeps one \
                 index per key pattern and partial filter and refuses the second \
                 (IndexOptionsConflict){fix}",
                describe(first),
                describe(second),
                first.keys
            ));
        }
    }
    problems
}

/// Two key paths of one index that cross different arrays of a document, by `schema`: mongod
/// refuses every insert or update of a document that holds both (`btree_key_generator.cpp`,
/// `BtreeKeyGenerator::_getKeysWithArray`: "cannot index parallel arrays",
/// CannotIndexParallelArrays, 171). At each level the keys' first arrays must be one array
/// (`lines.sku` and `lines.qty` cross `lines` only); under it, the next arrays are compared
/// again. Ascending and descending keys only: hashed, text and geo keys have generators of
/// their own. Returns the two paths, each with the array it crosses.
pub(crate) fn parallel_arrays<'p>(
    schema: &Document,
    paths: impl IntoIterator<Item = &'p str>,
) -> Option<((String, String), (String, String))> {
    let arrays: Vec<(&str, Vec<String>)> = paths
        .into_iter()
        .map(|path| (path, json_schema::array_prefixes(schema, path)))
        .collect();
    for (i, (first, first_arrays)) in arrays.iter().enumerate() {
        for (second, second_arrays) in &arrays[i + 1..] {
            let crossing = first_arrays.iter().zip(second_arrays).find(|(a, b)| a != b);
            if let Some((a, b)) = crossing {
                return Some((
                    ((*first).to_owned(), a.clone()),
                    ((*second).to_owned(), b.clone()),
                ));
            }
        }
    }
    None
}

/// The ordered keys of an index (ascending or descending), the ones [`parallel_arrays`] reads.
pub(crate) fn ordered_keys(keys: &Document) -> impl Iterator<Item = &str> {
    keys.iter()
        .filter(|(_, kind)| !matches!(kind, Bson::String(_)))
        .map(|(path, _)| path.as_str())
        .filter(|path| !path.starts_with('$') && !path.contains("$**"))
}

/// A path, and the array it crosses when that is a prefix of it, for messages.
pub(crate) fn in_array(path: &str, array: &str) -> String {
    if path == array {
        format!("`{path}`")
    } else {
        format!("`{path}` (in the array `{array}`)")
    }
}

/// The declared indexes of `indexes` that another index of the collection makes redundant,
/// each with the first index that serves every query it serves: a plain declared index (no
/// unique, sparse, partial or TTL option) whose keys are a strict prefix, same directions, of
/// another index that holds every document. (mongod also walks an index backwards, so a prefix
/// whose directions are all reversed is redundant too; it is not reported, to keep to the
/// plain case.)
pub(crate) fn redundant(indexes: &[IndexSpec]) -> Vec<(&IndexSpec, &IndexSpec)> {
    indexes
        .iter()
        .filter(|index| index.reasons.contains(&IndexReason::Declared))
        .filter_map(|index| {
            indexes
                .iter()
                .filter(|other| index.is_prefix_of(other))
                .max_by_key(|other| other.keys.len())
                .map(|other| (index, other))
        })
        .collect()
}

/// Whether a server index (a `listIndexes` entry) has keys that are a strict prefix, same
/// directions, of `longer`'s and no option that changes what it means (unique, sparse, partial
/// filter, TTL, collation, hidden): an index that only serves queries, which `longer` serves.
pub(crate) fn server_index_is_prefix(existing: &Document, longer: &Document) -> bool {
    let flag = |key: &str| existing.get_bool(key).unwrap_or(false);
    let options = flag("unique")
        || flag("sparse")
        || flag("hidden")
        || existing.contains_key("partialFilterExpression")
        || existing.contains_key("expireAfterSeconds")
        || existing.contains_key("collation");
    let Ok(keys) = existing.get_document("key") else {
        return false;
    };
    !options && keys.len() < longer.len() && IndexSpec::new(longer.clone()).covers(keys)
}

fn show(value: Option<&Bson>) -> String {
    value.map_or_else(|| "none".to_owned(), |v| v.to_string())
}

/// The name the server gives an index created without one: `field_direction` pairs joined by `_`.
pub(crate) fn default_name(keys: &Document) -> String {
    keys.iter()
        .map(|(field, direction)| {
            let direction = match direction {
                Bson::Int32(v) => v.to_string(),
                Bson::Int64(v) => v.to_string(),
                Bson::Double(v) => v.to_string(),
                Bson::String(s) => s.clone(),
                other => other.to_string(),
            };
            format!("{field}_{direction}")
        })
        .collect::<Vec<_>>()
        .join("_")
}

impl fmt::Display for IndexSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.name, self.keys)?;
        if self.unique {
            f.write_str(" unique")?;
        }
        if self.sparse {
            f.write_str(" sparse")?;
        }
        if let Some(filter) = &self.partial_filter {
            write!(f, " partial {filter}")?;
        }
        if let Some(secs) = self.expire_after_secs {
            write!(f, " ttl {secs}s")?;
        }
        if let Some(collation) = &self.collation {
            write!(f, " collation {collation}")?;
        }
        let reasons: Vec<String> = self.reasons.iter().map(ToString::to_string).collect();
        write!(f, " ({})", reasons.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mongodb::bson::doc;

    #[test]
    fn default_names_match_the_server() {
        assert_eq!(
            default_name(&doc! { "name": 1, "opt": -1 }),
            "name_1_opt_-1"
        );
        assert_eq!(default_name(&doc! { "body": "text" }), "body_text");
    }

    #[test]
    fn sparse_and_partial_indexes_cover_nothing() {
        let keys = doc! { "ticket_id": 1, "at": 1 };
        assert!(IndexSpec::new(keys.clone()).covers(&doc! { "ticket_id": 1 }));
        assert!(!IndexSpec::new(keys.clone())
            .sparse(true)
            .covers(&doc! { "ticket_id": 1 }));
        assert!(!IndexSpec::new(keys.clone())
            .partial_filter(doc! { "ticket_id": { "$exists": true } })
            .covers(&doc! { "ticket_id": 1 }));
        assert!(!IndexSpec::new(keys).covers(&doc! { "at": 1 }));
    }

    #[test]
    fn a_sparse_index_on_a_relationship_key_is_a_conflict() {
        let declared = IndexSpec::new(doc! { "ticket_id": 1 })
            .name("by_ticket")
            .sparse(true);
        let needed = IndexSpec::new(doc! { "ticket_id": 1 }).reason(IndexReason::Reference {
            field: "ticket_id".into(),
            target: "tickets".into(),
        });
        let problems = conflicts("messages", &[declared.clone(), needed.clone()]);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].contains("`by_ticket` (sparse, declared)")
                && problems[0].contains("`ticket_id_1` (reference `ticket_id` -> `tickets`)")
                && problems[0].contains("IndexOptionsConflict")
                && problems[0].contains("drop `sparse`"),
            "{}",
            problems[0]
        );
        // a partial filter makes another index for mongod (5.0+), and other keys do too
        let partial = IndexSpec::new(doc! { "ticket_id": 1 })
            .name("open_only")
            .partial_filter(doc! { "open": true });
        assert!(conflicts("messages", &[partial, needed.clone()]).is_empty());
        let other = IndexSpec::new(doc! { "ticket_id": -1 }).sparse(true);
        assert!(conflicts("messages", &[other, needed]).is_empty());
    }

    #[test]
    fn a_plain_declared_prefix_of_another_index_is_redundant() {
        let names = |indexes: &[IndexSpec]| -> Vec<(String, String)> {
            redundant(indexes)
                .into_iter()
                .map(|(a, b)| (a.name.clone(), b.name.clone()))
                .collect()
        };
        let short = IndexSpec::new(doc! { "a": 1 });
        let long = IndexSpec::new(doc! { "a": 1, "b": -1 }).name("by_a_b");
        assert_eq!(
            names(&[short.clone(), long.clone()]),
            [("a_1".to_owned(), "by_a_b".to_owned())]
        );
        // a unique longer index serves the queries too
        assert_eq!(names(&[short.clone(), long.clone().unique(true)]).len(), 1);
        // controls: an option makes the shorter one mean something of its own; other directions,
        // other keys, a longer index that leaves documents out, a derived shorter one
        assert!(names(&[short.clone().unique(true), long.clone()]).is_empty());
        assert!(names(&[short.clone().expire_after_secs(60), long.clone()]).is_empty());
        assert!(names(&[short.clone().sparse(true), long.clone()]).is_empty());
        assert!(names(&[
            IndexSpec::new(doc! { "a": 1, "b": 1 }),
            IndexSpec::new(doc! { "a": 1, "b": -1, "c": 1 })
        ])
        .is_empty());
        assert!(names(&[IndexSpec::new(doc! { "b": -1 }), long.clone()]).is_empty());
        assert!(names(&[short.clone(), long.clone().sparse(true)]).is_empty());
        assert!(names(&[short.clone(), long.clone().partial_filter(doc! { "x": 1 })]).is_empty());
        assert!(names(&[short.reason(IndexReason::ShardKey), long]).is_empty());
    }

    #[test]
    fn a_server_index_is_a_prefix_only_without_options() {
        let longer = doc! { "a": 1, "b": -1, "_id": -1 };
        assert!(server_index_is_prefix(
            &doc! { "key": { "a": 1, "b": -1 }, "name": "a_1_b_-1" },
            &longer
        ));
        assert!(server_index_is_prefix(
            &doc! { "key": { "a": 1_i64 }, "name": "a_1" },
            &longer
        ));
        for not_prefix in [
            doc! { "key": { "a": 1, "b": 1 }, "name": "x" },
            doc! { "key": { "a": 1, "b": -1, "_id": -1 }, "name": "x" },
            doc! { "key": { "a": 1 }, "name": "x", "unique": true },
            doc! { "key": { "a": 1 }, "name": "x", "partialFilterExpression": { "b": 1 } },
            doc! { "key": { "a": 1 }, "name": "x", "collation": { "locale": "fr" } },
            doc! { "key": { "a": 1 }, "name": "x", "expireAfterSeconds": 60 },
        ] {
            assert!(
                !server_index_is_prefix(&not_prefix, &longer),
                "{not_prefix}"
            );
        }
    }

    #[test]
    fn differences_name_each_option() {
        let spec = IndexSpec::new(doc! { "a": 1 }).unique(true);
        assert!(spec
            .differences(&doc! { "key": { "a": 1 }, "name": "a_1", "unique": true })
            .is_empty());
        let diffs = spec.differences(&doc! { "key": { "a": 1 }, "name": "other", "sparse": true });
        assert_eq!(diffs.len(), 3, "{diffs:?}");
    }
}
