//! What ties a document to another (the derive's `gen/relations.rs`, and the subsets and
//! buckets of `gen/copies.rs`): a reference's id type, a subset's parent reference, preview and
//! counter.

use super::paths::{FieldPath, TypeOf};
pub use crate::relations::subset::rule::{subset_preview, PreviewOf};

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
    message = "`{Self}` has no `#[reference]` to `{P}`, which a `#[subset(of = {Self})]` or `#[counter(of = {Self})]` of `{P}` needs",
    label = "the children of a subset or counter must say which `{P}` they belong to",
    note = "give `{Self}` a field `#[reference] pub parent_id: Ref<{P}>` (indexed with the subset's sort key: `#[index(keys(parent_id = 1, at = -1))]`), or an `#[extended_ref(to = {P}, ...)]` whose `_id` serves as the reference"
)]
pub trait ChildOf<P: ?Sized> {
    /// The child's stored path holding the parent's `_id` (`ticket_id`, `member._id`); empty
    /// when the child holds several references to `P` (see [`child_parent_field`]).
    const PARENT_FIELD: &'static str;
    /// When the child holds several references to `P`: why a subset or counter must say `via`,
    /// naming the child's fields that reference `P`.
    const SEVERAL: &'static str = "";
}

/// The child's path holding the parent's `_id`, checked while evaluating the subset's
/// constant: a child with two references to the parent cannot say which one the subset means.
pub const fn child_parent_field<C: ChildOf<P> + ?Sized, P: ?Sized>() -> &'static str {
    if C::PARENT_FIELD.is_empty() {
        panic!("{}", C::SEVERAL);
    }
    C::PARENT_FIELD
}

/// A field that holds the `_id` of a `P`: what `#[subset(via = field)]` names.
#[diagnostic::on_unimplemented(
    message = "`via` names a field of type `{Self}`, which holds no reference to `{P}`",
    label = "not a `Ref<{P}>`",
    note = "`via` names the child's `#[reference]` field to the parent of the subset or counter: a `Ref<{P}>` (or an `Option` of one)"
)]
pub trait ParentRef<P: ?Sized> {}

impl<P: crate::Document> ParentRef<P> for crate::Ref<P> {}
impl<P: crate::Document> ParentRef<P> for Option<crate::Ref<P>> {}

/// The stored name of the child's field `KEY` that `#[subset(via = field)]` follows: a
/// reference to the parent (checked by the bounds).
pub const fn via_parent_field<C, P, const KEY: u64>() -> &'static str
where
    C: ChildOf<P> + FieldPath<KEY> + ?Sized,
    TypeOf<C, KEY>: ParentRef<P>,
    P: ?Sized,
{
    <C as FieldPath<KEY>>::STORED
}

/// Compile-time check of a subset's preview type.
pub fn require_preview<V: PreviewOf<C>, C>() {}

/// Compile-time check that `T` is a collection root (`to = T`, `of = T`).
pub fn require_document<T: crate::Document>() {}

/// An integer field that counts children or entries (`#[subset(count)]`, `#[bucket(count)]`,
/// `#[counter]` with a declared maximum): the library `$inc`s it.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot count: the `count` field of a `#[subset]` or `#[bucket]`, or a `#[counter]`, is an integer the library increments",
    label = "not an integer",
    note = "use `i64` (or `i32`)"
)]
pub trait CountInteger {
    /// The counter's BSON integer type.
    const TYPE: crate::CounterType;
}
impl CountInteger for i32 {
    const TYPE: crate::CounterType = crate::CounterType::Int32;
}
impl CountInteger for i64 {
    const TYPE: crate::CounterType = crate::CounterType::Int64;
}

/// Compile-time check of a count field.
pub const fn require_counter<T: CountInteger>() -> crate::CounterType {
    T::TYPE
}

/// The field of a `#[counter]` whose bound is unknown (no `#[schema(maximum = N)]`): it counts
/// children that nothing bounds, so an `i32` could overflow (the validator would then refuse
/// every new child); only `i64` holds such a count.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot hold this `#[counter]`: the count of children that nothing bounds is an `i64`",
    label = "not an `i64`",
    note = "use `i64`; an `i32` count needs a bound the validator enforces: `#[schema(maximum = N)]` on the field"
)]
pub trait UnboundedCount {
    /// The counter's BSON integer type.
    const TYPE: crate::CounterType;
}
impl UnboundedCount for i64 {
    const TYPE: crate::CounterType = crate::CounterType::Int64;
}

/// The `_id` type of a part stored under its owner's `_id` (`#[collection(same_id_as = Owner)]`):
/// the owner's own (`OwnerId`, its `Document::Id`).
#[diagnostic::on_unimplemented(
    message = "the `_id` of a part stored under its owner's `_id` is `{OwnerId}`, the `_id` type of `{Owner}`, not `{Self}`",
    label = "`#[collection(same_id_as = {Owner})]`: make this `{OwnerId}`",
    note = "a part holds its owner's `_id`, so that one id finds both documents"
)]
pub trait SameIdAs<OwnerId, Owner> {}
impl<I, O> SameIdAs<I, O> for I {}

