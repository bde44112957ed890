//! Typed relationship helpers: `$lookup` in both directions, keyset pages of children, and
//! application-side resolution of a batch of references.
//!
//! `#[derive(Document)]` emits one [`Relation`] constant per `#[reference]` field, named after
//! the field in upper case (`Message::TICKET_ID`). Every query built here is served by an index
//! the schema creates: the target's `_id` for parent lookups and batches, the reference index
//! (or a declared index starting with the reference) for children.

use std::collections::HashMap;
use std::marker::PhantomData;

use futures_util::TryStreamExt;
use mongodb::bson::{doc, Bson, Document as BsonDocument, RawDocument, RawDocumentBuf};
use mongodb::Database;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::{Document, Ref, RefKind, Result};

/// The field the related documents are put in by the generated `$lookup`, removed again before
/// the outer document is deserialized.
pub const RELATED_FIELD: &str = "__related";

/// Marker: the reference has no sort key in a declared index, so it has no child pages.
#[derive(Debug, Clone, Copy)]
pub struct Unordered;

/// The order of a parent's children: the key that follows the reference in a declared index.
#[derive(Debug, Clone, Copy)]
pub struct SortKey {
    /// Stored path of the sort key.
    pub field: &'static str,
    /// 1 or -1, as in the index.
    pub direction: i32,
    /// Whether (reference, sort key) is unique, which makes the key alone a page cursor.
    pub unique: bool,
}

/// A `#[reference]` field of `From` pointing at `To` documents.
#[derive(Debug)]
pub struct Relation<From, To, Order = Unordered> {
    field: &'static str,
    kind: RefKind,
    order: Order,
    types: PhantomData<fn() -> (From, To)>,
}

impl<F, T, O: Clone> Clone for Relation<F, T, O> {
    fn clone(&self) -> Self {
        Relation {
            field: self.field,
            kind: self.kind,
            order: self.order.clone(),
            types: PhantomData,
        }
    }
}

impl<F, T> Relation<F, T, Unordered> {
    /// A relation on the stored field `field`. Used by generated code.
    pub const fn new(field: &'static str, kind: RefKind) -> Self {
        Relation {
            field,
            kind,
            order: Unordered,
            types: PhantomData,
        }
    }

    /// The same relation with children ordered by `order` (from a declared index).
    pub const fn ordered(self, order: SortKey) -> Relation<F, T, SortKey> {
        Relation {
            field: self.field,
            kind: self.kind,
            order,
            types: PhantomData,
        }
    }
}

impl<F: Document, T: Document, O> Relation<F, T, O> {
    /// The stored path of the reference field.
    pub fn field(&self) -> &'static str {
        self.field
    }

    /// One, optional or many.
    pub fn kind(&self) -> RefKind {
        self.kind
    }

    /// `From` documents with the `To` document(s) they reference: `$lookup` from
    /// `To::COLLECTION` on `_id`. For an array of references, the related documents come back
    /// in the order of the array.
    pub fn lookup(&self) -> Lookup<F, T> {
        Lookup::new(
            F::COLLECTION,
            T::COLLECTION,
            self.field,
            "_id",
            self.kind == RefKind::Many,
        )
    }

    /// `To` documents (parents) with the `From` documents that reference them (children):
    /// `$lookup` from `From::COLLECTION` on the reference field, served by its index.
    pub fn children(&self) -> Lookup<T, F> {
        Lookup::new(T::COLLECTION, F::COLLECTION, "_id", self.field, false)
    }

    /// The filter for the children of `parent`: `{ <field>: <id> }`.
    pub fn children_filter(&self, parent: &Ref<T>) -> BsonDocument
    where
        T::Id: Serialize,
    {
        doc! { self.field: parent.to_bson() }
    }
}

