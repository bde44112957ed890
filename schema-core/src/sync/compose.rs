//! [`Transaction`]: the library's transactional helpers and the service's own writes in one
//! multi-document transaction (a loan added to its member's subset, and the book's
//! `copies_available` decremented, or neither).

use std::time::Duration;

use futures_util::future::BoxFuture;
use mongodb::bson::{Bson, Document as BsonDocument};
use mongodb::options::{Hint, UpdateModifications};
use mongodb::{ClientSession, Database};
use serde::Serialize;

use super::transaction::in_transaction_or;
use crate::error::Rollback;
use crate::model::copy::SyncEdge;
use crate::model::document::stored_document;
use crate::relations::subset::{update_parent_in, ParentUpdate};
use crate::{Bucket, Document, Error, Ref, Result, ResultExt, Schema, SubsetOf};

/// One write of a [`Transaction`], prepared (serialized, checked) before anything is sent, so
/// that every attempt sends the same commands.
#[derive(Debug, Clone)]
enum Step {
    Insert {
        collection: &'static str,
        document: BsonDocument,
    },
    Update {
        collection: &'static str,
        filter: BsonDocument,
        update: UpdateModifications,
        many: bool,
        upsert: bool,
        array_filters: Option<Vec<BsonDocument>>,
        hint: Option<Hint>,
    },
    Delete {
        collection: &'static str,
        filter: BsonDocument,
        many: bool,
        /// The part collections of the documents deleted (`same_id_as`): deleted with them.
        parts: Vec<String>,
    },
    Parent(ParentUpdate),
    Source {
        collection: &'static str,
        id: Bson,
        update: BsonDocument,
        edges: Vec<SyncEdge>,
    },
}

impl Step {
    /// The collection the step writes.
    fn collection(&self) -> &str {
        match self {
            Step::Insert { collection, .. }
            | Step::Update { collection, .. }
            | Step::Delete { collection, .. }
            | Step::Source { collection, .. } => collection,
            Step::Parent(update) => update.collection(),
        }
    }
}

/// A prepared step and whether it must match a document.
#[derive(Debug, Clone)]
struct Planned {
    label: String,
    step: Step,
    must_match: bool,
}

/// What one write of a [`Transaction`] did, in the order the writes were added.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct StepOutcome {
    /// What the write was (`insert into loans`, `update_one books`, ...).
    pub label: String,
    /// Documents matched (an insert: 1).
    pub matched: u64,
    /// Documents modified, inserted, upserted or deleted.
    pub changed: u64,
}

/// What awaiting a [`Transaction`] did: every write committed together.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TransactionReport {
    /// One entry per write, in order (a subset's add is two: the child and the parent).
    pub steps: Vec<StepOutcome>,
    /// Transaction attempts (more than 1 after transient conflicts).
    pub attempts: u32,
}

/// Writes that commit together: the library's transactional helpers (subset adds,
/// `update_source`, bucket appends, compare-and-set) and the service's own writes on typed
/// collections, in one transaction under the schema's
/// [`transaction_deadline`](crate::SchemaBuilder::transaction_deadline), retried as a whole on
/// transient errors. Built with [`Schema::transaction`]; nothing is sent before it is
/// awaited, and a value that cannot be written (it does not serialize, a
/// bucket entry without its key, an operator where a value belongs) is refused there before
/// anything is sent.
///
/// ```no_run
/// # use mongo_schema_core::{Document, Schema, SubsetOf};
/// # use mongodb::bson::{doc, oid::ObjectId};
/// # async fn lend<Loan, Book, S>(
/// #     schema: &Schema, db: &mongodb::Database, active_loans: &S, loan: &Loan, book: ObjectId,
/// # ) -> mongo_schema_core::Result<()>
/// # where Loan: Document + serde::Serialize, Book: Document, S: SubsetOf<Loan> {
/// // `active_loans` is `&Member::ACTIVE_LOANS`, a `#[subset(of = Loan, ...)]` of `Member`
/// schema
///     .transaction(db)
///     .add(active_loans, loan) // the loan, its preview and the member's count
///     .update_one::<Book>(
///         doc! { "_id": book, "copies_available": { "$gt": 0 } },
///         doc! { "$inc": { "copies_available": -1 } },
///     )
///     .must_match() // no copy left: nothing is written, Error::ConditionFailed
///     .await?;
/// # Ok(()) }
/// ```
///
/// A service that runs its own transaction gives its session instead
/// ([`session`](Transaction::session)): the steps are then sent inside it, once, and the
/// caller commits.
#[must_use = "nothing is written until the transaction is awaited"]
pub struct Transaction<'a> {
    schema: &'a Schema,
    db: &'a Database,
    session: Option<&'a mut ClientSession>,
    steps: Vec<Planned>,
    /// The first value that could not be prepared: returned by `run`, before anything is sent.
    refused: Option<Error>,
}

