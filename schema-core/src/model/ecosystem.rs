//! [`BsonSchema`] for types of std and of the crates a document commonly holds: the `NonZero*`
//! integers, IP and socket addresses, `Duration` and `SystemTime` of std, and behind features
//! `chrono-0_4`, `time-0_3`, `uuid-1` and `rust_decimal-1` the types of those crates.
//!
//! Each schema describes what the driver stores. `Collection::insert_one` (and every typed
//! write) serializes with `bson::to_raw_document_buf`, whose serializer is **not human
//! readable**; `bson::to_document` / `to_bson` present themselves as human readable. Types whose
//! serde impl asks (`uuid::Uuid`, `IpAddr` and the socket addresses of std) are stored
//! differently by the two: the schemas follow the driver's path, and the rustdoc of each impl
//! names the other shape. A value built with `bson::to_document` and inserted as a raw document
//! is refused by the validator for those types. The unit tests below serialize values through
//! the driver's path and check them against each schema.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::num::{
    NonZeroI16, NonZeroI32, NonZeroI64, NonZeroI8, NonZeroU16, NonZeroU32, NonZeroU64, NonZeroU8,
    NonZeroUsize,
};

use mongodb::bson::{doc, Bson, Document};

use super::bson_schema::BsonSchema;

/// `{ bsonType: "array", minItems: n, maxItems: n, items: [...] }`: a tuple, each position with
/// its own schema.
fn tuple(items: Vec<Document>) -> Document {
    let n = items.len() as i64;
    doc! {
        "bsonType": "array",
        "minItems": n,
        "maxItems": n,
        "items": items.into_iter().map(Bson::Document).collect::<Vec<_>>(),
    }
}

fn int_range(name: &str, min: i64, max: i64) -> Document {
    doc! { "bsonType": name, "minimum": min, "maximum": max }
}

/// A string of at most `max_length` characters matching `pattern`.
#[cfg(any(feature = "chrono-0_4", feature = "rust_decimal-1"))]
fn string(pattern: &str, max_length: i64) -> Document {
    doc! { "bsonType": "string", "maxLength": max_length, "pattern": pattern }
}

/// The document `{ V4: ... }` or `{ V6: ... }` that serde writes for an enum of two newtype
/// variants when the serializer is not human readable.
fn v4_or_v6(v4: Document, v6: Document) -> Document {
    doc! {
        "bsonType": "object",
        "minProperties": 1_i64,
        "maxProperties": 1_i64,
        "properties": { "V4": v4, "V6": v6 },
        "additionalProperties": false,
    }
}

macro_rules! non_zero {
    ($($ty:ty => $schema:expr, $doc:literal;)*) => {$(
        #[doc = $doc]
        impl BsonSchema for $ty {
            fn bson_schema() -> Document {
                $schema
            }
        }
    )*};
}

/// A signed integer's range without 0.
fn non_zero_signed(name: &str, range: Option<(i64, i64)>) -> Document {
    let mut schema = match range {
        Some((min, max)) => int_range(name, min, max),
        None => doc! { "bsonType": name },
    };
    schema.insert("not", doc! { "enum": [0_i32] });
    schema
}

non_zero! {
    NonZeroU8 => int_range("int", 1, u8::MAX.into()),
        "Stored as its integer (an `int`), `1..=255`.";
    NonZeroU16 => int_range("int", 1, u16::MAX.into()),
        "Stored as its integer (an `int`), `1..=65535`.";
    NonZeroU32 => int_range("long", 1, u32::MAX.into()),
        "Stored as its integer; bson writes a `u32` as a `long`: `1..=u32::MAX`.";
    NonZeroU64 => int_range("long", 1, i64::MAX),
        "Stored as a `long`, `1..=i64::MAX` (a larger value fails to serialize).";
    NonZeroUsize => int_range("long", 1, i64::MAX),
        "Stored as a `long`, `1..=i64::MAX` (a larger value fails to serialize).";
    NonZeroI8 => non_zero_signed("int", Some((i8::MIN.into(), i8::MAX.into()))),
        "Stored as its integer (an `int`) in `i8`'s range, never 0 (`not: { enum: [0] }`).";
    NonZeroI16 => non_zero_signed("int", Some((i16::MIN.into(), i16::MAX.into()))),
        "Stored as its integer (an `int`) in `i16`'s range, never 0 (`not: { enum: [0] }`).";
    NonZeroI32 => non_zero_signed("int", None),
        "Stored as an `int`, never 0 (`not: { enum: [0] }`).";
    NonZeroI64 => non_zero_signed("long", None),
        "Stored as a `long`, never 0 (`not: { enum: [0] }`).";
}

