//! Typed field paths: a stored path of a collection root with the Rust type of its values and
//! the type that describes how they are stored.

use std::fmt;
use std::marker::PhantomData;

use mongodb::bson::Bson;

use crate::model::encoding::Encoder;

/// The types a [`Path`] carries and never holds.
type Markers<R, S> = PhantomData<fn() -> (Box<R>, Box<S>)>;

/// A stored path of the documents of `R` (`"customer.name"`, `"history.status"`), whose values
/// are `T` in Rust and are stored as `S` describes (`S` is `T` unless a serde helper or
/// `#[schema(stored_as = ...)]` changes the stored form).
///
/// Made by [`field!`](crate::field), from serde's stored names, so a renamed or removed field
/// is a compile error; the builders ([`Filter`](crate::query::Filter),
/// [`Sort`](crate::query::Sort), [`Update`](crate::query::Update)) take it with values of `T`,
/// encoded exactly as the driver stores the field.
pub struct Path<R: ?Sized, T: ?Sized, S: ?Sized = T> {
    stored: &'static str,
    encoder: Encoder<T>,
    cap: Option<u32>,
    _types: Markers<R, S>,
}

impl<R: ?Sized, T: ?Sized, S: ?Sized> Clone for Path<R, T, S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<R: ?Sized, T: ?Sized, S: ?Sized> Copy for Path<R, T, S> {}

impl<R: ?Sized, T: ?Sized, S: ?Sized> fmt::Debug for Path<R, T, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Path({:?})", self.stored)
    }
}

impl<R: ?Sized, T: ?Sized, S: ?Sized> fmt::Display for Path<R, T, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.stored)
    }
}

impl<R: ?Sized, T: ?Sized, S: ?Sized> Path<R, T, S> {
    /// A path from its parts; [`field!`](crate::field) is the checked way to make one.
    #[doc(hidden)]
    pub const fn __new(stored: &'static str, encoder: Encoder<T>, cap: Option<u32>) -> Self {
        Path {
            stored,
            encoder,
            cap,
            _types: PhantomData,
        }
    }

    /// The stored path (`"customer.name"`).
    pub const fn as_str(&self) -> &'static str {
        self.stored
    }

    /// The bound of a capped array (`#[embed(max = N, cap)]`): what `$push` keeps with `$slice`.
    pub const fn cap(&self) -> Option<u32> {
        self.cap
    }

    #[inline]
    pub(crate) fn encoder(&self) -> Encoder<T> {
        self.encoder
    }
}

/// Encodes `value` as the driver stores a field whose encoder is `encoder`.
#[inline]
pub(crate) fn encode<T: ?Sized, V: super::Value<T> + ?Sized>(
    encoder: Encoder<T>,
    value: &V,
) -> Result<Bson, crate::bson_compat::SerError> {
    match encoder {
        Encoder::Plain => value.plain(),
        Encoder::Custom(f) | Encoder::Native(f) => value.custom(f),
    }
}