/// A part stored under its owner's `_id` (`#[collection(same_id_as = Owner)]`): its owner's
/// type, which the generated `of` and `of_all` take the reference of.
pub trait PartOwner {
    /// The owner's type.
    type Owner: crate::Document;
}

/// Compile-time check of a part's `_id` type.
pub fn require_same_id<I: SameIdAs<OwnerId, Owner>, OwnerId, Owner>() {}

/// Compile-time check of a `#[counter]` field without a declared maximum.
pub const fn require_unbounded_count<T: UnboundedCount>() -> crate::CounterType {
    T::TYPE
}

/// The kind of collection a `#[derive(Document)]` type is stored in (implemented by the
/// derive): [`PlainCollection`] or [`TimeSeriesCollection`]. mongod refuses writes to a time
/// series collection inside a transaction (OperationNotSupportedInTransaction), and its change
/// streams do not show them, so a time series collection takes no part in the relationships the
/// library keeps with either: the bounds below keep it out, spanned at the attribute naming it.
pub trait CollectionKind {
    /// [`PlainCollection`] or [`TimeSeriesCollection`].
    type Kind;
}

/// A collection that is not a time series.
pub enum PlainCollection {}

/// A time series collection (`#[collection(timeseries(...))]`).
pub enum TimeSeriesCollection {}

/// The children of a `#[subset]` or `#[counter]`: written in one transaction with their
/// parent's previews and counts, and followed by the sync worker.
#[diagnostic::on_unimplemented(
    message = "a time series collection cannot be the child of a `#[subset]` or `#[counter]`: mongod refuses writes to a time series collection inside a transaction (the helpers write a child and its parent's previews or count in one), and its change streams do not show them (the sync worker follows the children)",
    label = "a time series collection",
    note = "read the latest measurements with a declared query on the time series (`#[query(eq(sensor), sort(at = -1))]`), or store the children in a plain collection"
)]
pub trait SubsetChildKind {}
impl SubsetChildKind for PlainCollection {}

/// The source of a copy kept in sync (`#[extended_ref(sync = transactional | async |
/// reconcile)]`): updated in one transaction with its copies, or followed by the sync worker.
#[diagnostic::on_unimplemented(
    message = "a time series collection cannot be the source of an `#[extended_ref]` kept in sync: mongod refuses writes to a time series collection inside a transaction (`update_source` writes the source and its copies in one), and its change streams do not show them (the sync worker follows the source)",
    label = "a time series collection",
    note = "copy the measurement once (`sync = \"frozen\"`), or hold a `#[reference]` to it"
)]
pub trait CopySourceKind {}
impl CopySourceKind for PlainCollection {}

/// The owner of a part stored under its `_id` (`#[collection(same_id_as = Owner)]`): deleted in
/// one transaction with its parts. Read through [`OwnerProbe`], so that an owner that is no
/// collection root is one error (`PartOwner::Owner`'s), not two.
#[diagnostic::on_unimplemented(
    message = "a time series collection cannot own a part (`same_id_as`): mongod refuses writes to a time series collection inside a transaction (an owner is deleted with its parts in one), and a measurement has no `_id` index to find its part by",
    label = "a time series collection",
    note = "store the part's fields in the measurement, or make the owner a plain collection"
)]
pub trait PartOwnerKind {}
impl PartOwnerKind for PlainCollection {}

/// What a part's owner is, found by method resolution: `(&&OwnerProbe::<O>::new()).owner_kind()`
/// is [`TimeSeriesCollection`] for a time series collection root, [`PlainCollection`] for any
/// other type (a plain root, or a type that is no root, which `PartOwner` reports).
pub struct OwnerProbe<O: ?Sized>(core::marker::PhantomData<fn() -> *const O>);

impl<O: ?Sized> OwnerProbe<O> {
    /// The probe of `O`.
    pub fn new() -> Self {
        OwnerProbe(core::marker::PhantomData)
    }
}

impl<O: ?Sized> Default for OwnerProbe<O> {
    fn default() -> Self {
        Self::new()
    }
}

/// The probe's answer for a time series collection root (taken first, by reference).
pub trait TimeSeriesOwner {
    /// [`TimeSeriesCollection`].
    fn owner_kind(&self) -> core::marker::PhantomData<TimeSeriesCollection> {
        core::marker::PhantomData
    }
}
impl<O: CollectionKind<Kind = TimeSeriesCollection> + ?Sized> TimeSeriesOwner for &OwnerProbe<O> {}

/// The probe's answer for every other type.
pub trait OtherOwner {
    /// [`PlainCollection`].
    fn owner_kind(&self) -> core::marker::PhantomData<PlainCollection> {
        core::marker::PhantomData
    }
}
impl<O: ?Sized> OtherOwner for OwnerProbe<O> {}

/// Compile-time check of a part's owner, from its probe: no time series collection.
pub fn require_part_owner<K: PartOwnerKind>(_kind: core::marker::PhantomData<K>) {}

/// Compile-time check that `C` can be the child of a subset or counter.
pub fn require_subset_child<C: CollectionKind + ?Sized>()
where
    C::Kind: SubsetChildKind,
{
}

/// Compile-time check that `S` can be the source of a copy kept in sync.
pub fn require_copy_source<S: CollectionKind + ?Sized>()
where
    S::Kind: CopySourceKind,
{
}
