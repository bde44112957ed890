//! Helpers that keep the bounds and copies of a document: subsets of children, capped embedded
//! arrays, and compare-and-set state changes.

use std::marker::PhantomData;
use std::time::Duration;

use futures_util::TryStreamExt;
use mongodb::bson::{doc, Bson, Document as BsonDocument};
use mongodb::options::UpdateModifications;
use mongodb::{ClientSession, Database};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::relations::embedded;
use crate::sync::transaction::TRANSACTION_DEADLINE;
use crate::{Document, Error, Ref, Result, SchemaError, SyncStrategy};

mod action;
mod counter;
pub(crate) mod reconcile;
pub(crate) mod rule;

pub use action::{SubsetAdd, SubsetDelete, SubsetRebuild, SubsetUpdate};
pub use counter::Counter;

pub use crate::model::copy::{CounterType, PreviewFn};
pub use reconcile::SubsetReconcile;
pub(crate) use rule::SubsetRule;

use crate::relations::to_bson;

/// `#[subset(of = C, max = N, sort = "-at", count = "message_count")]` on a field of `P` holding
/// previews `V` (built with `From<&C>`): generated as a constant named after the field in upper
/// case (`Ticket::LAST_MESSAGE`).
#[derive(Debug)]
pub struct Subset<P, C, V> {
    path: &'static str,
    max: u64,
    sort_field: &'static str,
    sort_direction: i32,
    count: Option<&'static str>,
    count_type: CounterType,
    /// The child's stored path holding the parent's `_id`; empty: looked up at run time.
    parent: &'static str,
    /// Extended JSON of the children's filter (equalities on stored fields).
    filter: Option<&'static str>,
    strategy: SyncStrategy,
    deadline: Duration,
    /// `V::from(&C)` on a stored child (for the schema's spec: reconcile and the worker).
    preview: Option<PreviewFn>,
    types: PhantomData<Types<P, C, V>>,
}

impl<P, C, V> Clone for Subset<P, C, V> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<P, C, V> Copy for Subset<P, C, V> {}

/// The types a `Subset` relates, without owning any.
type Types<P, C, V> = fn() -> (P, C, V);

/// The parent update one subset needs when a child is added: lets [`Subset::add_with`] keep
/// several subsets of the same child (say the last message and the three newest) in one
/// transaction, with the child inserted once.
pub trait SubsetOf<C> {
    /// The parent collection, the parent's id, an optional condition and the update.
    ///
    /// # Errors
    ///
    /// [`Error::Serialization`] for a child whose preview does not serialize, and the
    /// refusals of the child's reference (an unsafe id).
    fn parent_update(&self, child: &C) -> Result<ParentUpdate>;

    /// The subset as data, for [`Subset::delete_with`] and [`Subset::update_with`].
    #[doc(hidden)]
    fn rule(&self) -> Result<RuleOf>;
}

/// A subset as data (opaque), what [`SubsetOf::rule`] returns.
#[doc(hidden)]
#[derive(Debug, Clone)]
pub struct RuleOf(pub(crate) SubsetRule);

/// What [`SubsetOf::parent_update`] returns: the one update, filtered on the parent's `_id`
/// alone, that adds a child to one subset of its parent (none when the subset's filter leaves
/// the child out).
#[derive(Debug, Clone)]
pub struct ParentUpdate {
    parents: &'static str,
    children: &'static str,
    parent: Bson,
    update: Option<mongodb::options::UpdateModifications>,
    /// Whether a missing parent is refused ([`Error::MissingParent`]), the default.
    require_parent: bool,
}

impl ParentUpdate {
    /// The parent's collection.
    pub fn collection(&self) -> &'static str {
        self.parents
    }

    /// The same update, which stores the child even when its parent does not exist (the
    /// `$inc` then matches nothing, and the child is counted nowhere).
    pub(crate) fn allowing_missing_parent(mut self) -> Self {
        self.require_parent = false;
        self
    }
}

