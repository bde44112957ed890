//! The order of a parent's children, which keyset pages follow: the key after the reference in
//! a declared index ([`SortKey`]), or none ([`Unordered`]). Read by the relation constants and by
//! the pages alike.

/// Marker: the reference has no sort key in a declared index, so it has no child pages.
#[derive(Debug, Clone, Copy)]
pub struct Unordered;

/// The order of a parent's children: the key that follows the reference in a declared index.
#[derive(Debug, Clone, Copy)]
pub struct SortKey {
    /// Stored path of the sort key.
    pub field: &'static str,
    /// The key's direction in the index.
    pub direction: crate::SortDirection,
    /// Whether (reference, sort key) is unique, which makes the key alone a page cursor.
    pub unique: bool,
}

/// The order of a relation's children, which its keyset pages need: implemented by
/// [`SortKey`] alone, so [`Relation::page`](super::Relation::page) on a relation without one
/// ([`Unordered`]) is a compile error that names the index to declare.
#[diagnostic::on_unimplemented(
    message = "`{Child}` has no order of its children of `{Parent}`: declare an index on the reference and a sort key for keyset pages",
    label = "`page` needs a declared index of `{Child}` that starts with the reference field, then the sort key",
    note = "declare it on `{Child}`, e.g. `#[index(keys(member_id = 1, loaned_at = -1))]` for the pages of a member's loans, newest first (the reference field, then the key the pages follow); the relation's constant then has a `SortKey`",
    note = "the library adds `_id` to that index (same direction) as the pages' tie-break, so one index serves the pages"
)]
pub trait ChildOrder<Child, Parent> {
    /// The sort key of the children.
    fn sort_key(&self) -> SortKey;
}

impl SortKey {
    /// Used by generated code: the direction of an index key written `1` / `-1`.
    #[doc(hidden)]
    pub const fn direction_of(direction: i32) -> crate::SortDirection {
        crate::SortDirection::from_sign(direction)
    }
}

impl<Child, Parent> ChildOrder<Child, Parent> for SortKey {
    fn sort_key(&self) -> SortKey {
        *self
    }
}
