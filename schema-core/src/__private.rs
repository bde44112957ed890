//! Support for the code the derives generate. Not public API: names here change without notice.

pub use mongodb;
pub use mongodb::bson;
pub use serde;

pub use crate::bson_compat;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};

use mongodb::bson::{doc, Bson, Document};

pub use crate::json_schema::compose::{
    enum_schema, object, tuple, ObjectSchema, Tagging, VariantSchema,
};
pub use crate::json_schema::{constrain, not_null};
pub use crate::model::bson_schema::FieldList;
pub use crate::model::copy_de::{deserialize_copy, missing_field, CopySlots, FieldSeed};
pub use crate::model::stored;
pub use crate::relations::subset::rule::{subset_preview, PreviewOf};
/// The transaction loop of `update_source`, a `Transaction` and the subset helpers, for a
/// test that counts how often a body of its own runs (`tests/commit_outcome.rs`).
pub use crate::sync::transaction::in_transaction;
use crate::BsonSchema;

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

/// The child side of a `#[subset(of = C)]`: `C` holds the parent's `_id` in one stored path,
/// its `#[reference]` to `P` or the `_id` of its `#[extended_ref(to = P, ...)]`. Implemented by
/// `#[derive(Document)]` for every type a field of `C` references.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no `#[reference]` to `{P}`, which a `#[subset(of = {Self})]` of `{P}` needs",
    label = "the children of a subset must say which `{P}` they belong to",
    note = "give `{Self}` a field `#[reference] pub parent_id: Ref<{P}>` (indexed with the subset's sort key: `#[index(keys(parent_id = 1, at = -1))]`), or an `#[extended_ref(to = {P}, ...)]` whose `_id` serves as the reference"
)]
pub trait ChildOf<P: ?Sized> {
    /// The child's stored path holding the parent's `_id` (`ticket_id`, `member._id`); empty
    /// when the child holds several references to `P` (see [`child_parent_field`]).
    const PARENT_FIELD: &'static str;
}

/// The child's path holding the parent's `_id`, checked while evaluating the subset's
/// constant: a child with two references to the parent cannot say which one the subset means.
pub const fn child_parent_field<C: ChildOf<P> + ?Sized, P: ?Sized>() -> &'static str {
    if C::PARENT_FIELD.is_empty() {
        panic!(
            "the child type of this `#[subset]` holds more than one reference to the parent type: say which one the subset follows with `via = field` (`#[subset(of = Follow, via = followed, ...)]`)"
        );
    }
    C::PARENT_FIELD
}

/// A field that holds the `_id` of a `P`: what `#[subset(via = field)]` names.
#[diagnostic::on_unimplemented(
    message = "`via` names a field of type `{Self}`, which holds no reference to `{P}`",
    label = "not a `Ref<{P}>`",
    note = "`via` names the child's `#[reference]` field to the subset's parent: a `Ref<{P}>` (or an `Option` of one)"
)]
pub trait ParentRef<P: ?Sized> {}

impl<P: crate::Document> ParentRef<P> for crate::Ref<P> {}
impl<P: crate::Document> ParentRef<P> for Option<crate::Ref<P>> {}

/// The stored name of the child's field `KEY` that `#[subset(via = field)]` follows: a
/// reference to the parent (checked by the bounds).
pub const fn via_parent_field<C, P, const KEY: u64>() -> &'static str
where
    C: ChildOf<P> + FieldPath<KEY> + ?Sized,
    <C as FieldPath<KEY>>::Type: ParentRef<P>,
    P: ?Sized,
{
    <C as FieldPath<KEY>>::STORED
}

