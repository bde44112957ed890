//! bson 2 and bson 3 behind one surface: the functions and error types that differ between the
//! two majors, for the one the driver re-exports as [`mongodb::bson`].
//!
//! mongodb 3.x re-exports bson 2 by default and bson 3 as soon as any crate of the build enables
//! its `bson-3` feature. Cargo offers no `cfg` for a dependency's features, so this crate cannot
//! ask which one it got; it asks the type instead. [`Flavour`] is implemented for both majors'
//! `Document`, and every function here calls the implementation of
//! `mongodb::bson::Document`, whichever crate that is. Both majors are dependencies (the one
//! the driver did not pick is compiled and unused); each unifies with the driver's own, as cargo
//! keeps one version per major.
//!
//! What the two majors share (`Bson`, `Document`, `doc!`, `oid::ObjectId`, `DateTime`,
//! `Binary`, ...) is used through `mongodb::bson` directly.
//!
//! ```
//! use mongo_schema_core::bson::{doc, Document};
//! use mongo_schema_core::bson_compat;
//!
//! #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
//! struct Point {
//!     x: i32,
//! }
//! let stored = bson_compat::to_document(&Point { x: 1 }).unwrap();
//! assert_eq!(stored, doc! { "x": 1 });
//! let read: Point = bson_compat::from_document(stored).unwrap();
//! assert_eq!(read, Point { x: 1 });
//! # let _: Option<Document> = None;
//! ```

use mongodb::bson::{Bson, Document, RawBsonRef, RawDocument, RawDocumentBuf};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// The driver's `Document`: its [`Flavour`] implementation is the one every function here uses.
type Driver = Document;

/// The error of serializing a value to BSON: bson 2's `ser::Error`, bson 3's `error::Error`.
pub type SerError = <Driver as Flavour>::SerError;

/// The error of deserializing a value from BSON: bson 2's `de::Error`, bson 3's `error::Error`.
pub type DeError = <Driver as Flavour>::DeError;

/// The error of reading or building a raw document: bson 2's `raw::Error`, bson 3's
/// `error::Error`.
pub type RawError = <Driver as Flavour>::RawError;

/// The major version of the bson crate the driver re-exports: `2` or `3`.
pub const BSON_MAJOR: u8 = <Driver as Flavour>::MAJOR;

/// `value` as the driver stores it (`insert_one` serializes with this, not human readable).
///
/// # Errors
/// The value cannot be serialized as a document (not a struct or map, a key with a NUL byte,
/// an integer BSON cannot hold).
pub fn to_raw_document_buf<T: Serialize>(value: &T) -> Result<RawDocumentBuf, SerError> {
    <Driver as Flavour>::to_raw_document_buf(value)
}

/// `value` as a `Document`, serialized human readable (bson's `to_document`; a `uuid::Uuid` is
/// a string here, and binary in [`to_raw_document_buf`]).
///
/// # Errors
/// As [`to_raw_document_buf`].
pub fn to_document<T: Serialize + ?Sized>(value: &T) -> Result<Document, SerError> {
    <Driver as Flavour>::to_document(value)
}

/// `value` as a `Bson` value, serialized human readable (bson's `to_bson`).
///
/// # Errors
/// The value cannot be serialized.
pub fn to_bson<T: Serialize + ?Sized>(value: &T) -> Result<Bson, SerError> {
    <Driver as Flavour>::to_bson(value)
}

/// `value` serialized to the bytes of a BSON document, as the driver sends it.
///
/// # Errors
/// As [`to_raw_document_buf`].
pub fn to_vec<T: Serialize>(value: &T) -> Result<Vec<u8>, SerError> {
    <Driver as Flavour>::to_vec(value)
}

/// A `T` read from a `Document`.
///
/// # Errors
/// The document does not have `T`'s shape.
pub fn from_document<T: DeserializeOwned>(document: Document) -> Result<T, DeError> {
    <Driver as Flavour>::from_document(document)
}

