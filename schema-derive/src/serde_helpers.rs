//! The serde helpers whose stored shape is known without an annotation: the bson crate's
//! `serde_helpers` modules and functions (bson 2.x), its converter types (bson 3.x, used with
//! `with` or through serde_with's `#[serde_as]`), bson 2's `DateTime` and `Uuid` as serde_with
//! converters, chrono's `ts_*` timestamps, and `serde_bytes`.
//!
//! A helper is recognised by the last segment(s) of its path, whatever the prefix
//! (`bson::serde_helpers::u32_as_f64`, `mongodb::bson::serde_helpers::u32_as_f64`, or a `use`d
//! `u32_as_f64`). `recognise` answers the type whose `BsonSchema` describes what the helper
//! writes; where no Rust type fits, a marker of `mongo_schema::__private::stored`. Each shape
//! was found by serializing values through the driver's raw serializer (see the tests of
//! `schema-core/src/model/stored.rs` and `tests/ecosystem.rs`).

use proc_macro2::TokenStream;
use quote::quote;
use syn::{GenericArgument, Path, PathArguments, Type};

/// What a helper stores, as a type whose `BsonSchema` describes it.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Stored {
    /// A BSON date.
    Date,
    /// A BSON date or `null` (`chrono_datetime_as_bson_datetime_optional`).
    OptionalDate,
    /// An RFC 3339 string of a BSON date.
    Rfc3339String,
    /// A BSON `objectId`.
    ObjectId,
    /// The hex string of an `ObjectId`.
    ObjectIdHex,
    /// A `double` holding a `u32`.
    DoubleFromU32,
    /// A `double` holding a `u64`.
    DoubleFromU64,
    /// An `int` holding an unsigned integer.
    Int32FromUnsigned,
    /// A `long` holding a `u32` (what bson writes for a `u32`).
    U32,
    /// A `long` holding a `u64` that fits.
    U64,
    /// A BSON timestamp.
    Timestamp,
    /// Binary data (any subtype).
    Binary,
    /// A `long` (chrono's `ts_*` timestamps).
    I64,
    /// A `long` or `null` (chrono's `ts_*_option` timestamps).
    OptionalI64,
    /// A BSON `decimal` (`mongo_schema::serde_helpers::rust_decimal_as_decimal128`).
    Decimal128,
    /// A BSON `decimal` or `null` (`rust_decimal_as_decimal128_optional`).
    OptionalDecimal128,
}