/// The stored named fields of a struct the derives model (all but `_id`): their Rust names
/// and, in the same order, their stored names, read from [`BsonSchema::__FIELDS`] (empty for
/// other types, which [`Fields::IS_STRUCT`] tells apart). Read by the copy types of other
/// derives to check `#[extended_ref(fields = ...)]`, and by a query's projection check, while
/// evaluating a constant.
pub trait Fields {
    /// Rust names.
    const NAMES: &'static [&'static str];
    /// Stored names.
    const STORED: &'static [&'static str];
    /// Whether the type stores an `_id`.
    const HAS_ID: bool;
    /// Whether the type is a struct the derives model.
    const IS_STRUCT: bool;
}

impl<T: BsonSchema + ?Sized> Fields for T {
    const NAMES: &'static [&'static str] = match T::__FIELDS {
        Some(fields) => fields.names,
        None => &[],
    };
    const STORED: &'static [&'static str] = match T::__FIELDS {
        Some(fields) => fields.stored,
        None => &[],
    };
    const HAS_ID: bool = match T::__FIELDS {
        Some(fields) => fields.has_id,
        None => false,
    };
    const IS_STRUCT: bool = T::__FIELDS.is_some();
}

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
    type Type = <S as FieldPath<K>>::Type;
    type Stored = <S as FieldPath<K>>::Stored;
    const ENCODER: Encoder<Self::Type> = <S as FieldPath<K>>::ENCODER;
    const DECODER: Decoder<Self::Type> = <S as FieldPath<K>>::DECODER;
    const IS_ARRAY: bool = <S as FieldPath<K>>::IS_ARRAY;
    const IS_OPTION: bool = <S as FieldPath<K>>::IS_OPTION;
    #[inline]
    fn field(source: &S) -> &Self::Type {
        <S as FieldPath<K>>::field(source)
    }
}

