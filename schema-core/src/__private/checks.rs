//! The checks of `#[schema(...)]` constraints (the derive's `gen/checks.rs`): which field types
//! take string constraints and which take numeric ones.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};

use mongodb::bson;

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