impl Schema {
    /// Starts a [`Transaction`]: the library's helpers and the service's own writes, committed
    /// together.
    pub fn transaction<'a>(&'a self, db: &'a Database) -> Transaction<'a> {
        Transaction {
            schema: self,
            db,
            session: None,
            steps: Vec::new(),
            refused: None,
        }
    }
}

/// A value that did not serialize is [`Error::Serialization`], as everywhere else.
fn driver(error: impl Into<mongodb::error::Error>) -> Error {
    Error::from(error.into())
}

impl<'a> Transaction<'a> {
    fn push(mut self, label: String, step: Result<Step>) -> Self {
        match step {
            Ok(step) => self.steps.push(Planned {
                label,
                step,
                must_match: false,
            }),
            Err(error) => {
                self.refused.get_or_insert(error);
            }
        }
        self
    }

    /// Inserts `child` and adds it to `subset` of its parent (preview and count), as
    /// [`Subset::add`](crate::Subset::add) does alone: a child whose parent does not exist
    /// aborts the transaction ([`Error::MissingParent`], nothing written) unless followed by
    /// [`allow_missing_parent`](Transaction::allow_missing_parent). For another subset of the
    /// same child, follow with [`also`](Transaction::also).
    pub fn add<C, S>(self, subset: &S, child: &C) -> Self
    where
        C: Document + Serialize,
        S: SubsetOf<C>,
    {
        let document = stored_document(child).map_err(driver);
        let this = self.push(
            format!("insert into {}", C::COLLECTION),
            document.map(|document| Step::Insert {
                collection: C::COLLECTION,
                document,
            }),
        );
        this.also(subset, child)
    }

    /// Adds `child`, inserted by an earlier [`add`](Transaction::add), to one more subset of
    /// its parent.
    pub fn also<C, S>(self, subset: &S, child: &C) -> Self
    where
        C: Document,
        S: SubsetOf<C>,
    {
        let update = subset.parent_update(child);
        let label = update
            .as_ref()
            .map(|u| format!("subset update of {}", u.collection()))
            .unwrap_or_default();
        self.push(label, update.map(Step::Parent))
    }

    /// Inserts `value` into `T`'s collection.
    pub fn insert_one<T: Document + Serialize>(self, value: &T) -> Self {
        let document = stored_document(value).map_err(driver);
        self.push(
            format!("insert into {}", T::COLLECTION),
            document.map(|document| Step::Insert {
                collection: T::COLLECTION,
                document,
            }),
        )
    }

    /// Updates the first document of `T`'s collection that `filter` matches. With
    /// [`must_match`](Transaction::must_match), a filter that matches nothing aborts the whole
    /// transaction.
    pub fn update_one<T: Document>(
        self,
        filter: BsonDocument,
        update: impl Into<UpdateModifications>,
    ) -> Self {
        self.update::<T>(filter, update.into(), false)
    }

    /// Updates every document of `T`'s collection that `filter` matches.
    pub fn update_many<T: Document>(
        self,
        filter: BsonDocument,
        update: impl Into<UpdateModifications>,
    ) -> Self {
        self.update::<T>(filter, update.into(), true)
    }

    fn update<T: Document>(
        self,
        filter: BsonDocument,
        update: UpdateModifications,
        many: bool,
    ) -> Self {
        let kind = if many { "update_many" } else { "update_one" };
        self.push(
            format!("{kind} {}", T::COLLECTION),
            Ok(Step::Update {
                collection: T::COLLECTION,
                filter,
                update,
                many,
                upsert: false,
                array_filters: None,
                hint: None,
            }),
        )
    }

