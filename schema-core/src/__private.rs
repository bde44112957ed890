//! Support for the code the derives generate. Not public API: names here change without notice.

pub use mongodb;
pub use mongodb::bson;
pub use serde;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};

use mongodb::bson::{doc, Bson, Document};

pub use crate::json_schema::constrain;
pub use crate::model::stored;

/// Builds the `$jsonSchema` of a struct.
#[derive(Default)]
pub struct ObjectSchema {
    properties: Document,
    required: Vec<Bson>,
    additional_properties: Option<bool>,
}

/// Starts the schema of a struct.
pub fn object() -> ObjectSchema {
    ObjectSchema::default()
}

impl ObjectSchema {
    /// Adds a stored field.
    pub fn property(mut self, name: &str, schema: Document, required: bool) -> Self {
        self.properties.insert(name, schema);
        if required {
            self.required.push(Bson::from(name));
        }
        self
    }

    /// `additionalProperties: false`; a root without an `_id` field still admits the
    /// server-generated `_id`.
    pub fn deny_additional(mut self, collection_root: bool) -> Self {
        if collection_root && !self.properties.contains_key("_id") {
            self.properties
                .insert("_id", doc! { "bsonType": "objectId" });
        }
        self.additional_properties = Some(false);
        self
    }

    /// The finished schema.
    pub fn build(self) -> Document {
        let mut schema = doc! { "bsonType": "object" };
        if !self.required.is_empty() {
            schema.insert("required", self.required);
        }
        schema.insert("properties", self.properties);
        if let Some(allowed) = self.additional_properties {
            schema.insert("additionalProperties", allowed);
        }
        schema
    }
}

/// The schema of a unit-only enum stored as its variant names.
pub fn string_enum(values: &[&str]) -> Document {
    doc! { "bsonType": "string", "enum": values.iter().map(|v| Bson::from(*v)).collect::<Vec<_>>() }
}

/// Parses an `#[index(partial = "...")]` filter (extended JSON, checked to be a JSON object by
/// the derive).
pub fn partial_filter(collection: &str, json: &str) -> Document {
    let value: serde_json::Value = serde_json::from_str(json).unwrap_or_else(|e| {
        panic!("partial filter of an index of `{collection}` is not JSON ({e}): {json}")
    });
    match Bson::try_from(value) {
        Ok(Bson::Document(filter)) => filter,
        other => panic!(
            "partial filter of an index of `{collection}` is not an extended-JSON document ({other:?}): {json}"
        ),
    }
}

/// An integer constraint value.
pub fn int(value: i64) -> Bson {
    Bson::Int64(value)
}

/// A floating-point constraint value.
pub fn float(value: f64) -> Bson {
    Bson::Double(value)
}

/// Types that `#[schema(max_length, min_length, pattern)]` apply to (strings, or arrays and
/// maps of strings, whose elements are constrained).
#[diagnostic::on_unimplemented(
    message = "`#[schema(max_length, min_length, pattern)]` constrain strings, and `{Self}` holds none",
    label = "not a string"
)]
pub trait StringLike {}

/// Types that `#[schema(minimum, maximum)]` apply to (numbers, or arrays and maps of numbers).
#[diagnostic::on_unimplemented(
    message = "`#[schema(minimum, maximum)]` constrain numbers, and `{Self}` holds none",
    label = "not a number"
)]
pub trait NumberLike {}

macro_rules! mark {
    ($trait:ident: $($ty:ty),*) => { $(impl $trait for $ty {})* };
}
mark!(StringLike: String, str, char, std::borrow::Cow<'_, str>);
mark!(NumberLike: i8, i16, i32, i64, u8, u16, u32, u64, usize, f32, f64, bson::Decimal128);

macro_rules! through {
    ($($trait:ident),*) => {$(
        impl<T: $trait + ?Sized> $trait for &T {}
        impl<T: $trait + ?Sized> $trait for Box<T> {}
        impl<T: $trait> $trait for Option<T> {}
        impl<T: $trait> $trait for Vec<T> {}
        impl<T: $trait> $trait for VecDeque<T> {}
        impl<T: $trait> $trait for [T] {}
        impl<T: $trait, const N: usize> $trait for [T; N] {}
        impl<T: $trait, S> $trait for HashSet<T, S> {}
        impl<T: $trait> $trait for BTreeSet<T> {}
        impl<K, V: $trait, S> $trait for HashMap<K, V, S> {}
        impl<K, V: $trait> $trait for BTreeMap<K, V> {}
    )*};
}
through!(StringLike, NumberLike);

/// Compile-time check that `T` takes string constraints.
pub fn require_string_like<T: StringLike + ?Sized>() {}

/// Compile-time check that `T` takes numeric constraints.
pub fn require_number_like<T: NumberLike + ?Sized>() {}

/// `I` is the `_id` type of the collection root `T` (checked for `#[reference(to = T)]`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not the `_id` type of `{T}`",
    label = "`#[reference(to = {T})]` needs `{T}`'s id type here",
    note = "a plain id field holds the referenced document's `_id`: use the type of `{T}`'s `_id` field, or `Ref<{T}>`"
)]
pub trait IdOf<T> {}
impl<T: crate::Document<Id = I>, I> IdOf<T> for I {}

/// Compile-time check that `I` is `T`'s id type.
pub fn require_id_of<I: IdOf<T>, T>() {}

