//! The desired state of a collection: its validator, indexes, references, copies and options,
//! as a collection root's [`Document::collection_spec`](crate::Document::collection_spec)
//! describes it and `apply` brings it about.

use std::fmt;

use mongodb::bson::Document as BsonDocument;

use crate::model::collation::Collation;
use crate::model::copy::{CopySpec, EmbedSpec, SubsetSpec, SyncStrategy};
use crate::model::index::{IndexReason, IndexSpec};
use crate::model::part::PartSpec;
use crate::model::timeseries::TimeSeries;
use crate::query::declared::QuerySpec;

/// How strictly the server applies a collection's validator (`validationLevel`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum ValidationLevel {
    /// Every insert and update is validated (the server default).
    #[default]
    Strict,
    /// Updates to documents that are already invalid are not validated.
    Moderate,
}

impl ValidationLevel {
    /// The server's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ValidationLevel::Strict => "strict",
            ValidationLevel::Moderate => "moderate",
        }
    }
}

/// What the server does with an invalid write (`validationAction`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum ValidationAction {
    /// Reject the write with code 121 (the server default).
    #[default]
    Error,
    /// Accept the write and log a warning.
    Warn,
}

impl ValidationAction {
    /// The server's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ValidationAction::Error => "error",
            ValidationAction::Warn => "warn",
        }
    }
}

impl fmt::Display for ValidationLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for ValidationAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The desired state of one collection, as the derive describes it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CollectionSpec {
    /// Collection name.
    pub name: String,
    /// The full validator document (`{ "$jsonSchema": ... }`).
    pub validator: BsonDocument,
    /// `validationLevel`.
    pub validation_level: ValidationLevel,
    /// `validationAction`.
    pub validation_action: ValidationAction,
    /// Indexes, declared and derived, without duplicates.
    pub indexes: Vec<IndexSpec>,
    /// The shard key, if declared with `#[collection(shard_key(...))]`.
    pub shard_key: Option<BsonDocument>,
    /// The references to other collections held by this one's documents.
    pub references: Vec<ReferenceSpec>,
    /// The extended references (copies of other documents' fields) held here.
    pub copies: Vec<CopySpec>,
    /// The subsets of children kept here.
    pub subsets: Vec<SubsetSpec>,
    /// The embedded arrays and maps and their bounds.
    pub embeds: Vec<EmbedSpec>,
    /// Whether change streams must see this collection's documents before each change
    /// (`changeStreamPreAndPostImages`): set by `Schema::build` on the children of a
    /// `#[subset(sync = "async")]`, so the sync worker knows the parent of a deleted child.
    pub change_stream_pre_images: bool,
    /// The declared queries (`#[query(...)]`), fitted to the indexes by `Schema::build`.
    pub queries: Vec<QuerySpec>,
    /// The queries the library sends on this collection (lookups, child pages, fan-outs),
    /// with their fit, as `Schema::build` found them.
    pub library_queries: Vec<QuerySpec>,
    /// `#[collection(same_id_as = Owner)]`: its documents are parts of another collection's,
    /// each stored under its owner's `_id`.
    pub part_of: Option<PartSpec>,
    /// The collection's default collation (`#[collection(collation(...))]`): created with it,
    /// and given to every index and declared query that declares none of its own.
    pub collation: Option<Collation>,
    /// A time series collection's options (`#[collection(timeseries(...))]`).
    pub timeseries: Option<TimeSeries>,
}

/// How many documents a reference field points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RefKind {
    /// `Ref<T>`: exactly one.
    One,
    /// `Option<Ref<T>>`: one or none.
    Optional,
    /// `Vec<Ref<T>>` with `#[reference(max = N)]`: a bounded array of ids.
    Many,
}

