//! The `$jsonSchema` description of Rust types, and the bounds on arrays and maps.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};

use mongodb::bson::{doc, oid::ObjectId, Binary, Bson, DateTime, Decimal128, Document, Timestamp};

use crate::json_schema;

/// A type whose stored BSON shape can be described as a `$jsonSchema` fragment.
///
/// Derive it with `#[derive(BsonSchema)]` on structs and unit-only enums stored inside documents;
/// `#[derive(Document)]` implements it for collection roots. It is implemented here for the
/// scalar std and bson types a document holds, for `Option<T>` (nullable), `Box<T>` and
/// fixed-size arrays `[T; N]` (bounded by their length).
///
/// Growable arrays and maps (`Vec<T>`, `HashMap<K, V>`, ...) deliberately do **not** describe
/// themselves: an array without a bound is the mistake this library exists to prevent. A field of
/// such a type takes its bound from `#[embed(max = N)]` through [`BoundedCollection`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no `$jsonSchema` description",
    label = "`{Self}` does not implement `BsonSchema`",
    note = "derive it: `#[derive(BsonSchema)]` for a value stored inside documents, `#[derive(Document)]` for a collection root",
    note = "if it is an array, set or map (perhaps behind a type alias), it is unbounded: bound the field with `#[embed(max = N)]`, store ids with `#[reference]`, or keep a capped copy with `#[subset(...)]`"
)]
pub trait BsonSchema {
    /// The `$jsonSchema` fragment that every serialized value of this type satisfies.
    fn bson_schema() -> Document;

    /// `true` for collection roots (`#[derive(Document)]`), which must not be embedded.
    #[doc(hidden)]
    const __COLLECTION_ROOT: bool = false;

    /// `true` for `uuid::Uuid` (and `Option`s of it), which serde stores as binary subtype 0
    /// where `doc!`, mongosh and the other drivers write subtype 4: a field of it needs a helper
    /// or `stored_as` (checked by the derives).
    #[doc(hidden)]
    const __GENERIC_UUID: bool = false;
}

/// Never implemented: a bound that growable collections would need to describe themselves.
///
/// It exists so that an unbounded `Vec`, map or set in a place no attribute can reach (a type
/// alias, `Vec<Vec<T>>`, a generic argument) is a compile error that explains itself.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is unbounded: an array or map needs an explicit bound",
    label = "unbounded array or map",
    note = "bound the field with `#[embed(max = N)]`, store ids of another collection with `#[reference]`, or keep a capped copy of children with `#[subset(...)]`"
)]
pub trait Unbounded {}

/// An array or map whose bound is given by the field attribute `#[embed(max = N)]`.
///
/// Produces `{ bsonType: "array", maxItems: N, items: ... }` for sequences and
/// `{ bsonType: "object", maxProperties: N, additionalProperties: ... }` for maps.
#[diagnostic::on_unimplemented(
    message = "`#[embed(max = N)]` bounds an array or a map, but `{Self}` is neither",
    label = "not an array or map",
    note = "use `#[embed(max = N)]` on `Vec<T>`, `VecDeque<T>`, sets, `[T; N]` or maps with string keys (optionally inside `Option`)"
)]
pub trait BoundedCollection {
    /// The schema of this collection type holding at most `max` elements.
    fn bounded_schema(max: u64) -> Document;

    /// `true` when the elements are collection roots (`#[derive(Document)]`).
    #[doc(hidden)]
    const __ELEMENT_COLLECTION_ROOT: bool;

    /// `true` when the elements are `uuid::Uuid`s without a helper (see
    /// [`BsonSchema::__GENERIC_UUID`]).
    #[doc(hidden)]
    const __ELEMENT_GENERIC_UUID: bool = false;
}

/// A map key type: serialized as a BSON field name.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a key of a map stored in BSON",
    note = "BSON field names are strings: use `String` keys"
)]
pub trait MapKey {}
impl MapKey for String {}
impl MapKey for &str {}
impl MapKey for std::borrow::Cow<'_, str> {}

macro_rules! scalar {
    ($($ty:ty => $schema:expr;)*) => {$(
        impl BsonSchema for $ty {
            fn bson_schema() -> Document { $schema }
        }
    )*};
}

fn bson_type(name: &str) -> Document {
    doc! { "bsonType": name }
}

fn int_range(name: &str, min: i64, max: i64) -> Document {
    doc! { "bsonType": name, "minimum": min, "maximum": max }
}