/// Stored by the driver as the array of its 4 octets (`[10, 0, 0, 1]`, each an `int`).
/// `bson::to_document` writes the string `"10.0.0.1"` instead.
impl BsonSchema for Ipv4Addr {
    fn bson_schema() -> Document {
        <[u8; 4]>::bson_schema()
    }
}

/// Stored by the driver as the array of its 16 octets (each an `int`). `bson::to_document`
/// writes the string (`"::1"`) instead.
impl BsonSchema for Ipv6Addr {
    fn bson_schema() -> Document {
        <[u8; 16]>::bson_schema()
    }
}

/// Stored by the driver as `{ V4: [4 octets] }` or `{ V6: [16 octets] }`. `bson::to_document`
/// writes the address string instead.
impl BsonSchema for IpAddr {
    fn bson_schema() -> Document {
        v4_or_v6(Ipv4Addr::bson_schema(), Ipv6Addr::bson_schema())
    }
}

/// Stored by the driver as the pair `[[4 octets], port]`. `bson::to_document` writes
/// `"10.0.0.1:80"` instead.
impl BsonSchema for SocketAddrV4 {
    fn bson_schema() -> Document {
        tuple(vec![Ipv4Addr::bson_schema(), u16::bson_schema()])
    }
}

/// Stored by the driver as the pair `[[16 octets], port]`: serde's compact form keeps neither
/// the flow info nor the scope id, which read back as 0. `bson::to_document` writes
/// `"[::1%2]:80"` (with the scope id, without the flow info) instead.
impl BsonSchema for SocketAddrV6 {
    fn bson_schema() -> Document {
        tuple(vec![Ipv6Addr::bson_schema(), u16::bson_schema()])
    }
}

/// Stored by the driver as `{ V4: [[4 octets], port] }` or `{ V6: [[16 octets], port] }`.
/// `bson::to_document` writes the address string instead.
impl BsonSchema for SocketAddr {
    fn bson_schema() -> Document {
        v4_or_v6(SocketAddrV4::bson_schema(), SocketAddrV6::bson_schema())
    }
}

/// serde's struct of two unsigned fields: seconds (a `u64`: a `long`, larger values fail to
/// serialize) and nanoseconds (a `u32`: a `long` too).
fn seconds_and_nanos(secs: &str, nanos: &str) -> Document {
    doc! {
        "bsonType": "object",
        "required": [secs, nanos],
        "properties": {
            secs: int_range("long", 0, i64::MAX),
            nanos: int_range("long", 0, 999_999_999),
        },
        "additionalProperties": false,
    }
}

/// Stored as `{ secs: <long>, nanos: <long> }` (serde's struct for it), whatever the serializer.
impl BsonSchema for std::time::Duration {
    fn bson_schema() -> Document {
        seconds_and_nanos("secs", "nanos")
    }
}

/// Stored as `{ secs_since_epoch: <long>, nanos_since_epoch: <long> }` (serde's struct for it),
/// not as a BSON date; a time before the epoch fails to serialize.
impl BsonSchema for std::time::SystemTime {
    fn bson_schema() -> Document {
        seconds_and_nanos("secs_since_epoch", "nanos_since_epoch")
    }
}

// Each impl repeats the module's `cfg`: the facade's docs re-export `BsonSchema` from this crate
// and show an impl's own `cfg` as its feature badge, not its module's.
#[cfg(feature = "chrono-0_4")]
mod chrono_0_4 {
    //! chrono's serde impls write strings (RFC 3339 / ISO 8601) whatever the serializer: years
    //! 0000-9999 with 4 digits, others signed (`+10000`, `-0001`), a fraction of 3, 6 or 9
    //! digits when not 0, and a leap second as `:60`.

