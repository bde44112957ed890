//! Keyset pages of a parent's children, in the order of the reference index.

use std::marker::PhantomData;

use futures_util::future::BoxFuture;
use futures_util::TryStreamExt;
use mongodb::action::Action as _;
use mongodb::bson::{doc, Bson, Document as BsonDocument, RawDocumentBuf};
use mongodb::{ClientSession, Database};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::order::SortKey;
use super::reference::refuse_hostile_id;
use super::{Attached, Detached};
pub use crate::query::keyset::MAX_PAGE_SIZE;
pub(crate) use crate::query::keyset::{check_page_size, raw_path};
use crate::{Document, Result};

/// Where a child page continues: the sort key and `_id` of the last child returned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageCursor {
    /// The sort key of the last child.
    pub key: Bson,
    /// The `_id` of the last child (the tie-break when the sort key is not unique).
    pub id: Bson,
}

/// One page of items and where the next one starts: a parent's children
/// ([`crate::Relation::page_in`], cursor [`PageCursor`]) or a bucket's entries
/// ([`crate::Bucket::entries`], cursor [`crate::EntryCursor`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Page<T, C = PageCursor> {
    /// The items, in the order of the read (index order, key order).
    pub items: Vec<T>,
    /// The cursor of the next page (pass it to `after`): `Some` only when another item
    /// follows (each read asks for one item more than the page), so the last page is never
    /// an empty one.
    pub next: Option<C>,
}

/// A keyset page of a parent's children: described by [`crate::Relation::page`] (`D` =
/// [`Detached`]: its filter, sort and `find` command, for `explain`), read by
/// [`crate::Relation::page_in`] (`D` = [`Attached`]: await it).
///
/// ```no_run
/// # use mongo_schema_core::*;
/// # async fn f<C: Document + serde::de::DeserializeOwned + Send, P: Document>(
/// #     db: &mongodb::Database, relation: &Relation<C, P, SortKey>, parent: &Ref<P>,
/// #     cursor: PageCursor) -> Result<()>
/// # where P::Id: serde::Serialize {
/// let page = relation.page_in(db, parent).after(cursor).limit(50).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct ChildPage<F, D = Detached> {
    collection: &'static str,
    field: &'static str,
    parent: Bson,
    order: SortKey,
    after: Option<PageCursor>,
    limit: i64,
    also: Option<BsonDocument>,
    on: D,
    item: PhantomData<fn() -> F>,
}

impl<F: Document> ChildPage<F> {
    /// The first page of `parent`'s children (see [`crate::Relation::page`]).
    pub(super) fn new(
        collection: &'static str,
        field: &'static str,
        parent: Bson,
        order: SortKey,
    ) -> Self {
        ChildPage {
            collection,
            field,
            parent,
            order,
            after: None,
            limit: 50,
            also: None,
            on: Detached,
            item: PhantomData,
        }
    }

    /// The same page, read in `db` when awaited.
    pub(super) fn attach<'a>(self, db: &'a Database) -> ChildPage<F, Attached<'a>> {
        ChildPage {
            collection: self.collection,
            field: self.field,
            parent: self.parent,
            order: self.order,
            after: self.after,
            limit: self.limit,
            also: self.also,
            on: Attached::new(db),
            item: PhantomData,
        }
    }
}

impl<'a, F> ChildPage<F, Attached<'a>> {
    /// Reads the page in `session` (inside the caller's transaction when one is started: the
    /// page sees the transaction's own writes).
    pub fn session(mut self, session: &'a mut ClientSession) -> Self {
        self.on.session = Some(session);
        self
    }
}

impl<F: Document, D> ChildPage<F, D> {
    /// Continue after `cursor` (the `next` of the previous page, or that `Option` itself:
    /// `None` reads the first page).
    pub fn after(mut self, cursor: impl Into<Option<PageCursor>>) -> Self {
        self.after = cursor.into();
        self
    }