impl<F: Document, T: Document> Relation<F, T, SortKey> {
    /// A keyset page of the children of `parent` in index order (`limit` 50 unless changed):
    /// the next page continues after the cursor of the previous one, with `$gt` (or `$lt`) on
    /// the sort key, never with `skip`.
    pub fn page(&self, parent: &Ref<T>) -> ChildPage<F>
    where
        T::Id: Serialize,
    {
        ChildPage {
            collection: F::COLLECTION,
            field: self.field,
            parent: parent.to_bson(),
            order: self.order,
            after: None,
            limit: 50,
            item: PhantomData,
        }
    }

    /// The sort key of the children.
    pub fn sort_key(&self) -> SortKey {
        self.order
    }
}

/// An aggregation: stages on the outer collection, then one `$lookup`. Filters, sorts and
/// limits always run before the `$lookup`, so only the documents kept are joined (seed 003:
/// "reduce the input first").
#[derive(Debug, Clone)]
pub struct Lookup<L, R> {
    outer: &'static str,
    from: &'static str,
    local_field: &'static str,
    foreign_field: &'static str,
    in_local_order: bool,
    before: Vec<BsonDocument>,
    related: Vec<BsonDocument>,
    types: PhantomData<fn() -> (L, R)>,
}

/// An outer document with the documents it is related to.
#[derive(Debug, Clone, PartialEq)]
pub struct Joined<L, R> {
    /// The outer document.
    pub doc: L,
    /// The related documents (at most one for a single reference).
    pub related: Vec<R>,
}

impl<L, R> Joined<L, R> {
    /// The related document of a single reference.
    pub fn one(&self) -> Option<&R> {
        self.related.first()
    }
}

impl<L: Document, R: Document> Lookup<L, R> {
    fn new(
        outer: &'static str,
        from: &'static str,
        local_field: &'static str,
        foreign_field: &'static str,
        in_local_order: bool,
    ) -> Self {
        Lookup {
            outer,
            from,
            local_field,
            foreign_field,
            in_local_order,
            before: Vec::new(),
            related: Vec::new(),
            types: PhantomData,
        }
    }

    /// `$match` on the outer documents.
    pub fn filter(mut self, filter: BsonDocument) -> Self {
        self.before.push(doc! { "$match": filter });
        self
    }

    /// `$sort` of the outer documents.
    pub fn sort(mut self, sort: BsonDocument) -> Self {
        self.before.push(doc! { "$sort": sort });
        self
    }

    /// `$skip` of outer documents.
    pub fn skip(mut self, n: u64) -> Self {
        self.before.push(doc! { "$skip": n as i64 });
        self
    }

    /// `$limit` of the outer documents.
    pub fn limit(mut self, n: i64) -> Self {
        self.before.push(doc! { "$limit": n });
        self
    }

    /// A filter on the related documents (inside the `$lookup`).
    pub fn related_filter(mut self, filter: BsonDocument) -> Self {
        self.related.push(doc! { "$match": filter });
        self
    }

    /// The order of the related documents (inside the `$lookup`).
    pub fn related_sort(mut self, sort: BsonDocument) -> Self {
        self.related.push(doc! { "$sort": sort });
        self
    }

    /// At most `n` related documents per outer document.
    pub fn related_limit(mut self, n: i64) -> Self {
        self.related.push(doc! { "$limit": n });
        self
    }

    /// The `$lookup` stage.
    pub fn lookup_stage(&self) -> BsonDocument {
        let mut lookup = doc! {
            "from": self.from,
            "localField": self.local_field,
            "foreignField": self.foreign_field,
        };
        if !self.related.is_empty() {
            lookup.insert("pipeline", self.related.clone());
        }
        lookup.insert("as", RELATED_FIELD);
        doc! { "$lookup": lookup }
    }

    /// The whole pipeline: the outer stages, then the `$lookup`.
    pub fn pipeline(&self) -> Vec<BsonDocument> {
        let mut pipeline = self.before.clone();
        pipeline.push(self.lookup_stage());
        pipeline
    }

    /// The `aggregate` command (for `explain`).
    pub fn aggregate_command(&self) -> BsonDocument {
        doc! { "aggregate": self.outer, "pipeline": self.pipeline(), "cursor": {} }
    }

