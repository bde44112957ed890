//! The copy types of `#[extended_ref]` (the derive's `gen/copies.rs`): their checked source
//! and copied fields (`Checked`, `CopySource`, `CheckedSource`, `CheckedField`), the copied
//! fields' keys and `FieldPath` impls, the copy's `$jsonSchema`, and how a copy is read.

use mongodb::bson::{doc, Document};

use super::const_text::position;
use super::paths::{FieldPath, Fields, StoredOf, TypeOf};
use crate::json_schema::compose::object;
pub use crate::model::copy_de::{deserialize_copy, missing_field, CopySlots, FieldSeed};
use crate::query::{Decoder, Encoder};

/// Compile-time check that `T` is a collection root, the first of a copy type's checks: the
/// copy type's constant `__DOCUMENT` calls it, and every other item of the copy type goes
/// through that constant, so a source that is no collection root is one error (the constant's
/// evaluation fails, and the types that name it are error types rustc reports nothing more
/// about).
pub const fn copy_from_document<T: crate::Document + ?Sized>() -> u64 {
    0
}

/// The second check of a copy type's source, in its constant `__SOURCE`: a collection root
/// (`C` is the first check's constant) with an `_id` field, and a struct (a whole-document
/// enum's fields are its kinds').
pub const fn copy_source<T: CopySource<C> + Fields + ?Sized, const C: u64>() -> u64 {
    if !T::IS_STRUCT {
        panic!("the source of an `#[extended_ref]` copy is a collection root struct: a whole-document enum's fields belong to its kinds; hold its id with `#[reference]` instead");
    }
    C
}

/// The source of an extended-reference copy, reached through the copy type's checked constant
/// (`<S as CopySource<{ Copy::__SOURCE }>>`): a collection root with an `_id` field.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no `_id` field",
    label = "an extended reference copies the `_id` of `{Self}`",
    note = "give `{Self}` its id as a field: `#[serde(rename = \"_id\")] pub id: ObjectId`"
)]
pub trait CopySource<const CHECKED: u64> {
    /// The source's `_id` type.
    type Id;
    /// Rust names of the source's stored named fields ([`Fields::NAMES`]).
    const NAMES: &'static [&'static str];
    /// Their stored names ([`Fields::STORED`]).
    const STORED: &'static [&'static str];
    /// The source's collection.
    const COLLECTION: &'static str;
    /// The source's `_id`.
    fn source_id(&self) -> &Self::Id;
    /// The source's `$jsonSchema`.
    fn source_schema() -> Document;
    /// How the source's `_id` is written ([`crate::Document::ID_ENCODER`]).
    const ID_ENCODER: Encoder<Self::Id>;
    /// How the source's stored `_id` is read ([`crate::Document::ID_DECODER`]).
    const ID_DECODER: Decoder<Self::Id>;
}

impl<T: crate::Identified + Fields> CopySource<0> for T {
    type Id = T::Id;
    const NAMES: &'static [&'static str] = <T as Fields>::NAMES;
    const STORED: &'static [&'static str] = <T as Fields>::STORED;
    const COLLECTION: &'static str = <T as crate::Document>::COLLECTION;
    const ID_ENCODER: Encoder<T::Id> = <T as crate::Document>::ID_ENCODER;
    const ID_DECODER: Decoder<T::Id> = <T as crate::Document>::ID_DECODER;
    #[inline]
    fn source_id(&self) -> &T::Id {
        crate::Identified::id(self)
    }
    #[inline]
    fn source_schema() -> Document {
        <T as crate::BsonSchema>::bson_schema()
    }
}

/// A copy type's source, or one of its copied fields, as the copy type's checked constant names
/// it: `Checked<Source, { Copy::__SOURCE }>` and `Checked<Source, { Copy::__FIELD_name }>`,
/// each spelled once in a hidden type alias next to the copy type. Every item of the copy type
/// reads the alias ([`CheckedSource`], [`CheckedField`]), so rustc evaluates one anonymous
/// constant per source and per copied field instead of one per use (a copy type named its
/// checked constants about forty times). A failed check makes the alias an error type, about
/// which rustc reports nothing more: one mistake is still one error.
pub struct Checked<S: ?Sized, const C: u64>(core::marker::PhantomData<S>);

/// The source of a copy type through its checked alias (see [`Checked`]): what [`CopySource`]
/// gives, without a constant argument to evaluate at each use.
pub trait CheckedSource {
    /// The source type.
    type Of: ?Sized;
    /// The source's `_id` type.
    type Id;
    /// Rust names of the source's stored named fields.
    const NAMES: &'static [&'static str];
    /// Their stored names.
    const STORED: &'static [&'static str];
    /// The source's collection.
    const COLLECTION: &'static str;
    /// How the source's `_id` is written.
    const ID_ENCODER: Encoder<Self::Id>;
    /// How the source's stored `_id` is read.
    const ID_DECODER: Decoder<Self::Id>;
    /// The source's `_id`.
    fn source_id(source: &Self::Of) -> &Self::Id;
    /// The source's `$jsonSchema`.
    fn source_schema() -> Document;
}

