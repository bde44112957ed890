//! Compare-and-set on a referenced document (seed 003's status change).

use mongodb::bson::{doc, Bson, Document as BsonDocument};
use mongodb::Database;
use serde::Serialize;

use crate::{Document, Error, Ref, Result, ResultExt};

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
    /// Compare-and-set: applies `update` to the referenced document only if `field` still
    /// equals `expected` (seed 003's status change). `Ok(())` when this call won (the document
    /// matched, even if the update left it as it was).
    ///
    /// # Errors
    ///
    /// - [`Error::ConditionFailed`] (with `position: None`; see
    ///   [`Error::is_condition_failed`]) when another writer changed the field first, or the
    ///   document is gone: nothing was written; reload and decide again. A lost race reads the
    ///   same here and inside [`crate::Schema::transaction`]'s
    ///   [`compare_and_set`](crate::Transaction::compare_and_set) (there `position` names the
    ///   write): one error to match whichever way the write was sent, rather than a `false`
    ///   here and an error there. An error, not `Ok(false)`, because in a transaction a lost
    ///   race must abort the other writes, which only an error does.
    /// - [`Error::InvalidArgument`] (`field`) before anything is sent when `field` is `_id` (the
    ///   filter would name another document), [`Error::UnsafeValue`] when `expected` is an
    ///   operator document, a regular expression or JavaScript (it would run as a query instead
    ///   of being compared as a value).
    /// - The driver's errors, a validation failure of the update ([`Error::Validation`]).
    pub async fn compare_and_set(
        &self,
        db: &Database,
        field: &str,
        expected: impl Into<Bson>,
        update: BsonDocument,
    ) -> Result<()> {
        let filter = compare_and_set_filter(self, field, expected.into())?;
        let result = db
            .collection::<BsonDocument>(T::COLLECTION)
            .update_one(filter, update)
            .await
            .in_collection(T::COLLECTION)?;
        if result.matched_count == 1 {
            Ok(())
        } else {
            Err(Error::ConditionFailed {
                collection: T::COLLECTION.to_owned(),
                label: format!("compare_and_set {}.{field}", T::COLLECTION),
                position: None,
            })
        }
    }
}
