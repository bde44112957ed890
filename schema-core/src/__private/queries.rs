//! Declared queries (the derive's `gen/queries.rs`, `#[query]`): what an equality or a range
//! compares, quoted paths walked through embedded structs (`Embedded`, `stored_key`), and the
//! checks of sorts, ranges, projections and `$in` lengths.

use std::collections::{BTreeSet, HashSet, VecDeque};

use super::const_text::{position, same};
use super::paths::{field_key, Fields};
pub use crate::query::{Array, DeclaredQuery, Filter, Paged, QuerySpec, Unpaged, Value};
use crate::query::{Encoder, Ordered, Path};

/// The error of a declared query's `$in` argument longer than its `max`.
pub fn query_refused(path: &str, len: usize, max: usize) -> crate::Error {
    // the index fit (SORT_MERGE of at most 200 scans) was computed for `max` values
    crate::Error::BoundExceeded {
        path: path.to_owned(),
        max: max as u64,
        attempted: len as u64,
    }
}

pub use crate::geo;
pub use crate::{Granularity, TimeSeries};

/// A stored form that is a BSON date: what the time field of a time series collection holds.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not stored as a BSON date, and the time field of a time series collection must be one",
    label = "not stored as a BSON date",
    note = "make the field a `bson::DateTime` (`mongo_schema::prelude::DateTime`), or store a chrono date as one: `#[serde(with = \"bson::serde_helpers::chrono_datetime_as_bson_datetime\")]`"
)]
pub trait BsonDate {}

impl BsonDate for mongodb::bson::DateTime {}

/// Compile-time check of `timeseries(time = field)`: the field is stored as a BSON date
/// (mongod refuses a measurement whose time field is not one); spanned at the field.
pub const fn require_bson_date<T: BsonDate + ?Sized>() {}

/// Compile-time check of a declared query's `near` or `within`: the field is a GeoJSON point
/// ([`crate::geo::GeoField`]); spanned at the field by the derive.
pub const fn require_geo<T: crate::geo::GeoField + ?Sized>() {}

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
///
/// [`FieldPath`]: super::paths::FieldPath
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
///
/// [`FieldPath::IS_ARRAY`]: super::paths::FieldPath::IS_ARRAY
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
///
/// [`FieldPath::IS_OPTION`]: super::paths::FieldPath::IS_OPTION
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
