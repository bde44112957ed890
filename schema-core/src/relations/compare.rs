//! Compare-and-set on a referenced document (seed 003's status change).

use futures_util::future::BoxFuture;
use mongodb::bson::{doc, Bson, Document as BsonDocument};
use mongodb::{ClientSession, Database};
use serde::Serialize;

use crate::query::{Path, Value};
use crate::{Document, Error, Ref, Result, ResultExt};

/// The expected value of a typed compare-and-set, encoded as `field` stores it (its serde
/// helper, an enum's renamed variants); a value that does not serialize is refused before
/// anything is sent.
pub(crate) fn expected_as_stored<T: ?Sized, V: ?Sized, S: ?Sized, E: Value<V> + ?Sized>(
    field: Path<T, V, S>,
    expected: &E,
) -> Result<Bson> {
    crate::query::path::encode(field.encoder(), expected)
        .map_err(|e| Error::serialization("the expected value of compare_and_set", e))
}

/// The filter of a compare-and-set on `field` of the document `target` references, refused
/// before anything is sent when it would not compare a value of that document.
pub(crate) fn compare_and_set_filter<T: Document>(
    target: &Ref<T>,
    field: &str,
    expected: Bson,
) -> Result<BsonDocument>
where
    T::Id: Serialize,
{
    if field == "_id" || field.starts_with("_id.") || field.is_empty() || field.starts_with('$') {
        return Err(Error::invalid_argument(
            "field",
            format!("compare_and_set compares a field of the referenced document, not `{field}`"),
        ));
    }
    crate::literal::refuse_operators("the expected value", &expected)?;
    Ok(doc! { "_id": target.to_bson(), field: expected })
}

impl<T: Document> Ref<T>
where
    T::Id: Serialize,
{
    /// Compare-and-set: applies `update` to the referenced document only if its `field` still
    /// equals `expected` (seed 003's status change). `Ok(())` when this call won (the document
    /// matched, even if the update left it as it was). `field` is a typed path of `T`
    /// ([`field!`](crate::field)) and `expected` a value of the field's type, encoded as the
    /// field is stored: `&Status::Paid` is compared as `"paid"` when serde renames it, so a
    /// misspelt field or the Rust spelling of a stored value does not compile or cannot be
    /// sent. With [`.session(&mut s)`](CompareAndSet::session) it is one write of the caller's
    /// transaction:
    /// `ticket.compare_and_set(&db, field!(Ticket, status), &Status::Open, update).session(&mut s).await`.
    ///
    /// # Errors
    ///
    /// - [`Error::ConditionFailed`] (with `position: None`; see
    ///   [`Error::is_condition_failed`]) when another writer changed the field first, or the
    ///   document is gone: nothing was written; reload and decide again. With
    ///   [`.session(&mut s)`](CompareAndSet::session) inside a transaction, that transaction
    ///   is aborted ([`Rollback::CallerTransactionAborted`](crate::error::Rollback)). A lost race reads the
    ///   same here and inside [`crate::Schema::transaction`]'s
    ///   [`compare_and_set`](crate::Transaction::compare_and_set) (there `position` names the
    ///   write): one error to match whichever way the write was sent, rather than a `false`
    ///   here and an error there. An error, not `Ok(false)`, because in a transaction a lost
    ///   race must abort the other writes, which only an error does.
    /// - [`Error::InvalidArgument`] (`field`) before anything is sent when `field` is `_id` (the
    ///   filter would name another document), [`Error::UnsafeValue`] when `expected` is stored
    ///   as an operator document, a regular expression or JavaScript (it would run as a query
    ///   instead of being compared as a value), [`Error::Serialization`] when it does not
    ///   serialize.
    /// - The driver's errors, a validation failure of the update ([`Error::Validation`]).
    ///
    /// Moving from 0.1: there it returned `Ok(false)` on a lost race (`Result<bool>`), and it
    /// named the field by a string (`compare_and_set(&db, "status", "open", update)`). The
    /// string form is [`Ref::compare_and_set_by_name`] (deprecated) for one release; the `bool`
    /// result, [`Ref::compare_and_set_bool`] (deprecated).
    pub fn compare_and_set<'a, V: ?Sized, S: ?Sized, E: Value<V> + ?Sized>(
        &self,
        db: &'a Database,
        field: Path<T, V, S>,
        expected: &E,
        update: BsonDocument,
    ) -> CompareAndSet<'a> {
        let path = field.as_str();
        CompareAndSet {
            db,
            collection: T::COLLECTION,
            label: format!("compare_and_set {}.{path}", T::COLLECTION),
            filter: expected_as_stored(field, expected)
                .and_then(|expected| compare_and_set_filter(self, path, expected)),
            update,
            session: None,
        }
    }

    /// The compare-and-set of the previous release's form, naming the field by its stored name
    /// and sending `expected` as `Into<Bson>` makes it (not as the field stores it: the Rust
    /// spelling of a renamed enum variant, `"Paid"` for a value stored as `"paid"`, or a
    /// misspelt field, fails every call as a lost race).
    ///
    /// # Errors
    ///
    /// As [`Ref::compare_and_set`].
    #[deprecated(
        since = "0.2.0",
        note = "use `compare_and_set(db, field!(T, field), &expected, update)`: a typed path, and the expected value encoded as the field is stored"
    )]
    pub fn compare_and_set_by_name<'a>(
        &self,
        db: &'a Database,
        field: &str,
        expected: impl Into<Bson>,
        update: BsonDocument,
    ) -> CompareAndSet<'a> {
        CompareAndSet {
            db,
            collection: T::COLLECTION,
            label: format!("compare_and_set {}.{field}", T::COLLECTION),
            filter: compare_and_set_filter(self, field, expected.into()),
            update,
            session: None,
        }
    }

    /// The compare-and-set of the previous release, `Ok(false)` on a lost race.
    ///
    /// # Errors
    ///
    /// As [`Ref::compare_and_set`], except a lost race, which is `Ok(false)` here.
    #[deprecated(
        since = "0.2.0",
        note = "use `compare_and_set(db, field!(T, field), &expected, update)`, which returns `Err(Error::ConditionFailed)` on a lost race (`Error::is_condition_failed`)"
    )]
    pub async fn compare_and_set_bool(
        &self,
        db: &Database,
        field: &str,
        expected: impl Into<Bson>,
        update: BsonDocument,
    ) -> Result<bool> {
        #[allow(deprecated)]
        let set = self.compare_and_set_by_name(db, field, expected, update);
        match set.await {
            Ok(()) => Ok(true),
            Err(Error::ConditionFailed { .. }) => Ok(false),
            Err(other) => Err(other),
        }
    }
}

