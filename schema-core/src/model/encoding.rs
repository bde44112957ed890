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
                <mongodb::bson::Bson as serde::Deserialize>::deserialize(deserializer)?,
            )
            .map_err(<D::Error as serde::de::Error>::custom),
        }
    }
}

/// Encoders of the BSON types whose stored form is the value itself: what the derive gives a
/// field of these types, so that a typed filter costs what `doc!` does (serde's path writes an
/// `ObjectId` or a date as extended JSON and converts it back). Each also as its `Encoder`
/// constant (`NATIVE_I64`). Unit-tested against the driver's serialization (in
/// `__private::paths`, which hands them to the derive).
macro_rules! native {
    ($($name:ident, $encoder:ident: $ty:ty => $variant:ident,)*) => {$(
        #[doc(hidden)]
        #[inline]
        pub fn $name(value: &$ty) -> Result<Bson, crate::bson_compat::SerError> {
            Ok(Bson::$variant(value.clone()))
        }

        #[doc(hidden)]
        pub const $encoder: Encoder<$ty> = Encoder::Native($name);
    )*};
}

native! {
    native_object_id, NATIVE_OBJECT_ID: mongodb::bson::oid::ObjectId => ObjectId,
    native_date_time, NATIVE_DATE_TIME: mongodb::bson::DateTime => DateTime,
    native_i32, NATIVE_I32: i32 => Int32,
    native_i64, NATIVE_I64: i64 => Int64,
    native_f64, NATIVE_F64: f64 => Double,
    native_bool, NATIVE_BOOL: bool => Boolean,
    native_decimal128, NATIVE_DECIMAL128: mongodb::bson::Decimal128 => Decimal128,
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

    #[test]
    fn native_encoders_are_the_driver_s_stored_form() {
        let id = mongodb::bson::oid::ObjectId::new();
        let at = mongodb::bson::DateTime::from_millis(1_700_000_000_123);
        let d = mongodb::bson::Decimal128::from_bytes([7; 16]);
        assert_eq!(native_object_id(&id).unwrap(), stored_value(&id).unwrap());
        assert_eq!(native_date_time(&at).unwrap(), stored_value(&at).unwrap());
        assert_eq!(native_i32(&-3).unwrap(), stored_value(&-3_i32).unwrap());
        assert_eq!(native_i64(&3).unwrap(), stored_value(&3_i64).unwrap());
        assert_eq!(native_f64(&0.5).unwrap(), stored_value(&0.5_f64).unwrap());
        assert_eq!(native_bool(&true).unwrap(), stored_value(&true).unwrap());
        assert_eq!(native_decimal128(&d).unwrap(), stored_value(&d).unwrap());
    }

    #[test]
    fn the_native_encoder_constants_are_the_native_encoders() {
        fn write<T>(encoder: Encoder<T>, value: &T) -> Bson {
            match encoder {
                Encoder::Native(f) => f(value).unwrap(),
                _ => panic!("not a native encoder"),
            }
        }
        let id = mongodb::bson::oid::ObjectId::new();
        let at = mongodb::bson::DateTime::from_millis(1_700_000_000_123);
        let d = mongodb::bson::Decimal128::from_bytes([7; 16]);
        assert_eq!(write(NATIVE_OBJECT_ID, &id), Bson::ObjectId(id));
        assert_eq!(write(NATIVE_DATE_TIME, &at), Bson::DateTime(at));
        assert_eq!(write(NATIVE_I32, &-3), Bson::Int32(-3));
        assert_eq!(write(NATIVE_I64, &3), Bson::Int64(3));
        assert_eq!(write(NATIVE_F64, &0.5), Bson::Double(0.5));
        assert_eq!(write(NATIVE_BOOL, &true), Bson::Boolean(true));
        assert_eq!(write(NATIVE_DECIMAL128, &d), Bson::Decimal128(d));
    }
}
