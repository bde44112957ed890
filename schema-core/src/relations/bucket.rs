//! The bucket pattern (seed 000, "Use Subsets or Buckets"): a parent's entries stored in bounded
//! bucket documents, appended with one upsert and read in key order across buckets.

use std::marker::PhantomData;

use futures_util::TryStreamExt;
use mongodb::bson::{doc, Bson, Document as BsonDocument};
use mongodb::Database;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::page::check_page_size;
use super::reference::refuse_hostile_id;
use crate::{Document, Error, Ref, Result};

/// `#[bucket(parent = .., entries = .., count = .., key = "..", first = .., last = ..)]` on a
/// collection root, as the constant `BUCKET`: the stored names of the bucket's fields.
#[derive(Debug)]
pub struct Bucket<B, E> {
    parent: &'static str,
    entries: &'static str,
    max: u64,
    count: &'static str,
    count_type: crate::CounterType,
    key: &'static str,
    first: &'static str,
    last: &'static str,
    types: PhantomData<fn() -> (B, E)>,
}

/// Where a read of a parent's entries continues: the last entry's key, its bucket and position.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EntryCursor {
    /// The entry's key.
    pub key: Bson,
    /// Its bucket's `_id`.
    pub bucket: Bson,
    /// Its position in the bucket.
    pub position: i64,
}

/// A page of entries in key order.
#[derive(Debug, Clone, PartialEq)]
pub struct EntryPage<E> {
    /// The entries.
    pub items: Vec<E>,
    /// Where the next page starts, `None` after the last.
    pub next: Option<EntryCursor>,
}

impl<B, E> Bucket<B, E> {
    #[doc(hidden)]
    /// Used by generated code.
    #[allow(clippy::too_many_arguments)]
    pub const fn new(
        parent: &'static str,
        entries: &'static str,
        max: u64,
        count: &'static str,
        key: &'static str,
        first: &'static str,
        last: &'static str,
    ) -> Self {
        Bucket {
            parent,
            entries,
            max,
            count,
            count_type: crate::CounterType::Int64,
            key,
            first,
            last,
            types: PhantomData,
        }
    }

    #[doc(hidden)]
    /// Used by generated code: the integer type of the count field.
    pub const fn count_type(mut self, count_type: crate::CounterType) -> Self {
        self.count_type = count_type;
        self
    }

    /// At most this many entries per bucket.
    pub fn max(&self) -> u64 {
        self.max
    }
}

impl<B: Document, E: Serialize + DeserializeOwned> Bucket<B, E> {
    /// The upsert that appends `entry` to the parent's open bucket (one with fewer than `max`
    /// entries), or starts a new bucket: `{ parent, count: { $lt: max } }` + `$push` + `$inc`,
    /// and `$min`/`$max` of the key into `first`/`last`. An entry whose key is missing or
    /// `null` is refused ([`Error::InvalidArgument`] naming `entry.<key>`).
    pub fn append_update(&self, parent: Bson, entry: &E) -> Result<(BsonDocument, BsonDocument)> {
        let entry =
            crate::model::document::stored_bson(entry).map_err(mongodb::error::Error::from)?;
        // entries are read in key order, and `first`/`last` bound each bucket's keys: an entry
        // without its key (or with `null`) would sort before every other and no page cursor
        // could continue after it, so it is refused before anything is written
        let key = entry
            .as_document()
            .and_then(|e| e.get(self.key))
            .filter(|key| !matches!(key, Bson::Null | Bson::Undefined))
            .cloned()
            .ok_or_else(|| {
                Error::invalid_argument(
                    format!("entry.{}", self.key),
                    format!(
                        "a bucket entry without `{}` (or with `{}: null`): the entries of `{}` \
                         are ordered by it",
                        self.key,
                        self.key,
                        B::COLLECTION
                    ),
                )
            })?;
        let filter = doc! { self.parent: parent, self.count: { "$lt": self.max as i64 } };
        let update = doc! {
            "$push": { self.entries: entry },
            "$inc": { self.count: self.count_type.value(1) },
            "$min": { self.first: key.clone() },
            "$max": { self.last: key },
        };
        Ok((filter, update))
    }