/// A field that holds ids of another collection's documents.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReferenceSpec {
    /// Stored path of the field (`ticket_id`).
    pub field: String,
    /// The referenced collection.
    pub target: String,
    /// The referenced Rust type, for messages.
    pub target_type: String,
    /// One, optional or many.
    pub kind: RefKind,
    /// The bound of an array of references.
    pub max: Option<u64>,
    /// The order of the referencing documents under one parent (the key after the reference
    /// in a declared index), when there is one: `(key, direction, unique)`.
    pub order: Option<(String, i32, bool)>,
}

impl ReferenceSpec {
    /// A reference from `field` to documents of `target`.
    pub fn new(
        field: impl Into<String>,
        target: impl Into<String>,
        target_type: impl Into<String>,
        kind: RefKind,
    ) -> Self {
        ReferenceSpec {
            field: field.into(),
            target: target.into(),
            target_type: target_type.into(),
            kind,
            max: None,
            order: None,
        }
    }

    /// Sets the bound of an array of references.
    pub fn max(mut self, max: u64) -> Self {
        self.max = Some(max);
        self
    }

    /// Orders the children of a parent by `key` (`unique`: the pair reference + key is unique).
    pub fn order(mut self, key: impl Into<String>, direction: i32, unique: bool) -> Self {
        self.order = Some((key.into(), direction, unique));
        self
    }

    /// The index that serves this reference's queries: `{ field: 1 }`, or for keyset pages on a
    /// key that is not unique `{ field: 1, key: d, _id: d }`, so that the `_id` tie-break is in
    /// index order too. `None` for an array of references (served by the target's `_id`).
    pub fn index_keys(&self) -> Option<BsonDocument> {
        if self.kind == RefKind::Many {
            return None;
        }
        let mut keys = BsonDocument::new();
        keys.insert(self.field.clone(), 1);
        if let Some((key, direction, false)) = &self.order {
            keys.insert(key.clone(), *direction);
            keys.insert("_id", *direction);
        }
        Some(keys)
    }
}

impl CollectionSpec {
    /// A collection with a validator, default level and action and no index.
    pub fn new(name: impl Into<String>, validator: BsonDocument) -> Self {
        CollectionSpec {
            name: name.into(),
            validator,
            validation_level: ValidationLevel::default(),
            validation_action: ValidationAction::default(),
            indexes: Vec::new(),
            shard_key: None,
            references: Vec::new(),
            copies: Vec::new(),
            subsets: Vec::new(),
            embeds: Vec::new(),
            change_stream_pre_images: false,
            queries: Vec::new(),
            library_queries: Vec::new(),
            part_of: None,
            collation: None,
            timeseries: None,
        }
    }

    /// Declares its documents parts of `part`'s owner, each under its owner's `_id` (read by
    /// that id: the `_id` index serves it, no index of its own).
    pub fn part_of(mut self, part: PartSpec) -> Self {
        self.part_of = Some(part);
        self
    }

    /// Makes it a time series collection: created with `timeseries` (and its expiry), no
    /// validator sent (mongod takes none on one), and the index `{ <meta>: 1, <time>: 1 }`
    /// that mongod creates with it, declared so that `apply` creates it where a server does not.
    pub fn timeseries(mut self, timeseries: TimeSeries) -> Self {
        let default_index = timeseries.meta_field.as_ref().map(|meta| {
            let mut keys = BsonDocument::new();
            keys.insert(meta.clone(), 1);
            keys.insert(timeseries.time_field.clone(), 1);
            IndexSpec::new(keys).reason(IndexReason::TimeSeries)
        });
        self.timeseries = Some(timeseries);
        for query in &mut self.queries {
            query.time_series = true;
        }
        match default_index {
            Some(index) => self.require_index(index),
            None => self,
        }
    }

    /// Adds a declared query; one that declares no collation gets the collection's.
    pub fn query(mut self, mut query: QuerySpec) -> Self {
        if query.collation.is_none() {
            query.collation = self.collation.clone();
        }
        query.time_series |= self.timeseries.is_some();
        self.queries.push(query);
        self
    }

