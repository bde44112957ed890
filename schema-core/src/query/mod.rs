//! Queries: typed field paths, filter / sort / update builders that encode values as the
//! driver stores them, declared queries (`#[query(...)]`), the planner's rules that fit a query
//! to an index, and the proof by `explain`.
//!
//! Through the facade: `mongo_schema::field!(Ticket, customer.name)` is a typed [`Path`];
//! `Filter::new().eq(field!(Ticket, team), "billing")` builds `{ team: "billing" }` with the value
//! encoded as the field is stored; `#[query(...)]` on a `Document` declares an access pattern
//! (see the `mongo-schema` crate's documentation, section *Queries*).

mod builder;
pub(crate) mod declared;
/// mongod's planner rules (the `mongo-schema-planner` crate, shared with the derive).
pub use mongo_schema_planner as fit;
pub(crate) mod fitting;
pub(crate) mod keyset;
pub(crate) mod path;
pub mod plan_reader;
mod prove;
mod usage;

#[doc(hidden)]
pub use crate::model::encoding::{stored_read, stored_value};
pub use crate::model::encoding::{Decoder, Encoder};
pub use builder::{Filter, Sort, Update};
pub use declared::{DeclaredQuery, Paged, Paging, QueryCursor, QuerySpec, Unpaged};
pub use fit::ServerRules;
pub use fitting::QueryFit;
pub use path::Path;
pub use plan_reader::{PlanFacts, SortVerdict};
pub use prove::{ProofReport, QueryProof};
pub use usage::IndexUsage;

use mongodb::bson::Bson;

/// A value that can be compared with (or written to) a field whose values are `T`: `T` itself,
/// and the borrowed forms a caller has at hand (`str` for `String`, `T` for `Option<T>`).
///
/// The value is encoded as the field is stored (the field's serde helper included), never
/// through `From<T> for Bson`.
#[diagnostic::on_unimplemented(
    message = "a `{Self}` is not a value of a field of type `{T}`",
    label = "expected a `{T}` here (or its borrowed form: `&str` for a `String`, `T` for an `Option<T>`)",
    note = "a declared query's arguments, `Update::set` and `inc` values and `compare_and_set`'s expected value have the type of the field they name, and are encoded as that field stores them"
)]
pub trait Value<T: ?Sized> {
    /// Serialized as the driver stores it.
    #[doc(hidden)]
    fn plain(&self) -> Result<Bson, crate::bson_compat::SerError>;
    /// Serialized through the field's helper.
    #[doc(hidden)]
    fn custom(
        &self,
        helper: fn(&T) -> Result<Bson, crate::bson_compat::SerError>,
    ) -> Result<Bson, crate::bson_compat::SerError>;
}

impl<T: serde::Serialize + ?Sized> Value<T> for T {
    #[inline]
    fn plain(&self) -> Result<Bson, crate::bson_compat::SerError> {
        stored_value(self)
    }
    #[inline]
    fn custom(
        &self,
        helper: fn(&T) -> Result<Bson, crate::bson_compat::SerError>,
    ) -> Result<Bson, crate::bson_compat::SerError> {
        helper(self)
    }
}

impl<T: serde::Serialize> Value<Option<T>> for T {
    #[inline]
    fn plain(&self) -> Result<Bson, crate::bson_compat::SerError> {
        stored_value(self)
    }
    fn custom(
        &self,
        _helper: fn(&Option<T>) -> Result<Bson, crate::bson_compat::SerError>,
    ) -> Result<Bson, crate::bson_compat::SerError> {
        Err(<crate::bson_compat::SerError as serde::ser::Error>::custom(
            "a field with a serde helper on its `Option` takes an `Option` value: pass `&Some(value)`",
        ))
    }
}

impl Value<String> for str {
    #[inline]
    fn plain(&self) -> Result<Bson, crate::bson_compat::SerError> {
        Ok(Bson::String(self.to_owned()))
    }
    fn custom(
        &self,
        helper: fn(&String) -> Result<Bson, crate::bson_compat::SerError>,
    ) -> Result<Bson, crate::bson_compat::SerError> {
        helper(&self.to_owned())
    }
}