impl<P, C, V> SubsetOf<C> for Subset<P, C, V>
where
    P: Document,
    C: Document + Serialize + DeserializeOwned,
    V: for<'c> From<&'c C> + Serialize,
{
    fn parent_update(&self, child: &C) -> Result<ParentUpdate> {
        let raw =
            crate::model::document::stored_document(child).map_err(mongodb::error::Error::from)?;
        let update = if self.admits(&raw)? {
            Some(self.parent_write(to_bson(&V::from(child))?))
        } else {
            None
        };
        Ok(ParentUpdate {
            parents: P::COLLECTION,
            children: C::COLLECTION,
            parent: self.parent_of(&raw)?,
            update,
            require_parent: true,
        })
    }

    fn rule(&self) -> Result<RuleOf> {
        Ok(RuleOf(Subset::rule(self)?))
    }
}

impl<P, C, V> Subset<P, C, V> {
    #[doc(hidden)]
    /// Used by generated code.
    pub const fn new(
        path: &'static str,
        max: u64,
        sort_field: &'static str,
        sort_direction: i32,
        count: Option<&'static str>,
    ) -> Self {
        Subset {
            path,
            max,
            sort_field,
            sort_direction,
            count,
            count_type: CounterType::Int64,
            parent: "",
            filter: None,
            strategy: SyncStrategy::Transactional,
            deadline: TRANSACTION_DEADLINE,
            preview: None,
            types: PhantomData,
        }
    }

    #[doc(hidden)]
    /// Used by generated code: builds a preview from a stored child, for reconcile and the
    /// sync worker (which work on BSON).
    pub const fn preview(mut self, preview: PreviewFn) -> Self {
        self.preview = Some(preview);
        self
    }

    #[doc(hidden)]
    /// Used by generated code: the child's stored path holding the parent's `_id` (its
    /// `#[reference]`, or the `_id` of its `#[extended_ref]` to the parent).
    pub const fn parent(mut self, field: &'static str) -> Self {
        self.parent = field;
        self
    }

    #[doc(hidden)]
    /// Used by generated code: only children matching `filter` (extended JSON, equalities on
    /// stored fields) are previewed and counted.
    pub const fn filter(mut self, filter: &'static str) -> Self {
        self.filter = Some(filter);
        self
    }

    #[doc(hidden)]
    /// Used by generated code: who keeps the subset current besides the helpers
    /// (`sync = "async"`: the sync worker follows the children).
    pub const fn strategy(mut self, strategy: SyncStrategy) -> Self {
        self.strategy = strategy;
        self
    }

    /// The same subset whose transactions (`add`, `delete`, `update`, `rebuild`) give up after
    /// `deadline` in all (default [`TRANSACTION_DEADLINE`](crate::TRANSACTION_DEADLINE), the
    /// value of the schema's `transaction_deadline`):
    /// `Ticket::LAST_MESSAGE.transaction_deadline(Duration::from_secs(5)).add(&db, &m)`.
    pub const fn transaction_deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// The sync strategy (`#[subset(sync = "...")]`).
    pub const fn sync_strategy(&self) -> SyncStrategy {
        self.strategy
    }

    #[doc(hidden)]
    /// Used by generated code: the integer type of the count field.
    pub const fn count_type(mut self, count_type: CounterType) -> Self {
        self.count_type = count_type;
        self
    }
}

impl<P: Document, C: Document, V> Subset<P, C, V> {
    #[doc(hidden)]
    /// The subset as the schema describes it (used by generated code: `collection_spec`).
    pub fn spec(&self, child_type: &'static str) -> crate::SubsetSpec {
        let mut spec = crate::SubsetSpec::new(
            self.path,
            C::COLLECTION,
            child_type,
            self.max,
            self.sort_field,
            self.sort_direction,
            self.count,
        );
        spec.count_type = self.count_type;
        spec.parent_field = self.parent.to_owned();
        spec.filter = self
            .filter
            .and_then(|json| parse_filter(P::COLLECTION, self.path, json).ok());
        spec.strategy = self.strategy;
        spec.preview = self.preview.map(crate::model::copy::PreviewBuilder);
        spec
    }
}

