//! Typed field paths (the derive's `gen/paths.rs`, and `field!`): the `FieldPath` impl of each
//! stored named field and its forwarding through `Option`, arrays and sets, a struct's table of
//! stored fields (`Fields`), field keys, typed and nested paths, and how a field's values are
//! written and read (encoders, decoders, the native encoders of BSON scalars).

use std::collections::{BTreeSet, HashSet, VecDeque};
use std::marker::PhantomData;

pub use crate::model::bson_schema::FieldList;
pub use crate::model::encoding::{
    native_bool, native_date_time, native_decimal128, native_f64, native_i32, native_i64,
    native_object_id, Decoded, Encoded, NATIVE_BOOL, NATIVE_DATE_TIME, NATIVE_DECIMAL128,
    NATIVE_F64, NATIVE_I32, NATIVE_I64, NATIVE_OBJECT_ID,
};
pub use crate::query::{stored_read, stored_value, Decoder, Encoder, Ordered, Path};
use crate::BsonSchema;

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

/// The [`Form`] `Native<T>` of each BSON type whose stored form is the value itself, carrying
/// its encoder ([`crate::model::encoding`]'s `NATIVE_I64`...): the derive names it as a
/// field's form, so the field's impl has no encoder of its own for rustc to check.
macro_rules! native_forms {
    ($($encoder:ident: $ty:ty,)*) => {$(
        impl Form for Native<$ty> {
            type Type = $ty;
            type Stored = $ty;
            const ENCODER: Encoder<$ty> = $encoder;
        }
    )*};
}

native_forms! {
    NATIVE_OBJECT_ID: mongodb::bson::oid::ObjectId,
    NATIVE_DATE_TIME: mongodb::bson::DateTime,
    NATIVE_I32: i32,
    NATIVE_I64: i64,
    NATIVE_F64: f64,
    NATIVE_BOOL: bool,
    NATIVE_DECIMAL128: mongodb::bson::Decimal128,
}

/// The Rust type of a stored field and the type that describes its stored form, as one
/// associated type of its [`FieldPath`] impl (`Form`), with the encoder of a BSON scalar whose
/// stored form is the value itself: `(T,)` for a field stored as its type, `(T, S)` for one
/// whose serde helper or `#[schema(stored_as = S)]` writes an `S`, [`Native<T>`] for the BSON
/// scalars. One item of each of a model's field impls for rustc to check, where the type, the
/// stored type and the encoder were three.
pub trait Form {
    /// The field's Rust type.
    type Type;
    /// What describes the stored form.
    type Stored: ?Sized;
    /// How values are written, unless the field's impl says otherwise.
    const ENCODER: Encoder<Self::Type> = Encoder::Plain;
    /// Whether the field is an array or a set, unless the field's impl says otherwise.
    const IS_ARRAY: bool = false;
}

impl<T> Form for (T,) {
    type Type = T;
    type Stored = T;
}

impl<T, S: ?Sized> Form for (T, S) {
    type Type = T;
    type Stored = S;
}

/// The [`Form`] of a BSON scalar whose stored form is the value itself (its native encoder).
pub struct Native<T>(PhantomData<T>);

/// The [`Form`] of a bounded array or set stored as itself whose type the derive knows by name
/// (`Vec`, `VecDeque`, `HashSet`, `BTreeSet`, a fixed-size array, or an `Option` of one): a
/// declared query's `eq` on it takes one element. No bound: a type that is no bounded
/// collection is the field schema's one error.
pub struct Sequence<T>(PhantomData<T>);

impl<T> Form for Sequence<T> {
    type Type = T;
    type Stored = T;
    const IS_ARRAY: bool = true;
}

/// The Rust type of the field `KEY` of `R`.
pub type TypeOf<R, const KEY: u64> = <<R as FieldPath<KEY>>::Form as Form>::Type;

/// What describes the stored form of the field `KEY` of `R`.
pub type StoredOf<R, const KEY: u64> = <<R as FieldPath<KEY>>::Form as Form>::Stored;