    use chrono::{DateTime, FixedOffset, NaiveDate, NaiveDateTime, NaiveTime, Utc};
    use mongodb::bson::Document;

    use super::{string, BsonSchema};

    const DATE: &str = "([0-9]{4}|[+-][0-9]{4,6})-[0-9]{2}-[0-9]{2}";
    const TIME: &str = "[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{3}|\\.[0-9]{6}|\\.[0-9]{9})?";

    /// Stored as an RFC 3339 string in UTC (`2023-11-14T22:13:20.123Z`), not as a BSON date:
    /// store a `bson::DateTime`, or use bson's `chrono_datetime_as_bson_datetime` helper, for a
    /// date the server can compare and index as one.
    #[cfg(feature = "chrono-0_4")] // the module's, repeated (see above the module)
    #[cfg_attr(docsrs, doc(cfg(feature = "chrono-0_4")))]
    impl BsonSchema for DateTime<Utc> {
        fn bson_schema() -> Document {
            string(&format!("^{DATE}T{TIME}Z$"), 33)
        }
    }

    /// Stored as an RFC 3339 string with its offset (`2023-11-14T23:43:20.123+01:30`, `Z` for
    /// a zero offset). chrono writes the offset to the minute: seconds of an offset are not
    /// stored.
    #[cfg(feature = "chrono-0_4")] // the module's, repeated (see above the module)
    #[cfg_attr(docsrs, doc(cfg(feature = "chrono-0_4")))]
    impl BsonSchema for DateTime<FixedOffset> {
        fn bson_schema() -> Document {
            string(&format!("^{DATE}T{TIME}(Z|[+-][0-9]{{2}}:[0-9]{{2}})$"), 38)
        }
    }

    /// Stored as an ISO 8601 date string: `2023-11-14`.
    #[cfg(feature = "chrono-0_4")] // the module's, repeated (see above the module)
    #[cfg_attr(docsrs, doc(cfg(feature = "chrono-0_4")))]
    impl BsonSchema for NaiveDate {
        fn bson_schema() -> Document {
            string(&format!("^{DATE}$"), 13)
        }
    }

    /// Stored as an ISO 8601 date and time string without offset: `2023-11-14T22:13:20.123`.
    #[cfg(feature = "chrono-0_4")] // the module's, repeated (see above the module)
    #[cfg_attr(docsrs, doc(cfg(feature = "chrono-0_4")))]
    impl BsonSchema for NaiveDateTime {
        fn bson_schema() -> Document {
            string(&format!("^{DATE}T{TIME}$"), 32)
        }
    }

    /// Stored as an ISO 8601 time string: `22:13:20`, `22:13:20.123`, `23:59:60.500` (a leap
    /// second).
    #[cfg(feature = "chrono-0_4")] // the module's, repeated (see above the module)
    #[cfg_attr(docsrs, doc(cfg(feature = "chrono-0_4")))]
    impl BsonSchema for NaiveTime {
        fn bson_schema() -> Document {
            string(&format!("^{TIME}$"), 18)
        }
    }
}

// Each impl repeats the module's `cfg`: the facade's docs re-export `BsonSchema` from this crate
// and show an impl's own `cfg` as its feature badge, not its module's.
#[cfg(feature = "time-0_3")]
mod time_0_3 {
    //! time's serde impls write tuples when the serializer is not human readable, which the
    //! driver's is: `[year, ordinal day, hour, minute, second, nanosecond, offset hours,
    //! minutes, seconds]` and its prefixes, each an `int` but the nanosecond (a `u32`, a
    //! `long`). With time's `serde-human-readable` feature, `bson::to_document` writes strings
    //! instead; the driver's path is the same with or without it. The year's range is the one
    //! time is built with (±9999, or ±999999 with `large-dates`).

    use mongodb::bson::Document;
    use time::{Date, OffsetDateTime, PrimitiveDateTime, Time, UtcOffset};

    use super::{int_range, tuple, BsonSchema};