const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The position of `name` in `names`.
pub const fn position(names: &[&str], name: &str) -> Option<usize> {
    let mut i = 0;
    while i < names.len() {
        if same(names[i], name) {
            return Some(i);
        }
        i += 1;
    }
    None
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

/// The length of [`list_message`]`(prefix, names, suffix)`.
pub const fn list_message_len(prefix: &str, names: &[&str], suffix: &str) -> usize {
    let mut len = prefix.len() + suffix.len();
    let mut i = 0;
    while i < names.len() {
        len += names[i].len() + 2; // the backticks
        if i > 0 {
            len += 2; // ", "
        }
        i += 1;
    }
    if names.is_empty() {
        len += NONE.len();
    }
    len
}

const NONE: &str = "none";

/// `prefix`, then `names` quoted and separated by commas (or `none`), then `suffix`, as the bytes
/// of a message built while evaluating a constant (`N` from [`list_message_len`]).
pub const fn list_message<const N: usize>(prefix: &str, names: &[&str], suffix: &str) -> [u8; N] {
    const fn put<const N: usize>(out: &mut [u8; N], mut at: usize, text: &str) -> usize {
        let bytes = text.as_bytes();
        let mut i = 0;
        while i < bytes.len() && at < N {
            out[at] = bytes[i];
            at += 1;
            i += 1;
        }
        at
    }
    let mut out = [0u8; N];
    let mut at = put(&mut out, 0, prefix);
    let mut i = 0;
    while i < names.len() {
        if i > 0 {
            at = put(&mut out, at, ", ");
        }
        at = put(&mut out, at, "`");
        at = put(&mut out, at, names[i]);
        at = put(&mut out, at, "`");
        i += 1;
    }
    if names.is_empty() {
        at = put(&mut out, at, NONE);
    }
    put(&mut out, at, suffix);
    out
}

/// The text of a message built by [`list_message`].
pub const fn message_text(bytes: &[u8]) -> &str {
    match core::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(_) => "(message not UTF-8)",
    }
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
mod native_tests {
    use super::*;

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
}

#[cfg(test)]
mod tests {
    use super::{list_message, list_message_len, message_text, position, stored_name};

    #[test]
    fn the_message_of_a_missing_copied_field_lists_the_stored_fields() {
        const NAMES: &[&str] = &["title", "author"];
        const PREFIX: &str = "no `titel`; stored: ";
        const LEN: usize = list_message_len(PREFIX, NAMES, ".");
        const MESSAGE: [u8; LEN] = list_message(PREFIX, NAMES, ".");
        assert_eq!(
            message_text(&MESSAGE),
            "no `titel`; stored: `title`, `author`."
        );
        const NONE: [u8; list_message_len("", &[], "")] = list_message("", &[], "");
        assert_eq!(message_text(&NONE), "none");
    }

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

// ---------------------------------------------------------------------------------------------
// typed field paths (`field!`, `#[query]`)

pub use crate::query::path::{Decoded, Encoded};
pub use crate::query::{
    stored_read, stored_value, Array, DeclaredQuery, Decoder, Encoder, Filter, Ordered, Paged,
    Path, QuerySpec, Unpaged, Value,
};

/// Encoders of the BSON types whose stored form is the value itself: what the derive gives a
/// field of these types, so that a typed filter costs what `doc!` does (serde's path writes an
/// `ObjectId` or a date as extended JSON and converts it back). Unit-tested against the driver's
/// serialization.
macro_rules! native {
    ($($name:ident: $ty:ty => $variant:ident,)*) => {$(
        #[doc(hidden)]
        #[inline]
        pub fn $name(value: &$ty) -> Result<Bson, crate::bson_compat::SerError> {
            Ok(Bson::$variant(value.clone()))
        }
    )*};
}

native! {
    native_object_id: mongodb::bson::oid::ObjectId => ObjectId,
    native_date_time: mongodb::bson::DateTime => DateTime,
    native_i32: i32 => Int32,
    native_i64: i64 => Int64,
    native_f64: f64 => Double,
    native_bool: bool => Boolean,
    native_decimal128: mongodb::bson::Decimal128 => Decimal128,
}

/// The error of a declared query's `$in` argument longer than its `max`.
pub fn query_refused(path: &str, len: usize, max: usize) -> crate::Error {
    // the index fit (SORT_MERGE of at most 200 scans) was computed for `max` values
    crate::Error::BoundExceeded {
        path: path.to_owned(),
        max: max as u64,
        attempted: len as u64,
    }
}

/// Compile-time check of an index key, a sort or a range: the field's stored form orders like
/// its values ([`Ordered`]); spanned at the key by the derive.
pub const fn require_ordered<T: Ordered + ?Sized>() {}

/// Compile-time check of a declared query's range or sort: the field's stored text orders like
/// its Rust values (a unit enum whose stored names do not sort in declaration order does not).
pub const fn require_rust_order<T: Ordered + ?Sized>() {
    if T::__TEXT_ORDER_DIFFERS {
        panic!("a range or a sort on this enum compares its stored names as text, which do not sort in the order its variants are declared: rename the variants (`#[serde(rename = ...)]`) so their stored names sort in that order, or range and sort on another field; an equality on it is fine");
    }
}

/// Compile-time check of `#[query(project = Row)]`: every stored field of `Row` is one of `R`.
pub const fn check_projection<R: Fields + ?Sized, Row: Fields + ?Sized>() {
    if !Row::IS_STRUCT {
        panic!("the `project = ...` type of this `#[query]` is not a struct deriving `BsonSchema`: a projection row is a struct of the fields it reads");
    }
    let mut i = 0;
    while i < Row::STORED.len() {
        if position(R::STORED, Row::STORED[i]).is_none() {
            panic!("a field of the `project = ...` type of this `#[query]` is not a stored field of the collection root: a projection row holds only fields the documents store (same stored names)");
        }
        i += 1;
    }
    if Row::HAS_ID && !R::HAS_ID {
        panic!("the `project = ...` type of this `#[query]` has an `_id` the collection root does not declare");
    }
}

/// A stored field of a struct, keyed by a hash of its Rust name ([`field_key`]): its Rust type,
/// the type that describes its stored form, its stored name, how its values are written and,
/// for a capped array, its cap. Implemented by both derives for every stored named field, and
/// forwarded through `Option`, arrays and sets (a path through an array names its elements' field,
/// as mongod's dotted paths do), so that `field!(Ticket, history.status)` resolves.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no stored field by this name",
    label = "`field!` and `#[query]` name Rust fields of a struct deriving `Document` or `BsonSchema` (serde's renames give the stored name)",
    note = "check the spelling, and that the field is not `#[serde(skip)]`; an embedded type must derive `BsonSchema` for its fields to be named"
)]
pub trait FieldPath<const KEY: u64> {
    /// The field's Rust type.
    type Type;
    /// What describes the stored form: the field's type, or what its serde helper or
    /// `#[schema(stored_as = T)]` writes.
    type Stored: ?Sized;
    /// The stored name.
    const STORED: &'static str;
    /// How values are written.
    const ENCODER: Encoder<Self::Type> = Encoder::Plain;
    /// How stored values are read back.
    const DECODER: Decoder<Self::Type> = Decoder::Plain;
    /// `#[embed(max = N, cap)]`: the cap.
    const CAP: Option<u32> = None;
    /// Whether the field is an array or a set (a bounded collection that is no map): a declared
    /// query's `eq` on it takes one element.
    const IS_ARRAY: bool = false;
    /// Whether the field is an `Option`: a declared query's range on it takes bounds of the
    /// value (`null` bounds no range).
    const IS_OPTION: bool = false;
    /// The field of `self`: what a copy type of another struct reads (`From<&Source>`).
    /// `#[derive(Document)]` implements it for the fields of a collection root struct, the only
    /// sources a copy type's checked constants admit; everywhere else (an enum's fields, a value
    /// embedded in a document, the forwarding impls) it is never called.
    #[inline]
    fn field(&self) -> &Self::Type {
        unreachable!("mongo-schema: `FieldPath::field` of a field that is no collection root's")
    }
}