    /// The part collections of the schema whose owner is `owner`.
    fn parts_of(&self, owner: &str) -> Vec<String> {
        self.schema
            .collections()
            .iter()
            .filter(|c| c.part_of.as_ref().is_some_and(|p| p.owner == owner))
            .map(|c| c.name.clone())
            .collect()
    }

    /// Deletes the first document of `T`'s collection that `filter` matches, and its parts
    /// (`#[collection(same_id_as = T)]`) in the same transaction.
    pub fn delete_one<T: Document>(self, filter: BsonDocument) -> Self {
        let parts = self.parts_of(T::COLLECTION);
        self.push(
            format!("delete_one {}", T::COLLECTION),
            Ok(Step::Delete {
                collection: T::COLLECTION,
                filter,
                many: false,
                parts,
            }),
        )
    }

    /// Deletes every document of `T`'s collection that `filter` matches, and their parts
    /// (`#[collection(same_id_as = T)]`) in the same transaction (the `_id`s deleted are read
    /// first, in the transaction, when `T` owns parts).
    pub fn delete_many<T: Document>(self, filter: BsonDocument) -> Self {
        let parts = self.parts_of(T::COLLECTION);
        self.push(
            format!("delete_many {}", T::COLLECTION),
            Ok(Step::Delete {
                collection: T::COLLECTION,
                filter,
                many: true,
                parts,
            }),
        )
    }

    /// Updates the source `T` with `id` and rewrites its `transactional` copies, as
    /// [`Schema::update_source`] does alone.
    pub fn update_source<T: Document>(self, id: &T::Id, update: BsonDocument) -> Self
    where
        T::Id: Serialize,
    {
        let edges = super::source::touched_edges(self.schema.sync_graph(), T::COLLECTION, &update);
        let id = crate::model::document::stored_id::<T>(id).map_err(driver);
        self.push(
            format!("update_source {}", T::COLLECTION),
            id.map(|id| Step::Source {
                collection: T::COLLECTION,
                id,
                update,
                edges,
            }),
        )
    }

    /// Appends `entry` to `parent`'s newest bucket that has room (or a new one), as
    /// [`Bucket::append`] does alone (a parent id that is a document, an array, a regular
    /// expression or JavaScript is refused, and nothing of the transaction is sent).
    pub fn append<B, E, P>(self, bucket: &Bucket<B, E>, parent: &Ref<P>, entry: &E) -> Self
    where
        B: Document,
        E: Serialize + serde::de::DeserializeOwned,
        P: Document,
        P::Id: Serialize,
    {
        let parent = parent.to_bson();
        let step =
            crate::relations::reference::refuse_hostile_id("the parent id of a bucket", &parent)
                .and_then(|()| bucket.append_update(parent, entry))
                .map(|(filter, update)| Step::Update {
                    collection: B::COLLECTION,
                    filter,
                    update: update.into(),
                    many: false,
                    upsert: true,
                    array_filters: None,
                    hint: None,
                });
        self.push(format!("append to {}", B::COLLECTION), step)
    }

    /// Applies `update` to the document `target` references only if its `field` still equals
    /// `expected` ([`Ref::compare_and_set`]: a typed path of `T` and a value of the field's
    /// type, encoded as the field is stored); if another writer changed it first, the whole
    /// transaction is aborted and [`Error::ConditionFailed`] returned with the write's
    /// position, the same error a standalone [`Ref::compare_and_set`] returns (reload and
    /// decide again).
    pub fn compare_and_set<T: Document, V: ?Sized, S: ?Sized, E: crate::query::Value<V> + ?Sized>(
        self,
        target: &Ref<T>,
        field: crate::query::Path<T, V, S>,
        expected: &E,
        update: BsonDocument,
    ) -> Self
    where
        T::Id: Serialize,
    {
        let path = field.as_str();
        let filter =
            crate::relations::compare::expected_as_stored(field, expected).and_then(|expected| {
                crate::relations::compare::compare_and_set_filter(target, path, expected)
            });
        self.compare_and_set_step::<T>(path, filter, update)
    }