    /// The `find` the `$lookup` performs on the related collection for one outer document
    /// whose local field is `local_value` (for `explain`: it shows the index the join uses).
    pub fn related_find_command(&self, local_value: Bson) -> BsonDocument {
        let value = match local_value {
            Bson::Array(values) => Bson::Document(doc! { "$in": values }),
            value => value,
        };
        let mut filter = doc! { self.foreign_field: value };
        let mut command = doc! { "find": self.from };
        for stage in &self.related {
            if let Ok(extra) = stage.get_document("$match") {
                filter = doc! { "$and": [filter, extra.clone()] };
            } else if let Ok(sort) = stage.get_document("$sort") {
                command.insert("sort", sort.clone());
            } else if let Some(limit) = stage.get("$limit") {
                command.insert("limit", limit.clone());
            }
        }
        command.insert("filter", filter);
        command
    }

    /// Runs the aggregation and deserializes each outer document with its related ones.
    pub async fn run(&self, db: &Database) -> Result<Vec<Joined<L, R>>>
    where
        L: DeserializeOwned,
        R: DeserializeOwned,
    {
        let mut cursor = db
            .collection::<BsonDocument>(self.outer)
            .aggregate(self.pipeline())
            .await?;
        let mut out = Vec::new();
        while let Some(mut raw) = cursor.try_next().await? {
            let related = match raw.remove(RELATED_FIELD) {
                Some(Bson::Array(related)) => related,
                _ => Vec::new(),
            };
            let related = if self.in_local_order {
                in_order_of(related, raw.get(self.local_field))
            } else {
                related
            };
            let related = related
                .into_iter()
                .map(mongodb::bson::from_bson::<R>)
                .collect::<std::result::Result<Vec<R>, _>>()
                .map_err(mongodb::error::Error::from)?;
            let doc =
                mongodb::bson::from_document::<L>(raw).map_err(mongodb::error::Error::from)?;
            out.push(Joined { doc, related });
        }
        Ok(out)
    }
}

/// Orders looked-up documents as their ids appear in the local array.
fn in_order_of(related: Vec<Bson>, local: Option<&Bson>) -> Vec<Bson> {
    let Some(Bson::Array(ids)) = local else {
        return related;
    };
    let mut by_id: HashMap<String, Bson> = related
        .into_iter()
        .map(|doc| (id_key(doc.as_document().and_then(|d| d.get("_id"))), doc))
        .collect();
    ids.iter()
        .filter_map(|id| by_id.remove(&id_key(Some(id))))
        .collect()
}

/// A key under which equal ids meet, numbers compared by value: an `_id` stored as `Int32` by
/// another driver is the same document as the `i64` a reference holds.
fn id_key(id: Option<&Bson>) -> String {
    id.map_or_else(|| "-".to_owned(), crate::sync::id_key)
}

/// Where a child page continues: the sort key and `_id` of the last child returned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageCursor {
    /// The sort key of the last child.
    pub key: Bson,
    /// The `_id` of the last child (the tie-break when the sort key is not unique).
    pub id: Bson,
}

/// One page of children.
#[derive(Debug, Clone, PartialEq)]
pub struct Page<F> {
    /// The children, in index order.
    pub items: Vec<F>,
    /// The cursor of the next page, `None` after the last page.
    pub next: Option<PageCursor>,
}

/// A keyset page of a parent's children (see [`Relation::page`]).
#[derive(Debug, Clone)]
pub struct ChildPage<F> {
    collection: &'static str,
    field: &'static str,
    parent: Bson,
    order: SortKey,
    after: Option<PageCursor>,
    limit: i64,
    item: PhantomData<fn() -> F>,
}

impl<F: Document> ChildPage<F> {
    /// Continue after `cursor` (the `next` of the previous page).
    pub fn after(mut self, cursor: PageCursor) -> Self {
        self.after = Some(cursor);
        self
    }