scalar! {
    String => bson_type("string");
    str => bson_type("string");
    char => doc! { "bsonType": "string", "minLength": 1_i64, "maxLength": 1_i64 };
    bool => bson_type("bool");
    i8 => int_range("int", i8::MIN.into(), i8::MAX.into());
    i16 => int_range("int", i16::MIN.into(), i16::MAX.into());
    i32 => bson_type("int");
    u8 => int_range("int", 0, u8::MAX.into());
    u16 => int_range("int", 0, u16::MAX.into());
    i64 => bson_type("long");
    // bson writes u32 as int64, and u64/usize as int64 when they fit (larger values fail to
    // serialize, so they never reach the server)
    u32 => int_range("long", 0, u32::MAX.into());
    u64 => int_range("long", 0, i64::MAX);
    usize => int_range("long", 0, i64::MAX);
    f32 => bson_type("double");
    f64 => bson_type("double");
    ObjectId => bson_type("objectId");
    DateTime => bson_type("date");
    Decimal128 => bson_type("decimal");
    Binary => bson_type("binData");
    Timestamp => bson_type("timestamp");
    Document => bson_type("object");
    mongodb::bson::Uuid => bson_type("binData");
    mongodb::bson::Regex => bson_type("regex");
    // any BSON value: no constraint
    Bson => Document::new();
    () => bson_type("null");
}

impl BsonSchema for std::borrow::Cow<'_, str> {
    fn bson_schema() -> Document {
        bson_type("string")
    }
}

impl<T: BsonSchema + ?Sized> BsonSchema for &T {
    fn bson_schema() -> Document {
        T::bson_schema()
    }
    const __COLLECTION_ROOT: bool = T::__COLLECTION_ROOT;
    const __GENERIC_UUID: bool = T::__GENERIC_UUID;
}

impl<T: BsonSchema + ?Sized> BsonSchema for Box<T> {
    fn bson_schema() -> Document {
        T::bson_schema()
    }
    const __COLLECTION_ROOT: bool = T::__COLLECTION_ROOT;
    const __GENERIC_UUID: bool = T::__GENERIC_UUID;
}

/// `None` is stored as `null` unless the field is skipped with `skip_serializing_if`, in which
/// case it is absent; the field is then not `required` and the `null` branch is simply unused.
impl<T: BsonSchema> BsonSchema for Option<T> {
    fn bson_schema() -> Document {
        json_schema::nullable(T::bson_schema())
    }
    const __COLLECTION_ROOT: bool = T::__COLLECTION_ROOT;
    const __GENERIC_UUID: bool = T::__GENERIC_UUID;
}

/// A fixed-size array is bounded by its type: exactly `N` items.
impl<T: BsonSchema, const N: usize> BsonSchema for [T; N] {
    fn bson_schema() -> Document {
        json_schema::array(T::bson_schema(), Some(N as u64), N as u64)
    }
    const __COLLECTION_ROOT: bool = T::__COLLECTION_ROOT;
    const __GENERIC_UUID: bool = T::__GENERIC_UUID;
}

/// A tuple is stored as an array of its elements, in order: `items` per position,
/// `minItems` = `maxItems` = its length, `additionalItems: false`.
macro_rules! tuple {
    ($($name:ident),+) => {
        impl<$($name: BsonSchema),+> BsonSchema for ($($name,)+) {
            fn bson_schema() -> Document {
                crate::json_schema::compose::tuple(vec![$($name::bson_schema()),+])
            }
            const __COLLECTION_ROOT: bool = false $(|| $name::__COLLECTION_ROOT)+;
        }
    };
}
tuple!(A, B);
tuple!(A, B, C);
tuple!(A, B, C, D);
tuple!(A, B, C, D, E);
tuple!(A, B, C, D, E, F);

macro_rules! unbounded {
    ($($ty:ident < $($p:ident),+ >),*) => {$(
        impl<$($p),+> BsonSchema for $ty<$($p),+> where $ty<$($p),+>: Unbounded {
            fn bson_schema() -> Document {
                unreachable!("`Unbounded` has no implementations")
            }
        }
    )*};
}
unbounded!(Vec<T>, VecDeque<T>, HashSet<T, S>, BTreeSet<T>, HashMap<K, V, S>, BTreeMap<K, V>);

impl<T: BsonSchema> BsonSchema for [T]
where
    [T]: Unbounded,
{
    fn bson_schema() -> Document {
        unreachable!("`Unbounded` has no implementations")
    }
}

macro_rules! bounded_sequence {
    ($($ty:ty, unique = $unique:expr, [$($gen:tt)*];)*) => {$(
        impl<$($gen)*> BoundedCollection for $ty {
            fn bounded_schema(max: u64) -> Document {
                let mut schema = json_schema::array(T::bson_schema(), None, max);
                if $unique {
                    schema.insert("uniqueItems", true);
                }
                schema
            }
            const __ELEMENT_COLLECTION_ROOT: bool = T::__COLLECTION_ROOT;
            const __ELEMENT_GENERIC_UUID: bool = T::__GENERIC_UUID;
        }
    )*};
}