    /// The previous release's form of [`Transaction::compare_and_set`], naming the field by its
    /// stored name and sending `expected` as `Into<Bson>` makes it (not as the field stores
    /// it).
    #[deprecated(
        since = "0.2.0",
        note = "use `compare_and_set(target, field!(T, field), &expected, update)`: a typed path, and the expected value encoded as the field is stored"
    )]
    pub fn compare_and_set_by_name<T: Document>(
        self,
        target: &Ref<T>,
        field: &str,
        expected: impl Into<Bson>,
        update: BsonDocument,
    ) -> Self
    where
        T::Id: Serialize,
    {
        let filter =
            crate::relations::compare::compare_and_set_filter(target, field, expected.into());
        self.compare_and_set_step::<T>(field, filter, update)
    }

    fn compare_and_set_step<T: Document>(
        self,
        field: &str,
        filter: Result<BsonDocument>,
        update: BsonDocument,
    ) -> Self {
        self.push(
            format!("compare_and_set {}.{field}", T::COLLECTION),
            filter.map(|filter| Step::Update {
                collection: T::COLLECTION,
                filter,
                update: update.into(),
                many: false,
                upsert: false,
                array_filters: None,
                hint: None,
            }),
        )
        .must_match()
    }

    /// The write added last must match a document (an update's or delete's filter, a
    /// compare-and-set's expected value, after [`add`](Transaction::add) its parent): when it
    /// matches none, the transaction is aborted, nothing is written, and
    /// [`Error::ConditionFailed`] names the write (its collection, label and position). After an `add` of a child outside the subset's filter, the child's
    /// insert is what counts (the parent is left alone and nothing is refused).
    pub fn must_match(mut self) -> Self {
        if let Some(last) = self.steps.last_mut() {
            last.must_match = true;
        }
        self
    }

    /// The subset added last ([`add`](Transaction::add), [`also`](Transaction::also)) stores
    /// its child even when the parent does not exist, as before 0.2 (the child is then counted
    /// nowhere). Without it, such a child aborts the transaction with
    /// [`Error::MissingParent`] and nothing is written. After a step that is no subset's, the
    /// transaction is refused before anything is sent ([`Error::InvalidArgument`]).
    pub fn allow_missing_parent(mut self) -> Self {
        match self.steps.last_mut() {
            Some(Planned {
                step: Step::Parent(update),
                ..
            }) => *update = update.clone().allowing_missing_parent(),
            _ => {
                self.refused.get_or_insert(Error::invalid_argument(
                    "allow_missing_parent",
                    "`allow_missing_parent` applies to the subset added just before it (`add`, `also`)",
                ));
            }
        }
        self
    }

    /// The update added last ([`update_one`](Transaction::update_one),
    /// [`update_many`](Transaction::update_many)) inserts a document when its filter matches
    /// none (the driver's `upsert`).
    pub fn upsert(self, upsert: bool) -> Self {
        self.update_option("upsert", |step| {
            if let Step::Update { upsert: slot, .. } = step {
                *slot = upsert;
            }
        })
    }

    /// The `arrayFilters` of the update added last (the driver's `array_filters`): the
    /// identifiers its `$[name]` paths use.
    pub fn array_filters(self, filters: impl IntoIterator<Item = BsonDocument>) -> Self {
        let filters: Vec<BsonDocument> = filters.into_iter().collect();
        self.update_option("array_filters", move |step| {
            if let Step::Update { array_filters, .. } = step {
                *array_filters = Some(filters);
            }
        })
    }

    /// The index the update added last uses (the driver's `hint`).
    pub fn hint(self, hint: Hint) -> Self {
        self.update_option("hint", move |step| {
            if let Step::Update { hint: slot, .. } = step {
                *slot = Some(hint);
            }
        })
    }

    /// Sets an option of the last step, which must be an update of the service's own
    /// (otherwise the transaction is refused before anything is sent,
    /// [`Error::InvalidArgument`] naming the option).
    fn update_option(mut self, option: &str, set: impl FnOnce(&mut Step)) -> Self {
        match self.steps.last_mut() {
            Some(Planned {
                step: step @ Step::Update { .. },
                ..
            }) => set(step),
            _ => {
                self.refused.get_or_insert(Error::invalid_argument(
                    option,
                    format!("`{option}` applies to the update added just before it (`update_one`, `update_many`)"),
                ));
            }
        }
        self
    }

    /// Sends the steps inside `session`'s transaction instead of one of the library's own:
    /// once, no retry, no commit (the caller owns the commit and the retry; a transient error
    /// comes back with its labels). [`TransactionReport::attempts`] is then `1`. Start the
    /// transaction first: in a session without one the writes are sent one by one, not
    /// atomically.
    ///
    /// A [`must_match`](Transaction::must_match) step or compare-and-set that matches nothing
    /// **aborts the caller's transaction**: the steps before it, and the caller's own writes
    /// in that transaction, never commit, and [`Error::ConditionFailed`] carries
    /// [`Rollback::CallerTransactionAborted`]; a later `commit_transaction` fails. In a session
    /// with no transaction the earlier steps were committed one by one and stay written
    /// ([`Rollback::EarlierWritesKept`]).
    pub fn session(mut self, session: &'a mut ClientSession) -> Self {
        self.session = Some(session);
        self
    }

    /// Sends the writes in one transaction and commits.
    ///
    /// # Errors
    ///
    /// As awaiting the transaction.
    #[deprecated(since = "0.2.0", note = "await the transaction itself (`IntoFuture`)")]
    pub async fn run(self) -> Result<TransactionReport> {
        self.send().await
    }

    async fn send(self) -> Result<TransactionReport> {
        if let Some(refused) = self.refused {
            return Err(refused);
        }
        let deadline: Duration = self.schema.transaction_deadline_value();
        let steps = self.steps;
        let db = self.db;
        let mut caller = self.session;
        let sent = in_transaction_or(db, deadline, caller.as_deref_mut(), |session| {
            let (db, steps) = (db.clone(), steps.clone());
            Box::pin(async move {
                let mut outcomes = Vec::with_capacity(steps.len());
                let count = steps.len();
                for (position, planned) in steps.into_iter().enumerate() {
                    let outcome = run_step(&db, &planned, &mut *session).await?;
                    if planned.must_match && outcome.matched == 0 {
                        return Err(Error::ConditionFailed {
                            collection: planned.step.collection().to_owned(),
                            label: planned.label.clone(),
                            position: Some(crate::error::StepPosition::new(position + 1, count)),
                            rollback: Rollback::NothingWritten,
                        });
                    }
                    outcomes.push(outcome);
                }
                Ok(outcomes)
            })
        })
        .await;
        let (outcomes, attempts) = match (sent, caller) {
            (Ok(sent), _) => sent,
            (Err(error), Some(session)) => {
                return Err(crate::error::after_failed_condition(session, error).await)
            }
            (Err(error), None) => return Err(error),
        };
        Ok(TransactionReport {
            steps: outcomes,
            attempts,
        })
    }
}

