//! Compare-and-set on a referenced document (seed 003's status change).

use mongodb::bson::{doc, Bson, Document as BsonDocument};
use mongodb::Database;
use serde::Serialize;

use crate::{Document, Error, Ref, Result};

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
        return Err(Error::Refused(format!(
            "compare_and_set compares a field of the referenced document, not `{field}`"
        )));
    }
    crate::literal::refuse_operators("the expected value", &expected)?;
    Ok(doc! { "_id": target.to_bson(), field: expected })
}

impl<T: Document> Ref<T>
where
    T::Id: Serialize,
{
    /// Compare-and-set: applies `update` to the referenced document only if `field` still
    /// equals `expected` (seed 003's status change). `true` when this call won (the document
    /// matched, even if the update left it as it was); `false` when another writer changed the
    /// field first (reload and decide again).
    ///
    /// Refused with [`Error::Refused`] before anything is sent when `field` is `_id` (the filter
    /// would name another document) or `expected` is an operator document, a regular expression
    /// or JavaScript (it would run as a query instead of being compared as a value).
    pub async fn compare_and_set(
        &self,
        db: &Database,
        field: &str,
        expected: impl Into<Bson>,
        update: BsonDocument,
    ) -> Result<bool> {
        let filter = compare_and_set_filter(self, field, expected.into())?;
        let result = db
            .collection::<BsonDocument>(T::COLLECTION)
            .update_one(filter, update)
            .await?;
        Ok(result.matched_count == 1)
    }
}