    /// Page size (default 50): 1 to [`MAX_PAGE_SIZE`]; awaiting the page refuses any other
    /// (`0`, which the server reads as "no limit", included).
    pub fn limit(mut self, limit: i64) -> Self {
        self.limit = limit;
        self
    }

    /// Only children that also match `filter` (the service's own condition, as
    /// [`crate::Lookup::filter`] sets one): the page's filter becomes
    /// `{ $and: [<keyset filter>, filter] }`. A condition on fields outside the page's index
    /// is read from each child the index range yields.
    pub fn filter(mut self, filter: BsonDocument) -> Self {
        self.also = Some(filter);
        self
    }

    /// The filter: the parent, and keys after the cursor's, as ranges of the page's index
    /// (`{ reference, key }`, or `{ reference, key, _id }` when the key is not unique), each
    /// with the parent in it:
    ///
    /// - with a key that is not unique, the rest of the cursor's own key first:
    ///   `{ reference, key: cursor.key, _id: { $gt: cursor.id } }`;
    /// - the keys after the cursor's: `{ reference, key: { $gt: cursor.key } }` (`$lt` when the
    ///   index is descending);
    /// - in descending order, children whose key is `null` or missing come last, and a
    ///   comparison with a date or a number never matches them (query comparisons are
    ///   type-bracketed): they are a range of their own, `{ reference, key: null }`, unless the
    ///   validator requires a non-null key. After a `null` cursor key in ascending order every
    ///   other value follows: `{ reference, key: { $ne: null } }`.
    ///
    /// One range is the filter itself; several are a rooted `$or`, which mongod reads as one
    /// index range each, merged in index order (a `SORT_MERGE`): one `find` per page, no
    /// in-memory sort, nothing examined beyond the page.
    ///
    /// With a [`filter`](ChildPage::filter) of the service's, both: `{ $and: [<this>, filter] }`.
    pub fn find_filter(&self) -> BsonDocument {
        let keyset = self.keyset_filter();
        match &self.also {
            Some(also) => doc! { "$and": [keyset, also.clone()] },
            None => keyset,
        }
    }

    fn keyset_filter(&self) -> BsonDocument {
        let base = doc! { self.field: self.parent.clone() };
        let Some(after) = &self.after else {
            return base;
        };
        let direction = self.order.direction.as_i32();
        let mut order = vec![(self.order.field, direction)];
        let mut values = vec![after.key.clone()];
        if !self.order.unique {
            order.push(("_id", direction));
            values.push(after.id.clone());
        }
        let schema = F::bson_schema();
        let branches = crate::query::keyset::after(&order, &values, |path| {
            path != "_id" && crate::query::keyset::may_be_null(&schema, path)
        });
        crate::query::keyset::filter(&base, branches)
    }

    /// The sort: the index order after the reference (plus `_id` when the key is not unique).
    pub fn sort(&self) -> BsonDocument {
        let mut sort = doc! { self.order.field: self.order.direction };
        if !self.order.unique {
            sort.insert("_id", self.order.direction);
        }
        sort
    }

    /// The `find` command of this page (for `explain`): its limit is one more than the page
    /// size, so that a next page is announced only when a child follows. On a collection
    /// whose default collation is not simple it states the simple one: the parent's id is
    /// compared exactly, by the reference's index of the simple collation (so a string sort key
    /// is in code point order, and the service's [`filter`](ChildPage::filter) compares
    /// strings exactly too).
    pub fn find_command(&self) -> BsonDocument {
        let mut command = doc! { "find": self.collection, "filter": self.find_filter(), "sort": self.sort(), "limit": self.limit + 1 };
        if let Some(collation) = Self::collation() {
            command.insert("collation", collation.to_document());
        }
        command
    }

    /// The collation of the page's `find` ([`ChildPage::find_command`]).
    fn collation() -> Option<crate::Collation> {
        crate::Collation::for_identities(F::__default_collation().as_ref())
    }

    /// Refuses what would run as a query (checked before anything is sent).
    fn check(&self) -> Result<()> {
        refuse_hostile_id("the parent id of a page", &self.parent)?;
        check_page_size(self.limit)?;
        if let Some(after) = &self.after {
            crate::literal::refuse_operators("the page cursor's key", &after.key)?;
            crate::literal::refuse_operators("the page cursor's id", &after.id)?;
        }
        Ok(())
    }

