//! A batch of references resolved with one `$in` query, in reference order.

use std::collections::HashMap;

use futures_util::future::BoxFuture;
use futures_util::TryStreamExt;
use mongodb::bson::{doc, Bson, Document as BsonDocument};
use mongodb::{ClientSession, Database};
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::id_key;
use super::reference::refuse_hostile_id;
use crate::{Document, Ref, Result};

/// The documents of a batch of references, fetched with one `$in` query.
#[non_exhaustive]
pub struct Resolved<T: Document> {
    /// The documents found, in the order of their first reference.
    pub documents: Vec<T>,
    /// The references with no document, in reference order.
    pub missing: Vec<Ref<T>>,
}

impl<T: Document + std::fmt::Debug> std::fmt::Debug for Resolved<T>
where
    T::Id: std::fmt::Debug,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resolved")
            .field("documents", &self.documents)
            .field("missing", &self.missing)
            .finish()
    }
}

impl<T: Document> Ref<T> {
    /// The `find` command that [`Ref::resolve_all`] sends (for `explain`).
    pub fn resolve_command<'a>(refs: impl IntoIterator<Item = &'a Ref<T>>) -> BsonDocument
    where
        T: 'a,
        T::Id: Serialize,
    {
        let mut seen = HashMap::new();
        let ids: Vec<Bson> = refs
            .into_iter()
            .map(Ref::to_bson)
            .filter(|id| seen.insert(id_key(Some(id)), ()).is_none())
            .collect();
        doc! { "find": T::COLLECTION, "filter": { "_id": { "$in": ids } } }
    }

    /// Fetches the referenced documents with one `$in` query on `_id`, returned in reference
    /// order; references with no document are reported in [`Resolved::missing`], not dropped.
    /// Await it; with [`.session(&mut s)`](ResolveAll::session) it reads inside the caller's
    /// transaction.
    ///
    /// # Errors
    ///
    /// A reference whose id is a document, an array, a regular expression or JavaScript is
    /// refused ([`crate::Error::UnsafeValue`]) before anything is sent: inside `$in` it would
    /// match other documents. Then the driver's errors, and [`crate::Error::Serialization`]
    /// for a document that does not decode as `T`.
    pub fn resolve_all<'a, 'r>(
        db: &'a Database,
        refs: impl IntoIterator<Item = &'r Ref<T>>,
    ) -> ResolveAll<'a, T>
    where
        T: 'r,
        T::Id: Serialize + Clone,
    {
        ResolveAll {
            db,
            refs: refs.into_iter().cloned().collect(),
            session: None,
        }
    }

    /// Fetches the referenced document (`None`: there is none). Await it; with
    /// [`.session(&mut s)`](Resolve::session) it reads inside the caller's transaction.
    ///
    /// # Errors
    ///
    /// As [`Ref::resolve_all`].
    pub fn resolve<'a>(&self, db: &'a Database) -> Resolve<'a, T>
    where
        T::Id: Serialize + Clone,
    {
        Resolve {
            all: Ref::resolve_all(db, [self]),
        }
    }
}

/// [`Ref::resolve_all`]: one `$in` query. Await it.
#[must_use = "nothing is read until the action is awaited"]
pub struct ResolveAll<'a, T: Document> {
    db: &'a Database,
    refs: Vec<Ref<T>>,
    session: Option<&'a mut ClientSession>,
}

/// [`Ref::resolve`]: one document by its reference. Await it.
#[must_use = "nothing is read until the action is awaited"]
pub struct Resolve<'a, T: Document> {
    all: ResolveAll<'a, T>,
}

impl<'a, T: Document> ResolveAll<'a, T> {
    /// Reads in `session` (inside the caller's transaction when one is started: it sees the
    /// transaction's own writes).
    pub fn session(mut self, session: &'a mut ClientSession) -> Self {
        self.session = Some(session);
        self
    }
}

impl<'a, T: Document> Resolve<'a, T> {
    /// Reads in `session` (inside the caller's transaction when one is started).
    pub fn session(mut self, session: &'a mut ClientSession) -> Self {
        self.all = self.all.session(session);
        self
    }
}

impl<'a, T> ResolveAll<'a, T>
where
    T: Document + DeserializeOwned,
    T::Id: Serialize + Clone,
{
    async fn read(self) -> Result<Resolved<T>> {
        let ResolveAll { db, refs, session } = self;
        for reference in &refs {
            refuse_hostile_id("a reference to resolve", &reference.to_bson())?;
        }
        if refs.is_empty() {
            return Ok(Resolved {
                documents: Vec::new(),
                missing: Vec::new(),
            });
        }
        let command = Ref::resolve_command(refs.iter());
        let filter = command.get_document("filter").expect("built above").clone();
        let targets = db.collection::<BsonDocument>(T::COLLECTION);
        let find = targets.find(filter);
        let raw: Vec<BsonDocument> = match session {
            Some(session) => {
                let mut cursor = find.session(&mut *session).await?;
                cursor.stream(&mut *session).try_collect().await?
            }
            None => find.await?.try_collect().await?,
        };
        let mut by_id: HashMap<String, BsonDocument> = raw
            .into_iter()
            .map(|doc| (id_key(doc.get("_id")), doc))
            .collect();
        let mut documents = Vec::new();
        let mut missing = Vec::new();
        let mut delivered = HashMap::new();
        for reference in refs {
            let key = id_key(Some(&reference.to_bson()));
            match by_id.remove(&key) {
                Some(doc) => {
                    delivered.insert(key, ());
                    documents.push(
                        crate::bson_compat::from_document::<T>(doc)
                            .map_err(mongodb::error::Error::from)?,
                    );
                }
                None if delivered.contains_key(&key) => {} // a repeated reference
                None => missing.push(reference),
            }
        }
        Ok(Resolved { documents, missing })
    }
}

impl<'a, T> std::future::IntoFuture for ResolveAll<'a, T>
where
    T: Document + DeserializeOwned + Send + 'a,
    T::Id: Serialize + Clone + Send,
{
    type Output = Result<Resolved<T>>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    /// Sends the `find` ([`Ref::resolve_command`]).
    ///
    /// # Errors
    ///
    /// As [`Ref::resolve_all`].
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.read())
    }
}

impl<'a, T> std::future::IntoFuture for Resolve<'a, T>
where
    T: Document + DeserializeOwned + Send + 'a,
    T::Id: Serialize + Clone + Send,
{
    type Output = Result<Option<T>>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    /// Sends the `find`.
    ///
    /// # Errors
    ///
    /// As [`Ref::resolve_all`].
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move { Ok(self.all.read().await?.documents.into_iter().next()) })
    }
}