/// The field list that the default [`FieldPath::STORED`] of each field's impl looks its stored
/// name up in: a struct's own (`BsonSchema::__FIELDS`, which its derive writes anyway), so that
/// no impl of a struct's field names its stored name itself. The derives name it in the impls
/// of an enum's fields (which have no list) and of flattened ones (stored at the level above:
/// an empty segment). The collections [`FieldPath`] is forwarded through, which describe
/// themselves as `BoundedCollection`s, have no list either.
pub trait StoredNames {
    /// The type's field list.
    const FIELD_LIST: Option<FieldList>;
}

impl<T: BsonSchema + ?Sized> StoredNames for T {
    const FIELD_LIST: Option<FieldList> = T::__FIELDS;
}

macro_rules! no_field_list {
    ($($ty:ident <T $(, $extra:ident)*>),*) => {$(
        impl<T $(, $extra)*> StoredNames for $ty<T $(, $extra)*> {
            const FIELD_LIST: Option<FieldList> = None;
        }
    )*};
}

no_field_list!(Vec<T>, VecDeque<T>, BTreeSet<T>, HashSet<T, H>);

/// The stored name of the field whose [`field_key`] is `key` in `fields` (`""` when there is
/// none: never, for a derived struct's impls, whose list and impls are written from the same
/// fields).
pub const fn stored_name_of(fields: Option<FieldList>, key: u64) -> &'static str {
    let Some(fields) = fields else {
        return "";
    };
    if fields.has_id && field_key(fields.id) == key {
        return "_id";
    }
    let mut i = 0;
    while i < fields.names.len() && i < fields.stored.len() {
        if field_key(fields.names[i]) == key {
            return fields.stored[i];
        }
        i += 1;
    }
    ""
}

/// A stored field of a struct, keyed by a hash of its Rust name ([`field_key`]): its Rust type
/// and the type that describes its stored form ([`Form`]), its stored name, how its values are
/// written and, for a capped array, its cap. Implemented by both derives for every stored named
/// field, and forwarded through `Option`, arrays and sets (a path through an array names its
/// elements' field, as mongod's dotted paths do), so that `field!(Ticket, history.status)`
/// resolves.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no stored field by this name",
    label = "`field!` and `#[query]` name Rust fields of a struct deriving `Document` or `BsonSchema` (serde's renames give the stored name)",
    note = "check the spelling, and that the field is not `#[serde(skip)]`; an embedded type must derive `BsonSchema` for its fields to be named"
)]
pub trait FieldPath<const KEY: u64>: StoredNames {
    /// The field's Rust type and what describes its stored form (read through [`TypeOf`] and
    /// [`StoredOf`]).
    type Form: Form;
    /// The stored name: the type's field list's ([`StoredNames`]).
    const STORED: &'static str = stored_name_of(Self::FIELD_LIST, KEY);
    /// How values are written: the form's (a BSON scalar's native encoder), or the serde
    /// helper's.
    const ENCODER: Encoder<TypeOf<Self, KEY>> = <Self::Form as Form>::ENCODER;
    /// How stored values are read back.
    const DECODER: Decoder<TypeOf<Self, KEY>> = Decoder::Plain;
    /// `#[embed(max = N, cap)]`: the cap.
    const CAP: Option<u32> = None;
    /// Whether the field is an array or a set (a bounded collection that is no map): a declared
    /// query's `eq` on it takes one element.
    const IS_ARRAY: bool = <Self::Form as Form>::IS_ARRAY;
    /// Whether the field is an `Option`: a declared query's range on it takes bounds of the
    /// value (`null` bounds no range).
    const IS_OPTION: bool = false;
    /// The field of `self`: what a copy type of another struct reads (`From<&Source>`).
    /// `#[derive(Document)]` implements it for the fields of a collection root struct, the only
    /// sources a copy type's checked constants admit; everywhere else (an enum's fields, a value
    /// embedded in a document, the forwarding impls) it is never called.
    #[inline]
    fn field(&self) -> &TypeOf<Self, KEY> {
        unreachable!("mongo-schema: `FieldPath::field` of a field that is no collection root's")
    }
}