/// The `FieldPath` impl of a field of a copy type generated by `#[extended_ref]`: the source
/// field's type, stored form and helpers, the copy's stored name at `$index` of its table.
#[doc(hidden)]
#[macro_export]
macro_rules! __copied_field_path {
    ($copy:ty, $key:literal, $checked:ty, $index:literal) => {
        #[automatically_derived]
        impl $crate::__private::FieldPath<$key> for $copy {
            type Type = <$checked as $crate::__private::CheckedField>::Type;
            type Stored = <$checked as $crate::__private::CheckedField>::Stored;
            const STORED: &'static str = <$copy>::__STORED[$index];
            const ENCODER: $crate::__private::Encoder<Self::Type> =
                <$checked as $crate::__private::CheckedField>::ENCODER;
            const DECODER: $crate::__private::Decoder<Self::Type> =
                <$checked as $crate::__private::CheckedField>::DECODER;
            const IS_ARRAY: bool = <$checked as $crate::__private::CheckedField>::IS_ARRAY;
            const IS_OPTION: bool = <$checked as $crate::__private::CheckedField>::IS_OPTION;
        }
    };
}

macro_rules! forward_field_path {
    ($($ty:ident)::+ <T $(, $extra:ident)*>) => {
        impl<T: FieldPath<KEY>, $($extra,)* const KEY: u64> FieldPath<KEY> for $($ty)::+<T $(, $extra)*> {
            type Type = T::Type;
            type Stored = T::Stored;
            const STORED: &'static str = T::STORED;
            const ENCODER: Encoder<Self::Type> = T::ENCODER;
            const DECODER: Decoder<Self::Type> = T::DECODER;
            const CAP: Option<u32> = T::CAP;
            const IS_ARRAY: bool = T::IS_ARRAY;
            const IS_OPTION: bool = T::IS_OPTION;
        }
    };
}

forward_field_path!(Option<T>);
forward_field_path!(Vec<T>);
forward_field_path!(VecDeque<T>);
forward_field_path!(BTreeSet<T>);
forward_field_path!(HashSet<T, H>);
forward_field_path!(Box<T>);