    /// Reads the page with one `find` (the [`ChildPage::find_command`]), in `session` if given.
    async fn read(&self, db: &Database, session: Option<&mut ClientSession>) -> Result<Page<F>>
    where
        F: DeserializeOwned,
    {
        self.check()?;
        // raw documents: each child is decoded once, straight from its bytes, as a typed
        // cursor would; only the last one's key and `_id` are read as values
        let children = db.collection::<RawDocumentBuf>(self.collection);
        let find = children
            .find(self.find_filter())
            .sort(self.sort())
            .limit(self.limit + 1)
            .optional(
                Self::collation()
                    .as_ref()
                    .and_then(crate::Collation::to_driver),
                |find, c| find.collation(c),
            );
        let mut raw: Vec<RawDocumentBuf> = match session {
            Some(session) => {
                let mut cursor = find.session(&mut *session).await?;
                cursor.stream(&mut *session).try_collect().await?
            }
            None => find.await?.try_collect().await?,
        };
        // one child more than the page was asked for: a next page only when it exists
        let more = raw.len() as i64 > self.limit;
        raw.truncate(self.limit as usize);
        let next = match raw.last() {
            Some(last) if more => Some(PageCursor {
                key: raw_path(last, self.order.field).unwrap_or(Bson::Null),
                id: raw_path(last, "_id").unwrap_or(Bson::Null),
            }),
            _ => None,
        };
        let items = raw
            .iter()
            .map(|child| crate::bson_compat::from_slice::<F>(child.as_bytes()))
            .collect::<std::result::Result<Vec<F>, _>>()
            .map_err(mongodb::error::Error::from)?;
        Ok(Page { items, next })
    }
}

impl<F: Document> ChildPage<F> {
    /// Reads the page with one `find` (the [`ChildPage::find_command`]).
    ///
    /// # Errors
    ///
    /// As awaiting [`crate::Relation::page_in`]'s page.
    #[deprecated(
        since = "0.2.0",
        note = "use `Relation::page_in(&db, &parent)` (setters `.after`, `.limit`, `.session`) and await it"
    )]
    pub async fn fetch(&self, db: &Database) -> Result<Page<F>>
    where
        F: DeserializeOwned,
    {
        self.read(db, None).await
    }
}

impl<'a, F> std::future::IntoFuture for ChildPage<F, Attached<'a>>
where
    F: Document + DeserializeOwned + 'a,
{
    type Output = Result<Page<F>>;
    type IntoFuture = BoxFuture<'a, Result<Page<F>>>;

    /// Reads the page with one `find` (the [`ChildPage::find_command`]).
    ///
    /// # Errors
    ///
    /// Refused before anything is sent: with [`crate::Error::UnsafeValue`] a parent id that is
    /// a document, an array, a regular expression or JavaScript (it would run as a query), and
    /// a cursor that came back from a client whose key or id is a document with `$` keys (an
    /// operator such as `{"$ne": null}`), a regular expression or JavaScript; with
    /// [`crate::Error::InvalidArgument`] (`limit`) a limit outside `1..=`[`MAX_PAGE_SIZE`].
    /// Then the driver's errors, and [`crate::Error::Serialization`] for a child that does not
    /// decode as `F`.
    fn into_future(self) -> Self::IntoFuture {
        let ChildPage {
            collection,
            field,
            parent,
            order,
            after,
            limit,
            also,
            on,
            item,
        } = self;
        let page = ChildPage {
            collection,
            field,
            parent,
            order,
            after,
            limit,
            also,
            on: Detached,
            item,
        };
        Box::pin(async move { page.read(on.db, on.session).await })
    }
}

/// The value at a dotted `path` of a raw document, if every step is there.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_raw_path_reads_nested_values_and_misses_cleanly() {
        let doc = crate::bson_compat::raw_from_document(&doc! {
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
