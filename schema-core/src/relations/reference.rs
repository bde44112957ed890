//! `Ref<T>`: the typed id of a document of another collection.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;

use mongodb::bson::{Bson, Document as BsonDocument};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::{BsonSchema, Document, Error, Result};

/// Refuses an id (described as `what`) whose BSON value would be a query of its own in an
/// equality filter, before anything is sent: a document with a `$` key at any depth
/// (`{ "$ne": null }` matches every document), an array (it matches its elements), a regular
/// expression (every matching string) or JavaScript. A document without `$` keys, the stored
/// form of a composite id (`{ region: "eu", n: 1 }`), matches exactly that document and passes.
pub(crate) fn refuse_hostile_id(what: &str, id: &Bson) -> Result<()> {
    let (path, found) = match id {
        Bson::Array(_) => (String::new(), crate::error::UnsafeKind::Array),
        other => match crate::literal::find_operator(other) {
            Some(found) => found,
            None => return Ok(()),
        },
    };
    Err(Error::UnsafeValue {
        what: what.to_owned(),
        path,
        found,
    })
}

/// The `_id` of a `T` document, typed by `T`: a `Ref<Part>` cannot be passed where a
/// `Ref<Customer>` is wanted, although both may be `ObjectId`s underneath.
///
/// Stored exactly as `T`'s `_id` (any id type: `ObjectId`, `String`, `i64`, ...), through the
/// `_id` field's serde helper when it has one (a uuid with `uuid_1_as_binary` is subtype 4
/// here too), so the validator, the filters and existing data are the same as with the id
/// field itself.
///
/// ```
/// # use mongo_schema_core::*;
/// # use mongodb::bson::{doc, oid::ObjectId, Document as D};
/// # struct Ticket;
/// # impl BsonSchema for Ticket { fn bson_schema() -> D { doc! {} } }
/// # impl Document for Ticket { const COLLECTION: &'static str = "tickets"; type Id = ObjectId;
/// #     fn collection_spec() -> CollectionSpec { CollectionSpec::new("tickets", doc! {}) } }
/// let id = ObjectId::new();
/// let ticket: Ref<Ticket> = Ref::new(id);
/// assert_eq!(mongo_schema_core::bson_compat::to_bson(&ticket).unwrap(), mongodb::bson::Bson::ObjectId(id));
/// ```
pub struct Ref<T: Document> {
    id: T::Id,
    target: PhantomData<fn() -> T>,
}

impl<T: Document> Ref<T> {
    /// A reference to the `T` whose `_id` is `id`.
    pub fn new(id: T::Id) -> Self {
        Ref {
            id,
            target: PhantomData,
        }
    }

    /// The referenced `_id`.
    pub fn id(&self) -> &T::Id {
        &self.id
    }

    /// The referenced `_id`, by value.
    pub fn into_id(self) -> T::Id {
        self.id
    }

    /// The id as BSON, as it is stored.
    ///
    /// # Panics
    ///
    /// If the id type does not serialize to BSON (a `u64` above `i64::MAX`): such an id could not
    /// have been stored either.
    pub fn to_bson(&self) -> Bson
    where
        T::Id: Serialize,
    {
        crate::model::document::stored_id::<T>(&self.id).expect("an `_id` type serializes to BSON")
    }

    /// The filter that finds the referenced document: `{ _id: <id> }`.
    pub fn filter(&self) -> BsonDocument
    where
        T::Id: Serialize,
    {
        mongodb::bson::doc! { "_id": self.to_bson() }
    }
}

impl<T: Document> BsonSchema for Ref<T> {
    fn bson_schema() -> BsonDocument {
        T::Id::bson_schema()
    }
}

impl<T: Document> Clone for Ref<T>
where
    T::Id: Clone,
{
    fn clone(&self) -> Self {
        Ref::new(self.id.clone())
    }
}

impl<T: Document> Copy for Ref<T> where T::Id: Copy {}

impl<T: Document> PartialEq for Ref<T>
where
    T::Id: PartialEq,
{
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl<T: Document> Eq for Ref<T> where T::Id: Eq {}

impl<T: Document> PartialOrd for Ref<T>
where
    T::Id: PartialOrd,
{
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        self.id.partial_cmp(&other.id)
    }
}