impl<P, C, V> Subset<P, C, V>
where
    P: Document,
    C: Document + Serialize + DeserializeOwned,
    V: for<'c> From<&'c C> + Serialize,
{
    /// The stored path of the subset in the parent.
    pub fn path(&self) -> &'static str {
        self.path
    }

    /// The child's field that references the parent.
    ///
    /// # Errors
    ///
    /// [`Error::Schema`] when the subset names none and the child holds not exactly one
    /// `#[reference]` to the parent.
    pub fn parent_field(&self) -> Result<String> {
        if !self.parent.is_empty() {
            return Ok(self.parent.to_owned());
        }
        let mut back = C::references()
            .into_iter()
            .filter(|r| r.target == P::COLLECTION);
        match (back.next(), back.next()) {
            (Some(reference), None) => Ok(reference.field),
            _ => Err(Error::Schema(SchemaError {
                problems: vec![format!(
                    "subset `{}.{}` needs `{}` to hold exactly one `#[reference]` to `{}`",
                    P::COLLECTION,
                    self.path,
                    C::COLLECTION,
                    P::COLLECTION
                )],
            })),
        }
    }

    fn parent_of(&self, child: &BsonDocument) -> Result<Bson> {
        let field = self.parent_field()?;
        let parent = crate::sync::get_path(child, &field).ok_or_else(|| {
            Error::Schema(SchemaError {
                problems: vec![format!("a `{}` child has no `{field}`", C::COLLECTION)],
            })
        })?;
        crate::relations::reference::refuse_hostile_id("the child's parent id", &parent)?;
        Ok(parent)
    }

    /// The update that adds `preview` to the parent: `$push` with `$each`, `$sort` and
    /// `$slice` (the array never exceeds `max`), or for `max = 1` a `$set`; plus `$inc` on the
    /// count. For `max = 1` the filter returned keeps an older preview from replacing a newer
    /// one; `None` means no condition.
    ///
    /// # Errors
    ///
    /// [`Error::Serialization`] for a preview that does not serialize.
    pub fn update_for(&self, preview: &V) -> Result<(Option<BsonDocument>, BsonDocument)> {
        Ok(self.update_for_bson(to_bson(preview)?))
    }

    /// Inserts `child` and updates its parent's subset and count in one transaction (seed 003:
    /// "if the queue must never show a preview that disagrees with the thread"), retried on
    /// write conflicts. When the parent keeps several subsets of the same child, use
    /// [`Subset::add_with`] so the child is inserted once. With
    /// [`.session(&mut s)`](SubsetAdd::session) it runs inside the caller's transaction:
    /// `Ticket::LAST_MESSAGE.add(&db, &message).session(&mut s).await`.
    ///
    /// A child whose parent does not exist is refused ([`Error::MissingParent`]) and nothing
    /// is written; [`.allow_missing_parent()`](SubsetAdd::allow_missing_parent) stores it
    /// anyway.
    ///
    /// # Errors
    ///
    /// See [`SubsetAdd`]'s `into_future`: a child that does not serialize or whose parent id is
    /// an operator is refused before anything is sent; a parent that does not exist
    /// ([`Error::MissingParent`]); the driver's errors
    /// ([`Error::Duplicate`], [`Error::Validation`]); without a session, the library's
    /// transaction's [`Error::Timeout`] and [`Error::CommitUnknown`].
    pub fn add<'a>(&self, db: &'a Database, child: &C) -> SubsetAdd<'a> {
        self.add_with(db, child, &[])
    }

    /// Like [`Subset::add`], also applying the updates of `others`, the other subsets of the
    /// same child (`Ticket::LAST_MESSAGE.add_with(&db, &message, &[&Ticket::RECENT])`), in the
    /// same transaction.
    ///
    /// # Errors
    ///
    /// As [`Subset::add`].
    pub fn add_with<'a>(
        &self,
        db: &'a Database,
        child: &C,
        others: &[&(dyn SubsetOf<C> + Sync)],
    ) -> SubsetAdd<'a> {
        let prepared = (|| {
            let raw = crate::model::document::stored_document(child)
                .map_err(mongodb::error::Error::from)?;
            let mut updates = vec![self.parent_update(child)?];
            for other in others {
                updates.push(other.parent_update(child)?);
            }
            Ok((raw, updates))
        })();
        SubsetAdd {
            db,
            children: C::COLLECTION,
            deadline: self.deadline,
            prepared,
            allow_missing_parent: false,
            session: None,
        }
    }

    /// Inserts `child`, then updates the parent, without a transaction: cheaper, with a short
    /// window in which the parent is behind; [`Subset::rebuild`] repairs a parent whose second
    /// write was lost. The parent is read first: a child whose parent does not exist is
    /// refused, and nothing is written.
    ///
    /// # Errors
    ///
    /// A child that does not serialize ([`Error::Serialization`]) or whose parent id is an
    /// operator ([`Error::UnsafeValue`]), refused before anything is sent; a parent that does
    /// not exist, [`Error::MissingParent`] (nothing written); the driver's errors of either
    /// write (after the insert, the parent may be behind until [`Subset::rebuild`]).
    pub async fn add_then_update(&self, db: &Database, child: &C) -> Result<()> {
        let raw =
            crate::model::document::stored_document(child).map_err(mongodb::error::Error::from)?;
        let parent = self.parent_of(&raw)?;
        let counted = self.admits(&raw)?;
        // a child whose parent does not exist is refused before it is stored (one read by
        // `_id`; a parent deleted between the read and the insert is reconcile's to see)
        let found = db
            .collection::<BsonDocument>(P::COLLECTION)
            .find_one(doc! { "_id": parent.clone() })
            .projection(doc! { "_id": 1 })
            .await?;
        if found.is_none() {
            return Err(Error::MissingParent {
                collection: P::COLLECTION.to_owned(),
                child: C::COLLECTION.to_owned(),
                parent: Box::new(parent),
                rollback: crate::error::Rollback::NothingWritten,
            });
        }
        db.collection::<BsonDocument>(C::COLLECTION)
            .insert_one(raw)
            .await?;
        if !counted {
            return Ok(());
        }
        let update = self.parent_write(to_bson(&V::from(child))?);
        db.collection::<BsonDocument>(P::COLLECTION)
            .update_one(doc! { "_id": parent }, update)
            .await?;
        Ok(())
    }

    /// The parent's update for `preview`. A subset of many is the classic `$push` (`$each`,
    /// `$sort`, `$slice`) and `$inc`. A subset of one is a pipeline update whose `$cond` keeps a
    /// newer preview already there (the preview's sort key compared on the server), so the
    /// update filters on `_id` alone and needs no read before it: one command.
    fn parent_write(&self, preview: Bson) -> mongodb::options::UpdateModifications {
        if self.max != 1 {
            return self.update_for_bson(preview).1.into();
        }
        let path = format!("${}", self.path);
        let existing = format!("${}.{}", self.path, self.sort_field);
        let value = preview
            .as_document()
            .and_then(|p| p.get(self.sort_field))
            .cloned()
            .unwrap_or(Bson::Null);
        let newer_or_equal = if self.sort_direction < 0 {
            "$lte"
        } else {
            "$gte"
        };
        let admits = doc! { "$or": [
            { "$eq": [{ "$ifNull": [path.as_str(), Bson::Null] }, Bson::Null] },
            { "$eq": [{ "$ifNull": [existing.as_str(), Bson::Null] }, Bson::Null] },
            { newer_or_equal: [existing.as_str(), { "$literal": value }] },
        ] };
        let mut set = doc! {
            self.path: { "$cond": [admits, { "$literal": preview }, path.as_str()] },
        };
        if let Some(count) = self.count {
            let zero = self.count_type.value(0);
            set.insert(
                count,
                doc! { "$add": [{ "$ifNull": [format!("${count}"), zero] }, self.count_type.value(1)] },
            );
        }
        vec![doc! { "$set": set }].into()
    }

    fn update_for_bson(&self, preview: Bson) -> (Option<BsonDocument>, BsonDocument) {
        let mut update = BsonDocument::new();
        let mut condition = None;
        if self.max == 0 {
            // a counter: the count alone
        } else if self.max == 1 {
            let key = format!("{}.{}", self.path, self.sort_field);
            let value = preview
                .as_document()
                .and_then(|p| p.get(self.sort_field))
                .cloned()
                .unwrap_or(Bson::Null);
            let op = if self.sort_direction < 0 {
                "$lte"
            } else {
                "$gte"
            };
            condition = Some(doc! { "$or": [ { self.path: null }, { key: { op: value } } ] });
            update.insert("$set", doc! { self.path: preview });
        } else {
            update.insert(
                "$push",
                doc! { self.path: {
                    "$each": [preview],
                    "$sort": { self.sort_field: self.sort_direction },
                    "$slice": self.max as i64,
                } },
            );
        }
        if let Some(count) = self.count {
            update.insert("$inc", doc! { count: self.count_type.value(1) });
        }
        (condition, update)
    }

    /// Recomputes one parent's subset and count from its children, reading the children and
    /// writing the parent in one transaction: a child added meanwhile by [`Subset::add`]
    /// conflicts with it and one of the two is retried, so no increment is lost. With
    /// [`.session(&mut s)`](SubsetRebuild::session) it runs inside the caller's transaction.
    ///
    /// # Errors
    ///
    /// A parent id that is an operator ([`Error::UnsafeValue`], nothing sent), the driver's
    /// errors; without a session, the library's transaction's [`Error::Timeout`] and
    /// [`Error::CommitUnknown`].
    pub fn rebuild<'a>(&self, db: &'a Database, parent: &Ref<P>) -> SubsetRebuild<'a>
    where
        P::Id: Serialize,
    {
        let parent = parent.to_bson();
        let prepared = (|| {
            crate::relations::reference::refuse_hostile_id("the parent's id", &parent)?;
            Ok((parent, Subset::rule(self)?))
        })();
        SubsetRebuild {
            db,
            parents: P::COLLECTION,
            deadline: self.deadline,
            prepared,
            session: None,
        }
    }

    async fn rebuild_id(&self, db: &Database, parent: Bson) -> Result<()> {
        crate::relations::reference::refuse_hostile_id("the parent's id", &parent)?;
        let rule = Subset::rule(self)?;
        action::rebuild_in(db, P::COLLECTION, self.deadline, parent, rule, None).await
    }

    /// Whether the subset shows and counts `child` (always without a filter: no rule is built
    /// on the add path then).
    fn admits(&self, child: &BsonDocument) -> Result<bool> {
        Ok(self.filter.is_none() || Subset::rule(self)?.matches(child))
    }

    fn rules_with(&self, others: &[&(dyn SubsetOf<C> + Sync)]) -> Result<Vec<SubsetRule>> {
        let mut rules = vec![Subset::rule(self)?];
        for other in others {
            rules.push(other.rule()?.0);
        }
        Ok(rules)
    }

    /// The subset as data (shared with reconcile and the sync worker).
    pub(crate) fn rule(&self) -> Result<SubsetRule> {
        let filter = match self.filter {
            Some(json) => Some(parse_filter(P::COLLECTION, self.path, json)?),
            None => None,
        };
        Ok(SubsetRule {
            parents: P::COLLECTION.into(),
            children: C::COLLECTION.into(),
            path: self.path.into(),
            max: self.max,
            sort_field: self.sort_field.into(),
            sort_direction: self.sort_direction,
            count: self.count.map(Into::into),
            count_type: self.count_type,
            parent_field: self.parent_field()?.into(),
            filter,
            preview: rule::subset_preview::<C, V>,
            strategy: self.strategy,
            identities: crate::Collation::for_identities(C::__default_collation().as_ref()),
        })
    }

    /// Deletes the child `child` references and, in the same transaction, takes it out of its
    /// parent's subset: the count goes down by one (when the child was counted) and the
    /// previews are refilled from the remaining children in sort order (one query on the
    /// reference index with the sort key), so deleting the newest of a full subset brings in
    /// the next one. A child that owns parts (`#[collection(same_id_as = C)]` in a schema built
    /// in this process) has them deleted in the same transaction. Returns whether a child was
    /// deleted. For several subsets of the same child, use [`Subset::delete_with`]. With [`.session(&mut s)`](SubsetDelete::session) it
    /// runs inside the caller's transaction.
    ///
    /// # Errors
    ///
    /// A child id that is an operator ([`Error::UnsafeValue`], nothing sent), the driver's
    /// errors; without a session, the library's transaction's [`Error::Timeout`] and
    /// [`Error::CommitUnknown`].
    pub fn delete<'a>(&self, db: &'a Database, child: &Ref<C>) -> SubsetDelete<'a>
    where
        C::Id: Serialize,
    {
        self.delete_with(db, child, &[])
    }

    /// Like [`Subset::delete`], also keeping `others`, the other subsets of the same child,
    /// in the same transaction.
    ///
    /// # Errors
    ///
    /// As [`Subset::delete`].
    pub fn delete_with<'a>(
        &self,
        db: &'a Database,
        child: &Ref<C>,
        others: &[&(dyn SubsetOf<C> + Sync)],
    ) -> SubsetDelete<'a>
    where
        C::Id: Serialize,
    {
        let id = child.to_bson();
        let prepared = (|| {
            crate::relations::reference::refuse_hostile_id("the child's id", &id)?;
            Ok((id, self.rules_with(others)?))
        })();
        SubsetDelete {
            db,
            children: C::COLLECTION,
            deadline: self.deadline,
            prepared,
            parts: crate::relations::part::parts_of(C::COLLECTION),
            session: None,
        }
    }

    /// Applies `update` to the child `child` references and, in the same transaction,
    /// refreshes its parent's subset: the preview shows the new values, moves when the sort
    /// key changed, enters or leaves the subset when the child crosses the cut or the filter
    /// (the count follows the filter), and moves to the new parent when the reference
    /// changed. Returns whether a child matched. For several subsets of the same child, use
    /// [`Subset::update_with`]. With [`.session(&mut s)`](SubsetUpdate::session) it runs
    /// inside the caller's transaction.
    ///
    /// # Errors
    ///
    /// A child id that is an operator ([`Error::UnsafeValue`], nothing sent), the driver's
    /// errors ([`Error::Validation`] of the update); without a session, the library's
    /// transaction's [`Error::Timeout`] and [`Error::CommitUnknown`].
    pub fn update<'a>(
        &self,
        db: &'a Database,
        child: &Ref<C>,
        update: impl Into<UpdateModifications>,
    ) -> SubsetUpdate<'a>
    where
        C::Id: Serialize,
    {
        self.update_with(db, child, update, &[])
    }

    /// Like [`Subset::update`], also keeping `others`, the other subsets of the same child,
    /// in the same transaction.
    ///
    /// # Errors
    ///
    /// As [`Subset::update`].
    pub fn update_with<'a>(
        &self,
        db: &'a Database,
        child: &Ref<C>,
        update: impl Into<UpdateModifications>,
        others: &[&(dyn SubsetOf<C> + Sync)],
    ) -> SubsetUpdate<'a>
    where
        C::Id: Serialize,
    {
        let id = child.to_bson();
        let update = update.into();
        let rules = self.rules_with(others);
        // the document after the update is enough unless the update may move the child to
        // another parent, or a subset filters (then the document before it decides too)
        let read_after = match &rules {
            Ok(rules) => {
                let filtered = rules.iter().any(|r| r.filter.is_some());
                let moves = match &update {
                    UpdateModifications::Document(update) => rules
                        .iter()
                        .any(|r| embedded::writes_path(update, &r.parent_field).is_some()),
                    _ => true,
                };
                filtered || moves
            }
            Err(_) => true,
        };
        let prepared = (|| {
            crate::relations::reference::refuse_hostile_id("the child's id", &id)?;
            Ok((id, rules?))
        })();
        SubsetUpdate {
            db,
            children: C::COLLECTION,
            deadline: self.deadline,
            prepared,
            update,
            read_after,
            session: None,
        }
    }

    /// Recomputes every parent's subset and count from the children (the repair job of the
    /// two-writes option), walking the parents by `_id` in batches, each parent in its own
    /// transaction. Returns the number of parents rebuilt. To resume after an error from the
    /// last parent done, use [`Subset::resume_rebuild_all`].
    ///
    /// # Errors
    ///
    /// As [`Subset::resume_rebuild_all`].
    pub async fn rebuild_all(&self, db: &Database) -> Result<u64> {
        let mut progress = RebuildProgress::default();
        self.resume_rebuild_all(db, &mut progress).await?;
        Ok(progress.rebuilt)
    }

    /// [`Subset::rebuild_all`] from where `progress` says it stopped: after an error,
    /// `progress` holds the last parent done, and calling again with it continues after that
    /// parent.
    ///
    /// ```no_run
    /// # use mongo_schema_core::{Document, RebuildProgress, Subset};
    /// # async fn f<P: Document, C: Document + serde::Serialize + serde::de::DeserializeOwned, V: for<'c> From<&'c C> + serde::Serialize>(db: &mongodb::Database, subset: &Subset<P, C, V>) -> mongo_schema_core::Result<()> {
    /// let mut progress = RebuildProgress::default();
    /// while let Err(error) = subset.resume_rebuild_all(db, &mut progress).await {
    ///     eprintln!("rebuild stopped after {:?}: {error}; resuming", progress.last_done);
    /// }
    /// println!("{} parents rebuilt", progress.rebuilt);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// The first parent's rebuild that fails (its error, `progress.failed_at` naming it), or
    /// the driver's error of reading the parents.
    pub async fn resume_rebuild_all(
        &self,
        db: &Database,
        progress: &mut RebuildProgress,
    ) -> Result<()> {
        let parents = db.collection::<BsonDocument>(P::COLLECTION);
        loop {
            // everything after the last parent done in the server's order, whatever the types
            // of the `_id`s (a `$gt` alone stays within the last one's type)
            let filter = crate::sync::walk::rest_after(progress.last_done.as_ref());
            let batch: Vec<BsonDocument> = parents
                .find(filter)
                .projection(doc! { "_id": 1 })
                .sort(doc! { "_id": 1 })
                .limit(REBUILD_BATCH)
                .await?
                .try_collect()
                .await?;
            if batch.is_empty() {
                return Ok(());
            }
            for parent in batch {
                let Some(id) = parent.get("_id") else {
                    continue;
                };
                if let Err(error) = self.rebuild_id(db, id.clone()).await {
                    progress.failed_at = Some(id.clone());
                    return Err(error);
                }
                progress.failed_at = None;
                progress.rebuilt += 1;
                progress.last_done = Some(id.clone());
            }
            crate::progress::report(
                &format!("rebuild {}.{}", P::COLLECTION, self.path),
                progress.rebuilt,
                None,
                &"parents rebuilt",
            );
        }
    }
}

