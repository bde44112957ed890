//! Holders a fan-out could not rewrite: recorded, one document per copy, holder and source, in
//! [`FAILURES_COLLECTION`], so one bad holder never blocks the others and none goes unnoticed.
//! A later successful rewrite of that holder for that copy and source (by the worker, reconcile
//! or `retry_failures`) removes its record in the same pass; listing and retrying read the
//! records a batch at a time; records not met again for [`FAILURE_RECORD_TTL`] expire.

use std::collections::HashSet;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::stream::{BoxStream, StreamExt, TryStreamExt};
use mongodb::bson::{doc, Bson, DateTime, Document as BsonDocument};
use mongodb::options::IndexOptions;
use mongodb::{ClientSession, Database, IndexModel};

use crate::model::copy::SyncEdge;
use crate::{Error, Result};

/// The collection, in the application's database, that records each holder a sync path could
/// not rewrite: `{ _id: { copy, holder, source }, worker, copy: "holder.path", holder, source,
/// code, message, at, attempts }`, one record per copy, holder and source (a holder with an
/// array of copies has one per failing source). [`crate::Schema::retry_failures`] re-applies
/// them; a later successful rewrite removes them.
pub const FAILURES_COLLECTION: &str = "mongo_schema_sync_failures";

/// How long a failure record lives after it was last met: a TTL index on `at` removes it then,
/// which keeps the collection bounded whatever happens to the holders. A holder that still
/// cannot take its copy is met again (and its record renewed) by the next change of its source,
/// by reconcile, which finds it drifted, or by `retry_failures`.
pub const FAILURE_RECORD_TTL: Duration = Duration::from_secs(30 * 24 * 3600);

/// Records read per batch by [`stream`] and [`retry`].
pub(crate) const FAILURE_BATCH: u32 = 1000;

/// One recorded failure, as [`crate::Schema::sync_failures`] lists them.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SyncFailure {
    /// The worker (or `reconcile`, `retry_failures`) that met it last.
    pub worker: String,
    /// The copy, `holder.path`.
    pub copy: String,
    /// The holder document's `_id`.
    pub holder: Bson,
    /// The source document's `_id`.
    pub source: Bson,
    /// The server's error code (121: the holder's validator rejected it).
    pub code: Option<i32>,
    /// The error message.
    pub message: String,
    /// When it was last met.
    pub at: DateTime,
    /// How many times it was met.
    pub attempts: i64,
}

impl SyncFailure {
    pub(crate) fn from_document(document: &BsonDocument) -> SyncFailure {
        SyncFailure {
            worker: document.get_str("worker").unwrap_or_default().to_owned(),
            copy: document.get_str("copy").unwrap_or_default().to_owned(),
            holder: document.get("holder").cloned().unwrap_or(Bson::Null),
            source: document.get("source").cloned().unwrap_or(Bson::Null),
            code: document.get_i32("code").ok(),
            message: document.get_str("message").unwrap_or_default().to_owned(),
            at: document
                .get_datetime("at")
                .copied()
                .unwrap_or(DateTime::MIN),
            attempts: match document.get("attempts") {
                Some(Bson::Int32(n)) => i64::from(*n),
                Some(Bson::Int64(n)) => *n,
                _ => 0,
            },
        }
    }
}

impl fmt::Display for SyncFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} of holder {} (source {}): ",
            self.copy, self.holder, self.source
        )?;
        if let Some(code) = self.code {
            write!(f, "code {code}: ")?;
        }
        write!(
            f,
            "{} ({} time(s), last by `{}`)",
            self.message, self.attempts, self.worker
        )
    }
}

/// A failure about to be recorded.
#[derive(Debug, Clone)]
pub(crate) struct Failure {
    copy: String,
    holder: Bson,
    source: Bson,
    code: Option<i32>,
    message: String,
    /// A change event the worker skipped (`copy` is then the event's collection), which the
    /// next complete reconcile clears.
    unreadable_event: bool,
}

impl Failure {
    /// A failure of the copy `edge` in the holder `holder`, for the source `source`.
    pub(crate) fn new(edge: &SyncEdge, holder: Bson, source: Bson, error: &Error) -> Failure {
        Failure::of_target(edge.label(), holder, source, error)
    }

    /// A change event of `collection` that the worker could not read and skipped (target the
    /// collection, holder and source the changed document's `_id`): reconcile repairs what it
    /// would have done.
    pub(crate) fn unreadable(
        collection: &str,
        document: Bson,
        code: Option<i32>,
        reason: &str,
    ) -> Failure {
        Failure {
            unreadable_event: true,
            copy: collection.to_owned(),
            holder: document.clone(),
            source: document,
            code,
            message: format!(
                "a change event the sync worker could not read was skipped ({reason}); reconcile repairs the copies and subsets it concerned"
            ),
        }
    }

