//! The run-time half of `#[collection(same_id_as = Owner)]`: a part stored under its owner's
//! `_id` in a second collection (seed 003, question 6: "embedding a 40 KB specification sheet
//! in a product that is mostly read in listings makes every listing read carry it through the
//! cache"). The owner is read alone; its part by the owner's id, on the part's `_id` index (no
//! index of its own); both are written in one transaction, and every path of the library that
//! deletes an owner deletes its parts in the same transaction:
//! [`Schema::delete_source`](crate::Schema::delete_source), [`Subset::delete`](crate::Subset::delete)
//! and [`Counter::delete`](crate::Counter::delete) of a child that owns parts, the
//! [`dedupe`](crate::migrate::dedupe) migration step, and `Transaction::delete_one` and
//! `delete_many`. Nothing expires an owner (a TTL index on one is refused by `Schema::build`);
//! `reconcile` deletes the orphan parts that `audit` counts.

use std::collections::BTreeMap;
use std::future::IntoFuture;
use std::marker::PhantomData;
use std::sync::RwLock;
use std::time::Duration;

use futures_util::future::BoxFuture;
use mongodb::bson::{Bson, Document as BsonDocument};
use mongodb::{ClientSession, Database};
use serde::Serialize;

use super::lookup::Lookup;
use super::resolve::{Resolve, ResolveAll};
use super::Attached;
use crate::sync::transaction::{in_transaction_or, TRANSACTION_DEADLINE};
use crate::{Document, Error, Identified, Ref, Result, ResultExt};

/// The part collections of each owner collection, as the schemas built in this process declare
/// them (`Schema::build` registers its parts): the helpers that delete a document without a
/// schema at hand (a subset's or counter's child, a migration step) read it here, so that a
/// part goes with its owner whatever path deletes the owner.
static PARTS: RwLock<BTreeMap<String, Vec<String>>> = RwLock::new(BTreeMap::new());

/// Registers the parts of `collections` (called by `Schema::build`; kept for the life of the
/// process, added to by each schema built).
pub(crate) fn register(collections: &[crate::model::collection::CollectionSpec]) {
    let mut parts = PARTS.write().unwrap_or_else(|e| e.into_inner());
    for spec in collections {
        let Some(part) = &spec.part_of else { continue };
        let known = parts.entry(part.owner.clone()).or_default();
        if !known.contains(&spec.name) {
            known.push(spec.name.clone());
        }
    }
}

/// The part collections of the owner collection `owner` (empty: none known).
pub(crate) fn parts_of(owner: &str) -> Vec<String> {
    PARTS
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .get(owner)
        .cloned()
        .unwrap_or_default()
}

/// Inside a transaction: deletes the parts of the owners `ids` of `owner` (none when `owner`
/// has no parts). Returns the parts deleted per part collection.
pub(crate) async fn delete_parts_in(
    db: &Database,
    parts: &[String],
    ids: &[Bson],
    session: &mut ClientSession,
) -> Result<Vec<(String, u64)>> {
    let mut deleted = Vec::with_capacity(parts.len());
    if ids.is_empty() {
        return Ok(parts.iter().map(|p| (p.clone(), 0)).collect());
    }
    for part in parts {
        let filter = match ids {
            [one] => mongodb::bson::doc! { "_id": one.clone() },
            many => mongodb::bson::doc! { "_id": { "$in": many.to_vec() } },
        };
        let result = db
            .collection::<BsonDocument>(part)
            .delete_many(filter)
            .session(&mut *session)
            .await
            .in_collection(part)?;
        deleted.push((part.clone(), result.deleted_count));
    }
    Ok(deleted)
}