/// Parses a subset's filter (extended JSON, checked by the derive).
pub(crate) fn parse_filter(parents: &str, path: &str, json: &str) -> Result<BsonDocument> {
    let value: serde_json::Value = serde_json::from_str(json).map_err(|e| {
        Error::Schema(SchemaError {
            problems: vec![format!(
                "the filter of subset `{parents}.{path}` is not JSON ({e}): {json}"
            )],
        })
    })?;
    match Bson::try_from(value) {
        Ok(Bson::Document(filter)) => Ok(filter),
        _ => Err(Error::Schema(SchemaError {
            problems: vec![format!(
                "the filter of subset `{parents}.{path}` is not an extended-JSON document: {json}"
            )],
        })),
    }
}

/// Parents are read this many at a time by [`Subset::rebuild_all`].
const REBUILD_BATCH: i64 = 200;

/// How far [`Subset::resume_rebuild_all`] got.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct RebuildProgress {
    /// Parents rebuilt so far.
    pub rebuilt: u64,
    /// The `_id` of the last parent rebuilt (parents are walked in `_id` order).
    pub last_done: Option<Bson>,
    /// The parent whose rebuild failed, if the last call ended on an error: resuming retries it
    /// (right after a transient error), unless [`RebuildProgress::skip_failed`] is called.
    pub failed_at: Option<Bson>,
}