    fn date() -> Vec<Document> {
        vec![
            int_range("int", Date::MIN.year().into(), Date::MAX.year().into()),
            int_range("int", 1, 366),
        ]
    }

    fn time() -> Vec<Document> {
        vec![
            int_range("int", 0, 23),
            int_range("int", 0, 59),
            int_range("int", 0, 59),
            int_range("long", 0, 999_999_999),
        ]
    }

    fn offset() -> Vec<Document> {
        vec![
            int_range("int", -25, 25),
            int_range("int", -59, 59),
            int_range("int", -59, 59),
        ]
    }

    /// Stored as `[year, ordinal day]`.
    #[cfg(feature = "time-0_3")] // the module's, repeated (see above the module)
    #[cfg_attr(docsrs, doc(cfg(feature = "time-0_3")))]
    impl BsonSchema for Date {
        fn bson_schema() -> Document {
            tuple(date())
        }
    }

    /// Stored as `[hour, minute, second, nanosecond]`.
    #[cfg(feature = "time-0_3")] // the module's, repeated (see above the module)
    #[cfg_attr(docsrs, doc(cfg(feature = "time-0_3")))]
    impl BsonSchema for Time {
        fn bson_schema() -> Document {
            tuple(time())
        }
    }

    /// Stored as `[year, ordinal day, hour, minute, second, nanosecond]`.
    #[cfg(feature = "time-0_3")] // the module's, repeated (see above the module)
    #[cfg_attr(docsrs, doc(cfg(feature = "time-0_3")))]
    impl BsonSchema for PrimitiveDateTime {
        fn bson_schema() -> Document {
            tuple([date(), time()].concat())
        }
    }

    /// Stored as `[hours, minutes, seconds]` of the offset.
    #[cfg(feature = "time-0_3")] // the module's, repeated (see above the module)
    #[cfg_attr(docsrs, doc(cfg(feature = "time-0_3")))]
    impl BsonSchema for UtcOffset {
        fn bson_schema() -> Document {
            tuple(offset())
        }
    }

    /// Stored as `[year, ordinal day, hour, minute, second, nanosecond, offset hours, minutes,
    /// seconds]`, not as a BSON date: use bson's `time_0_3_offsetdatetime_as_bson_datetime`
    /// helper for a date the server can compare and index as one.
    #[cfg(feature = "time-0_3")] // the module's, repeated (see above the module)
    #[cfg_attr(docsrs, doc(cfg(feature = "time-0_3")))]
    impl BsonSchema for OffsetDateTime {
        fn bson_schema() -> Document {
            tuple([date(), time(), offset()].concat())
        }
    }
}

/// Stored by the driver as 16 bytes of binary, subtype 0 (generic), since its serializer is not
/// human readable; `bson::to_document` writes the hyphenated string instead. (bson's own
/// `bson::Uuid`, or the `uuid_1_as_binary` helper, store subtype 4.)
///
/// A field of this type needs a stored form said out loud, since `doc!`, mongosh and every
/// other driver write a uuid as subtype 4 and a filter of one form matches nothing of the
/// other: the derives refuse it without `#[serde(with = "mongo_schema::bson::serde_helpers::uuid_1_as_binary")]`
/// (subtype 4) or `#[schema(stored_as = Binary)]` (subtype 0, for existing data).
#[cfg(feature = "uuid-1")]
#[cfg_attr(docsrs, doc(cfg(feature = "uuid-1")))]
impl BsonSchema for uuid::Uuid {
    fn bson_schema() -> Document {
        crate::model::bson_schema::uuid_schema()
    }
    const __GENERIC_UUID: bool = true;
}