/// A `T` read from a `Bson` value.
///
/// # Errors
/// The value does not have `T`'s shape.
pub fn from_bson<T: DeserializeOwned>(value: Bson) -> Result<T, DeError> {
    <Driver as Flavour>::from_bson(value)
}

/// A `T` read from the bytes of a BSON document, as the driver reads a reply.
///
/// # Errors
/// The bytes are not a BSON document of `T`'s shape.
pub fn from_slice<'de, T: Deserialize<'de>>(bytes: &'de [u8]) -> Result<T, DeError> {
    <Driver as Flavour>::from_slice(bytes)
}

/// A `Document` as a raw document.
///
/// # Errors
/// A key holds a NUL byte.
pub fn raw_from_document(document: &Document) -> Result<RawDocumentBuf, RawError> {
    <Driver as Flavour>::raw_from_document(document)
}

/// A raw document as a `Document`.
///
/// # Errors
/// The bytes are not a valid BSON document.
pub fn document_from_raw(raw: &RawDocument) -> Result<Document, RawError> {
    <Driver as Flavour>::document_from_raw(raw)
}

/// A raw value as a `Bson` value; `None` if its bytes are not valid BSON.
pub fn bson_from_raw(value: RawBsonRef<'_>) -> Option<Bson> {
    <Driver as Flavour>::bson_from_raw(value)
}

/// A BSON regular expression (`options` in any order: stored sorted, as the server expects);
/// `None` if either holds a NUL byte. bson 3 has no public constructor of its own.
pub fn regex(pattern: &str, options: &str) -> Option<mongodb::bson::Regex> {
    let mut sorted: Vec<char> = options.chars().collect();
    sorted.sort_unstable();
    let options: String = sorted.into_iter().collect();
    <Driver as Flavour>::regex(pattern, &options)
}

/// `value` serialized as a stored field, not human readable (a `uuid::Uuid` is binary, as the
/// driver stores it): byte for byte what [`to_raw_document_buf`] writes for a field.
pub(crate) fn stored_value<T: Serialize + ?Sized>(value: &T) -> Result<Bson, SerError> {
    <Driver as Flavour>::stored_value(value)
}

/// A `T` read from a stored field's value, not human readable, as the driver reads a field.
pub(crate) fn stored_read<T: DeserializeOwned>(value: Bson) -> Result<T, DeError> {
    <Driver as Flavour>::stored_read(value)
}

/// The document with an `_id` first, as the driver's `insert_one` sends a document that has
/// none.
pub(crate) fn with_generated_id(document: &RawDocument) -> RawDocumentBuf {
    <Driver as Flavour>::with_generated_id(document)
}

/// A bson error as this crate's [`BsonError`]: implemented by the error types of both majors,
/// so `?` turns either into a [`crate::Error`].
///
/// An error of the driver's major is kept as it is. An error of the other major (a service's
/// own direct bson dependency) keeps its message only. bson 3 has one error type for both
/// directions: it reads as [`BsonError::Serialize`].
#[doc(hidden)]
pub trait IntoBsonError: Sized {
    /// The error inside a [`BsonError`].
    fn into_bson_error(self) -> BsonError;
    /// What the error is about, in [`crate::Error::Serialization`]'s `what`.
    const WHAT: &'static str;
}

/// `error` as `Target`: itself when it is one, else its message in a `Target`.
fn same_or<E, Target>(error: E, custom: fn(String) -> Target) -> Target
where
    E: std::fmt::Display + 'static,
    Target: 'static,
{
    let mut slot = Some(error);
    if let Some(same) = (&mut slot as &mut dyn std::any::Any).downcast_mut::<Option<Target>>() {
        if let Some(same) = same.take() {
            return same;
        }
    }
    custom(slot.map(|e| e.to_string()).unwrap_or_default())
}

fn ser_error<E: std::fmt::Display + 'static>(error: E) -> BsonError {
    BsonError::Serialize(same_or(error, <SerError as serde::ser::Error>::custom))
}

fn de_error<E: std::fmt::Display + 'static>(error: E) -> BsonError {
    BsonError::Deserialize(same_or(error, <DeError as serde::de::Error>::custom))
}