    /// Sets the collection's default collation, and gives it to every index and declared query
    /// without one of their own (those added before and after): mongod gives a collection's
    /// default to the indexes and queries that name none, and the library sends it on each, so
    /// that a server which does not apply a default (SecantusDB) does the same.
    ///
    /// The indexes of the library's comparisons of held ids (a reference's, a copy's fan-out,
    /// a bucket's parent) get the simple collation instead when `collation` is not simple
    /// ([`Collation::for_identities`]): the library compares ids exactly.
    pub fn collation(mut self, collation: Collation) -> Self {
        for index in &mut self.indexes {
            if index.collation.is_none() {
                index.collation = if index.is_for_identities() || index.needs_simple_collation() {
                    Collation::for_identities(Some(&collation))
                } else {
                    Some(collation.clone())
                };
            }
        }
        for query in &mut self.queries {
            if query.collation.is_none() {
                query.collation = Some(collation.clone());
            }
        }
        self.collation = Some(collation);
        self
    }

    /// An index with the collection's collation when it declares none; an index of the
    /// library's comparisons of held ids, a shard key's and one of a type that takes no
    /// collation (`text`, `2d`) with the simple one when the collection's is another.
    fn collated(&self, mut index: IndexSpec) -> IndexSpec {
        if index.collation.is_none() {
            index.collation = if index.is_for_identities() || index.needs_simple_collation() {
                Collation::for_identities(self.collation.as_ref())
            } else {
                self.collation.clone()
            };
        }
        index
    }

    /// Sets `validationLevel`.
    pub fn validation_level(mut self, level: ValidationLevel) -> Self {
        self.validation_level = level;
        self
    }

    /// Sets `validationAction`.
    pub fn validation_action(mut self, action: ValidationAction) -> Self {
        self.validation_action = action;
        self
    }

    /// Declares the shard key; it gets an index unless an index already starts with it.
    pub fn shard_key(mut self, keys: BsonDocument) -> Self {
        self.shard_key = Some(keys.clone());
        self.require_index(IndexSpec::new(keys).reason(IndexReason::ShardKey))
    }

    /// Declares a reference. A single reference (`One`, `Optional`) gets an index on its field
    /// unless an index already starts with it (a declared compound index or the shard key); an
    /// array of references is resolved through the target's `_id` index and needs none here.
    pub fn reference(mut self, reference: ReferenceSpec) -> Self {
        let keys = reference.index_keys();
        let reason = IndexReason::Reference {
            field: reference.field.clone(),
            target: reference.target.clone(),
        };
        self.references.push(reference);
        if let Some(keys) = keys {
            self = self.require_index(IndexSpec::new(keys).reason(reason));
        }
        self
    }

    /// Declares an extended reference. Unless the copy is frozen, its fan-out update filters on
    /// `<path>._id`, which gets an index (seed 003: "the fan-out update needs an index on the
    /// copied id").
    ///
    /// With an order (a declared index starting with `<path>._id`, then a key), the index
    /// also serves the keyset pages of the relation constant, with the `_id` tie-break added as
    /// for a reference, frozen copies included.
    pub fn copy(mut self, copy: CopySpec) -> Self {
        // one copy per path, however many ways it was declared
        if self.copies.iter().any(|c| c.path == copy.path) {
            return self;
        }
        let frozen = copy.strategy == SyncStrategy::Frozen;
        let reason = if frozen {
            IndexReason::Reference {
                field: copy.id_path(),
                target: copy.source.clone(),
            }
        } else {
            IndexReason::FanOut {
                path: copy.path.clone(),
                source: copy.source.clone(),
            }
        };
        let keys = copy.index_keys();
        self.copies.push(copy);
        if let Some(keys) = keys {
            self = self.require_index(IndexSpec::new(keys).reason(reason));
        }
        self
    }

