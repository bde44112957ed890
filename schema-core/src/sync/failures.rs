//! Holders a fan-out could not rewrite: recorded, one document per holder and copy, in
//! [`FAILURES_COLLECTION`], so one bad holder never blocks the others and none goes unnoticed.

use std::fmt;

use futures_util::TryStreamExt;
use mongodb::bson::{doc, Bson, DateTime, Document as BsonDocument};
use mongodb::Database;

use super::fan_out::FanOut;
use super::retry::ErrorClass;
use crate::model::copy::SyncEdge;
use crate::{Error, Result, SyncGraph};

/// The collection, in the application's database, that records each holder a sync path could
/// not rewrite: `{ _id: { copy, holder }, worker, copy: "holder.path", holder, source, code,
/// message, at, attempts }`. [`crate::Schema::retry_failures`] re-applies them.
pub const FAILURES_COLLECTION: &str = "mongo_schema_sync_failures";

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
    fn from_document(document: &BsonDocument) -> SyncFailure {
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
}

impl Failure {
    pub(crate) fn new(edge: &SyncEdge, holder: Bson, source: Bson, error: &Error) -> Failure {
        Failure {
            copy: edge.label(),
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

/// Records failures on behalf of one worker (or `reconcile`).
#[derive(Debug, Clone)]
pub(crate) struct FailureLog {
    worker: String,
}

impl FailureLog {
    pub(crate) fn new(worker: &str) -> FailureLog {
        FailureLog {
            worker: worker.to_owned(),
        }
    }

    /// Upserts the record of `failure` (one per holder and copy; `attempts` counts).
    pub(crate) async fn record(&self, db: &Database, failure: Failure) -> Result<()> {
        let mut set = doc! {
            "worker": &self.worker,
            "copy": &failure.copy,
            "holder": failure.holder.clone(),
            "source": failure.source,
            "message": failure.message,
            "at": DateTime::now(),
        };
        match failure.code {
            Some(code) => set.insert("code", code),
            None => set.insert("code", Bson::Null),
        };
        db.collection::<BsonDocument>(FAILURES_COLLECTION)
            .update_one(
                doc! { "_id": { "copy": &failure.copy, "holder": failure.holder } },
                doc! { "$set": set, "$inc": { "attempts": 1_i64 } },
            )
            .upsert(true)
            .await?;
        Ok(())
    }
}

/// Every recorded failure, by copy then holder.
pub(crate) async fn list(db: &Database) -> Result<Vec<SyncFailure>> {
    let records: Vec<BsonDocument> = db
        .collection::<BsonDocument>(FAILURES_COLLECTION)
        .find(doc! {})
        .sort(doc! { "_id": 1 })
        .await?
        .try_collect()
        .await?;
    Ok(records.iter().map(SyncFailure::from_document).collect())
}

/// The number of recorded failures of the copy `label` (`holder.path`).
pub(crate) async fn count(db: &Database, label: &str) -> Result<u64> {
    Ok(db
        .collection::<BsonDocument>(FAILURES_COLLECTION)
        .count_documents(doc! { "copy": label })
        .await?)
}

/// What [`crate::Schema::retry_failures`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetryReport {
    /// Recorded failures retried.
    pub retried: u64,
    /// Those that now succeeded, or no longer apply (the holder or its copy of that source is
    /// gone, or the source was deleted and its copies are kept): their records were removed.
    pub resolved: u64,
    /// Those that failed again (their records updated).
    pub still_failing: u64,
    /// Records of a copy the schema no longer has (left in place).
    pub unknown_copies: u64,
}

impl fmt::Display for RetryReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} sync failures retried: {} resolved, {} still failing, {} of unknown copies",
            self.retried, self.resolved, self.still_failing, self.unknown_copies
        )
    }
}

/// Re-applies each recorded failure to its holder alone and removes the records that now
/// succeed.
pub(crate) async fn retry(db: &Database, graph: &SyncGraph) -> Result<RetryReport> {
    let log = FailureLog::new("retry_failures");
    let records = db.collection::<BsonDocument>(FAILURES_COLLECTION);
    let mut report = RetryReport::default();
    for record in list(db).await? {
        report.retried += 1;
        let Some(edge) = graph.edges.iter().find(|e| e.label() == record.copy) else {
            report.unknown_copies += 1;
            continue;
        };
        let source = db
            .collection::<BsonDocument>(&edge.copy.source)
            .find_one(doc! { "_id": record.source.clone() })
            .await?;
        let fan_out = match &source {
            Some(source) => FanOut::new(edge, source),
            None => FanOut::deleted(edge, &record.source),
        };
        let outcome = match fan_out {
            // the source is gone and its copies are kept: nothing to apply
            None => Ok(()),
            Some(mut one) => {
                one.filter.insert("_id", record.holder.clone());
                one.run(db, &edge.holder, None).await.map(|_| ())
            }
        };
        match outcome {
            Ok(()) => {
                records
                    .delete_one(
                        doc! { "_id": { "copy": &record.copy, "holder": record.holder.clone() } },
                    )
                    .await?;
                report.resolved += 1;
            }
            Err(error) if ErrorClass::of(&error) == ErrorClass::PerDocument => {
                log.record(
                    db,
                    Failure::new(edge, record.holder.clone(), record.source.clone(), &error),
                )
                .await?;
                report.still_failing += 1;
            }
            Err(error) => return Err(error),
        }
    }
    Ok(report)
}