impl IntoBsonError for bson2::ser::Error {
    fn into_bson_error(self) -> BsonError {
        ser_error(self)
    }
    const WHAT: &'static str = "a value";
}

impl IntoBsonError for bson2::de::Error {
    fn into_bson_error(self) -> BsonError {
        de_error(self)
    }
    const WHAT: &'static str = "a document read";
}

impl IntoBsonError for bson3::error::Error {
    fn into_bson_error(self) -> BsonError {
        ser_error(self)
    }
    const WHAT: &'static str = "a value";
}

/// The field a stored value is serialized into.
#[derive(Serialize)]
struct FieldOf<'a, T: ?Sized> {
    v: &'a T,
}

/// The field a stored value is read back from.
#[derive(Deserialize)]
struct Field<T> {
    v: T,
}

/// What differs between bson 2 and bson 3, implemented by each major's `Document` (sealed:
/// only the two majors implement it). Used through the functions of [`bson_compat`](self).
#[doc(hidden)]
pub trait Flavour: sealed::Sealed {
    /// The bson major (`2`, `3`).
    const MAJOR: u8;
    /// The major's `Bson`.
    type Bson;
    /// The major's regular expression.
    type Regex;
    /// The major's raw document.
    type RawDocument: ?Sized;
    /// The major's owned raw document.
    type RawDocumentBuf;
    /// The major's borrowed raw value.
    type RawBsonRef<'a>;
    /// See [`SerError`].
    type SerError: std::error::Error + serde::ser::Error + Clone + Send + Sync + 'static;
    /// See [`DeError`].
    type DeError: std::error::Error + serde::de::Error + Clone + Send + Sync + 'static;
    /// See [`RawError`].
    type RawError: std::error::Error + Clone + Send + Sync + 'static;