impl<T: FieldPath<KEY>, const N: usize, const KEY: u64> FieldPath<KEY> for [T; N] {
    type Type = T::Type;
    type Stored = T::Stored;
    const STORED: &'static str = T::STORED;
    const ENCODER: Encoder<Self::Type> = T::ENCODER;
    const DECODER: Decoder<Self::Type> = T::DECODER;
    const CAP: Option<u32> = T::CAP;
    const IS_ARRAY: bool = T::IS_ARRAY;
    const IS_OPTION: bool = T::IS_OPTION;
}

/// The field list of the struct a value of this type holds, through `Option`, `Box`, arrays and
/// sets: what a declared query's quoted path walks (`"lines.sku"`, `"author._id"`).
#[diagnostic::on_unimplemented(
    message = "a quoted path of `#[query]` walks through `{Self}`, which holds no struct the derives model",
    label = "no stored fields to name here",
    note = "write the path with Rust field names instead: `eq(author.id)`"
)]
pub trait Embedded {
    /// The struct's field list (`None` for a type that is no derived struct).
    const FIELDS: Option<crate::model::bson_schema::FieldList>;
}

impl<T: crate::BsonSchema + ?Sized> Embedded for T {
    const FIELDS: Option<crate::model::bson_schema::FieldList> = T::__INNER_FIELDS;
}

macro_rules! embedded_sequence {
    ($($ty:ident < T $(, $extra:ident)* >),*) => {$(
        impl<T: Embedded, $($extra,)*> Embedded for $ty<T $(, $extra)*> {
            const FIELDS: Option<crate::model::bson_schema::FieldList> = T::FIELDS;
        }
        impl<T: Embedded, $($extra,)*> Embedded for Option<$ty<T $(, $extra)*>> {
            const FIELDS: Option<crate::model::bson_schema::FieldList> = T::FIELDS;
        }
    )*};
}

embedded_sequence!(Vec<T>, VecDeque<T>, BTreeSet<T>, HashSet<T, H>);

/// The key of [`FieldPath`] of the field stored as `stored` in the struct whose field list is
/// `fields`: a quoted path's segment after the first, resolved while the declared query's
/// signature is type-checked, so a name the struct does not store fails `cargo check`.
pub const fn stored_key(fields: Option<crate::model::bson_schema::FieldList>, stored: &str) -> u64 {
    let Some(fields) = fields else {
        panic!("a quoted path of `#[query]` goes through a field that holds no struct deriving `BsonSchema` or `Document`: name a field of such a struct, or write the path with Rust names (`eq(author.id)`)");
    };
    if same(stored, "_id") {
        if fields.id.is_empty() {
            panic!("a quoted path of `#[query]` names `_id` in a struct that stores none");
        }
        return field_key(fields.id);
    }
    match position(fields.stored, stored) {
        Some(i) => field_key(fields.names[i]),
        None => panic!("a quoted path of `#[query]` names a stored field that its struct does not have: check the spelling against the stored (serde) names, or write the path with Rust names (`eq(author.id)`)"),
    }
}

/// The value a declared query's equality compares a field with: the field's own type, or one
/// element when the field is an array or a set (`ARRAY`, the field's [`FieldPath::IS_ARRAY`]),
/// as mongod's `{ tags: "rust" }` matches every document whose array holds `"rust"`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is stored as an array, but its Rust type is no array or set",
    label = "a declared query's `eq` on an array field takes one element",
    note = "query it with `field!` and `Filter::elem_match`"
)]
pub trait QueryElem<const ARRAY: bool> {
    /// What is compared.
    type Elem: ?Sized;
    /// How one compared value is written: the field's encoder, or for an element, the plain
    /// one (a serde helper of the whole array cannot write one element: the value is refused).
    fn encoder(field: Encoder<Self>) -> Encoder<Self::Elem>;
}