    /// Declares the references and copies held inside the values of the embedded field
    /// `prefix`, as the embedded type describes them relative to itself
    /// ([`crate::BsonSchema`]'s hidden `__embedded_relations`, through the field's type, so an
    /// alias or a generic argument is seen through): a `#[reference]` gets its index on the
    /// full path (`lines.product_id`), a copy its place in the sync graph, its fan-out index
    /// (`lines.product._id`) and the report (`lines.product`, in `lines[]`).
    pub fn embedded(mut self, prefix: &str, inner: Option<CollectionSpec>) -> Self {
        let Some(inner) = inner else {
            return self;
        };
        for mut reference in inner.references {
            reference.field = format!("{prefix}.{}", reference.field);
            reference.order = None;
            self = self.reference(reference);
        }
        for copy in inner.copies {
            self = self.copy(copy.under(prefix));
        }
        self
    }

    /// The relations of one value as an array of such values holds them: each copy is inside
    /// one more array of values (the value itself, `""` in [`CopySpec::arrays`]).
    pub fn in_array(mut self) -> Self {
        for copy in &mut self.copies {
            copy.arrays.insert(0, String::new());
        }
        self
    }

    /// Whether it declares any reference or copy (an embedded value's description with none
    /// adds nothing to its holder).
    pub fn has_relations(&self) -> bool {
        !self.references.is_empty() || !self.copies.is_empty()
    }

    /// Declares an embedded array or map and its bound.
    pub fn embed(mut self, embed: EmbedSpec) -> Self {
        self.embeds.push(embed);
        self
    }

    /// Declares a subset of children kept in this document.
    pub fn subset(mut self, subset: SubsetSpec) -> Self {
        self.subsets.push(subset);
        self
    }

    /// Adds an index that a relationship needs, unless an existing index covers it (starts with
    /// the same keys and holds every document), in which case that index gains the reason.
    ///
    /// Otherwise one index serves both when an existing index is a prefix of the new one (same
    /// keys first, same directions), since the longer index serves every query the shorter one
    /// does:
    ///
    /// - the longest plain declared index (no unique, sparse, partial or TTL option) that is a
    ///   prefix of the new one is extended to the new keys and gains the reason, keeping its
    ///   options and its declared name (an undeclared name follows the keys): a declared
    ///   `{ member_id: 1, loaned_at: -1 }` becomes `{ member_id: 1, loaned_at: -1, _id: -1 }`,
    ///   the index of the members' keyset pages, rather than a second index beside it;
    /// - an index that exists only for other relationships, without a declared name, is
    ///   replaced by the new one, which gains its reasons.
    ///
    /// A declared index with an option is never changed; a shorter declared index left beside
    /// a longer one is reported as redundant by `plan` and the report.
    pub fn require_index(mut self, index: IndexSpec) -> Self {
        let index = self.collated(index);
        // an index of another collation serves keys that hold no string alike (an ObjectId
        // reference under a case-insensitive declared index)
        let alike = {
            let schema = self.validator.get_document("$jsonSchema").ok();
            let keys: Vec<String> = index.keys.keys().cloned().collect();
            let uncollated = crate::model::collation::uncollated(schema, keys.iter().cloned());
            let all_uncollated = keys.iter().all(|k| uncollated.contains(k));
            // (not for a shard key: mongod finds no index of a non-simple collation useful)
            let strict = index.needs_simple_collation();
            move |i: &IndexSpec, index: &IndexSpec| {
                (all_uncollated && !strict) || i.same_collation(index)
            }
        };
        if let Some(existing) = self
            .indexes
            .iter_mut()
            .find(|i| i.covers(&index.keys) && alike(i, &index))
        {
            existing.merge_reasons(&index);
            return self;
        }
        let declared = |i: &IndexSpec| i.reasons.contains(&IndexReason::Declared);
        let mut index = index;
        // the derived indexes the new one serves are taken out; their reasons move to it
        let mut position = None;
        let mut i = 0;
        while i < self.indexes.len() {
            let old = &self.indexes[i];
            if !declared(old)
                && !old.has_declared_name()
                && index.covers(&old.keys)
                && index.same_collation(old)
            {
                let old = self.indexes.remove(i);
                index.merge_reasons(&old);
                position.get_or_insert(i);
            } else {
                i += 1;
            }
        }
        let extended = self
            .indexes
            .iter_mut()
            .filter(|i| declared(i) && i.is_plain() && alike(i, &index) && index.covers(&i.keys))
            .max_by_key(|i| i.keys.len());
        match extended {
            Some(target) => {
                target.extend_to(index.keys.clone());
                target.merge_reasons(&index);
            }
            None => {
                let position = position.unwrap_or(self.indexes.len());
                self.indexes.insert(position, index);
            }
        }
        self
    }

