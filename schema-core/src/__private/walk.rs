//! A dotted `field!` path as one type (`Then<Then<Start<Ticket>, customer>, name>`), so that a
//! misspelt segment is one unmet bound, reported once at the macro call: the path's text, its
//! field's type, stored form, encoder and cap are all read from the type's [`Walk`] impl.

use core::marker::PhantomData;

use super::{FieldPath, StoredOf, TypeOf};
use crate::query::{Encoder, Path};

/// The most segments a dotted `field!` path may have.
pub const MAX_SEGMENTS: usize = 8;
/// The longest stored path (in bytes) a dotted `field!` path may join to.
pub const MAX_PATH_BYTES: usize = 256;

/// The start of a walk: the root type `R`.
pub struct Start<R: ?Sized>(PhantomData<fn() -> *const R>);

/// The walk `P` followed by the field keyed `KEY` of the type it ends at.
pub struct Then<P, const KEY: u64>(PhantomData<fn() -> P>);

/// A walk through fields: the type it ends at, the stored segments so far, and the last
/// field's encoder and cap.
pub trait Walk {
    /// The Rust type the walk ends at.
    type At: ?Sized;
    /// What describes the stored form of the last field.
    type Stored: ?Sized;
    /// How many segments.
    const DEPTH: usize;
    /// The stored segments (the first [`Walk::DEPTH`]; the rest empty).
    const SEGMENTS: [&'static str; MAX_SEGMENTS];
    /// How values of the last field are written.
    const ENCODER: Encoder<Self::At>;
    /// The last field's cap.
    const CAP: Option<u32>;
}

impl<R: ?Sized> Walk for Start<R> {
    type At = R;
    type Stored = R;
    const DEPTH: usize = 0;
    const SEGMENTS: [&'static str; MAX_SEGMENTS] = [""; MAX_SEGMENTS];
    const ENCODER: Encoder<R> = Encoder::Plain;
    const CAP: Option<u32> = None;
}

impl<P: Walk, const KEY: u64> Walk for Then<P, KEY>
where
    P::At: FieldPath<KEY>,
{
    type At = TypeOf<P::At, KEY>;
    type Stored = StoredOf<P::At, KEY>;
    const DEPTH: usize = {
        assert!(
            P::DEPTH < MAX_SEGMENTS,
            "mongo-schema: a `field!` path of more than 8 segments"
        );
        P::DEPTH + 1
    };
    const SEGMENTS: [&'static str; MAX_SEGMENTS] = {
        let mut segments = P::SEGMENTS;
        segments[Self::DEPTH - 1] = <P::At as FieldPath<KEY>>::STORED;
        segments
    };
    const ENCODER: Encoder<Self::At> = <P::At as FieldPath<KEY>>::ENCODER;
    const CAP: Option<u32> = <P::At as FieldPath<KEY>>::CAP;
}

/// The segments of `W` joined with dots (empty ones, a flattened value's, left out), padded with
/// zeros, and the joined length.
const fn joined<W: Walk>() -> ([u8; MAX_PATH_BYTES], usize) {
    let segments = W::SEGMENTS;
    let len = super::joined_len(&segments);
    assert!(
        len <= MAX_PATH_BYTES,
        "mongo-schema: a `field!` path longer than 256 bytes"
    );
    (super::join::<MAX_PATH_BYTES>(&segments), len)
}

/// The typed path of the walk `W` from the root `R`: what `field!(Root, a.b.c)` expands to.
pub const fn walked<R: ?Sized, W: Walk>() -> Path<R, W::At, W::Stored> {
    let bytes: &'static [u8; MAX_PATH_BYTES] = const { &joined::<W>().0 };
    let len = const { joined::<W>().1 };
    // joined from `&str`s: always UTF-8
    let path = super::message_text(bytes.split_at(len).0);
    Path::__new(path, W::ENCODER, W::CAP)
}
