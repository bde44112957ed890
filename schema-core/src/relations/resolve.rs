//! A batch of references resolved with one `$in` query, in reference order.

use std::collections::HashMap;

use futures_util::TryStreamExt;
use mongodb::bson::{doc, Bson, Document as BsonDocument};
use mongodb::Database;
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
    /// A reference whose id is a document, an array, a regular expression or JavaScript is
    /// refused ([`crate::Error::UnsafeValue`]) before anything is sent: inside `$in` it would
    /// match other documents.
    pub async fn resolve_all<'a>(
        db: &Database,
        refs: impl IntoIterator<Item = &'a Ref<T>>,
    ) -> Result<Resolved<T>>
    where
        T: DeserializeOwned + 'a,
        T::Id: Serialize + Clone,
    {
        let refs: Vec<&Ref<T>> = refs.into_iter().collect();
        for reference in &refs {
            refuse_hostile_id("a reference to resolve", &reference.to_bson())?;
        }
        if refs.is_empty() {
            return Ok(Resolved {
                documents: Vec::new(),
                missing: Vec::new(),
            });
        }
        let command = Self::resolve_command(refs.iter().copied());
        let filter = command.get_document("filter").expect("built above").clone();
        let raw: Vec<BsonDocument> = db
            .collection::<BsonDocument>(T::COLLECTION)
            .find(filter)
            .await?
            .try_collect()
            .await?;
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
                None => missing.push(reference.clone()),
            }
        }
        Ok(Resolved { documents, missing })
    }
}
