//! The bucket pattern (seed 000, "Use Subsets or Buckets"): a parent's entries stored in bounded
//! bucket documents, appended with one upsert and read in key order across buckets.

use std::marker::PhantomData;

use futures_util::future::BoxFuture;
use futures_util::TryStreamExt;
use mongodb::action::Action as _;
use mongodb::bson::{doc, Bson, Document as BsonDocument};
use mongodb::{ClientSession, Database};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::page::{check_page_size, Page};
use super::reference::refuse_hostile_id;
use crate::{Document, Error, Ref, Result};

/// `#[bucket(parent = .., entries = .., count = .., key = "..", first = .., last = ..)]` on a
/// collection root, as the constant `BUCKET`: the stored names of the bucket's fields.
///
/// # Buckets or a time series collection
///
/// MongoDB 5.0 and later bucket measurements natively: a time series collection
/// (`#[collection(name = "readings", timeseries(time = at, meta = sensor))]`) stores each
/// measurement as a document of its own and groups them into compressed buckets by meta value
/// and time, with expiry (`expire_after_secs`), secondary indexes on the meta and time fields,
/// and queries that read measurements rather than buckets. Choose it for append-mostly
/// measurements over time (sensor readings, metrics, events), which is most uses of the
/// pattern, and declare it before the first insert: a collection cannot be converted later.
///
/// Choose `#[bucket]` when the entries are not measurements over time, or when the application
/// must own the bucket: an entry is updated or deleted on its own (mongod restricts updates and
/// deletes of measurements), a bucket carries a summary kept with each append (a count, first and
/// last keys, totals), the entries are read bucket by bucket, or the server must validate them
/// (mongod takes no validator on a time series collection; a bucket collection keeps its
/// `$jsonSchema`, `maxItems` included).
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

/// A page of entries in key order: the one [`Page`] type, with an [`EntryCursor`].
#[deprecated(since = "0.2.0", note = "use `Page<E, EntryCursor>`")]
pub type EntryPage<E> = Page<E, EntryCursor>;

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
    /// `null` is refused.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] naming `entry.<key>` for an entry without its key, and
    /// [`Error::Serialization`] for an entry that does not serialize.
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
    /// the upsert start a new one. With [`.session(&mut s)`](BucketAppend::session) the upsert
    /// is one write of the caller's transaction.
    ///
    /// # Errors
    ///
    /// Refused before anything is sent: a parent id that is a document, an array, a regular
    /// expression or JavaScript ([`Error::UnsafeValue`]: as a filter it would select other
    /// parents' buckets), an entry without its key ([`Error::InvalidArgument`] naming
    /// `entry.<key>`) or that does not serialize ([`Error::Serialization`]). Then the driver's
    /// errors ([`Error::Validation`]).
    pub fn append<'a, P: Document>(
        &self,
        db: &'a Database,
        parent: &Ref<P>,
        entry: &E,
    ) -> BucketAppend<'a>
    where
        P::Id: Serialize,
    {
        let parent = parent.to_bson();
        let prepared = refuse_hostile_id("the parent id of a bucket", &parent)
            .and_then(|()| self.append_update(parent, entry));
        BucketAppend {
            db,
            collection: B::COLLECTION,
            prepared,
            collation: crate::Collation::for_identities(B::__default_collation().as_ref()),
            session: None,
        }
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

    /// A page of `parent`'s entries in key order (ties by bucket and position): set where it
    /// continues and its size, then await it:
    /// `Log::BUCKET.entries(&db, &parent).after(cursor).limit(100).await`.
    ///
    /// # Errors
    ///
    /// See [`BucketEntries`]'s `into_future`.
    pub fn entries<'a, P: Document>(
        &'a self,
        db: &'a Database,
        parent: &Ref<P>,
    ) -> BucketEntries<'a, B, E>
    where
        P::Id: Serialize,
    {
        BucketEntries {
            bucket: self,
            db,
            parent: parent.to_bson(),
            after: None,
            limit: 50,
            session: None,
        }
    }

    /// The entry page of the previous release, every option positional.
    ///
    /// # Errors
    ///
    /// As awaiting [`Bucket::entries`].
    #[deprecated(
        since = "0.2.0",
        note = "use `entries(&db, &parent).after(cursor).limit(n)` and await it"
    )]
    pub async fn entries_after<P: Document>(
        &self,
        db: &Database,
        parent: &Ref<P>,
        after: Option<&EntryCursor>,
        limit: i64,
    ) -> Result<Page<E, EntryCursor>>
    where
        P::Id: Serialize,
    {
        let mut entries = self.entries(db, parent).limit(limit);
        entries.after = after.cloned();
        entries.read().await
    }
}

/// [`Bucket::append`]: one upsert. Await it.
#[must_use = "nothing is written until the action is awaited"]
pub struct BucketAppend<'a> {
    db: &'a Database,
    collection: &'static str,
    prepared: Result<(BsonDocument, BsonDocument)>,
    /// The simple collation where the buckets' default is another: the parent's id is
    /// compared exactly (by the bucket's indexes, which have it).
    collation: Option<crate::Collation>,
    session: Option<&'a mut ClientSession>,
}