impl RebuildProgress {
    /// Resumes after the parent that failed instead of retrying it (one that its validator
    /// rejects, for example).
    pub fn skip_failed(&mut self) {
        if let Some(failed) = self.failed_at.take() {
            self.last_done = Some(failed);
        }
    }
}

/// Inside a transaction: the parent's one update, by `_id` (nothing when the subset's filter
/// leaves the child out: then, unless a missing parent is allowed, one read by `_id` that it
/// exists). Returns the documents matched and modified (`(1, 0)` for a parent left alone).
///
/// # Errors
///
/// [`Error::MissingParent`] when the parent does not exist and the update requires it; the
/// driver's errors.
pub(crate) async fn update_parent_in(
    db: &Database,
    u: ParentUpdate,
    session: &mut ClientSession,
) -> Result<(u64, u64)> {
    let parents = db.collection::<BsonDocument>(u.parents);
    let missing = |u: &ParentUpdate| Error::MissingParent {
        collection: u.parents.to_owned(),
        child: u.children.to_owned(),
        parent: Box::new(u.parent.clone()),
        rollback: crate::error::Rollback::NothingWritten,
    };
    let Some(update) = u.update.clone() else {
        if u.require_parent {
            let found = parents
                .find_one(doc! { "_id": u.parent.clone() })
                .projection(doc! { "_id": 1 })
                .session(&mut *session)
                .await?;
            if found.is_none() {
                return Err(missing(&u));
            }
        }
        return Ok((1, 0));
    };
    let result = parents
        .update_one(doc! { "_id": u.parent.clone() }, update)
        .session(&mut *session)
        .await?;
    if result.matched_count == 0 && u.require_parent {
        return Err(missing(&u));
    }
    Ok((result.matched_count, result.modified_count))
}