impl<'a> std::future::IntoFuture for Transaction<'a> {
    type Output = Result<TransactionReport>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    /// Sends the writes in one transaction and commits: every write lands, or none. Retried as
    /// a whole on transient errors (write conflicts, a primary that went away) within the
    /// schema's transaction deadline. With [`session`](Transaction::session), the writes are
    /// sent once inside the caller's transaction, which the caller commits, or which a failed
    /// condition aborts ([`Rollback::CallerTransactionAborted`]).
    ///
    /// # Errors
    ///
    /// What a step refused before anything was sent (a value that does not serialize,
    /// [`Error::Serialization`]; a bucket entry without its key, [`Error::InvalidArgument`];
    /// an operator where a value belongs, [`Error::UnsafeValue`]; an update option after a
    /// step that is not an update); a [`must_match`](Transaction::must_match) step or
    /// compare-and-set that matched nothing, [`Error::ConditionFailed`] (nothing written);
    /// the driver's errors. Without a session: past the deadline, [`Error::Timeout`]; a commit
    /// whose outcome is unknown (cut at the deadline while in flight, or failed after the
    /// driver's retry) is [`Error::CommitUnknown`] and is not retried: the writes may have
    /// landed.
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.send())
    }
}

async fn run_step(
    db: &Database,
    planned: &Planned,
    session: &mut ClientSession,
) -> Result<StepOutcome> {
    let label = planned.label.clone();
    let collection = |name: &str| db.collection::<BsonDocument>(name);
    let (matched, changed) = match &planned.step {
        Step::Insert {
            collection: name,
            document,
        } => {
            collection(name)
                .insert_one(document)
                .session(&mut *session)
                .await
                .in_collection(name)?;
            (1, 1)
        }
        Step::Update {
            collection: name,
            filter,
            update,
            many,
            upsert,
            array_filters,
            hint,
        } => {
            let options = mongodb::options::UpdateOptions::builder()
                .upsert(*upsert)
                .array_filters(array_filters.clone())
                .hint(hint.clone())
                .build();
            let result = if *many {
                collection(name)
                    .update_many(filter.clone(), update.clone())
                    .with_options(options)
                    .session(&mut *session)
                    .await
                    .in_collection(name)?
            } else {
                collection(name)
                    .update_one(filter.clone(), update.clone())
                    .with_options(options)
                    .session(&mut *session)
                    .await
                    .in_collection(name)?
            };
            let upserted = u64::from(result.upserted_id.is_some());
            (
                result.matched_count + upserted,
                result.modified_count + upserted,
            )
        }
        Step::Delete {
            collection: name,
            filter,
            many,
            parts,
        } if !parts.is_empty() => {
            // the owners' `_id`s, read in the transaction, so that their parts go with them
            let ids: Vec<Bson> = if *many {
                use futures_util::TryStreamExt;
                collection(name)
                    .find(filter.clone())
                    .projection(mongodb::bson::doc! { "_id": 1 })
                    .session(&mut *session)
                    .await?
                    .stream(&mut *session)
                    .try_collect::<Vec<BsonDocument>>()
                    .await?
                    .into_iter()
                    .filter_map(|d| d.get("_id").cloned())
                    .collect()
            } else {
                collection(name)
                    .find_one_and_delete(filter.clone())
                    .projection(mongodb::bson::doc! { "_id": 1 })
                    .session(&mut *session)
                    .await?
                    .and_then(|d| d.get("_id").cloned())
                    .into_iter()
                    .collect()
            };
            let deleted = if *many && !ids.is_empty() {
                collection(name)
                    .delete_many(mongodb::bson::doc! { "$and": [filter.clone(), { "_id": { "$in": ids.clone() } }] })
                    .session(&mut *session)
                    .await?
                    .deleted_count
            } else {
                ids.len() as u64
            };
            crate::relations::part::delete_parts_in(db, parts, &ids, &mut *session).await?;
            (deleted, deleted)
        }
        Step::Delete {
            collection: name,
            filter,
            many,
            ..
        } => {
            let result = if *many {
                collection(name)
                    .delete_many(filter.clone())
                    .session(&mut *session)
                    .await?
            } else {
                collection(name)
                    .delete_one(filter.clone())
                    .session(&mut *session)
                    .await?
            };
            (result.deleted_count, result.deleted_count)
        }
        // a child outside the subset's filter leaves its parent alone: the child's write,
        // just before, is what matched (so `must_match` after a filtered `add` holds); a
        // parent that does not exist is refused there, unless allowed
        // under `must_match` a missing parent is the condition that failed, as it always was
        Step::Parent(update) if planned.must_match => {
            update_parent_in(db, update.clone().allowing_missing_parent(), session).await?
        }
        Step::Parent(update) => update_parent_in(db, update.clone(), session).await?,
        Step::Source {
            collection: name,
            id,
            update,
            edges,
        } => {
            let (source, rewritten) = super::source::update_source_in(
                db,
                name,
                id.clone(),
                update.clone(),
                edges,
                session,
            )
            .await?;
            let found = u64::from(source.is_some());
            let rewritten: u64 = rewritten.iter().map(|(_, n)| n).sum();
            (found, found + rewritten)
        }
    };
    Ok(StepOutcome {
        label,
        matched,
        changed,
    })
}
