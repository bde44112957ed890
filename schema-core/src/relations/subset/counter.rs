//! `#[counter(of = C)]`: the count of a parent's children kept on the parent, without previews.
//! A counter is a subset that keeps no preview (`max` 0): the same rule, helpers, worker
//! following and reconcile, writing the count alone.

use std::time::Duration;

use mongodb::bson::Bson;
use mongodb::options::UpdateModifications;
use mongodb::Database;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::{
    CounterType, ParentUpdate, RebuildProgress, RuleOf, Subset, SubsetAdd, SubsetDelete, SubsetOf,
    SubsetRebuild, SubsetUpdate,
};
use crate::{Document, Ref, Result, SyncStrategy};

/// `#[counter(of = C)]` on an integer field of `P`: the number of `P`'s children in `C` (those
/// matching `filter = ...` when given), generated as a constant named after the field in upper
/// case (`Post::LIKE_COUNT`). The library writes the child and moves the count in one
/// transaction:
///
/// ```no_run
/// # use mongo_schema_core::{Counter, Document, Ref};
/// # async fn f<Post: Document, Like: Document + serde::Serialize + serde::de::DeserializeOwned>(
/// #     db: &mongodb::Database, like_count: &Counter<Post, Like>, like: &Like, id: Ref<Like>,
/// # ) -> mongo_schema_core::Result<()> where Like::Id: serde::Serialize {
/// // `like_count` is `&Post::LIKE_COUNT`, a `#[counter(of = Like)] pub like_count: i64` of `Post`
/// like_count.add(db, like).await?; // inserts the like, `$inc`s the post's count
/// like_count.delete(db, &id).await?; // deletes it, and the count goes down by one
/// # Ok(()) }
/// ```
///
/// With `.session(&mut s)` each helper runs inside the caller's transaction; `add_with` keeps
/// the subsets and counters of the same child in one transaction, with the child inserted once
/// (`User::NEWEST_FOLLOWERS.add_with(&db, &follow, &[&User::FOLLOWER_COUNT])`), and a
/// [`Schema::transaction`](crate::Schema::transaction) takes a counter wherever it takes a
/// subset. `sync = "async"` lets the sync worker follow children written by other code;
/// `reconcile` recounts every parent, one aggregation per batch of parents.
#[derive(Debug)]
pub struct Counter<P, C> {
    subset: Subset<P, C, NoPreview>,
}

impl<P, C> Clone for Counter<P, C> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<P, C> Copy for Counter<P, C> {}

/// The preview of a counter: none (the count is the whole of what it keeps).
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct NoPreview;

impl<C> From<&C> for NoPreview {
    fn from(_: &C) -> Self {
        NoPreview
    }
}

impl<P, C> Counter<P, C> {
    #[doc(hidden)]
    /// Used by generated code: the counter of the integer field stored at `path`.
    pub const fn new(path: &'static str) -> Self {
        Counter {
            subset: Subset::new(path, 0, "", 1, Some(path)),
        }
    }

    #[doc(hidden)]
    /// Used by generated code: the child's stored path holding the parent's `_id`.
    pub const fn parent(self, field: &'static str) -> Self {
        Counter {
            subset: self.subset.parent(field),
        }
    }

    #[doc(hidden)]
    /// Used by generated code: only children matching `filter` (extended JSON, equalities on
    /// stored fields) are counted.
    pub const fn filter(self, filter: &'static str) -> Self {
        Counter {
            subset: self.subset.filter(filter),
        }
    }

    #[doc(hidden)]
    /// Used by generated code: who keeps the count current besides the helpers.
    pub const fn strategy(self, strategy: SyncStrategy) -> Self {
        Counter {
            subset: self.subset.strategy(strategy),
        }
    }

    #[doc(hidden)]
    /// Used by generated code: the integer type of the count field.
    pub const fn count_type(self, count_type: CounterType) -> Self {
        Counter {
            subset: self.subset.count_type(count_type),
        }
    }

    /// The same counter whose transactions give up after `deadline` in all (default
    /// [`TRANSACTION_DEADLINE`](crate::TRANSACTION_DEADLINE)).
    pub const fn transaction_deadline(self, deadline: Duration) -> Self {
        Counter {
            subset: self.subset.transaction_deadline(deadline),
        }
    }

    /// The sync strategy (`#[counter(sync = "...")]`, default `transactional`).
    pub const fn sync_strategy(&self) -> SyncStrategy {
        self.subset.sync_strategy()
    }
}

/// What a stored child of a counter builds: nothing (reconcile and the worker read no preview).
fn no_preview(_: &mongodb::bson::Document) -> Result<Bson> {
    Ok(Bson::Null)
}

impl<P: Document, C: Document> Counter<P, C> {
    #[doc(hidden)]
    /// The counter as the schema describes it: a subset of no preview whose count is the
    /// field itself (used by generated code: `collection_spec`).
    pub fn spec(&self, child_type: &'static str) -> crate::SubsetSpec {
        let mut spec = self.subset.spec(child_type);
        spec.preview = Some(crate::model::copy::PreviewBuilder(no_preview));
        spec
    }
}

