//! `retry_failures`: each recorded failure re-applied to its holder alone, its record removed
//! when the rewrite succeeds. Above both the failure records (`failures`) and the fan-out
//! (`fan_out`), which records its failures there.

use std::fmt;

use futures_util::stream::TryStreamExt;
use mongodb::bson::{doc, Bson, Document as BsonDocument};
use mongodb::Database;

use super::failures::{
    record_id, Failure, FailureLog, SyncFailure, FAILURES_COLLECTION, FAILURE_BATCH,
};
use super::fan_out::FanOut;
use super::retry::ErrorClass;
use crate::{Error, Result, SyncGraph};

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
/// succeed. The records are read a page of [`FAILURE_BATCH`] at a time, each page after the
/// last `_id` of the one before (all record `_id`s are documents, one type bracket), so memory
/// stays bounded and no cursor idles while the retries run.
pub(crate) async fn retry(db: &Database, graph: &SyncGraph) -> Result<RetryReport> {
    let log = FailureLog::new("retry_failures");
    let records = db.collection::<BsonDocument>(FAILURES_COLLECTION);
    let mut report = RetryReport::default();
    let mut after: Option<Bson> = None;
    loop {
        let filter = match &after {
            Some(last) => doc! { "_id": { "$gt": last.clone() } },
            None => doc! {},
        };
        let page: Vec<BsonDocument> = records
            .find(filter)
            .sort(doc! { "_id": 1 })
            .limit(i64::from(FAILURE_BATCH))
            .batch_size(FAILURE_BATCH)
            .await?
            .try_collect()
            .await?;
        let Some(last) = page.last().and_then(|r| r.get("_id")).cloned() else {
            return Ok(report);
        };
        after = Some(last);
        for record in &page {
            retry_one(db, graph, &log, record, &mut report).await?;
        }
    }
}

async fn retry_one(
    db: &Database,
    graph: &SyncGraph,
    log: &FailureLog,
    raw: &BsonDocument,
    report: &mut RetryReport,
) -> Result<()> {
    let record = SyncFailure::from_document(raw);
    report.retried += 1;
    let Some(edge) = graph.edges.iter().find(|e| e.label() == record.copy) else {
        // a subset's parent that could not take its previews: set them from its children now
        let subset = graph.subsets.iter().find_map(|s| {
            let preview = s.subset.preview?;
            let label = format!("{}.{}", s.parent, s.subset.path);
            (label == record.copy && !s.subset.parent_field.is_empty()).then(|| {
                crate::relations::subset::reconcile::rule_of(
                    &s.parent,
                    &s.subset,
                    s.subset.parent_field.clone(),
                    preview,
                    s.identities.clone(),
                )
            })
        });
        let Some(rule) = subset else {
            report.unknown_copies += 1;
            return Ok(());
        };
        let refreshed = async {
            // the holder is read from a stored record: a value, never an operator
            crate::relations::reference::refuse_hostile_id("a recorded parent id", &record.holder)?;
            let state = rule.state(db, None, &record.holder).await?;
            db.collection::<BsonDocument>(&rule.parents)
                .update_one(
                    doc! { "_id": { "$eq": record.holder.clone() } },
                    rule.set_update(&state),
                )
                .await?;
            Ok::<(), Error>(())
        }
        .await;
        match refreshed {
            Ok(()) => {
                let id = raw.get("_id").cloned().unwrap_or(Bson::Null);
                db.collection::<BsonDocument>(FAILURES_COLLECTION)
                    .delete_one(doc! { "_id": id })
                    .await?;
                report.resolved += 1;
            }
            // a recorded parent id that is an operator stays recorded, for the operator
            Err(error)
                if ErrorClass::of(&error) == ErrorClass::PerDocument
                    || matches!(error, Error::UnsafeValue { .. }) =>
            {
                log.record(
                    db,
                    Failure::of_target(
                        record.copy.clone(),
                        record.holder.clone(),
                        record.source.clone(),
                        &error,
                    ),
                )
                .await?;
                report.still_failing += 1;
            }
            Err(error) => return Err(error),
        }
        return Ok(());
    };
    // the source read, the holder rewritten and the record removed in one transaction: a
    // newer write of the worker to the holder conflicts with it (and the retry reads the newer
    // source), so the retry never writes an older value over it, and the record goes only
    // with the rewrite that resolves it
    let stored = raw.get("_id").cloned().unwrap_or(Bson::Null);
    let outcome = super::fence::transact(db.client(), None, |session| {
        let (db, edge, holder, source, stored) = (
            db.clone(),
            edge.clone(),
            record.holder.clone(),
            record.source.clone(),
            stored.clone(),
        );
        Box::pin(async move {
            let current = db
                .collection::<BsonDocument>(&edge.copy.source)
                // read from a stored record: compared as a value whatever it holds
                .find_one(doc! { "_id": { "$eq": source.clone() } })
                .session(&mut *session)
                .await?;
            let fan_out = match &current {
                Some(current) => FanOut::new(&edge, current),
                None => FanOut::deleted(&edge, &source),
            };
            // none: the source is gone and its copies are kept, nothing to apply
            if let Some(one) = fan_out {
                one.only(vec![holder])
                    .run(&db, &edge.holder, Some(&mut *session))
                    .await?;
            }
            // the record as stored (records of older versions have another `_id`)
            db.collection::<BsonDocument>(FAILURES_COLLECTION)
                .delete_one(doc! { "_id": stored })
                .session(&mut *session)
                .await?;
            Ok(())
        })
    })
    .await
    .map(|_| ());
    match outcome {
        Ok(()) => {
            report.resolved += 1;
        }
        Err(error) if ErrorClass::of(&error) == ErrorClass::PerDocument => {
            log.record(
                db,
                Failure::new(edge, record.holder.clone(), record.source.clone(), &error),
            )
            .await?;
            // a record of an older version (keyed without its source) gives way to the new one
            let id = Bson::Document(record_id(&record.copy, &record.holder, &record.source));
            if let Some(stored) = raw.get("_id").filter(|stored| **stored != id) {
                db.collection::<BsonDocument>(FAILURES_COLLECTION)
                    .delete_one(doc! { "_id": stored.clone() })
                    .await?;
            }
            report.still_failing += 1;
        }
        Err(error) => return Err(error),
    }
    Ok(())
}
