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

/// What the derive's order checks ask of a field's stored form: [`Ordered`], or one of the
/// types whose default serde impl stores text that sorts unlike the value
/// (`rust_decimal::Decimal`, chrono's date-times), which implement it only to say so, naming
/// the helper that stores them in an ordered form (one error, at the field, that says why).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not known to be stored in a form that orders like its values: a range, a sort or an index key on it would compare its stored form",
    label = "no `Ordered` stored form",
    note = "store a decimal as a BSON decimal (`rust_decimal::Decimal` with `#[serde(with = \"mongo_schema::serde_helpers::rust_decimal_as_decimal128\")]`) or integer cents, a date as `bson::DateTime` (`#[serde(with = \"bson::serde_helpers::chrono_datetime_as_bson_datetime\")]` for chrono), a number as a number",
    note = "an array is not ordered: mongod sorts it by its smallest (ascending) or largest (descending) element; sort or range on a field of its elements instead",
    note = "a type of your own crate whose hand-written serde form preserves order says so with `impl mongo_schema::query::Ordered for {Self} {{}}` (`#[derive(BsonSchema)]` does it already for a struct with named fields or an enum; a tuple struct is stored as an array); another crate's type cannot (the orphan rule): wrap it in a newtype of yours, or store it as an ordered type with `#[schema(stored_as = T)]`"
)]
pub trait OrderCheck {
    /// Why the stored form does not order like the values (empty: it does).
    const STORED_AS_TEXT: &'static str = "";
    /// [`Ordered::__TEXT_ORDER_DIFFERS`].
    const TEXT_ORDER_DIFFERS: bool = false;
}

impl<T: Ordered + ?Sized> OrderCheck for T {
    const TEXT_ORDER_DIFFERS: bool = T::__TEXT_ORDER_DIFFERS;
}

#[cfg(feature = "rust_decimal-1")]
const DECIMAL_AS_TEXT: &str = "serde stores a `rust_decimal::Decimal` as text (\"103.99\" sorts before \"6.99\"): a range, a sort or an index key on it would compare text, not numbers. Store it as a BSON decimal, which mongod orders as a number: `#[serde(with = \"mongo_schema::serde_helpers::rust_decimal_as_decimal128\")]` (`rust_decimal_as_decimal128_optional` on an `Option`; feature `rust_decimal-1`)";

#[cfg(feature = "rust_decimal-1")]
impl OrderCheck for rust_decimal::Decimal {
    const STORED_AS_TEXT: &'static str = DECIMAL_AS_TEXT;
}

#[cfg(feature = "rust_decimal-1")]
impl OrderCheck for Option<rust_decimal::Decimal> {
    const STORED_AS_TEXT: &'static str = DECIMAL_AS_TEXT;
}

#[cfg(feature = "chrono-0_4")]
const CHRONO_AS_TEXT: &str = "serde stores a chrono `DateTime` as RFC 3339 text with as many fractional digits as the value needs (\"…:00.5Z\" sorts after \"…:01Z\"): a range, a sort or an index key on it would compare text, not instants. Store it as a BSON date: `#[serde(with = \"bson::serde_helpers::chrono_datetime_as_bson_datetime\")]` (`chrono_datetime_as_bson_datetime_optional` on an `Option`), or make the field a `bson::DateTime`";

#[cfg(feature = "chrono-0_4")]
const NAIVE_AS_TEXT: &str = "serde stores a chrono `NaiveDateTime` as text with as many fractional digits as the value needs (\"…:00.5\" sorts after \"…:01\"): a range, a sort or an index key on it would compare text, not instants. Store a `chrono::DateTime<Utc>` as a BSON date instead: `#[serde(with = \"bson::serde_helpers::chrono_datetime_as_bson_datetime\")]`, or make the field a `bson::DateTime`";

#[cfg(feature = "chrono-0_4")]
impl<Tz: chrono::TimeZone> OrderCheck for chrono::DateTime<Tz> {
    const STORED_AS_TEXT: &'static str = CHRONO_AS_TEXT;
}

#[cfg(feature = "chrono-0_4")]
impl<Tz: chrono::TimeZone> OrderCheck for Option<chrono::DateTime<Tz>> {
    const STORED_AS_TEXT: &'static str = CHRONO_AS_TEXT;
}

#[cfg(feature = "chrono-0_4")]
impl OrderCheck for chrono::NaiveDateTime {
    const STORED_AS_TEXT: &'static str = NAIVE_AS_TEXT;
}

#[cfg(feature = "chrono-0_4")]
impl OrderCheck for Option<chrono::NaiveDateTime> {
    const STORED_AS_TEXT: &'static str = NAIVE_AS_TEXT;
}

/// Compile-time check of an index key, a sort or a range: the field's stored form orders like
/// its values ([`Ordered`]); spanned at the key by the derive.
pub const fn require_ordered<T: OrderCheck + ?Sized>() {
    if !T::STORED_AS_TEXT.is_empty() {
        panic!("{}", T::STORED_AS_TEXT);
    }
}

/// Compile-time check of a declared query's range or sort: the field's stored text orders like
/// its Rust values (a unit enum whose stored names do not sort in declaration order does not).
pub const fn require_rust_order<T: OrderCheck + ?Sized>() {
    if !T::STORED_AS_TEXT.is_empty() {
        panic!("{}", T::STORED_AS_TEXT);
    }
    if T::TEXT_ORDER_DIFFERS {
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
        None => unknown_stored(fields, stored),
    }
}

/// The error of a quoted path's segment that is no stored field of `fields`: the stored name it
/// is near, the stored name of a Rust name, or the struct's stored fields.
const fn unknown_stored(fields: crate::model::bson_schema::FieldList, stored: &str) -> ! {
    use super::const_text::Message;
    let id: &[&str] = if fields.has_id { &["_id"] } else { &[] };
    let message = Message::new()
        .push("a quoted path of `#[query]` names `")
        .push(stored)
        .push("`, which its struct does not store");
    let message = match position(fields.names, stored) {
        Some(i) if !same(fields.stored[i], stored) => message
            .push(": `")
            .push(stored)
            .push("` is a Rust name, stored as `")
            .push(fields.stored[i])
            .push("`"),
        _ => match super::const_text::near_miss_in(stored, fields.stored, id) {
            Some(near) => message.push(": did you mean `").push(near).push("`?"),
            None => {
                let mut message = message.push("; its stored fields: ");
                let mut i = 0;
                while i < id.len() + fields.stored.len() {
                    let field = if i < id.len() {
                        id[i]
                    } else {
                        fields.stored[i - id.len()]
                    };
                    if i > 0 {
                        message = message.push(", ");
                    }
                    message = message.push("`").push(field).push("`");
                    i += 1;
                }
                message
            }
        },
    };
    let message = message.push(" (a quoted path is written with the stored (serde) names; with Rust names, write it unquoted: `eq(author.id)`)");
    panic!("{}", message.text())
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