/// A stored field of a collection root, keyed by a hash of its Rust name; implemented by
/// `#[derive(Document)]` so that `#[extended_ref(fields = "...")]` of another type can name the
/// field's type and stored name.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no field listed in `#[extended_ref(fields = ...)]`",
    label = "every copied field must be a stored field of `{Self}`"
)]
pub trait HasField<const KEY: u64> {
    /// The field's Rust type.
    type Type;
    /// The field's stored name.
    const STORED: &'static str;
}

/// The `$jsonSchema` of an extended-reference copy: `_id` and the copied fields, each described
/// exactly as in the source's own schema.
pub fn copy_schema(source: Document, fields: &[&str]) -> Document {
    let properties = source
        .get_document("properties")
        .cloned()
        .unwrap_or_default();
    let mut schema = object().property(
        "_id",
        properties
            .get_document("_id")
            .cloned()
            .unwrap_or_else(|_| doc! { "bsonType": "objectId" }),
        true,
    );
    for field in fields {
        let property = properties.get_document(field).cloned().unwrap_or_default();
        schema = schema.property(field, property, true);
    }
    schema.build()
}

/// The field identifier of a generated visitor: the position of a stored key in the type's table
/// of stored names, or `None` for a key the type does not hold (ignored, as serde's derive does).
#[derive(Clone, Copy)]
pub struct FieldSeed(pub &'static [&'static str]);

impl<'de> serde::de::DeserializeSeed<'de> for FieldSeed {
    type Value = Option<usize>;

    fn deserialize<D: serde::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_identifier(self)
    }
}

impl<'de> serde::de::Visitor<'de> for FieldSeed {
    type Value = Option<usize>;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("a field identifier")
    }

    fn visit_u64<E: serde::de::Error>(self, index: u64) -> Result<Self::Value, E> {
        Ok(usize::try_from(index).ok().filter(|i| *i < self.0.len()))
    }

    fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<Self::Value, E> {
        Ok(self.0.iter().position(|name| *name == key))
    }

    fn visit_bytes<E: serde::de::Error>(self, key: &[u8]) -> Result<Self::Value, E> {
        Ok(self.0.iter().position(|name| name.as_bytes() == key))
    }
}

/// The value of a field absent from the input, the way serde's derive reads it: `None` for an
/// `Option`, `missing field` otherwise.
pub fn missing_field<'de, T: serde::Deserialize<'de>, E: serde::de::Error>(
    field: &'static str,
) -> Result<T, E> {
    T::deserialize(MissingField {
        field,
        error: std::marker::PhantomData,
    })
}

struct MissingField<E> {
    field: &'static str,
    error: std::marker::PhantomData<E>,
}

impl<'de, E: serde::de::Error> serde::Deserializer<'de> for MissingField<E> {
    type Error = E;

    fn deserialize_any<V: serde::de::Visitor<'de>>(self, _visitor: V) -> Result<V::Value, E> {
        Err(E::missing_field(self.field))
    }

    fn deserialize_option<V: serde::de::Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        visitor.visit_none()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

/// The preview type of a `#[subset]`: built from a child with `From<&C>`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is the preview of a `#[subset]` of `{C}` and needs `impl From<&{C}> for {Self}`",
    label = "no `From<&{C}>`"
)]
pub trait PreviewOf<C> {}
impl<C, V: for<'c> From<&'c C>> PreviewOf<C> for V {}

/// Compile-time check of a subset's preview type.
pub fn require_preview<V: PreviewOf<C>, C>() {}

/// Compile-time check that `T` is a collection root (`to = T`, `of = T`).
pub fn require_document<T: crate::Document>() {}

/// An integer field that counts children or entries (`#[subset(count)]`, `#[bucket(count)]`):
/// the library `$inc`s it.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot count: the `count` field of a `#[subset]` or `#[bucket]` is an integer the library increments",
    label = "not an integer",
    note = "use `i64` (or `i32`)"
)]
pub trait Counter {
    /// The counter's BSON integer type.
    const TYPE: crate::CounterType;
}
impl Counter for i32 {
    const TYPE: crate::CounterType = crate::CounterType::Int32;
}
impl Counter for i64 {
    const TYPE: crate::CounterType = crate::CounterType::Int64;
}

/// Compile-time check of a count field.
pub const fn require_counter<T: Counter>() -> crate::CounterType {
    T::TYPE
}

#[cfg(test)]
mod tests {
    use serde::de::DeserializeSeed;

    use super::{missing_field, FieldSeed};

    const FIELDS: &[&str] = &["_id", "name"];

    fn field(json: &str) -> Option<usize> {
        FieldSeed(FIELDS)
            .deserialize(&mut serde_json::Deserializer::from_str(json))
            .unwrap()
    }

    #[test]
    fn a_key_is_its_position_in_the_table_and_an_unknown_key_none() {
        assert_eq!(field(r#""_id""#), Some(0));
        assert_eq!(field(r#""name""#), Some(1));
        assert_eq!(field(r#""Name""#), None);
        let index = |i| serde::de::Visitor::visit_u64::<serde_json::Error>(FieldSeed(FIELDS), i);
        assert_eq!(index(1).unwrap(), Some(1));
        assert_eq!(index(2).unwrap(), None);
    }

    #[test]
    fn a_missing_option_is_none_and_any_other_missing_field_an_error() {
        assert_eq!(
            missing_field::<Option<String>, serde_json::Error>("name").unwrap(),
            None
        );
        let error = missing_field::<String, serde_json::Error>("name").unwrap_err();
        assert_eq!(error.to_string(), "missing field `name`");
    }
}