    /// A failure of any target a sync path rewrites (a copy `holder.path`, a subset
    /// `parent.path`): the document `holder` of that target could not take what `source`
    /// needs written.
    pub(crate) fn of_target(
        target: impl Into<String>,
        holder: Bson,
        source: Bson,
        error: &Error,
    ) -> Failure {
        Failure {
            unreadable_event: false,
            copy: target.into(),
            holder,
            source,
            code: error.code(),
            message: match error {
                Error::Driver(e) => {
                    crate::error::server_message(e).unwrap_or_else(|| error.to_string())
                }
                // the typed validation error names each failing path and rule
                other => other.to_string(),
            },
        }
    }
}

/// The `_id` of the record of `target`'s `holder` for `source`.
pub(crate) fn record_id(target: &str, holder: &Bson, source: &Bson) -> BsonDocument {
    doc! { "copy": target, "holder": holder.clone(), "source": source.clone() }
}

/// Databases whose failure collection has its indexes (created by the first record of this
/// process in each).
static INDEXED: Mutex<Option<HashSet<String>>> = Mutex::new(None);

/// Creates the indexes of [`FAILURES_COLLECTION`] once per process and database: the TTL on
/// `at` and `{ copy, source }`, which the clearing after a successful fan-out filters on.
async fn ensure_indexes(db: &Database) -> Result<()> {
    let key = db.name().to_owned();
    if INDEXED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashSet::new)
        .contains(&key)
    {
        return Ok(());
    }
    let ttl = IndexModel::builder()
        .keys(doc! { "at": 1 })
        .options(
            IndexOptions::builder()
                .name("at_ttl".to_owned())
                .expire_after(FAILURE_RECORD_TTL)
                .build(),
        )
        .build();
    let by_source = IndexModel::builder()
        .keys(doc! { "copy": 1, "source": 1 })
        .build();
    db.collection::<BsonDocument>(FAILURES_COLLECTION)
        .create_indexes([ttl, by_source])
        .await?;
    INDEXED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashSet::new)
        .insert(key);
    Ok(())
}

/// Records failures on behalf of one worker (or `reconcile`, `retry_failures`), and removes
/// them once the holder was rewritten.
#[derive(Debug, Clone)]
pub(crate) struct FailureLog {
    worker: String,
    /// Whether records may exist: when not, a successful rewrite skips the clearing (one
    /// round trip saved per fan-out). Refreshed by [`FailureLog::refresh`], set by a record.
    may_exist: Arc<AtomicBool>,
}

impl FailureLog {
    pub(crate) fn new(worker: &str) -> FailureLog {
        FailureLog {
            worker: worker.to_owned(),
            may_exist: Arc::new(AtomicBool::new(true)),
        }
    }

    /// Looks whether any record exists (one `find` of at most one `_id`); a pass calls it
    /// before its writes.
    pub(crate) async fn refresh(&self, db: &Database) -> Result<()> {
        let any = db
            .collection::<BsonDocument>(FAILURES_COLLECTION)
            .find_one(doc! {})
            .projection(doc! { "_id": 1 })
            .await?
            .is_some();
        self.may_exist.store(any, Ordering::Release);
        Ok(())
    }

    /// Whether records may exist (see [`FailureLog::refresh`]).
    pub(crate) fn may_exist(&self) -> bool {
        self.may_exist.load(Ordering::Acquire)
    }

    /// Upserts the record of `failure` (one per copy, holder and source; `attempts` counts).
    pub(crate) async fn record(&self, db: &Database, failure: Failure) -> Result<()> {
        let (filter, update) = self.prepare(db, failure).await;
        db.collection::<BsonDocument>(FAILURES_COLLECTION)
            .update_one(filter, update)
            .upsert(true)
            .await?;
        Ok(())
    }

    /// [`FailureLog::record`] under the sync worker's fence: the record's upsert commits in a
    /// transaction on `lane` only while the worker holds its lease, as its copy writes do, so
    /// a worker that lost its lease records nothing after the worker that took over (which
    /// meets the same holder and records it itself). `false` when fenced off.
    pub(crate) async fn record_fenced(
        &self,
        db: &Database,
        failure: Failure,
        fence: &super::fence::Fence,
        lane: usize,
    ) -> Result<bool> {
        let (filter, update) = self.prepare(db, failure).await;
        let written = super::fence::transact(db.client(), Some((fence, lane)), |session| {
            let (db, filter, update) = (db.clone(), filter.clone(), update.clone());
            Box::pin(async move {
                db.collection::<BsonDocument>(FAILURES_COLLECTION)
                    .update_one(filter, update)
                    .upsert(true)
                    .session(session)
                    .await?;
                Ok(())
            })
        })
        .await?;
        Ok(matches!(written, super::fence::Fenced::Committed(())))
    }