/// The part `P` of every `O`, stored under the owner's `_id`: generated as the constant
/// `P::OWNER` of a `#[collection(same_id_as = O)]` (with `P::of` and `P::of_all` beside it).
///
/// ```no_run
/// # use mongo_schema_core::{Document, Identified, PartOf};
/// # async fn f<Product, ProductSpec>(
/// #     db: &mongodb::Database, owner: &PartOf<Product, ProductSpec>, product: &Product, sheet: &ProductSpec,
/// # ) -> mongo_schema_core::Result<()>
/// # where
/// #     Product: Document<Id = String> + Identified + serde::Serialize + serde::de::DeserializeOwned + Send + Sync,
/// #     ProductSpec: Document<Id = String> + Identified + serde::Serialize + serde::de::DeserializeOwned + Send + Sync,
/// # {
/// // `owner` is `&ProductSpec::OWNER`
/// owner.insert(db, product, sheet).await?; // both, in one transaction
/// let sheet = owner.of(db, &product.to_ref()).await?; // by the product's `_id`
/// for row in owner.lookup_in(db).limit(10).await? {
///     println!("{} parts", row.related.len()); // 0 or 1
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct PartOf<O, P> {
    types: PhantomData<fn() -> (O, P)>,
    deadline: Duration,
}

impl<O, P> Clone for PartOf<O, P> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<O, P> Copy for PartOf<O, P> {}

impl<O, P> PartOf<O, P> {
    #[doc(hidden)]
    /// Used by generated code.
    pub const fn new() -> Self {
        PartOf {
            types: PhantomData,
            deadline: TRANSACTION_DEADLINE,
        }
    }

    /// The same relation whose transaction ([`PartOf::insert`]) gives up after `deadline` in
    /// all (default [`TRANSACTION_DEADLINE`]).
    pub const fn transaction_deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }
}

impl<O, P> PartOf<O, P>
where
    O: Document,
    P: Document<Id = O::Id>,
{
    /// The part's reference of `owner`: the same id, typed for the part.
    pub fn part_ref(owner: &Ref<O>) -> Ref<P>
    where
        O::Id: Clone,
    {
        Ref::new(owner.id().clone())
    }

    /// Reads `owner`'s part (`None`: the owner has none): one `find` by `_id` on the part's
    /// collection. Await it; with [`.session(&mut s)`](Resolve::session) it reads inside the
    /// caller's transaction.
    ///
    /// # Errors
    ///
    /// As [`Ref::resolve`]: an id that is an operator is refused before anything is sent.
    pub fn of<'a>(&self, db: &'a Database, owner: &Ref<O>) -> Resolve<'a, P>
    where
        O::Id: Serialize + Clone,
    {
        Self::part_ref(owner).resolve(db)
    }

    /// Reads the parts of `owners` with one `$in` query on `_id`, in the owners' order; the
    /// owners without a part are in [`Resolved::missing`](crate::Resolved::missing) (as
    /// references to the part).
    ///
    /// # Errors
    ///
    /// As [`Ref::resolve_all`].
    pub fn of_all<'a, 'r>(
        &self,
        db: &'a Database,
        owners: impl IntoIterator<Item = &'r Ref<O>>,
    ) -> ResolveAll<'a, P>
    where
        O: 'r,
        O::Id: Serialize + Clone,
    {
        let parts: Vec<Ref<P>> = owners.into_iter().map(Self::part_ref).collect();
        Ref::resolve_all(db, &parts)
    }

    /// Owners with their part: `$lookup` from the part's collection on `_id` (its `_id`
    /// index), at most one related document each. Filter, sort and limit the owners first
    /// ([`Lookup::filter`], ...): only the owners kept are joined.
    pub fn lookup(&self) -> Lookup<O, P> {
        Lookup::new(O::COLLECTION, P::COLLECTION, "_id", "_id", false)
    }

    /// [`PartOf::lookup`] read in `db`: set the owners' stages, then await it.
    pub fn lookup_in<'a>(&self, db: &'a Database) -> Lookup<O, P, Attached<'a>> {
        self.lookup().attach(db)
    }

    /// Parts with their owner: `$lookup` from the owner's collection on `_id` (an empty
    /// [`Joined::related`](crate::Joined::related) is an orphan part).
    pub fn owners(&self) -> Lookup<P, O> {
        Lookup::new(P::COLLECTION, O::COLLECTION, "_id", "_id", false)
    }

    /// Inserts `owner` and its `part` in one transaction: both are stored or neither. The two
    /// `_id`s must be equal (checked before anything is sent). With
    /// [`.session(&mut s)`](PartInsert::session) it runs inside the caller's transaction.
    ///
    /// # Errors
    ///
    /// See [`PartInsert`]'s `into_future`.
    pub fn insert<'a>(&self, db: &'a Database, owner: &O, part: &P) -> PartInsert<'a>
    where
        O: Serialize + Identified,
        P: Serialize + Identified,
    {
        let prepared = (|| {
            let owner_doc = crate::model::document::stored_document(owner)
                .map_err(mongodb::error::Error::from)?;
            let part_doc = crate::model::document::stored_document(part)
                .map_err(mongodb::error::Error::from)?;
            let same = match (owner_doc.get("_id"), part_doc.get("_id")) {
                (Some(a), Some(b)) => crate::sync::id_key(a) == crate::sync::id_key(b),
                _ => false,
            };
            if !same {
                return Err(Error::InvalidArgument {
                    argument: "part._id".to_owned(),
                    reason: format!(
                        "a `{}` part is stored under its owner's `_id`, and this one's `_id` ({}) is not the `{}` owner's ({})",
                        P::COLLECTION,
                        part_doc.get("_id").cloned().unwrap_or(Bson::Null),
                        O::COLLECTION,
                        owner_doc.get("_id").cloned().unwrap_or(Bson::Null),
                    ),
                });
            }
            Ok((owner_doc, part_doc))
        })();
        PartInsert {
            db,
            owners: O::COLLECTION,
            parts: P::COLLECTION,
            deadline: self.deadline,
            prepared,
            session: None,
        }
    }
}