    /// Page size (default 50).
    pub fn limit(mut self, limit: i64) -> Self {
        self.limit = limit;
        self
    }

    /// The filter: the parent, and keys after the cursor's.
    ///
    /// With a unique key, `{ reference: parent, key: { $gt: cursor.key } }`. With a key that is
    /// not unique the page continues inside the cursor's key first, so the filter is a rooted
    /// `$or` of the two index ranges, each with the parent in it:
    /// `{ $or: [{ reference, key: cursor.key, _id: { $gt: cursor.id } }, { reference, key: { $gt:
    /// cursor.key } }] }`. Every predicate is on the page's index (`{ reference, key }`, or
    /// `{ reference, key, _id }`), so mongod reads each branch as one index range and merges the
    /// two in index order (a `SORT_MERGE`): one `find` per page, no in-memory sort, nothing
    /// examined beyond the page.
    pub fn filter(&self) -> BsonDocument {
        let Some(after) = &self.after else {
            return doc! { self.field: self.parent.clone() };
        };
        let rest = doc! {
            self.field: self.parent.clone(),
            self.order.field: { self.op(): after.key.clone() },
        };
        if self.order.unique {
            return rest;
        }
        let ties = doc! {
            self.field: self.parent.clone(),
            self.order.field: after.key.clone(),
            "_id": { self.op(): after.id.clone() },
        };
        doc! { "$or": [ties, rest] }
    }

    fn op(&self) -> &'static str {
        if self.order.direction < 0 {
            "$lt"
        } else {
            "$gt"
        }
    }

    /// The sort: the index order after the reference (plus `_id` when the key is not unique).
    pub fn sort(&self) -> BsonDocument {
        let mut sort = doc! { self.order.field: self.order.direction };
        if !self.order.unique {
            sort.insert("_id", self.order.direction);
        }
        sort
    }

    /// The `find` command of this page (for `explain`).
    pub fn find_command(&self) -> BsonDocument {
        doc! { "find": self.collection, "filter": self.filter(), "sort": self.sort(), "limit": self.limit }
    }

    /// Reads the page with one `find` (the [`ChildPage::find_command`]).
    ///
    /// A cursor that came back from a client is checked first: a key or id that is a document
    /// with `$` keys (an operator such as `{"$ne": null}`), a regular expression or JavaScript is
    /// refused with [`crate::Error::Refused`], since it would run as a query instead of matching
    /// as a value.
    pub async fn fetch(&self, db: &Database) -> Result<Page<F>>
    where
        F: DeserializeOwned,
    {
        if let Some(after) = &self.after {
            crate::literal::refuse_operators("the page cursor's key", &after.key)?;
            crate::literal::refuse_operators("the page cursor's id", &after.id)?;
        }
        // raw documents: each child is decoded once, straight from its bytes, as a typed
        // cursor would; only the last one's key and `_id` are read as values
        let raw: Vec<RawDocumentBuf> = db
            .collection::<RawDocumentBuf>(self.collection)
            .find(self.filter())
            .sort(self.sort())
            .limit(self.limit)
            .await?
            .try_collect()
            .await?;
        let next = match raw.last() {
            Some(last) if raw.len() as i64 == self.limit => Some(PageCursor {
                key: raw_path(last, self.order.field).unwrap_or(Bson::Null),
                id: raw_path(last, "_id").unwrap_or(Bson::Null),
            }),
            _ => None,
        };
        let items = raw
            .iter()
            .map(|child| mongodb::bson::from_slice::<F>(child.as_bytes()))
            .collect::<std::result::Result<Vec<F>, _>>()
            .map_err(mongodb::error::Error::from)?;
        Ok(Page { items, next })
    }
}

/// The value at a dotted `path` of a raw document, if every step is there.
fn raw_path(doc: &RawDocumentBuf, path: &str) -> Option<Bson> {
    let mut current: &RawDocument = doc;
    let mut steps = path.split('.').peekable();
    while let Some(step) = steps.next() {
        let value = current.get(step).ok()??;
        if steps.peek().is_none() {
            return Bson::try_from(value.to_raw_bson()).ok();
        }
        current = value.as_document()?;
    }
    None
}