    /// The filter and update of `failure`'s record, the collection's indexes made first
    /// (outside any transaction, which cannot create them).
    async fn prepare(&self, db: &Database, failure: Failure) -> (BsonDocument, BsonDocument) {
        self.may_exist.store(true, Ordering::Release);
        // the indexes keep the records bounded and their clearing cheap, but a record without
        // them is still a record: an index the server refuses (a conflicting one of the same
        // name, say) must not fail the write that met the holder, which would be replayed for
        // ever. It is logged, and created again by the next record of this process.
        if let Err(error) = ensure_indexes(db).await {
            tracing::error!(collection = FAILURES_COLLECTION, %error, "the sync failure records' indexes could not be created; recording without them");
        }
        let mut set = doc! {
            "worker": &self.worker,
            "copy": &failure.copy,
            "holder": failure.holder.clone(),
            "source": failure.source.clone(),
            "message": failure.message,
        };
        match failure.code {
            Some(code) => set.insert("code", code),
            None => set.insert("code", Bson::Null),
        };
        if failure.unreadable_event {
            set.insert("unreadable_event", true);
        }
        (
            doc! { "_id": record_id(&failure.copy, &failure.holder, &failure.source) },
            // `at` on the server's clock: a reconcile clears the skipped events recorded
            // before it began, by the same clock
            doc! {
                "$set": set,
                "$currentDate": { "at": true },
                "$inc": { "attempts": 1_i64 },
            },
        )
    }

    /// Removes the records of `target` for `source` whose holder is one of `holders` (every
    /// holder when `None`): those holders were just rewritten for that source. Inside
    /// `session`'s transaction when given, so the rewrite and the removal commit together.
    pub(crate) async fn clear(
        &self,
        db: &Database,
        target: &str,
        source: &Bson,
        holders: Option<&[Bson]>,
        session: Option<&mut ClientSession>,
    ) -> Result<()> {
        if !self.may_exist() {
            return Ok(());
        }
        let mut filter = doc! { "copy": target, "source": source.clone() };
        if let Some(holders) = holders {
            filter.insert("holder", doc! { "$in": holders });
        }
        let records = db.collection::<BsonDocument>(FAILURES_COLLECTION);
        let delete = records.delete_many(filter);
        match session {
            Some(session) => delete.session(session).await?,
            None => delete.await?,
        };
        Ok(())
    }

    /// Removes the records of change events of `collections` that the worker skipped before
    /// `before` (the server's clock): a complete reconcile that began then has repaired what
    /// they would have done.
    pub(crate) async fn clear_unreadable_before(
        db: &Database,
        collections: &[String],
        before: DateTime,
    ) -> Result<()> {
        db.collection::<BsonDocument>(FAILURES_COLLECTION)
            .delete_many(doc! {
                "unreadable_event": true,
                "copy": { "$in": collections },
                "at": { "$lt": before },
            })
            .await?;
        Ok(())
    }

    /// Removes the records with these `_id`s.
    pub(crate) async fn clear_ids(&self, db: &Database, ids: Vec<Bson>) -> Result<()> {
        if ids.is_empty() || !self.may_exist() {
            return Ok(());
        }
        db.collection::<BsonDocument>(FAILURES_COLLECTION)
            .delete_many(doc! { "_id": { "$in": ids } })
            .await?;
        Ok(())
    }
}

/// Every recorded failure, by copy, holder and source, read [`FAILURE_BATCH`] at a time: the
/// memory held is one batch, whatever the number of records.
pub(crate) fn stream(db: &Database) -> BoxStream<'static, Result<SyncFailure>> {
    let records = db.collection::<BsonDocument>(FAILURES_COLLECTION);
    let opened = async move {
        let cursor = records
            .find(doc! {})
            .sort(doc! { "_id": 1 })
            .batch_size(FAILURE_BATCH)
            .await?;
        Ok::<_, Error>(
            cursor
                .map_ok(|record| SyncFailure::from_document(&record))
                .map_err(Error::from),
        )
    };
    futures_util::stream::once(opened).try_flatten().boxed()
}

/// Every recorded failure, by copy, holder and source.
pub(crate) async fn list(db: &Database) -> Result<Vec<SyncFailure>> {
    stream(db).try_collect().await
}

/// The number of recorded failures of the copy `label` (`holder.path`), for `reconcile`'s
/// report (an operator's command), within [`crate::concern::OPERATOR_TIME_LIMIT`].
pub(crate) async fn count(db: &Database, label: &str) -> Result<u64> {
    Ok(db
        .collection::<BsonDocument>(FAILURES_COLLECTION)
        .count_documents(doc! { "copy": label })
        .max_time(crate::concern::OPERATOR_TIME_LIMIT)
        .await?)
}
