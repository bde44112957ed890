//! The typed relation of a `#[reference]` field: its `$lookup`s in both directions and, when a
//! declared index orders the children, their keyset pages.

use std::marker::PhantomData;

use mongodb::bson::{doc, Document as BsonDocument};
use mongodb::Database;
use serde::Serialize;

use super::lookup::Lookup;
use super::order::{ChildOrder, SortKey, Unordered};
use super::page::ChildPage;
use super::Attached;
use crate::{Document, Ref, RefKind};

/// A `#[reference]` field of `From` pointing at `To` documents.
#[derive(Debug)]
pub struct Relation<From, To, Order = Unordered> {
    field: &'static str,
    kind: RefKind,
    order: Order,
    types: PhantomData<fn() -> (From, To)>,
}

impl<F, T, O: Clone> Clone for Relation<F, T, O> {
    fn clone(&self) -> Self {
        Relation {
            field: self.field,
            kind: self.kind,
            order: self.order.clone(),
            types: PhantomData,
        }
    }
}

impl<F, T> Relation<F, T, Unordered> {
    #[doc(hidden)]
    /// A relation on the stored field `field`. Used by generated code.
    pub const fn new(field: &'static str, kind: RefKind) -> Self {
        Relation {
            field,
            kind,
            order: Unordered,
            types: PhantomData,
        }
    }

    /// The same relation with children ordered by `order` (from a declared index).
    pub const fn ordered(self, order: SortKey) -> Relation<F, T, SortKey> {
        Relation {
            field: self.field,
            kind: self.kind,
            order,
            types: PhantomData,
        }
    }
}

impl<F: Document, T: Document, O> Relation<F, T, O> {
    /// The stored path of the reference field.
    pub fn field(&self) -> &'static str {
        self.field
    }

    /// One, optional or many.
    pub fn kind(&self) -> RefKind {
        self.kind
    }

    /// `From` documents with the `To` document(s) they reference: `$lookup` from
    /// `To::COLLECTION` on `_id`. For an array of references, the related documents come back
    /// in the order of the array.
    pub fn lookup(&self) -> Lookup<F, T> {
        Lookup::new(
            F::COLLECTION,
            T::COLLECTION,
            self.field,
            "_id",
            self.kind == RefKind::Many,
        )
    }

    /// `To` documents (parents) with the `From` documents that reference them (children):
    /// `$lookup` from `From::COLLECTION` on the reference field, served by its index.
    pub fn children(&self) -> Lookup<T, F> {
        Lookup::new(T::COLLECTION, F::COLLECTION, "_id", self.field, false)
    }

    /// [`Relation::lookup`] read in `db`: set the outer stages, then await it.
    /// `Message::TICKET_ID.lookup_in(&db).filter(doc! { "body": "hi" }).limit(10).await`.
    pub fn lookup_in<'a>(&self, db: &'a Database) -> Lookup<F, T, Attached<'a>> {
        self.lookup().attach(db)
    }

    /// [`Relation::children`] read in `db`: set the outer stages, then await it.
    pub fn children_in<'a>(&self, db: &'a Database) -> Lookup<T, F, Attached<'a>> {
        self.children().attach(db)
    }

    /// The filter for the children of `parent`: `{ <field>: <id> }`, for a `find` or as the
    /// [`Lookup::filter`] of [`Relation::children`].
    ///
    /// On a child collection whose default collation is not simple, a `find` of your own sent
    /// without a collation compares the id under that default (`"abc"` matches `"ABC"`): send
    /// it with [`Relation::children_collation`], as the library's own reads do.
    ///
    /// # Errors
    ///
    /// [`crate::Error::UnsafeValue`] for an id that is a document, an array, a regular
    /// expression or JavaScript: it would match other parents' children.
    pub fn children_filter(&self, parent: &Ref<T>) -> crate::Result<BsonDocument>
    where
        T::Id: Serialize,
    {
        let id = parent.to_bson();
        super::reference::refuse_hostile_id("the parent id of a children filter", &id)?;
        Ok(doc! { self.field: id })
    }

    /// The collation under which the library compares the parent ids the children hold: the
    /// simple one where the child collection's default collation is another (then
    /// `Collation::simple()`, served by the reference's index, which has it), `None` where the
    /// default is simple already. Send it with a `find` of [`Relation::children_filter`]: the
    /// driver's option is [`Collation::to_driver`](crate::Collation::to_driver).
    pub fn children_collation(&self) -> Option<crate::Collation> {
        crate::Collation::for_identities(F::__default_collation().as_ref())
    }
}

impl<F: Document, T: Document, O> Relation<F, T, O> {
    /// A keyset page of the children of `parent` in index order (`limit` 50 unless changed):
    /// the next page continues after the cursor of the previous one, with `$gt` (or `$lt`) on
    /// the sort key, never with `skip`.
    ///
    /// Only for a relation with a [`SortKey`]: a declared index of the child that starts with
    /// the reference field and then the sort key (e.g.
    /// `#[index(keys(member_id = 1, loaned_at = -1))]`); without one, calling it is a compile
    /// error that says so ([`ChildOrder`]).
    pub fn page(&self, parent: &Ref<T>) -> ChildPage<F>
    where
        T::Id: Serialize,
        O: ChildOrder<F, T>,
    {
        ChildPage::new(
            F::COLLECTION,
            self.field,
            parent.to_bson(),
            self.order.sort_key(),
        )
    }

    /// The keyset page of [`Relation::page`], read in `db` when awaited (the driver's way: the
    /// database where the call starts, options as setters):
    /// `Message::TICKET_ID.page_in(&db, &ticket).after(cursor).limit(50).await`. With
    /// [`.session(&mut s)`](ChildPage::session) it reads inside the caller's transaction.
    /// (`page(&parent)`, the pinned form, stays the page's description.)
    pub fn page_in<'a>(&self, db: &'a Database, parent: &Ref<T>) -> ChildPage<F, Attached<'a>>
    where
        T::Id: Serialize,
        O: ChildOrder<F, T>,
    {
        self.page(parent).attach(db)
    }

    /// The sort key of the children (only for a relation with a [`SortKey`], see
    /// [`Relation::page`]).
    pub fn sort_key(&self) -> SortKey
    where
        O: ChildOrder<F, T>,
    {
        self.order.sort_key()
    }
}