impl<'a> BucketAppend<'a> {
    /// Sends the upsert in `session`: one write of the caller's transaction when one is
    /// started.
    pub fn session(mut self, session: &'a mut ClientSession) -> Self {
        self.session = Some(session);
        self
    }
}

impl<'a> std::future::IntoFuture for BucketAppend<'a> {
    type Output = Result<()>;
    type IntoFuture = BoxFuture<'a, Result<()>>;

    /// Sends the upsert.
    ///
    /// # Errors
    ///
    /// As [`Bucket::append`].
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let (filter, update) = self.prepared?;
            let buckets = self.db.collection::<BsonDocument>(self.collection);
            let upsert = buckets.update_one(filter, update).upsert(true).optional(
                self.collation
                    .as_ref()
                    .and_then(crate::Collation::to_driver),
                |u, c| u.collation(c),
            );
            match self.session {
                Some(session) => upsert.session(session).await?,
                None => upsert.await?,
            };
            Ok(())
        })
    }
}

/// [`Bucket::entries`]: a page of a parent's entries in key order. Await it.
#[must_use = "nothing is read until the action is awaited"]
pub struct BucketEntries<'a, B, E> {
    bucket: &'a Bucket<B, E>,
    db: &'a Database,
    parent: Bson,
    after: Option<EntryCursor>,
    limit: i64,
    session: Option<&'a mut ClientSession>,
}

impl<'a, B: Document, E: Serialize + DeserializeOwned> BucketEntries<'a, B, E> {
    /// Continue after `cursor` (the `next` of the previous page, or that `Option` itself:
    /// `None` reads the first page).
    pub fn after(mut self, cursor: impl Into<Option<EntryCursor>>) -> Self {
        self.after = cursor.into();
        self
    }

    /// Page size (default 50): 1 to [`crate::MAX_PAGE_SIZE`]; any other is refused.
    pub fn limit(mut self, limit: i64) -> Self {
        self.limit = limit;
        self
    }

    /// Reads in `session` (inside the caller's transaction when one is started: the page sees
    /// the transaction's own appends).
    pub fn session(mut self, session: &'a mut ClientSession) -> Self {
        self.session = Some(session);
        self
    }

    async fn read(self) -> Result<Page<E, EntryCursor>> {
        let BucketEntries {
            bucket,
            db,
            parent,
            after,
            limit,
            session,
        } = self;
        refuse_hostile_id("the parent id of a bucket", &parent)?;
        check_page_size(limit)?;
        if let Some(after) = &after {
            crate::literal::refuse_operators("the entry cursor's key", &after.key)?;
            crate::literal::refuse_operators("the entry cursor's bucket", &after.bucket)?;
        }
        let buckets = db.collection::<BsonDocument>(B::COLLECTION);
        // the parent's id compared exactly, and so the keys too (one aggregation, one collation)
        let collation = crate::Collation::for_identities(B::__default_collation().as_ref());
        let aggregate = buckets
            .aggregate(bucket.page_pipeline(parent, after.as_ref(), limit + 1))
            .optional(
                collation.as_ref().and_then(crate::Collation::to_driver),
                |a, c| a.collation(c),
            );
        let mut rows: Vec<BsonDocument> = match session {
            Some(session) => {
                let mut cursor = aggregate.session(&mut *session).await?;
                cursor.stream(&mut *session).try_collect().await?
            }
            None => aggregate.await?.try_collect().await?,
        };
        // one entry more than the page was asked for: a next page only when it exists
        let more = rows.len() as i64 > limit;
        rows.truncate(limit as usize);
        let mut items = Vec::with_capacity(rows.len());
        let mut next = None;
        for row in &rows {
            let entry = row.get(bucket.entries).cloned().unwrap_or(Bson::Null);
            next = Some(EntryCursor {
                key: entry
                    .as_document()
                    .and_then(|e| e.get(bucket.key))
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
        if !more {
            next = None;
        }
        Ok(Page { items, next })
    }
}

impl<'a, B, E> std::future::IntoFuture for BucketEntries<'a, B, E>
where
    B: Document + 'a,
    E: Serialize + DeserializeOwned + Send + 'a,
{
    type Output = Result<Page<E, EntryCursor>>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    /// Reads the page with one aggregation.
    ///
    /// # Errors
    ///
    /// Refused before anything is sent: with [`Error::UnsafeValue`] a parent id that is a
    /// document, an array, a regular expression or JavaScript, and a cursor whose key or
    /// bucket is an operator document, a regular expression or JavaScript; with
    /// [`Error::InvalidArgument`] (`limit`) a `limit` outside `1..=`[`crate::MAX_PAGE_SIZE`].
    /// Then the driver's errors, and [`Error::Serialization`] for an entry that does not decode
    /// as `E`.
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.read())
    }
}