/// Stored as its decimal string, `-12.345` (rust_decimal's default serde impl, whatever the
/// serializer): `{ bsonType: "string", pattern: "^-?[0-9]+(\\.[0-9]+)?$" }`, at most 31
/// characters. Not a BSON `decimal`: the server compares these as strings.
///
/// rust_decimal's `serde-float` feature makes it a `double` instead; the schema asks the
/// compiled impl which one it writes.
#[cfg(feature = "rust_decimal-1")]
#[cfg_attr(docsrs, doc(cfg(feature = "rust_decimal-1")))]
impl BsonSchema for rust_decimal::Decimal {
    fn bson_schema() -> Document {
        #[derive(serde::Serialize)]
        struct Probe {
            value: rust_decimal::Decimal,
        }
        let probe = crate::bson_compat::to_raw_document_buf(&Probe {
            value: rust_decimal::Decimal::ONE,
        })
        .ok()
        .and_then(|raw| raw.get("value").ok().flatten().map(|v| v.element_type()));
        match probe {
            Some(mongodb::bson::spec::ElementType::String) => string("^-?[0-9]+(\\.[0-9]+)?$", 31),
            Some(mongodb::bson::spec::ElementType::Double) => doc! { "bsonType": "double" },
            // another feature combination: no constraint rather than a wrong one
            _ => Document::new(),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    //! Values serialized through the driver's path, checked against each schema by a small
    //! evaluator of the keywords used here.

    use std::num::*;

    use mongodb::bson::{Bson, Document};
    use serde::Serialize;

    use super::*;

    /// What `insert_one` stores for `value`: `bson::to_raw_document_buf`, as the driver calls it.
    pub(crate) fn stored<T: Serialize>(value: &T) -> Document {
        let raw = crate::bson_compat::to_raw_document_buf(value).expect("serializes");
        Document::try_from(raw.as_ref()).expect("a valid document")
    }

    fn number(value: &Bson) -> Option<f64> {
        match value {
            Bson::Int32(v) => Some(f64::from(*v)),
            Bson::Int64(v) => Some(*v as f64),
            Bson::Double(v) => Some(*v),
            _ => None,
        }
    }

    fn type_name(value: &Bson) -> &'static str {
        match value {
            Bson::Double(_) => "double",
            Bson::String(_) => "string",
            Bson::Array(_) => "array",
            Bson::Document(_) => "object",
            Bson::Boolean(_) => "bool",
            Bson::Null => "null",
            Bson::Int32(_) => "int",
            Bson::Int64(_) => "long",
            Bson::DateTime(_) => "date",
            Bson::Binary(_) => "binData",
            Bson::ObjectId(_) => "objectId",
            Bson::Timestamp(_) => "timestamp",
            Bson::Decimal128(_) => "decimal",
            _ => "other",
        }
    }

    /// Whether `value` satisfies `schema`, for the keywords these schemas use (an unknown
    /// keyword fails the check, so a schema cannot pass by using one the evaluator ignores).
    pub(crate) fn matches(schema: &Document, value: &Bson) -> bool {
        schema.iter().all(|(keyword, arg)| match keyword.as_str() {
            "bsonType" => match arg {
                Bson::String(t) => t == type_name(value),
                Bson::Array(ts) => ts.iter().any(|t| t.as_str() == Some(type_name(value))),
                _ => false,
            },
            "minimum" => number(value).is_none_or(|v| v >= number(arg).unwrap()),
            "maximum" => number(value).is_none_or(|v| v <= number(arg).unwrap()),
            "minLength" | "maxLength" | "pattern" => {
                let Bson::String(s) = value else { return true };
                let chars = s.chars().count() as f64;
                match keyword.as_str() {
                    "minLength" => chars >= number(arg).unwrap(),
                    "maxLength" => chars <= number(arg).unwrap(),
                    _ => regex::Regex::new(arg.as_str().unwrap())
                        .unwrap()
                        .is_match(s),
                }
            }
            "minItems" | "maxItems" | "items" => {
                let Bson::Array(items) = value else {
                    return true;
                };
                match (keyword.as_str(), arg) {
                    ("minItems", n) => items.len() as f64 >= number(n).unwrap(),
                    ("maxItems", n) => items.len() as f64 <= number(n).unwrap(),
                    (_, Bson::Document(each)) => items.iter().all(|i| matches(each, i)),
                    (_, Bson::Array(tuple)) => items
                        .iter()
                        .zip(tuple)
                        .all(|(i, s)| matches(s.as_document().unwrap(), i)),
                    _ => false,
                }
            }
            "minProperties" | "maxProperties" | "properties" | "additionalProperties" => {
                let Bson::Document(doc) = value else {
                    return true;
                };
                match (keyword.as_str(), arg) {
                    ("minProperties", n) => doc.len() as f64 >= number(n).unwrap(),
                    ("maxProperties", n) => doc.len() as f64 <= number(n).unwrap(),
                    ("properties", Bson::Document(properties)) => {
                        properties.iter().all(|(name, s)| {
                            doc.get(name)
                                .is_none_or(|v| matches(s.as_document().unwrap(), v))
                        })
                    }
                    ("additionalProperties", Bson::Boolean(false)) => {
                        let properties = schema.get_document("properties").unwrap();
                        doc.keys().all(|k| properties.contains_key(k))
                    }
                    _ => false,
                }
            }
            "required" => match value {
                Bson::Document(doc) => arg
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|name| doc.contains_key(name.as_str().unwrap())),
                _ => true,
            },
            "not" => !matches(arg.as_document().unwrap(), value),
            "enum" => arg
                .as_array()
                .unwrap()
                .iter()
                .any(|e| e == value || (number(e).is_some() && number(e) == number(value))),
            "anyOf" => arg
                .as_array()
                .unwrap()
                .iter()
                .any(|s| matches(s.as_document().unwrap(), value)),
            // annotations (a uuid's `title`) constrain nothing
            "title" | "description" => true,
            _ => false,
        })
    }

