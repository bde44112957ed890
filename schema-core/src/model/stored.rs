//! Stored shapes that no Rust type of a field describes: what a serde helper
//! (`#[serde(with = ...)]`, `serialize_with`) writes instead of the field's own serialization.
//!
//! The derive names these types for the helpers it knows (see the derive crate's
//! `serde_helpers`); each is uninhabited and exists only for its [`BsonSchema`] impl. Every
//! schema here was found by serializing values through the driver's path
//! (`bson::to_raw_document_buf`, the raw serializer behind `insert_one`); the unit tests below
//! keep checking it.

use mongodb::bson::{doc, Document};

use super::bson_schema::BsonSchema;

/// A BSON `int` (int32) holding an unsigned integer: `0..=i32::MAX`.
///
/// bson's `serialize_u32_as_i32` and `serialize_u64_as_i32` (bson 3: `u32::AsI32`,
/// `u64::AsI32`) write this; a larger value fails to serialize and never reaches the server.
pub enum Int32FromUnsigned {}

impl BsonSchema for Int32FromUnsigned {
    fn bson_schema() -> Document {
        doc! { "bsonType": "int", "minimum": 0_i64, "maximum": i64::from(i32::MAX) }
    }
}

/// A BSON `double` holding a `u32` exactly: `0..=u32::MAX`.
///
/// bson's `u32_as_f64` (bson 3: `u32::AsF64`) writes this.
pub enum DoubleFromU32 {}

impl BsonSchema for DoubleFromU32 {
    fn bson_schema() -> Document {
        doc! { "bsonType": "double", "minimum": 0_i64, "maximum": i64::from(u32::MAX) }
    }
}

/// The largest `u64` that bson's `u64_as_f64` writes: the largest double below 2^64
/// (`u64::MAX` itself is refused by the helper).
const U64_AS_F64_MAX: f64 = 18_446_744_073_709_549_568.0;

/// A BSON `double` holding a `u64` exactly: `0..=2^64 - 2048`.
///
/// bson's `u64_as_f64` (bson 3: `u64::AsF64`) writes this; a value a double cannot hold exactly
/// fails to serialize.
pub enum DoubleFromU64 {}

impl BsonSchema for DoubleFromU64 {
    fn bson_schema() -> Document {
        doc! { "bsonType": "double", "minimum": 0_i64, "maximum": U64_AS_F64_MAX }
    }
}

/// The hex string of an `ObjectId`: 24 lower-case hex digits.
///
/// bson's `serialize_object_id_as_hex_string` (bson 3: `object_id::AsHexString`) writes this.
pub enum ObjectIdHex {}

impl BsonSchema for ObjectIdHex {
    fn bson_schema() -> Document {
        doc! {
            "bsonType": "string",
            "minLength": 24_i64,
            "maxLength": 24_i64,
            "pattern": "^[0-9a-f]{24}$",
        }
    }
}

/// A BSON date written as an RFC 3339 string in UTC, millisecond precision at most:
/// `2023-11-14T22:13:20.123Z`, `1970-01-01T00:00:00Z` (trailing zeros of the fraction dropped).
///
/// bson's `bson_datetime_as_rfc3339_string` (bson 3: `datetime::AsRfc3339String`) writes this;
/// a date outside years 0000-9999 fails to format and never reaches the server.
pub enum Rfc3339UtcString {}

impl BsonSchema for Rfc3339UtcString {
    fn bson_schema() -> Document {
        doc! {
            "bsonType": "string",
            "maxLength": 24_i64,
            "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,3})?Z$",
        }
    }
}

#[cfg(test)]
mod tests {
    // bson 2's helpers: functions generic over the serializer, so they serialize through the
    // driver's bson 3 too
    use bson2::{oid::ObjectId, serde_helpers, DateTime};
    use mongodb::bson::Bson;
    use serde::Serialize;

    use super::*;
    use crate::model::ecosystem::tests::{matches, stored};

    #[derive(Serialize)]
    struct Helpers {
        #[serde(serialize_with = "serde_helpers::serialize_u32_as_i32")]
        u32_as_i32: u32,
        #[serde(serialize_with = "serde_helpers::serialize_u64_as_i32")]
        u64_as_i32: u64,
        #[serde(with = "serde_helpers::u32_as_f64")]
        u32_as_f64: u32,
        #[serde(with = "serde_helpers::u64_as_f64")]
        u64_as_f64: u64,
        #[serde(serialize_with = "serde_helpers::serialize_object_id_as_hex_string")]
        hex: ObjectId,
        #[serde(with = "serde_helpers::bson_datetime_as_rfc3339_string")]
        rfc3339: DateTime,
    }

    #[test]
    fn each_shape_is_what_the_helpers_write_through_the_driver_path() {
        let extremes = [
            (0, 0, 0, 0, 0_i64),
            (
                i32::MAX as u32,
                i32::MAX as u64,
                u32::MAX,
                U64_AS_F64_MAX as u64,
                253_402_300_799_999,
            ),
            (7, 7, 7, 1 << 60, 1_700_000_000_100),
        ];
        for (a, b, c, d, millis) in extremes {
            let value = Helpers {
                u32_as_i32: a,
                u64_as_i32: b,
                u32_as_f64: c,
                u64_as_f64: d,
                hex: ObjectId::new(),
                rfc3339: DateTime::from_millis(millis),
            };
            let doc = stored(&value);
            assert!(
                matches!(doc.get("u32_as_i32"), Some(Bson::Int32(_))),
                "{doc}"
            );
            assert!(
                matches!(doc.get("u32_as_f64"), Some(Bson::Double(_))),
                "{doc}"
            );
            for (field, schema) in [
                ("u32_as_i32", Int32FromUnsigned::bson_schema()),
                ("u64_as_i32", Int32FromUnsigned::bson_schema()),
                ("u32_as_f64", DoubleFromU32::bson_schema()),
                ("u64_as_f64", DoubleFromU64::bson_schema()),
                ("hex", ObjectIdHex::bson_schema()),
                ("rfc3339", Rfc3339UtcString::bson_schema()),
            ] {
                let stored = doc.get(field).unwrap();
                assert!(
                    matches(&schema, stored),
                    "{field}: {stored} against {schema}"
                );
            }
        }
        // out of the range: the helper refuses, nothing is stored
        let over = Helpers {
            u32_as_i32: i32::MAX as u32 + 1,
            u64_as_i32: 0,
            u32_as_f64: 0,
            u64_as_f64: 0,
            hex: ObjectId::new(),
            rfc3339: DateTime::from_millis(0),
        };
        assert!(crate::bson_compat::to_raw_document_buf(&over).is_err());
        let over = Helpers {
            u32_as_i32: 0,
            u64_as_i32: 0,
            u32_as_f64: 0,
            u64_as_f64: u64::MAX,
            hex: ObjectId::new(),
            rfc3339: DateTime::from_millis(0),
        };
        assert!(crate::bson_compat::to_raw_document_buf(&over).is_err());
    }
}
