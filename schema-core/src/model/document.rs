//! Collection roots and the desired state of their collection.

use mongodb::bson::{doc, Document as BsonDocument};
use mongodb::IndexModel;

use crate::model::bson_schema::BsonSchema;
use crate::model::collation::Collation;
use crate::model::collection::{CollectionSpec, ReferenceSpec};
use crate::model::index::IndexSpec;
use crate::validation::LocalValidator;

/// A collection root: a type stored as whole documents of one collection.
///
/// Implemented by `#[derive(Document)]` together with [`BsonSchema`], from the
/// `#[collection(...)]` and `#[index(...)]` attributes and the field attributes.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a collection root",
    label = "not a `#[derive(Document)]` type",
    note = "references and collections need a type with `#[derive(Document)]` and `#[collection(name = \"...\")]`"
)]
pub trait Document: BsonSchema {
    /// The name of the collection.
    const COLLECTION: &'static str;

    /// The type of `_id`: the type of the field serde writes as `_id`, or `ObjectId` (generated
    /// by the server) when there is none.
    type Id: BsonSchema;

    /// How the `_id` is written: through its serde helper when it has one (a uuid with
    /// `uuid_1_as_binary`), so that copies and filters of the id encode it as stored; else as
    /// its type writes itself alone (a BSON scalar's native encoder).
    #[doc(hidden)]
    const ID_ENCODER: crate::model::encoding::Encoder<Self::Id> =
        <Self::Id as BsonSchema>::__ENCODER;

    /// How a stored `_id` is read back: through its serde helper when it has one, so that a
    /// [`crate::Ref`] reads what the helper wrote.
    #[doc(hidden)]
    const ID_DECODER: crate::model::encoding::Decoder<Self::Id> =
        crate::model::encoding::Decoder::Plain;

    /// The collection's validator: `{ "$jsonSchema": <Self::bson_schema()> }`.
    fn validator() -> BsonDocument {
        doc! { "$jsonSchema": Self::bson_schema() }
    }

    /// The indexes of the collection as driver models: the declared ones plus every index a
    /// relationship or the shard key requires. See [`Document::collection_spec`] for the reason
    /// each one exists.
    fn indexes() -> Vec<IndexModel> {
        Self::collection_spec()
            .indexes
            .iter()
            .map(IndexSpec::to_model)
            .collect()
    }

    /// The whole desired state of the collection: name, validator, validation level and action,
    /// and indexes with the reason each exists.
    fn collection_spec() -> CollectionSpec;

    /// The collection's default collation (`#[collection(collation(...))]`), as
    /// [`CollectionSpec::collation`] holds it: the relationship helpers send the simple
    /// collation with the commands that compare held ids on a collection that has another
    /// ([`Collation::for_identities`]). The derive writes it out; a hand-written impl
    /// reads it from its spec.
    #[doc(hidden)]
    fn __default_collation() -> Option<Collation> {
        Self::collection_spec().collation
    }

    /// The references this collection holds, for `Schema::build` and the relationship helpers.
    fn references() -> Vec<ReferenceSpec> {
        Self::collection_spec().references
    }

    /// Checks a value against the collection's validator in the library, before it is written:
    /// serializes it as the driver does (an `_id` is added when the value has none, as
    /// `insert_one` adds one) and evaluates [`Document::validator`] with mongod's `$jsonSchema`
    /// semantics (see [`crate::LocalValidator`]). The validator is compiled once per type.
    ///
    /// # Errors
    ///
    /// `Err(Error::Validation(..))` carries the same paths and rules as the server's code 121
    /// would; [`Error::Schema`](crate::error::Error::Schema) says the validator cannot be evaluated
    /// locally, and [`Error::Serialization`](crate::error::Error::Serialization) that the value cannot
    /// be serialized.
    fn check(value: &Self) -> crate::error::Result<()>
    where
        Self: serde::Serialize + Sized + 'static,
    {
        let validator = Self::__local_validator().as_ref().map_err(Clone::clone)?;
        let raw = match crate::bson_compat::to_raw_document_buf(value) {
            Ok(raw) => raw,
            Err(e) => {
                return Err(crate::error::Error::serialization(
                    format!("a `{}` document", Self::COLLECTION),
                    e,
                ))
            }
        };
        let outcome = if crate::validation::has_id(&raw) {
            validator.check_raw(&raw)
        } else {
            validator.check_raw(&crate::validation::with_generated_id(&raw))
        };
        outcome.map_err(|e| {
            crate::error::Error::Validation(Box::new(e.with_collection(Self::COLLECTION)))
        })
    }

    /// The compiled validator of [`Document::check`], kept in a registry keyed by type.
    #[doc(hidden)]
    fn __local_validator() -> &'static crate::error::Result<LocalValidator>
    where
        Self: Sized + 'static,
    {
        crate::validation::compiled::<Self>()
    }

    /// The typed driver handle of this collection in `db`.
    fn collection(db: &mongodb::Database) -> mongodb::Collection<Self>
    where
        Self: Sized + Send + Sync,
    {
        db.collection(Self::COLLECTION)
    }
}

/// A value as the driver stores it: serialized to raw BSON as `insert_one` does, which serde
/// sees as not human readable (`bson::to_bson` and `to_document` are, and write a `uuid::Uuid`
/// or an `Ipv4Addr` differently). Every value the library writes or compares with stored data
/// goes through here.
pub(crate) fn stored_bson<T: serde::Serialize + ?Sized>(
    value: &T,
) -> Result<mongodb::bson::Bson, crate::bson_compat::SerError> {
    #[derive(serde::Serialize)]
    struct Wrapped<'a, T: ?Sized> {
        v: &'a T,
    }
    let raw = crate::bson_compat::to_raw_document_buf(&Wrapped { v: value })?;
    let document = mongodb::bson::Document::try_from(raw.as_ref())
        .map_err(<crate::bson_compat::SerError as serde::ser::Error>::custom)?;
    Ok(document
        .get("v")
        .cloned()
        .unwrap_or(mongodb::bson::Bson::Null))
}

/// The `_id` of a `T` as the driver stores it: through `T`'s `_id` helper when it has one
/// ([`Document::ID_ENCODER`]), so that every filter, copy and reference of the id matches the
/// stored documents.
pub(crate) fn stored_id<T: crate::model::document::Document>(
    id: &T::Id,
) -> Result<mongodb::bson::Bson, crate::bson_compat::SerError>
where
    T::Id: serde::Serialize,
{
    crate::query::path::encode(T::ID_ENCODER, id)
}

/// A document as the driver stores it (see [`stored_bson`]).
pub(crate) fn stored_document<T: serde::Serialize>(
    value: &T,
) -> Result<mongodb::bson::Document, crate::bson_compat::SerError> {
    let raw = crate::bson_compat::to_raw_document_buf(value)?;
    mongodb::bson::Document::try_from(raw.as_ref())
        .map_err(<crate::bson_compat::SerError as serde::ser::Error>::custom)
}