impl<T: Document> Ord for Ref<T>
where
    T::Id: Ord,
{
    fn cmp(&self, other: &Self) -> Ordering {
        self.id.cmp(&other.id)
    }
}

impl<T: Document> Hash for Ref<T>
where
    T::Id: Hash,
{
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.id.hash(state)
    }
}

impl<T: Document> fmt::Debug for Ref<T>
where
    T::Id: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Ref<{}>({:?})", T::COLLECTION, self.id)
    }
}

impl<T: Document> fmt::Display for Ref<T>
where
    T::Id: fmt::Display,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.id.fmt(f)
    }
}

impl<T: Document> Serialize for Ref<T>
where
    T::Id: Serialize,
{
    #[inline]
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // stored as `T`'s `_id` is: through its helper (a uuid as subtype 4)
        crate::model::encoding::Encoded(&self.id, T::ID_ENCODER).serialize(serializer)
    }
}

impl<'de, T: Document> Deserialize<'de> for Ref<T>
where
    T::Id: Deserialize<'de>,
{
    #[inline]
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::DeserializeSeed as _;
        crate::model::encoding::Decoded(T::ID_DECODER)
            .deserialize(deserializer)
            .map(Ref::new)
    }
}

impl<T: Document> From<Ref<T>> for Bson
where
    T::Id: Into<Bson>,
{
    fn from(reference: Ref<T>) -> Bson {
        reference.id.into()
    }
}

/// A collection root whose struct has an `_id` field; implemented by `#[derive(Document)]`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no `_id` field",
    label = "an extended reference copies the `_id` of `{Self}`",
    note = "give `{Self}` its id as a field: `#[serde(rename = \"_id\")] pub id: ObjectId`"
)]
pub trait Identified: Document {
    /// The document's `_id`.
    fn id(&self) -> &Self::Id;

    /// A reference to this document.
    fn to_ref(&self) -> Ref<Self>
    where
        Self: Sized,
        Self::Id: Clone,
    {
        Ref::new(self.id().clone())
    }
}

#[cfg(test)]
mod tests {
    use super::refuse_hostile_id;
    use mongodb::bson::{doc, oid::ObjectId, Binary, Bson, DateTime};

    #[test]
    fn single_values_pass_and_query_shaped_ids_are_refused() {
        for fine in [
            Bson::ObjectId(ObjectId::new()),
            Bson::String("{ \"$ne\": null }".into()),
            Bson::Int32(1),
            Bson::Int64(2),
            Bson::Double(3.5),
            Bson::DateTime(DateTime::now()),
            Bson::Binary(Binary {
                subtype: mongodb::bson::spec::BinarySubtype::Uuid,
                bytes: vec![0; 16],
            }),
            Bson::Null,
            // a composite id matches exactly
            Bson::Document(doc! { "region": "eu", "n": 1 }),
            Bson::Document(doc! { "a": { "b": [1, { "c": 2 }] } }),
        ] {
            assert!(refuse_hostile_id("the id", &fine).is_ok(), "{fine}");
        }
        use crate::error::UnsafeKind;
        let operator = |key: &str| UnsafeKind::Operator(key.to_owned());
        for (bad, at, kind) in [
            (Bson::Document(doc! { "$ne": null }), "$ne", operator("$ne")),
            (
                Bson::Document(doc! { "a": { "$gt": 1 } }),
                "a.$gt",
                operator("$gt"),
            ),
            (
                Bson::Document(doc! { "a": [{ "$where": "1" }] }),
                "a.0.$where",
                operator("$where"),
            ),
            (Bson::Array(vec![Bson::Int32(1)]), "", UnsafeKind::Array),
            (
                Bson::RegularExpression(crate::bson_compat::regex(".", "").unwrap()),
                "",
                UnsafeKind::RegularExpression,
            ),
            (Bson::JavaScriptCode("1".into()), "", UnsafeKind::JavaScript),
        ] {
            let error = refuse_hostile_id("the id", &bad).unwrap_err();
            assert!(
                matches!(&error, crate::Error::UnsafeValue { what, path, found }
                    if what == "the id" && path == at && *found == kind),
                "{error:#?}"
            );
        }
    }
}
