//! How a field's values are stored: the encoder and decoder a field carries (the driver's serde,
//! or the field's own serde helper) and the wrappers that write and read a value through them.
//! Shared by the models (a document's id, a copy's fields) and the typed query paths.

use std::fmt;

use mongodb::bson::Bson;

/// How the values of a field are written: serialized as the driver does (`Plain`), or through
/// the field's own serde helper (`#[serde(with = ...)]`, `serialize_with`), which the derive
/// wraps in a function.
pub enum Encoder<T: ?Sized> {
    /// Serialized by the value's own `Serialize`, as `insert_one` writes it.
    Plain,
    /// Serialized through the field's serde helper.
    Custom(fn(&T) -> Result<Bson, crate::bson_compat::SerError>),
    /// The value's own stored form, built without serde (a BSON scalar such as an `ObjectId`):
    /// what `Plain` writes, faster.
    Native(fn(&T) -> Result<Bson, crate::bson_compat::SerError>),
}

impl<T: ?Sized> Clone for Encoder<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: ?Sized> Copy for Encoder<T> {}

impl<T: ?Sized> fmt::Debug for Encoder<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Encoder::Plain => f.write_str("Plain"),
            Encoder::Custom(_) => f.write_str("Custom"),
            Encoder::Native(_) => f.write_str("Native"),
        }
    }
}

/// How stored values of a field are read back, when a serde helper reads them
/// (`#[serde(with = ...)]`, `deserialize_with`): the mirror of [`Encoder`], used where the
/// library decodes an `_id` it did not read through the field itself (a [`crate::Ref`]).
pub enum Decoder<T> {
    /// Deserialized by the value's own `Deserialize`.
    Plain,
    /// Deserialized through the field's serde helper, from the stored BSON value.
    Custom(fn(Bson) -> Result<T, crate::bson_compat::DeError>),
}

impl<T> Clone for Decoder<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Decoder<T> {}

impl<T> fmt::Debug for Decoder<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Decoder::Plain => f.write_str("Plain"),
            Decoder::Custom(_) => f.write_str("Custom"),
        }
    }
}

/// `value` read as the driver reads a stored field (not human readable): the derive passes a
/// wrapper whose `Deserialize` calls the field's serde helper.
#[doc(hidden)]
pub fn stored_read<T: serde::de::DeserializeOwned>(
    value: Bson,
) -> Result<T, crate::bson_compat::DeError> {
    crate::bson_compat::stored_read(value)
}

/// A value as the driver stores it: serialized by a serializer that, like the one behind
/// `insert_one`, is not human readable (so a `uuid::Uuid` is binary, as stored, and not a
/// string). Byte for byte the form `bson::to_raw_document_buf` writes; unit-tested against it.
/// The derive passes a field's serde helper as a wrapper whose `Serialize` calls it.
#[doc(hidden)]
pub fn stored_value<T: serde::Serialize + ?Sized>(
    value: &T,
) -> Result<Bson, crate::bson_compat::SerError> {
    crate::bson_compat::stored_value(value)
}

/// A value serialized as a field whose encoder is `.1` is stored: through the field's serde
/// helper when it has one. What a copy type writes for each of its fields (the source field's
/// helper travels with its type) and what a [`crate::Ref`] writes for its id.
pub struct Encoded<'a, T: ?Sized>(pub &'a T, pub Encoder<T>);

impl<T: serde::Serialize + ?Sized> serde::Serialize for Encoded<'_, T> {
    #[inline]
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.1 {
            Encoder::Plain | Encoder::Native(_) => self.0.serialize(serializer),
            Encoder::Custom(encode) => encode(self.0)
                .map_err(<S::Error as serde::ser::Error>::custom)?
                .serialize(serializer),
        }
    }
}

/// Reads a value stored by a field whose decoder is `.0` (the mirror of [`Encoded`]).
pub struct Decoded<T>(pub Decoder<T>);

impl<'de, T: serde::Deserialize<'de>> serde::de::DeserializeSeed<'de> for Decoded<T> {
    type Value = T;
    #[inline]
    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<T, D::Error> {
        match self.0 {
            Decoder::Plain => T::deserialize(deserializer),
            Decoder::Custom(decode) => decode(
                <crate::bson::Bson as serde::Deserialize>::deserialize(deserializer)?,
            )
            .map_err(<D::Error as serde::de::Error>::custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use mongodb::bson::oid::ObjectId;
    use mongodb::bson::{doc, DateTime, Decimal128};
    use serde::Serialize;

    use super::*;

    #[derive(Serialize)]
    #[serde(rename_all = "snake_case")]
    enum Status {
        Open,
        #[allow(dead_code)]
        Closed,
    }

    #[derive(Serialize)]
    struct Line {
        name: String,
        qty: i32,
    }

    #[test]
    fn stored_value_is_what_the_driver_stores() {
        fn same<T: Serialize>(value: T) {
            let ours = stored_value(&value).unwrap();
            let driver = crate::model::document::stored_bson(&value).unwrap();
            assert_eq!(ours, driver);
        }
        same("billing");
        same(String::from("x"));
        same(7_i32);
        same(7_i64);
        same(u32::MAX);
        same(u64::from(u32::MAX) + 1);
        same(1.5_f64);
        same(true);
        same(ObjectId::new());
        same(DateTime::from_millis(1_700_000_000_123));
        same(Decimal128::from_bytes([1; 16]));
        same(Status::Open);
        same(Some(3_i32));
        same(None::<i32>);
        same(vec![1_i32, 2]);
        same(Line {
            name: "bolt".into(),
            qty: 2,
        });
        same(doc! { "a": 1 });
        same(serde_bytes_like());
    }

    fn serde_bytes_like() -> mongodb::bson::Binary {
        mongodb::bson::Binary {
            subtype: mongodb::bson::spec::BinarySubtype::Generic,
            bytes: vec![1, 2, 3],
        }
    }

    #[test]
    fn a_plain_uuid_is_stored_as_generic_binary_not_as_doc_writes_it() {
        // the driver's serde path writes bson 2's `Uuid` as subtype 4 ...
        let id = mongodb::bson::Uuid::new();
        let stored = stored_value(&id).unwrap();
        assert_eq!(stored, crate::model::document::stored_bson(&id).unwrap());
        // ... and `doc!` agrees for it; the encoders must never go through `From` (a uuid
        // crate `Uuid` is subtype 0 through serde, subtype 4 through `From`), see the
        // ecosystem tests
        assert_eq!(stored, Bson::from(id));
    }
}