impl Value<Option<String>> for str {
    #[inline]
    fn plain(&self) -> Result<Bson, crate::bson_compat::SerError> {
        Ok(Bson::String(self.to_owned()))
    }
    fn custom(
        &self,
        helper: fn(&Option<String>) -> Result<Bson, crate::bson_compat::SerError>,
    ) -> Result<Bson, crate::bson_compat::SerError> {
        helper(&Some(self.to_owned()))
    }
}

/// `&str` where a `String` is queried: a list of `&str` (`any_of(tags)` given `&["rust", "go"]`).
/// (Both forward to the `str` impls.)
impl Value<String> for &str {
    #[inline]
    fn plain(&self) -> Result<Bson, crate::bson_compat::SerError> {
        Value::<String>::plain(*self)
    }
    fn custom(
        &self,
        helper: fn(&String) -> Result<Bson, crate::bson_compat::SerError>,
    ) -> Result<Bson, crate::bson_compat::SerError> {
        Value::<String>::custom(*self, helper)
    }
}

impl Value<Option<String>> for &str {
    #[inline]
    fn plain(&self) -> Result<Bson, crate::bson_compat::SerError> {
        Value::<Option<String>>::plain(*self)
    }
    fn custom(
        &self,
        helper: fn(&Option<String>) -> Result<Bson, crate::bson_compat::SerError>,
    ) -> Result<Bson, crate::bson_compat::SerError> {
        Value::<Option<String>>::custom(*self, helper)
    }
}

/// A stored form whose order is the order of the Rust values (or that has no order of its own
/// to betray, like a binary id): what a range, a sort or an index key needs.
///
/// Not implemented for arrays (mongod sorts an array by its smallest or largest element), nor
/// for the types serde stores as text that sorts unlike the value:
/// `rust_decimal::Decimal` (`"103.99" < "6.99"`; stored as a BSON decimal by
/// `serde_helpers::rust_decimal_as_decimal128`, feature `rust_decimal-1`, it is ordered), chrono's and time's dates and times (RFC 3339
/// with a variable number of fractional digits), a number stored as a string.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not known to be stored in a form that orders like its values: a range, a sort or an index key on it would compare its stored form",
    label = "no `Ordered` stored form",
    note = "store a decimal as a BSON decimal (`rust_decimal::Decimal` with `#[serde(with = \"mongo_schema::serde_helpers::rust_decimal_as_decimal128\")]`) or integer cents, a date as `bson::DateTime` (`#[serde(with = \"bson::serde_helpers::chrono_datetime_as_bson_datetime\")]` for chrono), a number as a number",
    note = "an array is not ordered: mongod sorts it by its smallest (ascending) or largest (descending) element; sort or range on a field of its elements instead",
    note = "a type of your own crate whose hand-written serde form preserves order says so with `impl mongo_schema::query::Ordered for {Self} {{}}` (`#[derive(BsonSchema)]` does it already for a struct with named fields or an enum; a tuple struct is stored as an array); another crate's type cannot (the orphan rule): wrap it in a newtype of yours, or store it as an ordered type with `#[schema(stored_as = T)]`"
)]
pub trait Ordered {
    /// `true` for a unit-only enum stored as its variants' names when those do not sort as text
    /// in declaration order: an index on it serves equalities, but a declared query's range or
    /// sort on it would compare the text (refused by the derive).
    #[doc(hidden)]
    const __TEXT_ORDER_DIFFERS: bool = false;
}

/// A stored form that `$inc` can add to: a number.
#[diagnostic::on_unimplemented(
    message = "`$inc` needs a numeric field, and `{Self}` is not stored as a number",
    label = "not a number"
)]
pub trait Numeric {}

/// An array field (`Vec<T>`, `VecDeque<T>`, a set, `[T; N]`, or one of them in an `Option`):
/// what `$elemMatch`, `$push` and an element's equality need.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an array field",
    label = "`$elemMatch`, `$push` and `contains` take array fields"
)]
pub trait Array {
    /// The element type.
    type Elem;
}

macro_rules! marker {
    ($trait:ident: $($ty:ty),* $(,)?) => { $(impl $trait for $ty {})* };
}