    /// See [`to_raw_document_buf`].
    fn to_raw_document_buf<T: Serialize>(value: &T)
        -> Result<Self::RawDocumentBuf, Self::SerError>;
    /// See [`to_document`].
    fn to_document<T: Serialize + ?Sized>(value: &T) -> Result<Self, Self::SerError>
    where
        Self: Sized;
    /// See [`to_bson`].
    fn to_bson<T: Serialize + ?Sized>(value: &T) -> Result<Self::Bson, Self::SerError>;
    /// See [`to_vec`].
    fn to_vec<T: Serialize>(value: &T) -> Result<Vec<u8>, Self::SerError>;
    /// See [`from_document`].
    fn from_document<T: DeserializeOwned>(document: Self) -> Result<T, Self::DeError>
    where
        Self: Sized;
    /// See [`from_bson`].
    fn from_bson<T: DeserializeOwned>(value: Self::Bson) -> Result<T, Self::DeError>;
    /// See [`from_slice`].
    fn from_slice<'de, T: Deserialize<'de>>(bytes: &'de [u8]) -> Result<T, Self::DeError>;
    /// See [`raw_from_document`].
    fn raw_from_document(document: &Self) -> Result<Self::RawDocumentBuf, Self::RawError>;
    /// See [`document_from_raw`].
    fn document_from_raw(raw: &Self::RawDocument) -> Result<Self, Self::RawError>
    where
        Self: Sized;
    /// See [`bson_from_raw`].
    fn bson_from_raw(value: Self::RawBsonRef<'_>) -> Option<Self::Bson>;
    /// See [`regex`] (`options` sorted).
    fn regex(pattern: &str, options: &str) -> Option<Self::Regex>;
    /// See [`stored_value`].
    fn stored_value<T: Serialize + ?Sized>(value: &T) -> Result<Self::Bson, Self::SerError>;
    /// See [`stored_read`].
    fn stored_read<T: DeserializeOwned>(value: Self::Bson) -> Result<T, Self::DeError>;
    /// See [`with_generated_id`].
    fn with_generated_id(document: &Self::RawDocument) -> Self::RawDocumentBuf;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for bson2::Document {}
    impl Sealed for bson3::Document {}
}

impl Flavour for bson2::Document {
    const MAJOR: u8 = 2;
    type Bson = bson2::Bson;
    type Regex = bson2::Regex;
    type RawDocument = bson2::RawDocument;
    type RawDocumentBuf = bson2::RawDocumentBuf;
    type RawBsonRef<'a> = bson2::RawBsonRef<'a>;
    type SerError = bson2::ser::Error;
    type DeError = bson2::de::Error;
    type RawError = bson2::raw::Error;

    fn to_raw_document_buf<T: Serialize>(
        value: &T,
    ) -> Result<bson2::RawDocumentBuf, bson2::ser::Error> {
        bson2::to_raw_document_buf(value)
    }
    fn to_document<T: Serialize + ?Sized>(value: &T) -> Result<Self, bson2::ser::Error> {
        bson2::to_document(value)
    }
    fn to_bson<T: Serialize + ?Sized>(value: &T) -> Result<bson2::Bson, bson2::ser::Error> {
        bson2::to_bson(value)
    }
    fn to_vec<T: Serialize>(value: &T) -> Result<Vec<u8>, bson2::ser::Error> {
        bson2::to_vec(value)
    }
    fn from_document<T: DeserializeOwned>(document: Self) -> Result<T, bson2::de::Error> {
        bson2::from_document(document)
    }
    fn from_bson<T: DeserializeOwned>(value: bson2::Bson) -> Result<T, bson2::de::Error> {
        bson2::from_bson(value)
    }
    fn from_slice<'de, T: Deserialize<'de>>(bytes: &'de [u8]) -> Result<T, bson2::de::Error> {
        bson2::from_slice(bytes)
    }
    fn raw_from_document(document: &Self) -> Result<bson2::RawDocumentBuf, bson2::raw::Error> {
        bson2::RawDocumentBuf::from_document(document)
    }
    fn document_from_raw(raw: &bson2::RawDocument) -> Result<Self, bson2::raw::Error> {
        bson2::Document::try_from(raw)
    }
    fn bson_from_raw(value: bson2::RawBsonRef<'_>) -> Option<bson2::Bson> {
        bson2::Bson::try_from(value.to_raw_bson()).ok()
    }
    fn regex(pattern: &str, options: &str) -> Option<bson2::Regex> {
        let nul = pattern.contains('\0') || options.contains('\0');
        (!nul).then(|| bson2::Regex {
            pattern: pattern.to_owned(),
            options: options.to_owned(),
        })
    }
    // bson 2.15 prefers a `HumanReadable` wrapper; the option is the same switch
    #[allow(deprecated)]
    fn stored_value<T: Serialize + ?Sized>(value: &T) -> Result<bson2::Bson, bson2::ser::Error> {
        let options = bson2::SerializerOptions::builder()
            .human_readable(false)
            .build();
        bson2::to_bson_with_options(value, options)
    }
    #[allow(deprecated)]
    fn stored_read<T: DeserializeOwned>(value: bson2::Bson) -> Result<T, bson2::de::Error> {
        let options = bson2::DeserializerOptions::builder()
            .human_readable(false)
            .build();
        T::deserialize(bson2::Deserializer::new_with_options(value, options))
    }
    fn with_generated_id(document: &bson2::RawDocument) -> bson2::RawDocumentBuf {
        let mut with_id = bson2::RawDocumentBuf::new();
        with_id.append("_id", bson2::oid::ObjectId::new());
        for (key, value) in document.into_iter().flatten() {
            with_id.append_ref(key, value);
        }
        with_id
    }
}

impl Flavour for bson3::Document {
    const MAJOR: u8 = 3;
    type Bson = bson3::Bson;
    type Regex = bson3::Regex;
    type RawDocument = bson3::RawDocument;
    type RawDocumentBuf = bson3::RawDocumentBuf;
    type RawBsonRef<'a> = bson3::RawBsonRef<'a>;
    type SerError = bson3::error::Error;
    type DeError = bson3::error::Error;
    type RawError = bson3::error::Error;

    fn to_raw_document_buf<T: Serialize>(
        value: &T,
    ) -> Result<bson3::RawDocumentBuf, bson3::error::Error> {
        bson3::serialize_to_raw_document_buf(value)
    }
    fn to_document<T: Serialize + ?Sized>(value: &T) -> Result<Self, bson3::error::Error> {
        bson3::serialize_to_document(value)
    }
    fn to_bson<T: Serialize + ?Sized>(value: &T) -> Result<bson3::Bson, bson3::error::Error> {
        bson3::serialize_to_bson(value)
    }
    fn to_vec<T: Serialize>(value: &T) -> Result<Vec<u8>, bson3::error::Error> {
        bson3::serialize_to_vec(value)
    }
    fn from_document<T: DeserializeOwned>(document: Self) -> Result<T, bson3::error::Error> {
        bson3::deserialize_from_document(document)
    }
    fn from_bson<T: DeserializeOwned>(value: bson3::Bson) -> Result<T, bson3::error::Error> {
        bson3::deserialize_from_bson(value)
    }
    fn from_slice<'de, T: Deserialize<'de>>(bytes: &'de [u8]) -> Result<T, bson3::error::Error> {
        bson3::deserialize_from_slice(bytes)
    }
    fn raw_from_document(document: &Self) -> Result<bson3::RawDocumentBuf, bson3::error::Error> {
        bson3::RawDocumentBuf::try_from(document)
    }
    fn document_from_raw(raw: &bson3::RawDocument) -> Result<Self, bson3::error::Error> {
        bson3::Document::try_from(raw)
    }
    fn bson_from_raw(value: bson3::RawBsonRef<'_>) -> Option<bson3::Bson> {
        bson3::Bson::try_from(value).ok()
    }
    fn regex(pattern: &str, options: &str) -> Option<bson3::Regex> {
        Some(bson3::Regex {
            pattern: pattern.try_into().ok()?,
            options: options.try_into().ok()?,
        })
    }
    // bson 3's `Serializer` options are private: the raw serializer (not human readable, the
    // one behind `insert_one`) writes the value as a field, which is read back
    fn stored_value<T: Serialize + ?Sized>(value: &T) -> Result<bson3::Bson, bson3::error::Error> {
        let raw = bson3::serialize_to_raw_document_buf(&FieldOf { v: value })?;
        let field = raw.get("v")?.ok_or_else(|| {
            <bson3::error::Error as serde::ser::Error>::custom("the value wrote no field")
        })?;
        bson3::Bson::try_from(field)
    }
    fn stored_read<T: DeserializeOwned>(value: bson3::Bson) -> Result<T, bson3::error::Error> {
        let raw = bson3::RawDocumentBuf::try_from(&bson3::doc! { "v": value })?;
        let field: Field<T> = bson3::deserialize_from_slice(raw.as_bytes())?;
        Ok(field.v)
    }
    fn with_generated_id(document: &bson3::RawDocument) -> bson3::RawDocumentBuf {
        let mut with_id = bson3::RawDocumentBuf::new();
        with_id.append(bson3::raw::cstr!("_id"), bson3::oid::ObjectId::new());
        for (key, value) in document.into_iter().flatten() {
            with_id.append(key, value);
        }
        with_id
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mongodb::bson::doc;

    #[test]
    fn the_driver_s_major_is_the_one_used() {
        // the functions here take and return the driver's own types
        let document: mongodb::bson::Document = to_document(&FieldOf { v: &1 }).unwrap();
        assert_eq!(document, doc! { "v": 1 });
        use std::any::TypeId;
        let driver = TypeId::of::<mongodb::bson::Document>();
        let major = if driver == TypeId::of::<bson3::Document>() {
            3
        } else {
            assert_eq!(driver, TypeId::of::<bson2::Document>());
            2
        };
        assert_eq!(BSON_MAJOR, major);
    }

    #[test]
    fn stored_values_are_not_human_readable() {
        let id = mongodb::bson::oid::ObjectId::new();
        let raw = to_raw_document_buf(&FieldOf { v: &id }).unwrap();
        let field = bson_from_raw(raw.get("v").unwrap().unwrap()).unwrap();
        assert_eq!(stored_value(&id).unwrap(), field);
        let read: mongodb::bson::oid::ObjectId = stored_read(field).unwrap();
        assert_eq!(read, id);
    }

    #[test]
    fn an_error_of_either_major_converts() {
        // the driver's major's error is kept itself, the other's by its message
        let two = bson2::from_document::<String>(bson2::Document::new()).unwrap_err();
        let message = two.to_string();
        let converted = BsonError::from(two);
        assert!(
            matches!(converted, BsonError::Deserialize(_)),
            "{converted:?}"
        );
        // display-text: the other major's error keeps only its message, shown as it was
        assert!(converted.to_string().contains(&message), "{converted}");
        let three = bson3::deserialize_from_document::<String>(bson3::Document::new()).unwrap_err();
        let message = three.to_string();
        let converted = BsonError::from(three);
        assert!(
            matches!(converted, BsonError::Serialize(_)),
            "{converted:?}"
        );
        // display-text: the other major's error keeps only its message, shown as it was
        assert!(converted.to_string().contains(&message), "{converted}");
        let kept = |e: &BsonError| {
            e.inner()
                .downcast_ref::<bson2::de::Error>()
                .map(|_| 2)
                .or(e.inner().downcast_ref::<bson3::error::Error>().map(|_| 3))
        };
        let two =
            BsonError::from(bson2::from_document::<String>(bson2::Document::new()).unwrap_err());
        assert_eq!(kept(&two), Some(BSON_MAJOR));
    }

    /// Writes and reads whether the serializer or deserializer presents itself as human readable.
    struct Readable(bool);

    impl Serialize for Readable {
        fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            let human = serializer.is_human_readable();
            serializer.serialize_bool(human)
        }
    }

    impl<'de> Deserialize<'de> for Readable {
        fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            let human = deserializer.is_human_readable();
            bool::deserialize(deserializer)?;
            Ok(Readable(human))
        }
    }

    #[test]
    fn stored_values_are_written_and_read_as_the_driver_does_not_human_readable() {
        assert_eq!(
            stored_value(&Readable(false)).unwrap(),
            Bson::Boolean(false)
        );
        let raw = to_raw_document_buf(&FieldOf {
            v: &Readable(false),
        })
        .unwrap();
        assert_eq!(raw.get("v").unwrap().and_then(|v| v.as_bool()), Some(false));
        let read: Readable = stored_read(Bson::Boolean(true)).unwrap();
        assert!(!read.0);
        // and `to_bson` is human readable, as bson's own is
        assert_eq!(to_bson(&Readable(false)).unwrap(), Bson::Boolean(true));
    }

    #[test]
    fn a_generated_id_comes_first() {
        let raw = raw_from_document(&doc! { "a": 1 }).unwrap();
        let with_id = with_generated_id(&raw);
        let document = document_from_raw(&with_id).unwrap();
        assert_eq!(document.keys().collect::<Vec<_>>(), ["_id", "a"]);
    }
}

/// The bson crate's error of a value that could not be (de)serialized ([`crate::Error::Serialization`]).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum BsonError {
    /// A Rust value could not be turned into BSON (bson 3's one error type reads as this too).
    Serialize(SerError),
    /// BSON could not be turned into the Rust value.
    Deserialize(DeError),
}

impl std::fmt::Display for BsonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BsonError::Serialize(e) => e.fmt(f),
            BsonError::Deserialize(e) => e.fmt(f),
        }
    }
}

impl BsonError {
    /// The bson crate's error itself.
    pub fn inner(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        match self {
            BsonError::Serialize(e) => e,
            BsonError::Deserialize(e) => e,
        }
    }
}

/// Transparent: `Display` and `source` are the bson crate's error's own.
impl std::error::Error for BsonError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.inner().source()
    }
}

/// bson 2's `ser::Error` and `de::Error`, bson 3's `error::Error`.
impl<E: IntoBsonError> From<E> for BsonError {
    fn from(error: E) -> Self {
        error.into_bson_error()
    }
}