/// [`Ref::compare_and_set`]: one conditional `update`. Await it.
#[must_use = "nothing is written until the action is awaited"]
pub struct CompareAndSet<'a> {
    db: &'a Database,
    collection: &'static str,
    label: String,
    filter: Result<BsonDocument>,
    update: BsonDocument,
    session: Option<&'a mut ClientSession>,
}

impl<'a> CompareAndSet<'a> {
    /// Sends the update in `session`: inside the caller's transaction when one is started.
    /// A lost race there **aborts the caller's transaction** (none of its writes commit, the
    /// caller's own before this one included; a later `commit_transaction` fails), and
    /// [`Error::ConditionFailed`] carries
    /// [`Rollback::CallerTransactionAborted`](crate::error::Rollback::CallerTransactionAborted):
    /// start the transaction again after reloading. In a session with no transaction nothing
    /// is aborted (there is nothing to abort) and the error says nothing was written.
    pub fn session(mut self, session: &'a mut ClientSession) -> Self {
        self.session = Some(session);
        self
    }
}

impl<'a> std::future::IntoFuture for CompareAndSet<'a> {
    type Output = Result<()>;
    type IntoFuture = BoxFuture<'a, Result<()>>;

    /// Sends the conditional update.
    ///
    /// # Errors
    ///
    /// As [`Ref::compare_and_set`].
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let filter = self.filter?;
            let collection = self.db.collection::<BsonDocument>(self.collection);
            let action = collection.update_one(filter, self.update);
            let mut session = self.session;
            let result = match session.as_deref_mut() {
                Some(session) => action.session(session).await,
                None => action.await,
            }
            .in_collection(self.collection)?;
            if result.matched_count == 1 {
                return Ok(());
            }
            let lost = Error::ConditionFailed {
                collection: self.collection.to_owned(),
                label: self.label,
                position: None,
                rollback: crate::error::Rollback::NothingWritten,
            };
            Err(match session {
                Some(session) => crate::error::after_failed_condition(session, lost).await,
                None => lost,
            })
        })
    }
}