/// [`PartOf::insert`]: the owner's and the part's inserts in one transaction. Await it.
#[must_use = "nothing is written until the action is awaited"]
pub struct PartInsert<'a> {
    db: &'a Database,
    owners: &'static str,
    parts: &'static str,
    deadline: Duration,
    prepared: Result<(BsonDocument, BsonDocument)>,
    session: Option<&'a mut ClientSession>,
}

impl<'a> PartInsert<'a> {
    /// Runs inside `session`'s transaction instead of one of the library's own: both inserts
    /// commit or abort with the caller's writes. Start the transaction first: in a session
    /// without one, the inserts are sent in it one by one, not atomically.
    pub fn session(mut self, session: &'a mut ClientSession) -> Self {
        self.session = Some(session);
        self
    }
}

impl<'a> IntoFuture for PartInsert<'a> {
    type Output = Result<()>;
    type IntoFuture = BoxFuture<'a, Result<()>>;

    /// Sends the two inserts.
    ///
    /// # Errors
    ///
    /// A document that does not serialize ([`crate::Error::Serialization`]) or a part whose
    /// `_id` is not its owner's ([`crate::Error::InvalidArgument`]), refused before anything is sent;
    /// the driver's errors ([`crate::Error::Duplicate`], [`crate::Error::Validation`]: then
    /// neither is stored); without a session, the library's transaction's
    /// [`crate::Error::Timeout`] and [`crate::Error::CommitUnknown`].
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let (owner, part) = self.prepared?;
            let (db, owners, parts) = (self.db, self.owners, self.parts);
            in_transaction_or(db, self.deadline, self.session, |session| {
                let (db, owner, part) = (db.clone(), owner.clone(), part.clone());
                Box::pin(async move {
                    db.collection::<BsonDocument>(owners)
                        .insert_one(owner)
                        .session(&mut *session)
                        .await
                        .in_collection(owners)?;
                    db.collection::<BsonDocument>(parts)
                        .insert_one(part)
                        .session(&mut *session)
                        .await
                        .in_collection(parts)?;
                    Ok(())
                })
            })
            .await?;
            Ok(())
        })
    }
}