impl<S: CopySource<C> + ?Sized, const C: u64> CheckedSource for Checked<S, C> {
    type Of = S;
    type Id = S::Id;
    const NAMES: &'static [&'static str] = S::NAMES;
    const STORED: &'static [&'static str] = S::STORED;
    const COLLECTION: &'static str = S::COLLECTION;
    const ID_ENCODER: Encoder<S::Id> = S::ID_ENCODER;
    const ID_DECODER: Decoder<S::Id> = S::ID_DECODER;
    #[inline]
    fn source_id(source: &S) -> &S::Id {
        source.source_id()
    }
    #[inline]
    fn source_schema() -> Document {
        S::source_schema()
    }
}

/// A copied field through its copy type's checked alias (see [`Checked`]): the source field's
/// type, stored form and serde helpers, and the field of a source value.
pub trait CheckedField {
    /// The source type.
    type Of: ?Sized;
    /// The field's Rust type.
    type Type;
    /// What describes its stored form.
    type Stored: ?Sized;
    /// How values are written.
    const ENCODER: Encoder<Self::Type>;
    /// How stored values are read back.
    const DECODER: Decoder<Self::Type>;
    /// Whether the field is an array or a set.
    const IS_ARRAY: bool;
    /// Whether the field is an `Option`.
    const IS_OPTION: bool;
    /// The field of `source`.
    fn field(source: &Self::Of) -> &Self::Type;
}

impl<S: FieldPath<K> + ?Sized, const K: u64> CheckedField for Checked<S, K> {
    type Of = S;
    type Type = TypeOf<S, K>;
    type Stored = StoredOf<S, K>;
    const ENCODER: Encoder<Self::Type> = <S as FieldPath<K>>::ENCODER;
    const DECODER: Decoder<Self::Type> = <S as FieldPath<K>>::DECODER;
    const IS_ARRAY: bool = <S as FieldPath<K>>::IS_ARRAY;
    const IS_OPTION: bool = <S as FieldPath<K>>::IS_OPTION;
    #[inline]
    fn field(source: &S) -> &Self::Type {
        <S as FieldPath<K>>::field(source)
    }
}

/// The stored name of the field `name` (`""` when there is none: a copy type whose field does
/// not resolve fails on its own constant first).
pub const fn stored_name(
    names: &[&str],
    stored: &'static [&'static str],
    name: &str,
) -> &'static str {
    match position(names, name) {
        Some(i) if i < stored.len() => stored[i],
        _ => "",
    }
}

/// The key of a field a copy type names in `#[extended_ref(fields = ...)]`, checked while the
/// constant is evaluated: a field the source does not store fails the evaluation with a
/// message listing the fields it does store (built only then, as the constants a constant
/// names are evaluated whichever branch runs). Emitted by the derive as one call per copied
/// field, so that its output stays small.
#[doc(hidden)]
#[macro_export]
macro_rules! __copied_field_key {
    // `$fail` is the derive's own `panic!` (of `MESSAGE`), so that rustc's report of the failed
    // evaluation points at the user's tokens with no note about this macro
    ($names:expr, $field:literal, $prefix:literal, $suffix:literal, $key:literal, $fail:block) => {{
        // the message's length, 0 when the field is there (a message is never empty)
        const LEN: usize = if $crate::__private::position($names, $field).is_none() {
            $crate::__private::list_message_len($prefix, $names, $suffix)
        } else {
            0
        };
        const MESSAGE: [u8; LEN] = if LEN > 0 {
            $crate::__private::list_message($prefix, $names, $suffix)
        } else {
            [0; LEN]
        };
        if LEN > 0 $fail
        $key
    }};
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

/// The `FieldPath` impl of a field of a copy type generated by `#[extended_ref]`: the source
/// field's type, stored form and helpers, the copy's stored name at `$index` of its table.
#[doc(hidden)]
#[macro_export]
macro_rules! __copied_field_path {
    ($copy:ty, $key:literal, $checked:ty, $index:literal) => {
        #[automatically_derived]
        impl $crate::__private::FieldPath<$key> for $copy {
            type Form = (
                <$checked as $crate::__private::CheckedField>::Type,
                <$checked as $crate::__private::CheckedField>::Stored,
            );
            const STORED: &'static str = <$copy>::__STORED[$index];
            const ENCODER: $crate::__private::Encoder<
                <$checked as $crate::__private::CheckedField>::Type,
            > = <$checked as $crate::__private::CheckedField>::ENCODER;
            const DECODER: $crate::__private::Decoder<
                <$checked as $crate::__private::CheckedField>::Type,
            > = <$checked as $crate::__private::CheckedField>::DECODER;
            const IS_ARRAY: bool = <$checked as $crate::__private::CheckedField>::IS_ARRAY;
            const IS_OPTION: bool = <$checked as $crate::__private::CheckedField>::IS_OPTION;
        }
    };
}

#[cfg(test)]
mod tests {
    use super::{position, stored_name};

    #[test]
    fn a_copied_field_is_found_by_its_rust_name_and_gives_its_stored_name() {
        const NAMES: &[&str] = &["title", "author"];
        const STORED: &[&str] = &["title", "by"];
        assert_eq!(position(NAMES, "author"), Some(1));
        assert_eq!(position(NAMES, "autho"), None);
        assert_eq!(position(NAMES, "authors"), None);
        assert_eq!(stored_name(NAMES, STORED, "author"), "by");
        assert_eq!(stored_name(NAMES, STORED, "by"), "");
    }
}