    /// Appends `entry` to `parent`'s open bucket with one upsert. Concurrent appenders never
    /// overfill a bucket: the update re-checks `count < max` atomically, and a full bucket makes
    /// the upsert start a new one. A parent id that is a document, an array, a regular
    /// expression or JavaScript is refused ([`Error::UnsafeValue`]) before anything is sent: as
    /// a filter it would select other parents' buckets. An entry without its key is refused
    /// ([`Error::InvalidArgument`] naming `entry.<key>`).
    pub async fn append<P: Document>(&self, db: &Database, parent: &Ref<P>, entry: &E) -> Result<()>
    where
        P::Id: Serialize,
    {
        let parent = parent.to_bson();
        refuse_hostile_id("the parent id of a bucket", &parent)?;
        let (filter, update) = self.append_update(parent, entry)?;
        db.collection::<BsonDocument>(B::COLLECTION)
            .update_one(filter, update)
            .upsert(true)
            .await?;
        Ok(())
    }

    /// The aggregation that reads a page of `parent`'s entries in key order after `after`:
    /// only buckets whose `last` key reaches the cursor are opened (index `{ parent, last }`).
    pub fn page_pipeline(
        &self,
        parent: Bson,
        after: Option<&EntryCursor>,
        limit: i64,
    ) -> Vec<BsonDocument> {
        let mut bucket_filter = doc! { self.parent: parent };
        let entry = format!("${}", self.entries);
        let key = format!("{}.{}", self.entries, self.key);
        let mut pipeline = Vec::new();
        if let Some(after) = after {
            bucket_filter.insert(self.last, doc! { "$gte": after.key.clone() });
        }
        pipeline.push(doc! { "$match": bucket_filter });
        pipeline.push(doc! { "$unwind": { "path": entry, "includeArrayIndex": "__position" } });
        if let Some(after) = after {
            pipeline.push(doc! { "$match": { "$or": [
                { key.as_str(): { "$gt": after.key.clone() } },
                { key.as_str(): after.key.clone(), "_id": { "$gt": after.bucket.clone() } },
                { key.as_str(): after.key.clone(), "_id": after.bucket.clone(), "__position": { "$gt": after.position } },
            ] } });
        }
        pipeline.push(doc! { "$sort": { key.as_str(): 1, "_id": 1, "__position": 1 } });
        pipeline.push(doc! { "$limit": limit });
        pipeline.push(doc! { "$project": { "_id": 1, "__position": 1, self.entries: 1 } });
        pipeline
    }

    /// A page of `parent`'s entries in key order (ties by bucket and position), continuing
    /// after `after`. Refused before anything is sent: with [`Error::UnsafeValue`] a parent id
    /// that is a document, an array, a regular expression or JavaScript, and a cursor whose key
    /// or bucket is an operator document, a regular expression or JavaScript; with
    /// [`Error::InvalidArgument`] (`limit`) a `limit` outside `1..=`[`crate::MAX_PAGE_SIZE`].
    pub async fn entries<P: Document>(
        &self,
        db: &Database,
        parent: &Ref<P>,
        after: Option<&EntryCursor>,
        limit: i64,
    ) -> Result<EntryPage<E>>
    where
        P::Id: Serialize,
    {
        let parent = parent.to_bson();
        refuse_hostile_id("the parent id of a bucket", &parent)?;
        check_page_size(limit)?;
        if let Some(after) = after {
            crate::literal::refuse_operators("the entry cursor's key", &after.key)?;
            crate::literal::refuse_operators("the entry cursor's bucket", &after.bucket)?;
        }
        let rows: Vec<BsonDocument> = db
            .collection::<BsonDocument>(B::COLLECTION)
            .aggregate(self.page_pipeline(parent, after, limit))
            .await?
            .try_collect()
            .await?;
        let mut items = Vec::with_capacity(rows.len());
        let mut next = None;
        for row in &rows {
            let entry = row.get(self.entries).cloned().unwrap_or(Bson::Null);
            next = Some(EntryCursor {
                key: entry
                    .as_document()
                    .and_then(|e| e.get(self.key))
                    .cloned()
                    .unwrap_or(Bson::Null),
                bucket: row.get("_id").cloned().unwrap_or(Bson::Null),
                position: match row.get("__position") {
                    Some(Bson::Int64(p)) => *p,
                    Some(Bson::Int32(p)) => i64::from(*p),
                    _ => 0,
                },
            });
            items.push(crate::bson_compat::from_bson(entry).map_err(mongodb::error::Error::from)?);
        }
        if (rows.len() as i64) < limit {
            next = None;
        }
        Ok(EntryPage { items, next })
    }
}