    /// Serializes `value` as the driver does and checks it against `T`'s schema; returns the
    /// stored value.
    #[track_caller]
    pub(crate) fn check<T: BsonSchema + Serialize>(value: T) -> Bson {
        #[derive(Serialize)]
        struct Field<T> {
            v: T,
        }
        let stored = stored(&Field { v: value }).remove("v").unwrap();
        let schema = T::bson_schema();
        assert!(matches(&schema, &stored), "{stored} against {schema}");
        stored
    }

    #[track_caller]
    fn refused<T: BsonSchema>(value: Bson) {
        let schema = T::bson_schema();
        assert!(!matches(&schema, &value), "{value} accepted by {schema}");
    }

    #[test]
    fn non_zero_integers_are_their_integer_never_zero() {
        assert_eq!(check(NonZeroU8::MAX), Bson::Int32(255));
        assert_eq!(check(NonZeroU8::MIN), Bson::Int32(1));
        assert_eq!(check(NonZeroU16::MAX), Bson::Int32(65_535));
        assert_eq!(check(NonZeroU32::MAX), Bson::Int64(u32::MAX.into()));
        assert_eq!(
            check(NonZeroU64::new(1 << 62).unwrap()),
            Bson::Int64(1 << 62)
        );
        assert_eq!(check(NonZeroUsize::MIN), Bson::Int64(1));
        assert_eq!(check(NonZeroI8::MIN), Bson::Int32(-128));
        assert_eq!(check(NonZeroI16::MAX), Bson::Int32(32_767));
        assert_eq!(check(NonZeroI32::new(-1).unwrap()), Bson::Int32(-1));
        assert_eq!(check(NonZeroI64::MIN), Bson::Int64(i64::MIN));
        refused::<NonZeroU8>(Bson::Int32(0));
        refused::<NonZeroU32>(Bson::Int32(1));
        refused::<NonZeroI8>(Bson::Int32(0));
        refused::<NonZeroI64>(Bson::Int64(0));
        refused::<NonZeroI16>(Bson::Int32(40_000));
    }

