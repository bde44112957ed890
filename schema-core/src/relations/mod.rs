//! Relationships at run time: typed references ([`reference`]), `$lookup`s in both directions
//! ([`lookup`]), keyset pages of a parent's children ([`page`]), batches of references resolved
//! with one query ([`resolve`]), and the two patterns that keep related data next to its parent:
//! subsets with their counts and counters ([`subset`]) and buckets ([`bucket`]); parts
//! stored under their owner's `_id` ([`part`]); bounded embedded arrays
//! ([`embedded`]) and compare-and-set ([`compare`]).
//!
//! `#[derive(Document)]` emits one [`Relation`] constant per `#[reference]` field, named after
//! the field in upper case (`Message::TICKET_ID`). Every query built here is served by an index
//! the schema creates: the target's `_id` for parent lookups and batches, the reference index
//! (or a declared index starting with the reference) for children.

pub(crate) mod bucket;
pub(crate) mod compare;
pub(crate) mod embedded;
pub(crate) mod lookup;
mod order;
pub(crate) mod page;
pub(crate) mod part;
pub(crate) mod reference;
mod relation;
pub(crate) mod resolve;
pub(crate) mod subset;

pub use lookup::{Joined, Lookup, RELATED_FIELD};
pub use order::{ChildOrder, SortKey, Unordered};
pub use page::{ChildPage, Page, PageCursor, MAX_PAGE_SIZE};
pub use part::PartOf;
pub use relation::Relation;
pub use resolve::Resolved;

/// The state of a described call ([`ChildPage`], [`Lookup`]) with no database yet: its
/// commands can be read (for `explain`), and nothing can be sent.
#[derive(Debug, Clone, Copy, Default)]
pub struct Detached;

/// The state of a call given its database where it started ([`crate::Relation::page_in`],
/// [`crate::Relation::lookup_in`]), and optionally the caller's session: await it.
pub struct Attached<'a> {
    pub(crate) db: &'a mongodb::Database,
    pub(crate) session: Option<&'a mut mongodb::ClientSession>,
}

impl<'a> Attached<'a> {
    pub(crate) fn new(db: &'a mongodb::Database) -> Self {
        Attached { db, session: None }
    }
}

impl std::fmt::Debug for Attached<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Attached")
            .field("db", &self.db.name())
            .field("session", &self.session.is_some())
            .finish()
    }
}

/// `value` as the driver stores it, with the driver's error type.
pub(crate) fn to_bson<V: serde::Serialize + ?Sized>(
    value: &V,
) -> crate::Result<mongodb::bson::Bson> {
    Ok(crate::model::document::stored_bson(value).map_err(mongodb::error::Error::from)?)
}

/// A key under which equal ids meet, numbers compared by value: an `_id` stored as `Int32` by
/// another driver is the same document as the `i64` a reference holds.
fn id_key(id: Option<&mongodb::bson::Bson>) -> String {
    id.map_or_else(|| "-".to_owned(), crate::sync::id_key)
}