/// The documents of a batch of references, fetched with one `$in` query.
pub struct Resolved<T: Document> {
    /// The documents found, in the order of their first reference.
    pub documents: Vec<T>,
    /// The references with no document, in reference order.
    pub missing: Vec<Ref<T>>,
}

impl<T: Document + std::fmt::Debug> std::fmt::Debug for Resolved<T>
where
    T::Id: std::fmt::Debug,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resolved")
            .field("documents", &self.documents)
            .field("missing", &self.missing)
            .finish()
    }
}

impl<T: Document> Ref<T> {
    /// The `find` command that [`Ref::resolve_all`] sends (for `explain`).
    pub fn resolve_command<'a>(refs: impl IntoIterator<Item = &'a Ref<T>>) -> BsonDocument
    where
        T: 'a,
        T::Id: Serialize,
    {
        let mut seen = HashMap::new();
        let ids: Vec<Bson> = refs
            .into_iter()
            .map(Ref::to_bson)
            .filter(|id| seen.insert(id_key(Some(id)), ()).is_none())
            .collect();
        doc! { "find": T::COLLECTION, "filter": { "_id": { "$in": ids } } }
    }

    /// Fetches the referenced documents with one `$in` query on `_id`, returned in reference
    /// order; references with no document are reported in [`Resolved::missing`], not dropped.
    pub async fn resolve_all<'a>(
        db: &Database,
        refs: impl IntoIterator<Item = &'a Ref<T>>,
    ) -> Result<Resolved<T>>
    where
        T: DeserializeOwned + 'a,
        T::Id: Serialize + Clone,
    {
        let refs: Vec<&Ref<T>> = refs.into_iter().collect();
        if refs.is_empty() {
            return Ok(Resolved {
                documents: Vec::new(),
                missing: Vec::new(),
            });
        }
        let command = Self::resolve_command(refs.iter().copied());
        let filter = command.get_document("filter").expect("built above").clone();
        let raw: Vec<BsonDocument> = db
            .collection::<BsonDocument>(T::COLLECTION)
            .find(filter)
            .await?
            .try_collect()
            .await?;
        let mut by_id: HashMap<String, BsonDocument> = raw
            .into_iter()
            .map(|doc| (id_key(doc.get("_id")), doc))
            .collect();
        let mut documents = Vec::new();
        let mut missing = Vec::new();
        let mut delivered = HashMap::new();
        for reference in refs {
            let key = id_key(Some(&reference.to_bson()));
            match by_id.remove(&key) {
                Some(doc) => {
                    delivered.insert(key, ());
                    documents.push(
                        mongodb::bson::from_document::<T>(doc)
                            .map_err(mongodb::error::Error::from)?,
                    );
                }
                None if delivered.contains_key(&key) => {} // a repeated reference
                None => missing.push(reference.clone()),
            }
        }
        Ok(Resolved { documents, missing })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_raw_path_reads_nested_values_and_misses_cleanly() {
        let doc = RawDocumentBuf::from_document(&doc! {
            "_id": 7_i64,
            "meta": { "at": 3_i32, "tags": ["a"] },
            "flat": "x",
        })
        .unwrap();
        assert_eq!(raw_path(&doc, "_id"), Some(Bson::Int64(7)));
        assert_eq!(raw_path(&doc, "meta.at"), Some(Bson::Int32(3)));
        assert_eq!(
            raw_path(&doc, "meta.tags"),
            Some(Bson::Array(vec![Bson::String("a".into())]))
        );
        assert_eq!(raw_path(&doc, "meta.none"), None);
        assert_eq!(
            raw_path(&doc, "flat.deeper"),
            None,
            "a string has no fields"
        );
        assert_eq!(raw_path(&doc, "missing"), None);
    }
}