marker!(Ordered: i8, i16, i32, i64, u8, u16, u32, u64, usize, f32, f64, bool, char, String, str);
marker!(Ordered: mongodb::bson::oid::ObjectId, mongodb::bson::DateTime, mongodb::bson::Timestamp,
    mongodb::bson::Decimal128, mongodb::bson::Binary, mongodb::bson::Uuid, mongodb::bson::Bson,
    mongodb::bson::Document);
marker!(Ordered: crate::model::stored::Int32FromUnsigned, crate::model::stored::DoubleFromU32,
    crate::model::stored::DoubleFromU64, crate::model::stored::ObjectIdHex);
marker!(Numeric: i8, i16, i32, i64, u8, u16, u32, u64, usize, f32, f64, mongodb::bson::Decimal128,
    crate::model::stored::Int32FromUnsigned, crate::model::stored::DoubleFromU32,
    crate::model::stored::DoubleFromU64);

#[cfg(feature = "uuid-1")]
#[cfg_attr(docsrs, doc(cfg(feature = "uuid-1")))]
impl Ordered for uuid::Uuid {}
#[cfg(feature = "chrono-0_4")]
#[cfg_attr(docsrs, doc(cfg(feature = "chrono-0_4")))]
impl Ordered for chrono::NaiveDate {} // "2024-01-31": fixed width, sorts by date

impl<T: Ordered + ?Sized> Ordered for &T {
    const __TEXT_ORDER_DIFFERS: bool = T::__TEXT_ORDER_DIFFERS;
}
impl<T: Ordered> Ordered for Option<T> {
    const __TEXT_ORDER_DIFFERS: bool = T::__TEXT_ORDER_DIFFERS;
}
impl<T: crate::Document> Ordered for crate::Ref<T> {}
impl<T: Numeric> Numeric for Option<T> {}

impl<T> Array for Vec<T> {
    type Elem = T;
}
impl<T> Array for std::collections::VecDeque<T> {
    type Elem = T;
}
impl<T> Array for std::collections::BTreeSet<T> {
    type Elem = T;
}
impl<T, H> Array for std::collections::HashSet<T, H> {
    type Elem = T;
}
impl<T, const N: usize> Array for [T; N] {
    type Elem = T;
}
impl<A: Array> Array for Option<A> {
    type Elem = A::Elem;
}

/// The typed path of a stored field: `field!(Ticket, team)`, `field!(Ticket, customer.name)`,
/// `field!(Ticket, history.status)` (through an array, as mongod's dotted paths go), each a
/// [`Path`] with the Rust type of the field's values.
///
/// Segments are Rust field names; the path holds serde's stored names (`rename`, `rename_all`,
/// `_id`), computed at compile time. A misspelt, skipped or renamed-away field is a compile
/// error, and so is a value of the wrong type in the builders. A dotted path has at most 8
/// segments and joins to at most 256 bytes (a longer one is a compile error saying so).
#[macro_export]
macro_rules! field {
    ($root:ty, $first:ident) => {
        $crate::__private::field_path::<$root, {
            // the name checked against the struct's stored fields: a misspelt one is one error
            // at the name, with the field it is near
            #[allow(unused_imports)]
            use $crate::__private::FieldNames as $first;
            $crate::__private::__field_key!($first, $root)
        }>()
    };
    ($root:ty, $first:ident $(. $rest:ident)+) => {
        $crate::__field_walk!(@ [$root] [$crate::__private::Then<$crate::__private::Start<$root>, {
            #[allow(unused_imports)]
            use $crate::__private::FieldNames as $first;
            $crate::__private::__field_key!($first, $root)
        }>] $($rest).+)
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __field_walk {
    (@ [$root:ty] [$w:ty] $f:ident . $($rest:ident).+) => {
        $crate::__field_walk!(@ [$root]
            [$crate::__private::Then<$w, { $crate::__private::field_key(stringify!($f)) }>]
            $($rest).+)
    };
    // the whole walk is one type: a misspelt segment is one unmet bound, one error
    (@ [$root:ty] [$w:ty] $f:ident) => {
        $crate::__private::walked::<$root, $crate::__private::Then<$w, { $crate::__private::field_key(stringify!($f)) }>>()
    };
}