impl Stored {
    fn tokens(self) -> TokenStream {
        let private = crate::gen::private_path();
        match self {
            Stored::Date => quote!(#private::bson::DateTime),
            Stored::OptionalDate => quote!(::core::option::Option<#private::bson::DateTime>),
            Stored::Rfc3339String => quote!(#private::stored::Rfc3339UtcString),
            Stored::ObjectId => quote!(#private::bson::oid::ObjectId),
            Stored::ObjectIdHex => quote!(#private::stored::ObjectIdHex),
            Stored::DoubleFromU32 => quote!(#private::stored::DoubleFromU32),
            Stored::DoubleFromU64 => quote!(#private::stored::DoubleFromU64),
            Stored::Int32FromUnsigned => quote!(#private::stored::Int32FromUnsigned),
            Stored::U32 => quote!(u32),
            Stored::U64 => quote!(u64),
            Stored::Timestamp => quote!(#private::bson::Timestamp),
            Stored::Binary => quote!(#private::bson::Binary),
            Stored::I64 => quote!(i64),
            Stored::OptionalI64 => quote!(::core::option::Option<i64>),
            Stored::Decimal128 => quote!(#private::bson::Decimal128),
            Stored::OptionalDecimal128 => {
                quote!(::core::option::Option<#private::bson::Decimal128>)
            }
        }
    }
}

/// bson 2.x: the modules of `bson::serde_helpers` (used with `with`, or their `serialize`
/// with `serialize_with`) and the functions it exports (used with `serialize_with`).
fn bson_2(name: &str) -> Option<Stored> {
    let name = name.strip_prefix("serialize_").unwrap_or(name);
    Some(match name {
        "chrono_datetime_as_bson_datetime"
        | "rfc3339_string_as_bson_datetime"
        | "i64_as_bson_datetime"
        | "time_0_3_offsetdatetime_as_bson_datetime" => Stored::Date,
        "chrono_datetime_as_bson_datetime_optional" => Stored::OptionalDate,
        "bson_datetime_as_rfc3339_string" => Stored::Rfc3339String,
        "hex_string_as_object_id" => Stored::ObjectId,
        "object_id_as_hex_string" => Stored::ObjectIdHex,
        "u32_as_f64" => Stored::DoubleFromU32,
        "u64_as_f64" => Stored::DoubleFromU64,
        "u32_as_i32" | "u64_as_i32" => Stored::Int32FromUnsigned,
        "u32_as_i64" | "timestamp_as_u32" => Stored::U32,
        "u64_as_i64" => Stored::U64,
        "u32_as_timestamp" => Stored::Timestamp,
        "uuid_1_as_binary"
        | "uuid_1_as_c_sharp_legacy_binary"
        | "uuid_1_as_java_legacy_binary"
        | "uuid_1_as_python_legacy_binary"
        | "uuid_as_binary"
        | "uuid_as_c_sharp_legacy_binary"
        | "uuid_as_java_legacy_binary"
        | "uuid_as_python_legacy_binary" => Stored::Binary,
        _ => return None,
    })
}

/// chrono's `serde::ts_*` modules (also `naive::serde::ts_*`): the timestamp as an `i64`.
fn chrono(name: &str) -> Option<Stored> {
    let (unit, option) = match name.strip_suffix("_option") {
        Some(unit) => (unit, true),
        None => (name, false),
    };
    match unit {
        "ts_seconds" | "ts_milliseconds" | "ts_microseconds" | "ts_nanoseconds" => {
            Some(if option {
                Stored::OptionalI64
            } else {
                Stored::I64
            })
        }
        _ => None,
    }
}

/// This crate's own helpers (`mongo_schema::serde_helpers`).
fn own(name: &str) -> Option<Stored> {
    match name {
        "rust_decimal_as_decimal128" => Some(Stored::Decimal128),
        "rust_decimal_as_decimal128_optional" => Some(Stored::OptionalDecimal128),
        _ => None,
    }
}

/// bson 3.x: the converter types of `bson::serde_helpers::<module>`, named by `module::Type`;
/// without the module (a `use`d `AsF64`), the field's own type tells `u32` from `u64`.
fn bson_3(module: Option<&str>, name: &str, field: Option<&str>) -> Option<Stored> {
    let module = module.or(match name {
        "AsHexString" | "FromHexString" => Some("object_id"),
        "AsRfc3339String"
        | "FromRfc3339String"
        | "FromI64"
        | "FromChrono04DateTime"
        | "FromJiff02Timestamp"
        | "FromTime03OffsetDateTime" => Some("datetime"),
        "AsBinary"
        | "AsCSharpLegacyBinary"
        | "AsJavaLegacyBinary"
        | "AsPythonLegacyBinary"
        | "FromBson" => Some("uuid_1"),
        "AsF64" | "AsI32" | "AsI64" => field,
        "AsU32" | "FromU32" => Some("timestamp"),
        _ => None,
    })?;
    Some(match (module, name) {
        ("object_id", "AsHexString") => Stored::ObjectIdHex,
        ("object_id", "FromHexString") => Stored::ObjectId,
        ("datetime", "AsRfc3339String") => Stored::Rfc3339String,
        (
            "datetime",
            "FromRfc3339String"
            | "FromI64"
            | "FromChrono04DateTime"
            | "FromJiff02Timestamp"
            | "FromTime03OffsetDateTime",
        ) => Stored::Date,
        ("timestamp", "AsU32") => Stored::U32,
        ("timestamp", "FromU32") => Stored::Timestamp,
        ("u32", "AsF64") => Stored::DoubleFromU32,
        ("u64", "AsF64") => Stored::DoubleFromU64,
        ("u32" | "u64", "AsI32") => Stored::Int32FromUnsigned,
        ("u32", "AsI64") => Stored::U32,
        ("u64", "AsI64") => Stored::U64,
        // `FromBson` stores a `uuid::Uuid`: binary through the driver's serializer
        (
            "uuid_1",
            "AsBinary"
            | "AsCSharpLegacyBinary"
            | "AsJavaLegacyBinary"
            | "AsPythonLegacyBinary"
            | "FromBson",
        ) => Stored::Binary,
        _ => return None,
    })
}

/// The identifiers of a path's segments.
fn names(path: &Path) -> Vec<String> {
    path.segments.iter().map(|s| s.ident.to_string()).collect()
}

/// The last identifier of a type's path (`Option`, `u32`, `Vec`), if it is a path.
/// The last segment's name of a type's path (`Decimal` of `rust_decimal::Decimal`).
pub fn type_last_name(ty: &Type) -> Option<String> {
    last_name(ty)
}

fn last_name(ty: &Type) -> Option<String> {
    match ty {
        Type::Path(path) => path.path.segments.last().map(|s| s.ident.to_string()),
        Type::Group(group) => last_name(&group.elem),
        Type::Paren(paren) => last_name(&paren.elem),
        _ => None,
    }
}

/// The only type argument of the last segment of `ty`'s path (`T` of `Option<T>`).
fn only_argument(ty: &Type) -> Option<&Type> {
    let Type::Path(path) = ty else { return None };
    let PathArguments::AngleBracketed(args) = &path.path.segments.last()?.arguments else {
        return None;
    };
    match args.args.iter().collect::<Vec<_>>().as_slice() {
        [GenericArgument::Type(inner)] => Some(inner),
        _ => None,
    }
}

/// A serde_with `As::<T>` path (`::serde_with::As::<T>`, `...::As::<T>::serialize`): its `T`.
fn serde_as(path: &Path) -> Option<&Type> {
    path.segments.iter().find_map(|segment| {
        if segment.ident != "As" {
            return None;
        }
        match &segment.arguments {
            PathArguments::AngleBracketed(args) => match args.args.first()? {
                GenericArgument::Type(ty) if args.args.len() == 1 => Some(ty),
                _ => None,
            },
            _ => None,
        }
    })
}

/// The converter named by `converter` (the `T` of `As::<T>`) for a field of type `field`:
/// `Option<C>` on an `Option` field is `C`'s shape or `null`.
fn converter(converter: &Type, field: &Type) -> Option<TokenStream> {
    if last_name(converter).as_deref() == Some("Option") {
        let inner = converter_shape(only_argument(converter)?, only_argument(field)?)?;
        return Some(quote!(::core::option::Option<#inner>));
    }
    converter_shape(converter, field)
}

fn converter_shape(converter: &Type, field: &Type) -> Option<TokenStream> {
    let Type::Path(path) = converter else {
        return None;
    };
    let names = names(&path.path);
    let (module, name) = match names.as_slice() {
        [.., module, name] => (Some(module.as_str()), name.as_str()),
        [name] => (None, name.as_str()),
        [] => return None,
    };
    let field = last_name(field);
    bson_2_serde_with(module, name)
        .or_else(|| bson_3(module, name, field.as_deref()))
        .or_else(|| bson_2(name))
        .map(Stored::tokens)
}

/// bson 2's own types as serde_with converters (its `serde_with-3` feature):
/// `#[serde_as(as = "bson::DateTime")]` on a chrono or time date stores a BSON date,
/// `#[serde_as(as = "bson::Uuid")]` on a `uuid::Uuid` binary of subtype 4. Only these types
/// implement `SerializeAs`, so a bare `DateTime` or `Uuid` is bson's.
fn bson_2_serde_with(module: Option<&str>, name: &str) -> Option<Stored> {
    match (module, name) {
        (None | Some("bson"), "DateTime") => Some(Stored::Date),
        (None | Some("bson" | "uuid"), "Uuid") => Some(Stored::Binary),
        _ => None,
    }
}

/// The type whose `BsonSchema` describes what `#[serde(with = "<path>")]` (or `serialize_with`)
/// writes for a field of type `ty`, when the helper is one the derive knows; `None` otherwise.
pub fn recognise(path: &str, ty: &syn::Type) -> Option<TokenStream> {
    let path: Path = syn::parse_str(path).ok()?;
    if let Some(inner) = serde_as(&path) {
        return converter(inner, ty);
    }
    let mut names = names(&path);
    // `serialize_with = "<module>::serialize"`
    if names.len() > 1 && names.last().map(String::as_str) == Some("serialize") {
        names.pop();
    }
    let name = names.last()?.as_str();
    if name == "serde_bytes" {
        // binary, generic subtype, whatever holds the bytes; `None` of an `Option` is null
        let binary = Stored::Binary.tokens();
        return Some(match last_name(ty).as_deref() {
            Some("Option") => quote!(::core::option::Option<#binary>),
            _ => binary,
        });
    }
    let module = names.len().checked_sub(2).map(|i| names[i].as_str());
    let field = last_name(ty);
    bson_2(name)
        .or_else(|| bson_3(module, name, field.as_deref()))
        .or_else(|| chrono(name))
        .or_else(|| own(name))
        .map(Stored::tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(path: &str, ty: &str) -> Option<String> {
        let ty: Type = syn::parse_str(ty).unwrap();
        recognise(path, &ty).map(|tokens| tokens.to_string().replace(' ', ""))
    }

    const P: &str = "::mongo_schema::__private::";

    fn private(name: &str) -> Option<String> {
        Some(format!("{P}{name}"))
    }

    fn optional(name: &str) -> Option<String> {
        Some(format!("::core::option::Option<{P}{name}>"))
    }

    #[test]
    fn bson_2_modules_whatever_the_prefix() {
        for prefix in [
            "",
            "bson::serde_helpers::",
            "mongodb::bson::serde_helpers::",
            "::mongodb::bson::serde_helpers::",
            "mongo_schema::bson::serde_helpers::",
        ] {
            let module = |m: &str| format!("{prefix}{m}");
            let with = |m: &str, ty: &str| shape(&module(m), ty);
            let serialize = |m: &str, ty: &str| shape(&format!("{}::serialize", module(m)), ty);
            let date = private("bson::DateTime");
            for (m, ty) in [
                ("chrono_datetime_as_bson_datetime", "chrono::DateTime<Utc>"),
                ("rfc3339_string_as_bson_datetime", "String"),
                ("i64_as_bson_datetime", "i64"),
                ("time_0_3_offsetdatetime_as_bson_datetime", "OffsetDateTime"),
            ] {
                assert_eq!(with(m, ty), date, "{m}");
                assert_eq!(serialize(m, ty), date, "{m}");
            }
            assert_eq!(
                with(
                    "chrono_datetime_as_bson_datetime_optional",
                    "Option<DateTime<Utc>>"
                ),
                optional("bson::DateTime")
            );
            assert_eq!(
                with("bson_datetime_as_rfc3339_string", "DateTime"),
                private("stored::Rfc3339UtcString")
            );
            assert_eq!(
                with("hex_string_as_object_id", "String"),
                private("bson::oid::ObjectId")
            );
            assert_eq!(with("u32_as_f64", "u32"), private("stored::DoubleFromU32"));
            assert_eq!(with("u64_as_f64", "u64"), private("stored::DoubleFromU64"));
            assert_eq!(with("u32_as_timestamp", "u32"), private("bson::Timestamp"));
            assert_eq!(with("timestamp_as_u32", "Timestamp"), Some("u32".into()));
            for m in [
                "uuid_1_as_binary",
                "uuid_1_as_c_sharp_legacy_binary",
                "uuid_1_as_java_legacy_binary",
                "uuid_1_as_python_legacy_binary",
                "uuid_as_binary",
                "uuid_as_python_legacy_binary",
            ] {
                assert_eq!(with(m, "Uuid"), private("bson::Binary"), "{m}");
            }
        }
    }

    #[test]
    fn bson_2_functions_for_serialize_with() {
        for prefix in [
            "",
            "bson::serde_helpers::",
            "mongodb::bson::serde_helpers::",
        ] {
            let f = |name: &str, ty: &str| shape(&format!("{prefix}{name}"), ty);
            let int32 = private("stored::Int32FromUnsigned");
            assert_eq!(f("serialize_u32_as_i32", "u32"), int32);
            assert_eq!(f("serialize_u64_as_i32", "u64"), int32);
            assert_eq!(f("serialize_u32_as_i64", "u32"), Some("u32".into()));
            assert_eq!(f("serialize_u64_as_i64", "u64"), Some("u64".into()));
            assert_eq!(
                f("serialize_object_id_as_hex_string", "ObjectId"),
                private("stored::ObjectIdHex")
            );
            assert_eq!(
                f("serialize_hex_string_as_object_id", "String"),
                private("bson::oid::ObjectId")
            );
            assert_eq!(
                f("serialize_bson_datetime_as_rfc3339_string", "DateTime"),
                private("stored::Rfc3339UtcString")
            );
            assert_eq!(
                f("serialize_rfc3339_string_as_bson_datetime", "String"),
                private("bson::DateTime")
            );
            assert_eq!(
                f(
                    "serialize_chrono_datetime_as_bson_datetime",
                    "DateTime<Utc>"
                ),
                private("bson::DateTime")
            );
            assert_eq!(
                f("serialize_u32_as_f64", "u32"),
                private("stored::DoubleFromU32")
            );
            assert_eq!(
                f("serialize_uuid_1_as_binary", "Uuid"),
                private("bson::Binary")
            );
            assert_eq!(
                f("serialize_timestamp_as_u32", "Timestamp"),
                Some("u32".into())
            );
        }
    }

    #[test]
    fn serde_bytes_is_binary_and_nullable_in_an_option() {
        let binary = private("bson::Binary");
        for ty in [
            "Vec<u8>",
            "[u8; 16]",
            "ByteBuf",
            "serde_bytes::ByteBuf",
            "Box<[u8]>",
        ] {
            assert_eq!(shape("serde_bytes", ty), binary, "{ty}");
            assert_eq!(shape("::serde_bytes", ty), binary, "{ty}");
            assert_eq!(shape("serde_bytes::serialize", ty), binary, "{ty}");
        }
        for ty in ["Option<Vec<u8>>", "std::option::Option<[u8; 4]>"] {
            assert_eq!(shape("serde_bytes", ty), optional("bson::Binary"), "{ty}");
        }
    }

    /// The attribute `#[serde_as(as = "...")]` becomes, as serde_with's macro writes it
    /// (`quote!(...).to_string()`, spaces included).
    fn serde_as(converter: &str) -> String {
        let ty: Type = syn::parse_str(converter).unwrap();
        quote!(::serde_with::As::<#ty>).to_string()
    }

    #[test]
    fn bson_3_converters_through_serde_as_and_with() {
        let cases = [
            (
                "object_id::AsHexString",
                "ObjectId",
                private("stored::ObjectIdHex"),
            ),
            (
                "object_id::FromHexString",
                "String",
                private("bson::oid::ObjectId"),
            ),
            (
                "datetime::AsRfc3339String",
                "DateTime",
                private("stored::Rfc3339UtcString"),
            ),
            (
                "datetime::FromRfc3339String",
                "String",
                private("bson::DateTime"),
            ),
            ("datetime::FromI64", "i64", private("bson::DateTime")),
            (
                "datetime::FromChrono04DateTime",
                "chrono::DateTime<chrono::Utc>",
                private("bson::DateTime"),
            ),
            (
                "datetime::FromJiff02Timestamp",
                "jiff::Timestamp",
                private("bson::DateTime"),
            ),
            (
                "datetime::FromTime03OffsetDateTime",
                "time::OffsetDateTime",
                private("bson::DateTime"),
            ),
            ("timestamp::AsU32", "Timestamp", Some("u32".into())),
            ("timestamp::FromU32", "u32", private("bson::Timestamp")),
            ("u32::AsF64", "u32", private("stored::DoubleFromU32")),
            ("u64::AsF64", "u64", private("stored::DoubleFromU64")),
            ("u32::AsI32", "u32", private("stored::Int32FromUnsigned")),
            ("u64::AsI32", "u64", private("stored::Int32FromUnsigned")),
            ("u32::AsI64", "u32", Some("u32".into())),
            ("u64::AsI64", "u64", Some("u64".into())),
            ("uuid_1::AsBinary", "Uuid", private("bson::Binary")),
            (
                "uuid_1::AsCSharpLegacyBinary",
                "Uuid",
                private("bson::Binary"),
            ),
            (
                "uuid_1::AsJavaLegacyBinary",
                "Uuid",
                private("bson::Binary"),
            ),
            (
                "uuid_1::AsPythonLegacyBinary",
                "Uuid",
                private("bson::Binary"),
            ),
            ("uuid_1::FromBson", "bson::Uuid", private("bson::Binary")),
        ];
        for (converter, field, expected) in cases {
            for prefix in [
                "",
                "bson::serde_helpers::",
                "mongodb::bson::serde_helpers::",
            ] {
                let full = format!("{prefix}{converter}");
                // `#[serde(with = "datetime::FromI64")]`: the converter type is the module
                assert_eq!(shape(&full, field), expected, "with {full}");
                // `#[serde_as(as = "...")]`, rewritten by `#[serde_as]`
                assert_eq!(shape(&serde_as(&full), field), expected, "as {full}");
                assert_eq!(
                    shape(&format!("{}::serialize", serde_as(&full)), field),
                    expected,
                    "serialize_as {full}"
                );
                // `Option<C>` on an `Option` field: nullable
                let option = format!("Option<{full}>");
                let field = format!("Option<{field}>");
                let nullable = expected
                    .as_ref()
                    .map(|e| format!("::core::option::Option<{e}>"));
                assert_eq!(shape(&serde_as(&option), &field), nullable, "as {option}");
            }
        }
        // the exact string serde_with 3 writes
        assert_eq!(
            serde_as("Option<datetime::FromChrono04DateTime>"),
            ":: serde_with :: As :: < Option < datetime :: FromChrono04DateTime > >"
        );
        // bson 2's types as converters (its `serde_with-3` feature)
        for (converter, field, expected) in [
            (
                "bson::DateTime",
                "chrono::DateTime<Utc>",
                private("bson::DateTime"),
            ),
            (
                "mongodb::bson::DateTime",
                "time::OffsetDateTime",
                private("bson::DateTime"),
            ),
            ("DateTime", "DateTime<Utc>", private("bson::DateTime")),
            ("bson::Uuid", "uuid::Uuid", private("bson::Binary")),
            ("bson::uuid::Uuid", "Uuid", private("bson::Binary")),
        ] {
            assert_eq!(shape(&serde_as(converter), field), expected, "{converter}");
        }
        assert_eq!(
            shape(&serde_as("Option<bson::DateTime>"), "Option<DateTime<Utc>>"),
            optional("bson::DateTime")
        );
        // not a converter outside `serde_as`, nor from another crate
        assert_eq!(shape("bson::DateTime", "DateTime"), None);
        assert_eq!(shape(&serde_as("chrono::DateTime"), "DateTime"), None);
        // a bare `AsF64` (imported) is told apart by the field's type
        assert_eq!(
            shape(&serde_as("AsF64"), "u64"),
            private("stored::DoubleFromU64")
        );
        assert_eq!(shape(&serde_as("AsI64"), "u32"), Some("u32".into()));
    }

    #[test]
    fn chrono_timestamps_are_longs() {
        for prefix in ["", "chrono::serde::", "::chrono::naive::serde::"] {
            for unit in ["seconds", "milliseconds", "microseconds", "nanoseconds"] {
                let module = format!("{prefix}ts_{unit}");
                assert_eq!(shape(&module, "DateTime<Utc>"), Some("i64".into()));
                assert_eq!(
                    shape(&format!("{module}::serialize"), "NaiveDateTime"),
                    Some("i64".into())
                );
                assert_eq!(
                    shape(&format!("{module}_option"), "Option<DateTime<Utc>>"),
                    Some("::core::option::Option<i64>".into())
                );
            }
        }
    }

    #[test]
    fn unknown_helpers_stay_unknown() {
        for (path, ty) in [
            ("my_helpers::as_string", "u32"),
            ("serialize", "u32"),
            ("chrono::serde::ts_hours", "DateTime<Utc>"),
            ("", "u32"),
            ("not a path", "u32"),
            ("u32_as_f64_but_mine", "u32"),
            ("AsF64", "f32"),
            ("mine::AsHexString", "ObjectId"),
        ] {
            assert_eq!(shape(path, ty), None, "{path}");
        }
        // serde_with's own adapters are not bson's: their shape is not known
        for converter in [
            "DisplayFromStr",
            "Vec<datetime::FromI64>",
            "serde_with::Same",
        ] {
            let path = serde_as(converter);
            assert_eq!(shape(&path, "u32"), None, "{converter}");
        }
    }

    #[test]
    fn the_crate_s_decimal_helpers_store_a_bson_decimal() {
        for prefix in [
            "",
            "mongo_schema::serde_helpers::",
            "::mongo_schema::serde_helpers::",
        ] {
            let with = format!("{prefix}rust_decimal_as_decimal128");
            assert_eq!(shape(&with, "Decimal"), private("bson::Decimal128"));
            assert_eq!(
                shape(&format!("{with}::serialize"), "rust_decimal::Decimal"),
                private("bson::Decimal128")
            );
            assert_eq!(
                shape(&format!("{with}_optional"), "Option<Decimal>"),
                optional("bson::Decimal128")
            );
        }
        assert_eq!(
            shape("rust_decimal_as_decimal128_but_mine", "Decimal"),
            None
        );
    }
}