/// `FieldPath` of a container of `T` as of `T` (`$ty`, with the generic parameters beside `T`
/// after it).
macro_rules! forward_field_path {
    ($ty:ty $(, $($extra:tt)+)?) => {
        impl<T: FieldPath<KEY>, $($($extra)+,)? const KEY: u64> FieldPath<KEY> for $ty
        where
            Self: StoredNames,
        {
            type Form = T::Form;
            const STORED: &'static str = T::STORED;
            const ENCODER: Encoder<TypeOf<Self, KEY>> = T::ENCODER;
            const DECODER: Decoder<TypeOf<Self, KEY>> = T::DECODER;
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
forward_field_path!(HashSet<T, H>, H);
forward_field_path!(Box<T>);
forward_field_path!([T; N], const N: usize);

/// `field!`'s check of a Rust field name against the stored fields of `R` (its
/// [`StoredNames::FIELD_LIST`]), while the constant of the name's key is evaluated: a name
/// that is no stored field of the struct fails there, naming the field it is near, the Rust
/// name of a stored name, or the struct's fields. A type with no field list (an enum's
/// variants, a collection) is left to the [`FieldPath`] bound. Named by `field!` through a
/// local import called like the field, so that the call, and the error, is at the name.
pub struct FieldNames<R: ?Sized> {
    _root: PhantomData<fn() -> *const R>,
}

impl<R: StoredNames + ?Sized> FieldNames<R> {
    /// The [`field_key`] of `name`, a stored field of `R` (`root` is how the caller wrote `R`).
    pub const fn key(name: &str, root: &str) -> u64 {
        if let Some(fields) = R::FIELD_LIST {
            let named = super::position(fields.names, name).is_some()
                || (fields.has_id && super::const_text::same(fields.id, name));
            if !named {
                unknown_field(fields, name, root);
            }
        }
        field_key(name)
    }
}

/// The error of a name that is no stored field of `fields`.
const fn unknown_field(fields: FieldList, name: &str, root: &str) -> ! {
    use super::Message;
    let id: &[&str] = if fields.has_id && !fields.id.is_empty() {
        std::slice::from_ref(&fields.id)
    } else {
        &[]
    };
    let message = Message::new()
        .push("no field `")
        .push(name)
        .push("` in `")
        .push(root)
        .push("`");
    // the stored (serde) name of a field, written where `field!` takes the Rust name
    let message = match super::position(fields.stored, name) {
        Some(i) if !fields.names[i].is_empty() => message
            .push(": `")
            .push(name)
            .push("` is the name it is stored under; `field!` names the Rust field: `")
            .push(fields.names[i])
            .push("`"),
        _ => match super::near_miss_in(name, fields.names, id) {
            Some(near) => message.push(": did you mean `").push(near).push("`?"),
            None => {
                let mut message = message.push("; its stored fields: ");
                let mut i = 0;
                while i < id.len() + fields.names.len() {
                    let field = if i < id.len() {
                        id[i]
                    } else {
                        fields.names[i - id.len()]
                    };
                    if i > 0 {
                        message = message.push(", ");
                    }
                    message = message.push("`").push(field).push("`");
                    i += 1;
                }
                if i == 0 {
                    message = message.push("none");
                }
                message
            }
        },
    };
    let message = message.push(
        " (`field!` names Rust fields of a struct deriving `Document` or `BsonSchema`; a `#[serde(skip)]` field is not stored)",
    );
    panic!("{}", message.text())
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
pub const fn field_path<R: FieldPath<KEY> + ?Sized, const KEY: u64>(
) -> Path<R, TypeOf<R, KEY>, StoredOf<R, KEY>> {
    Path::__new(R::STORED, R::ENCODER, R::CAP)
}

/// The typed path of `segments` joined with dots, ending at the field `L` of some embedded type.
pub const fn nested_path<R: ?Sized, L: FieldPath<KEY> + ?Sized, const KEY: u64>(
    joined: &'static str,
) -> Path<R, TypeOf<L, KEY>, StoredOf<L, KEY>> {
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