impl<T: ?Sized> QueryElem<false> for T {
    type Elem = T;
    #[inline]
    fn encoder(field: Encoder<T>) -> Encoder<T> {
        field
    }
}

impl<T: crate::query::Array + ?Sized> QueryElem<true> for T {
    type Elem = T::Elem;
    #[inline]
    fn encoder(field: Encoder<T>) -> Encoder<T::Elem> {
        match field {
            Encoder::Plain | Encoder::Native(_) => Encoder::Plain,
            Encoder::Custom(_) => Encoder::Custom(refuse_element::<T::Elem>),
        }
    }
}

fn refuse_element<E>(_: &E) -> Result<crate::bson::Bson, crate::bson_compat::SerError> {
    Err(<crate::bson_compat::SerError as serde::ser::Error>::custom(
        "this array field is written by a serde helper of the whole array, which cannot write one element: query it with `field!` and `Filter::elem_match`",
    ))
}

/// The bounds a declared query's range takes on a field: its values, or for an `Option` field
/// the values inside it (`OPTION`, the field's [`FieldPath::IS_OPTION`]): a `null` bound would
/// match no document.
pub trait RangeElem<const OPTION: bool> {
    /// What the bounds are.
    type Elem;
}

impl<T> RangeElem<false> for T {
    type Elem = T;
}

impl<T> RangeElem<true> for Option<T> {
    type Elem = T;
}

/// The path a declared query's equality or `$in` compares: `path` itself, or its elements
/// (see [`QueryElem`]).
#[inline]
pub fn query_elem<R: ?Sized, T: QueryElem<A> + ?Sized, S: ?Sized, const A: bool>(
    path: Path<R, T, S>,
) -> Path<R, T::Elem, T::Elem> {
    Path::__new(path.as_str(), T::encoder(path.encoder()), None)
}

/// FNV-1a of a Rust field name: the key of [`FieldPath`] (the derive computes
/// the same).
pub const fn field_key(name: &str) -> u64 {
    let bytes = name.as_bytes();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < bytes.len() {
        hash ^= bytes[i] as u64;
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        i += 1;
    }
    hash
}

/// The typed path of one field of `R`.
pub const fn field_path<R: FieldPath<KEY> + ?Sized, const KEY: u64>() -> Path<R, R::Type, R::Stored>
{
    Path::__new(R::STORED, R::ENCODER, R::CAP)
}

/// The typed path of `segments` joined with dots, ending at the field `L` of some embedded type.
pub const fn nested_path<R: ?Sized, L: FieldPath<KEY> + ?Sized, const KEY: u64>(
    joined: &'static str,
) -> Path<R, L::Type, L::Stored> {
    Path::__new(joined, L::ENCODER, L::CAP)
}

/// The length of `segments` joined with dots.
pub const fn joined_len(segments: &[&str]) -> usize {
    let mut len = 0;
    let mut parts = 0;
    let mut i = 0;
    while i < segments.len() {
        if !segments[i].is_empty() {
            len += segments[i].len();
            if parts > 0 {
                len += 1;
            }
            parts += 1;
        }
        i += 1;
    }
    len
}

/// `segments` joined with dots, in an array of [`joined_len`] bytes; empty segments (a
/// flattened value's) are left out.
pub const fn join<const N: usize>(segments: &[&str]) -> [u8; N] {
    let mut out = [0u8; N];
    let mut at = 0;
    let mut i = 0;
    while i < segments.len() {
        // a flattened value's segment is empty: its fields are stored at the level above
        if segments[i].is_empty() {
            i += 1;
            continue;
        }
        if at > 0 {
            out[at] = b'.';
            at += 1;
        }
        let bytes = segments[i].as_bytes();
        let mut j = 0;
        while j < bytes.len() {
            out[at] = bytes[j];
            at += 1;
            j += 1;
        }
        i += 1;
    }
    out
}