impl<P, C> SubsetOf<C> for Counter<P, C>
where
    P: Document,
    C: Document + Serialize + DeserializeOwned,
{
    fn parent_update(&self, child: &C) -> Result<ParentUpdate> {
        self.subset.parent_update(child)
    }

    fn rule(&self) -> Result<RuleOf> {
        SubsetOf::rule(&self.subset)
    }
}

impl<P, C> Counter<P, C>
where
    P: Document,
    C: Document + Serialize + DeserializeOwned,
{
    /// The stored path of the count field in the parent.
    pub fn path(&self) -> &'static str {
        self.subset.path()
    }

    /// The child's field that references the parent (the one `via = field` names).
    ///
    /// # Errors
    ///
    /// As [`Subset::parent_field`].
    pub fn parent_field(&self) -> Result<String> {
        self.subset.parent_field()
    }

    /// Inserts `child` and, in the same transaction, `$inc`s its parent's count (when the
    /// child matches the counter's filter): two writes and the commit, retried on write
    /// conflicts. With [`.session(&mut s)`](SubsetAdd::session) it runs inside the caller's
    /// transaction. A child whose parent does not exist is refused
    /// ([`crate::Error::MissingParent`]) and nothing is written (it would be counted nowhere);
    /// [`.allow_missing_parent()`](SubsetAdd::allow_missing_parent) stores it anyway.
    ///
    /// # Errors
    ///
    /// As [`Subset::add`]: a child that does not serialize or whose parent id is an operator
    /// is refused before anything is sent; a parent that does not exist
    /// ([`crate::Error::MissingParent`]); the driver's errors ([`crate::Error::Duplicate`],
    /// [`crate::Error::Validation`], for example a count past its `#[schema(maximum)]`);
    /// without a session, the library's transaction's [`crate::Error::Timeout`] and
    /// [`crate::Error::CommitUnknown`].
    pub fn add<'a>(&self, db: &'a Database, child: &C) -> SubsetAdd<'a> {
        self.subset.add(db, child)
    }

    /// Like [`Counter::add`], also applying `others`, the other subsets and counters of the
    /// same child, in the same transaction (the child is inserted once).
    ///
    /// # Errors
    ///
    /// As [`Counter::add`].
    pub fn add_with<'a>(
        &self,
        db: &'a Database,
        child: &C,
        others: &[&(dyn SubsetOf<C> + Sync)],
    ) -> SubsetAdd<'a> {
        self.subset.add_with(db, child, others)
    }

    /// Deletes the child `child` references and, in the same transaction, takes one off its
    /// parent's count (when the child was counted) and deletes the child's parts (as
    /// [`Subset::delete`]); `true` when a child was deleted. With
    /// [`.session(&mut s)`](SubsetDelete::session) it runs inside the caller's transaction.
    ///
    /// # Errors
    ///
    /// As [`Subset::delete`].
    pub fn delete<'a>(&self, db: &'a Database, child: &Ref<C>) -> SubsetDelete<'a>
    where
        C::Id: Serialize,
    {
        self.subset.delete(db, child)
    }

    /// Like [`Counter::delete`], also keeping `others`, the other subsets and counters of the
    /// same child, in the same transaction.
    ///
    /// # Errors
    ///
    /// As [`Counter::delete`].
    pub fn delete_with<'a>(
        &self,
        db: &'a Database,
        child: &Ref<C>,
        others: &[&(dyn SubsetOf<C> + Sync)],
    ) -> SubsetDelete<'a>
    where
        C::Id: Serialize,
    {
        self.subset.delete_with(db, child, others)
    }

    /// Applies `update` to the child `child` references and, in the same transaction, moves
    /// the counts it changes: the child entering or leaving the filter, or moving to another
    /// parent; `true` when a child matched.
    ///
    /// # Errors
    ///
    /// As [`Subset::update`].
    pub fn update<'a>(
        &self,
        db: &'a Database,
        child: &Ref<C>,
        update: impl Into<UpdateModifications>,
    ) -> SubsetUpdate<'a>
    where
        C::Id: Serialize,
    {
        self.subset.update(db, child, update)
    }

    /// Recounts one parent's children and writes the count, in one transaction.
    ///
    /// # Errors
    ///
    /// As [`Subset::rebuild`].
    pub fn rebuild<'a>(&self, db: &'a Database, parent: &Ref<P>) -> SubsetRebuild<'a>
    where
        P::Id: Serialize,
    {
        self.subset.rebuild(db, parent)
    }

    /// Recounts every parent, each in its own transaction; returns the number of parents
    /// recounted. [`crate::Schema::reconcile`] is the cheaper repair: it compares first, one
    /// aggregation per batch of parents, and writes only the counts that differ.
    ///
    /// # Errors
    ///
    /// As [`Subset::resume_rebuild_all`].
    pub async fn rebuild_all(&self, db: &Database) -> Result<u64> {
        self.subset.rebuild_all(db).await
    }

    /// [`Counter::rebuild_all`] from where `progress` says it stopped.
    ///
    /// # Errors
    ///
    /// As [`Subset::resume_rebuild_all`].
    pub async fn resume_rebuild_all(
        &self,
        db: &Database,
        progress: &mut RebuildProgress,
    ) -> Result<()> {
        self.subset.resume_rebuild_all(db, progress).await
    }
}