    /// Adds an index. An index whose keys are the same as an existing one's is merged into it
    /// (the first keeps its name and options; the reasons are combined), so a relationship index
    /// that a declared index already provides is not created twice.
    pub fn index(mut self, index: IndexSpec) -> Self {
        let index = self.collated(index);
        match self
            .indexes
            .iter_mut()
            .find(|i| i.same_keys(&index) && i.same_collation(&index))
        {
            Some(existing) => existing.merge_reasons(&index),
            None => self.indexes.push(index),
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use mongodb::bson::doc;

    use super::*;

    fn loans(declared: IndexSpec) -> CollectionSpec {
        CollectionSpec::new("loans", doc! {})
            .index(declared)
            .reference(
                ReferenceSpec::new("member_id", "members", "Member", RefKind::One).order(
                    "loaned_at",
                    -1,
                    false,
                ),
            )
    }

    fn names(spec: &CollectionSpec) -> Vec<&str> {
        spec.indexes.iter().map(|i| i.name.as_str()).collect()
    }

    #[test]
    fn a_text_index_and_a_shard_key_on_a_collated_collection_have_the_simple_collation() {
        let en2 = crate::model::collation::Collation::new("en").strength(2);
        let simple = Some(crate::model::collation::Collation::simple());
        let spec = CollectionSpec::new("docs", doc! {})
            .collation(en2.clone())
            .index(IndexSpec::new(doc! { "bio": "text" }))
            .index(IndexSpec::new(doc! { "bio": 1 }))
            .index(IndexSpec::new(doc! { "spot": "2d" }))
            .index(IndexSpec::new(doc! { "spot": "2dsphere" }))
            .index(IndexSpec::new(doc! { "$**": 1 }))
            .shard_key(doc! { "clinic": 1, "email": 1 });
        let collation = |name: &str| {
            let index = spec.indexes.iter().find(|i| i.name == name);
            index
                .unwrap_or_else(|| panic!("{name}: {spec:?}"))
                .collation
                .clone()
        };
        // mongod refuses any collation on a text or 2d index (`_isSpecOk`)
        assert_eq!(collation("bio_text"), simple);
        assert_eq!(collation("spot_2d"), simple);
        // btree, 2dsphere and wildcard indexes take the collection's
        assert_eq!(collation("bio_1"), Some(en2.clone()));
        assert_eq!(collation("spot_2dsphere"), Some(en2.clone()));
        assert_eq!(collation("$**_1"), Some(en2.clone()));
        // a shard key's index is of the simple collation (`shardCollection` finds no other
        // useful), the indexes added before the collection's collation too
        assert_eq!(collation("clinic_1_email_1"), simple);
        let later = CollectionSpec::new("docs", doc! {})
            .index(IndexSpec::new(doc! { "bio": "text" }))
            .shard_key(doc! { "clinic": 1 })
            .collation(en2.clone());
        assert!(
            later.indexes.iter().all(|i| i.collation == simple),
            "{later:?}"
        );
        // on a collection of the simple collation, none is stated
        let plain = CollectionSpec::new("docs", doc! {})
            .index(IndexSpec::new(doc! { "bio": "text" }))
            .shard_key(doc! { "clinic": 1 });
        assert!(plain.indexes.iter().all(|i| i.collation.is_none()));
        // a declared index of the collection's collation on the key is not the shard key's
        let declared = CollectionSpec::new("docs", doc! {})
            .collation(en2.clone())
            .index(IndexSpec::new(doc! { "clinic": 1, "email": 1 }).name("by_clinic"))
            .shard_key(doc! { "clinic": 1 });
        let shard: Vec<&IndexSpec> = declared
            .indexes
            .iter()
            .filter(|i| i.reasons.contains(&IndexReason::ShardKey))
            .collect();
        assert_eq!(shard.len(), 1, "{declared:?}");
        assert_eq!(shard[0].collation, simple);
    }

    #[test]
    fn a_declared_prefix_of_the_page_index_is_extended_into_one_index() {
        let spec = loans(IndexSpec::new(doc! { "member_id": 1, "loaned_at": -1 }));
        assert_eq!(names(&spec), ["member_id_1_loaned_at_-1__id_-1"]);
        let index = &spec.indexes[0];
        assert_eq!(
            index.keys,
            doc! { "member_id": 1, "loaned_at": -1, "_id": -1 }
        );
        assert_eq!(
            index.reasons,
            [
                IndexReason::Declared,
                IndexReason::Reference {
                    field: "member_id".into(),
                    target: "members".into()
                }
            ]
        );
        // a declared name is kept
        let spec =
            loans(IndexSpec::new(doc! { "member_id": 1, "loaned_at": -1 }).name("by_member"));
        assert_eq!(names(&spec), ["by_member"]);
        assert_eq!(spec.indexes[0].keys.len(), 3);
        // a shorter declared index is extended too: it is a prefix of the page's
        let spec = loans(IndexSpec::new(doc! { "member_id": 1 }));
        assert_eq!(names(&spec), ["member_id_1_loaned_at_-1__id_-1"]);
    }

    #[test]
    fn a_declared_index_with_an_option_or_other_directions_is_left_alone() {
        for declared in [
            IndexSpec::new(doc! { "member_id": 1, "loaned_at": -1 }).sparse(true),
            IndexSpec::new(doc! { "member_id": 1, "loaned_at": -1 })
                .partial_filter(doc! { "returned": false }),
            IndexSpec::new(doc! { "member_id": 1 }).unique(true),
            IndexSpec::new(doc! { "member_id": 1, "loaned_at": 1 }),
        ] {
            let spec = loans(declared.clone());
            assert_eq!(spec.indexes.len(), 2, "{declared}: {:?}", names(&spec));
            assert_eq!(spec.indexes[0], declared, "unchanged");
            assert_eq!(spec.indexes[1].name, "member_id_1_loaned_at_-1__id_-1");
        }
    }

    #[test]
    fn the_longest_declared_prefix_is_extended_and_the_shorter_is_redundant() {
        let spec = CollectionSpec::new("loans", doc! {})
            .index(IndexSpec::new(doc! { "member_id": 1 }))
            .index(IndexSpec::new(doc! { "member_id": 1, "loaned_at": -1 }).name("by_member"))
            .reference(
                ReferenceSpec::new("member_id", "members", "Member", RefKind::One).order(
                    "loaned_at",
                    -1,
                    false,
                ),
            );
        // the longer declared index becomes the page's; the shorter one serves nothing more
        assert_eq!(names(&spec), ["member_id_1", "by_member"]);
        assert_eq!(spec.indexes[1].keys.len(), 3);
        let redundant = crate::model::index::redundant(&spec.indexes);
        assert_eq!(redundant.len(), 1);
        assert_eq!(
            (redundant[0].0.name.as_str(), redundant[0].1.name.as_str()),
            ("member_id_1", "by_member")
        );
    }

    #[test]
    fn derived_indexes_still_merge_into_the_longer_one() {
        // the shard key's index is replaced by the page's, which starts with it
        let spec = CollectionSpec::new("messages", doc! {})
            .shard_key(doc! { "ticket_id": 1, "at": 1 })
            .reference(
                ReferenceSpec::new("ticket_id", "tickets", "Ticket", RefKind::One)
                    .order("at", 1, false),
            );
        assert_eq!(names(&spec), ["ticket_id_1_at_1__id_1"]);
        assert_eq!(spec.indexes[0].reasons.len(), 2);
    }
}