    #[test]
    fn ip_and_socket_addresses_are_octet_arrays_through_the_driver() {
        let v4 = Ipv4Addr::new(10, 0, 0, 1);
        let v6 = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1);
        assert_eq!(check(v4), Bson::from(vec![10, 0, 0, 1]));
        assert!(matches!(check(v6), Bson::Array(a) if a.len() == 16));
        assert!(matches!(check(IpAddr::V4(v4)), Bson::Document(d) if d.contains_key("V4")));
        assert!(matches!(check(IpAddr::V6(v6)), Bson::Document(d) if d.contains_key("V6")));
        let socket = SocketAddrV4::new(v4, 8080);
        assert_eq!(
            check(socket),
            Bson::from(vec![Bson::from(vec![10, 0, 0, 1]), Bson::Int32(8080)])
        );
        check(SocketAddrV6::new(v6, 443, 0, 0));
        check(SocketAddr::V4(socket));
        check(SocketAddr::V6(SocketAddrV6::new(v6, 1, 0, 0)));
        // the human-readable path writes a string instead
        assert_eq!(
            crate::bson_compat::to_bson(&v4).unwrap(),
            Bson::from("10.0.0.1")
        );
        refused::<Ipv4Addr>(Bson::from("10.0.0.1"));
        refused::<Ipv4Addr>(Bson::from(vec![10, 0, 0, 256]));
        refused::<IpAddr>(mongodb::bson::bson!({ "V5": [1, 2, 3, 4] }));
        refused::<SocketAddrV4>(Bson::from(vec![Bson::from(vec![1, 2, 3, 4])]));
    }

    #[test]
    fn durations_and_system_times_are_documents_of_seconds_and_nanoseconds() {
        use std::time::{Duration, SystemTime, UNIX_EPOCH};

        let max = Duration::new(i64::MAX as u64, 999_999_999);
        assert_eq!(
            check(max),
            Bson::Document(mongodb::bson::doc! { "secs": i64::MAX, "nanos": 999_999_999_i64 })
        );
        check(Duration::ZERO);
        check(UNIX_EPOCH + Duration::new(1_700_000_000, 5));
        check(SystemTime::now());
        refused::<Duration>(Bson::Document(mongodb::bson::doc! { "secs": 1_i64 }));
        refused::<Duration>(Bson::Document(
            mongodb::bson::doc! { "secs": 1_i64, "nanos": 1_000_000_000_i64 },
        ));
        refused::<SystemTime>(Bson::DateTime(mongodb::bson::DateTime::now()));
        // out of range: nothing reaches the server
        let too_long = Duration::new(u64::MAX, 0);
        #[derive(Serialize)]
        struct Field {
            v: Duration,
        }
        assert!(crate::bson_compat::to_raw_document_buf(&Field { v: too_long }).is_err());
    }

    #[cfg(feature = "chrono-0_4")]
    #[test]
    fn chrono_types_are_strings_whatever_the_serializer() {
        use chrono::{DateTime, FixedOffset, NaiveDate, NaiveDateTime, NaiveTime, TimeZone, Utc};

        let max = DateTime::<Utc>::MAX_UTC;
        let min = DateTime::<Utc>::MIN_UTC;
        let nanos = Utc.timestamp_opt(1_700_000_000, 123_456_789).unwrap();
        let leap = NaiveDate::from_ymd_opt(2016, 12, 31)
            .unwrap()
            .and_hms_nano_opt(23, 59, 59, 1_999_999_999)
            .unwrap();
        let offsets = [
            FixedOffset::east_opt(23 * 3600 + 59 * 60).unwrap(),
            FixedOffset::west_opt(23 * 3600 + 59 * 60).unwrap(),
            FixedOffset::east_opt(0).unwrap(),
        ];
        let far = Utc.with_ymd_and_hms(123_456, 1, 1, 0, 0, 0).unwrap();
        let before = Utc.with_ymd_and_hms(-123_456, 1, 1, 0, 0, 0).unwrap();
        for utc in [
            max,
            min,
            nanos,
            far,
            before,
            Utc.timestamp_opt(0, 0).unwrap(),
            leap.and_utc(),
        ] {
            let stored = check(utc);
            assert!(matches!(stored, Bson::String(_)), "{stored}");
            if utc != max && utc != min {
                for offset in offsets {
                    check(utc.with_timezone(&offset));
                }
            }
            check(utc.fixed_offset());
            check(utc.naive_utc());
            check(utc.date_naive());
            check(utc.time());
        }
        assert_eq!(check(max), Bson::from("+262142-12-31T23:59:59.999999999Z"));
        assert_eq!(
            check(NaiveTime::from_hms_opt(1, 2, 3).unwrap()),
            Bson::from("01:02:03")
        );
        assert_eq!(
            check(NaiveDateTime::MIN.date()),
            Bson::from("-262143-01-01")
        );
        refused::<DateTime<Utc>>(Bson::from("2023-11-14T22:13:20+01:00"));
        refused::<DateTime<Utc>>(Bson::from("2023-11-14 22:13:20Z"));
        refused::<DateTime<FixedOffset>>(Bson::from("2023-11-14T22:13:20"));
        refused::<NaiveDate>(Bson::from("14.11.2023"));
        refused::<NaiveTime>(Bson::from("1:02:03"));
        refused::<NaiveDateTime>(Bson::DateTime(mongodb::bson::DateTime::now()));
    }

    #[cfg(feature = "time-0_3")]
    #[test]
    fn time_types_are_tuples_through_the_driver() {
        use time::{Date, OffsetDateTime, PrimitiveDateTime, Time, UtcOffset};

        let offset = UtcOffset::from_hms(-25, -59, -59).unwrap();
        let nanos = OffsetDateTime::from_unix_timestamp_nanos(1_700_000_000_123_456_789).unwrap();
        for value in [
            nanos,
            PrimitiveDateTime::MAX.assume_offset(offset),
            PrimitiveDateTime::MIN.assume_offset(UtcOffset::from_hms(25, 59, 59).unwrap()),
            OffsetDateTime::UNIX_EPOCH,
        ] {
            let stored = check(value);
            assert!(
                matches!(&stored, Bson::Array(a) if a.len() == 9 && matches!(a[5], Bson::Int64(_))),
                "{stored}"
            );
            check(value.date());
            check(value.time());
            check(value.offset());
            check(PrimitiveDateTime::new(value.date(), value.time()));
        }
        assert_eq!(
            check(Date::from_ordinal_date(2024, 366).unwrap()),
            Bson::from(vec![2024, 366])
        );
        assert_eq!(
            check(Time::MIDNIGHT),
            Bson::from(vec![
                Bson::Int32(0),
                Bson::Int32(0),
                Bson::Int32(0),
                Bson::Int64(0)
            ])
        );
        refused::<Date>(Bson::from(vec![2024, 0]));
        refused::<Time>(Bson::from(vec![
            Bson::Int32(24),
            Bson::Int32(0),
            Bson::Int32(0),
            Bson::Int64(0),
        ]));
        refused::<Time>(Bson::from(vec![0, 0, 0, 0]));
        refused::<OffsetDateTime>(Bson::DateTime(mongodb::bson::DateTime::now()));
        refused::<PrimitiveDateTime>(Bson::from(vec![2024, 1]));
    }

    #[cfg(feature = "uuid-1")]
    #[test]
    fn uuid_is_generic_binary_through_the_driver_and_a_string_through_to_document() {
        let id = uuid::Uuid::from_u128(0x1234_5678_9abc_def0_1234_5678_9abc_def0);
        match check(id) {
            Bson::Binary(b) => {
                assert_eq!(b.subtype, mongodb::bson::spec::BinarySubtype::Generic);
                assert_eq!(b.bytes, id.as_bytes());
            }
            other => panic!("{other}"),
        }
        assert_eq!(
            crate::bson_compat::to_bson(&id).unwrap(),
            Bson::from("12345678-9abc-def0-1234-56789abcdef0")
        );
        refused::<uuid::Uuid>(Bson::from(id.to_string()));
    }

    #[cfg(feature = "rust_decimal-1")]
    #[test]
    fn decimal_is_its_string() {
        use rust_decimal::Decimal;

        for value in [
            Decimal::MAX,
            Decimal::MIN,
            Decimal::new(1, 28),
            Decimal::new(-1, 28),
            Decimal::from_i128_with_scale(-79_228_162_514_264_337_593_543_950_335, 28),
            Decimal::ZERO,
            Decimal::new(-12_345, 3),
        ] {
            assert!(matches!(check(value), Bson::String(_)));
        }
        assert_eq!(check(Decimal::new(-12_345, 3)), Bson::from("-12.345"));
        refused::<Decimal>(Bson::from("1e5"));
        refused::<Decimal>(Bson::from(1.5));
        refused::<Decimal>(Bson::from("12."));
    }
}