bounded_sequence! {
    Vec<T>, unique = false, [T: BsonSchema];
    VecDeque<T>, unique = false, [T: BsonSchema];
    Box<[T]>, unique = false, [T: BsonSchema];
    HashSet<T, S>, unique = true, [T: BsonSchema, S];
    BTreeSet<T>, unique = true, [T: BsonSchema];
}

impl<T: BsonSchema, const N: usize> BoundedCollection for [T; N] {
    fn bounded_schema(max: u64) -> Document {
        json_schema::array(T::bson_schema(), Some(N as u64), max.min(N as u64))
    }
    const __ELEMENT_COLLECTION_ROOT: bool = T::__COLLECTION_ROOT;
    const __ELEMENT_GENERIC_UUID: bool = T::__GENERIC_UUID;
}

macro_rules! bounded_map {
    ($($ty:ty, [$($gen:tt)*];)*) => {$(
        impl<$($gen)*> BoundedCollection for $ty {
            fn bounded_schema(max: u64) -> Document {
                doc! {
                    "bsonType": "object",
                    "maxProperties": max as i64,
                    "additionalProperties": V::bson_schema(),
                }
            }
            const __ELEMENT_COLLECTION_ROOT: bool = V::__COLLECTION_ROOT;
            const __ELEMENT_GENERIC_UUID: bool = V::__GENERIC_UUID;
        }
    )*};
}

bounded_map! {
    HashMap<K, V, S>, [K: MapKey, V: BsonSchema, S];
    BTreeMap<K, V>, [K: MapKey, V: BsonSchema];
}

impl<C: BoundedCollection> BoundedCollection for Option<C> {
    fn bounded_schema(max: u64) -> Document {
        json_schema::nullable(C::bounded_schema(max))
    }
    const __ELEMENT_COLLECTION_ROOT: bool = C::__ELEMENT_COLLECTION_ROOT;
    const __ELEMENT_GENERIC_UUID: bool = C::__ELEMENT_GENERIC_UUID;
}

impl<C: BoundedCollection> BoundedCollection for Box<C> {
    fn bounded_schema(max: u64) -> Document {
        C::bounded_schema(max)
    }
    const __ELEMENT_COLLECTION_ROOT: bool = C::__ELEMENT_COLLECTION_ROOT;
    const __ELEMENT_GENERIC_UUID: bool = C::__ELEMENT_GENERIC_UUID;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_adds_null_to_the_type() {
        assert_eq!(
            Option::<String>::bson_schema(),
            doc! { "bsonType": ["string", "null"] }
        );
        assert_eq!(
            Option::<Option<i32>>::bson_schema(),
            doc! { "bsonType": ["int", "null"] }
        );
    }

    #[test]
    fn vec_bound_becomes_max_items() {
        assert_eq!(
            Vec::<String>::bounded_schema(10),
            doc! { "bsonType": "array", "maxItems": 10_i64, "items": { "bsonType": "string" } }
        );
        assert_eq!(
            BTreeSet::<i64>::bounded_schema(3),
            doc! { "bsonType": "array", "maxItems": 3_i64, "items": { "bsonType": "long" }, "uniqueItems": true }
        );
    }

    #[test]
    fn maps_bound_properties() {
        assert_eq!(
            HashMap::<String, bool>::bounded_schema(4),
            doc! { "bsonType": "object", "maxProperties": 4_i64, "additionalProperties": { "bsonType": "bool" } }
        );
    }

    #[test]
    fn tuples_are_arrays_of_fixed_length() {
        assert_eq!(
            <(String, i64)>::bson_schema(),
            doc! {
                "bsonType": "array",
                "minItems": 2_i64,
                "maxItems": 2_i64,
                "items": [{ "bsonType": "string" }, { "bsonType": "long" }],
                "additionalItems": false,
            }
        );
        // as the driver writes one
        let stored = crate::model::document::stored_bson(&("a".to_owned(), 3_i64)).unwrap();
        assert_eq!(stored, Bson::Array(vec![Bson::from("a"), Bson::Int64(3)]));
    }

    #[test]
    fn fixed_arrays_are_bounded_by_length() {
        assert_eq!(
            <[u8; 2]>::bson_schema(),
            doc! { "bsonType": "array", "minItems": 2_i64, "maxItems": 2_i64, "items": { "bsonType": "int", "minimum": 0_i64, "maximum": 255_i64 } }
        );
    }
}
