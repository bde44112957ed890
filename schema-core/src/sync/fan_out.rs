//! The fan-out update shared by every strategy: one `updateMany` that brings the copies of one
//! source document in line with it, and, when one holder cannot take it, the holders one by one
//! so that every other holder still converges.

use futures_util::TryStreamExt;
use mongodb::bson::{doc, Bson, Document as BsonDocument};
use mongodb::options::UpdateOptions;
use mongodb::{ClientSession, Database};

use super::failures::{Failure, FailureLog};
use super::fence::{transact, Fence, Fenced};
use super::get_path;
use super::retry::ErrorClass;
use crate::model::copy::{CopyShape, OnDelete, SyncEdge};
use crate::Result;

/// The `updateMany` that brings the copies of one source document in line with it. It filters
/// on the copied id alone, which the fan-out index serves (a negation such as `$ne` in the
/// filter keeps some planners off the index), and is idempotent: rewriting an equal value
/// changes nothing.
#[derive(Debug, Clone)]
pub(crate) struct FanOut {
    pub filter: BsonDocument,
    pub update: BsonDocument,
    pub array_filters: Option<Vec<BsonDocument>>,
    /// The holder documents it is restricted to (see [`FanOut::only`]).
    pub holders: Option<Vec<Bson>>,
}

/// What a fan-out did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct FanOutOutcome {
    /// Holder documents changed.
    pub rewritten: u64,
    /// Holder documents that could not take the update (recorded).
    pub failed: u64,
    /// The writer's lease was taken over: what was not written yet was not (see
    /// [`Writer::Fenced`]).
    pub fenced_off: bool,
}

/// How a fan-out's writes are sent.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Writer<'f> {
    /// Each in a transaction of its own, with the removal of the failure records it clears.
    Transaction,
    /// Each in a transaction on `lane` that commits only while the writer holds its lease.
    Fenced {
        /// The writer's fence.
        fence: &'f Fence,
        /// The lane of this fan-out.
        lane: usize,
    },
}

impl FanOut {
    /// The update that copies `source`'s fields into every holder of `edge`.
    pub(crate) fn new(edge: &SyncEdge, source: &BsonDocument) -> Option<FanOut> {
        let copy = &edge.copy;
        let id = source.get("_id")?.clone();
        let many = copy.shape == CopyShape::Many;
        let target = |field: &str| {
            if many {
                format!("{}.$[copy].{field}", copy.path)
            } else {
                format!("{}.{field}", copy.path)
            }
        };
        let mut set = BsonDocument::new();
        let mut unset = BsonDocument::new();
        for field in &copy.fields {
            match get_path(source, field) {
                Some(value) => {
                    set.insert(target(field), value);
                }
                None => {
                    unset.insert(target(field), "");
                }
            }
        }
        let mut update = BsonDocument::new();
        if !set.is_empty() {
            update.insert("$set", set);
        }
        if !unset.is_empty() {
            update.insert("$unset", unset);
        }
        Some(FanOut {
            filter: doc! { copy.id_path(): id.clone() },
            update,
            array_filters: many.then(|| vec![doc! { "copy._id": id }]),
            holders: None,
        })
    }

    /// What a deletion of source `id` does to the copies of `edge`: `None` for
    /// [`OnDelete::Keep`]; for [`OnDelete::Unset`] the copy set to `null` (an array of copies
    /// loses the deleted source's elements instead).
    pub(crate) fn deleted(edge: &SyncEdge, id: &Bson) -> Option<FanOut> {
        if edge.copy.on_delete != OnDelete::Unset {
            return None;
        }
        let path = edge.copy.path.as_str();
        let update = match edge.copy.shape {
            CopyShape::Many => doc! { "$pull": { path: { "_id": id.clone() } } },
            _ => doc! { "$set": { path: Bson::Null } },
        };
        Some(FanOut {
            filter: doc! { edge.copy.id_path(): id.clone() },
            update,
            array_filters: None,
            holders: None,
        })
    }

    /// The same update restricted to the holder documents `holders`.
    pub(crate) fn only(mut self, holders: Vec<Bson>) -> FanOut {
        self.filter.insert("_id", doc! { "$in": holders.clone() });
        self.holders = Some(holders);
        self
    }

    /// The same update with extra conditions on the copy at `path`, keyed by copied field (a
    /// repair that must not overwrite a copy rewritten since it was read). For an array of
    /// copies they go into the array filter, so only elements still holding the values read
    /// are rewritten.
    pub(crate) fn when(mut self, path: &str, shape: CopyShape, conditions: BsonDocument) -> FanOut {
        for (field, condition) in conditions {
            match (&mut self.array_filters, shape) {
                (Some(filters), CopyShape::Many) => {
                    filters[0].insert(format!("copy.{field}"), condition);
                }
                _ => {
                    self.filter.insert(format!("{path}.{field}"), condition);
                }
            }
        }
        self
    }

    /// The `update` command, as sent.
    pub(crate) fn command(&self, holder: &str) -> BsonDocument {
        let mut update = doc! { "q": self.filter.clone(), "u": self.update.clone(), "multi": true };
        if let Some(filters) = &self.array_filters {
            update.insert("arrayFilters", filters.clone());
        }
        doc! { "update": holder, "updates": [update] }
    }

    fn options(&self) -> Option<UpdateOptions> {
        self.array_filters
            .clone()
            .map(|filters| UpdateOptions::builder().array_filters(filters).build())
    }

    /// Runs the `updateMany`; returns the holder documents changed. Any error ends it (inside a
    /// transaction that is what must happen: the transaction aborts).
    pub(crate) async fn run(
        &self,
        db: &Database,
        holder: &str,
        session: Option<&mut ClientSession>,
    ) -> Result<u64> {
        let collection = db.collection::<BsonDocument>(holder);
        let action = collection
            .update_many(self.filter.clone(), self.update.clone())
            .with_options(self.options());
        let result = match session {
            Some(session) => action.session(session).await?,
            None => action.await?,
        };
        Ok(result.modified_count)
    }

    /// Runs the `updateMany` and removes the failure records of the holders it rewrote for this
    /// source, in one transaction (fenced when `writer` is); `None`: fenced off.
    async fn run_and_clear(
        &self,
        db: &Database,
        edge: &SyncEdge,
        source: &Bson,
        log: &FailureLog,
        writer: Writer<'_>,
    ) -> Result<Option<u64>> {
        let label = edge.label();
        let fence = match writer {
            Writer::Fenced { fence, lane } => Some((fence, lane)),
            Writer::Transaction => None,
        };
        let written = transact(db.client(), fence, |session| {
            let (this, db, holder, label, source, log) = (
                self.clone(),
                db.clone(),
                edge.holder.clone(),
                label.clone(),
                source.clone(),
                log.clone(),
            );
            Box::pin(async move {
                let rewritten = this.run(&db, &holder, Some(&mut *session)).await?;
                log.clear(&db, &label, &source, this.holders.as_deref(), Some(session))
                    .await?;
                Ok(rewritten)
            })
        })
        .await?;
        Ok(match written {
            Fenced::Committed(rewritten) => Some(rewritten),
            Fenced::FencedOff => None,
        })
    }

    /// Runs the `updateMany` through `writer`; when it fails for one document (a holder its
    /// validator rejects, one that would exceed 16 MiB, ...), rewrites the matching holders one
    /// by one, records each that fails in `log` and goes on, so every other holder converges.
    /// Each successful rewrite removes the failure records of its holders for this copy and
    /// source. Errors that are not a single document's (network, shutdown, ...) are returned.
    pub(crate) async fn run_resilient(
        &self,
        db: &Database,
        edge: &SyncEdge,
        source: &Bson,
        log: &FailureLog,
        writer: Writer<'_>,
    ) -> Result<FanOutOutcome> {
        let fenced_off = FanOutOutcome {
            fenced_off: true,
            ..FanOutOutcome::default()
        };
        let error = match self.run_and_clear(db, edge, source, log, writer).await {
            Ok(Some(rewritten)) => {
                return Ok(FanOutOutcome {
                    rewritten,
                    ..FanOutOutcome::default()
                })
            }
            Ok(None) => return Ok(fenced_off),
            Err(error) if ErrorClass::of(&error) == ErrorClass::PerDocument => error,
            Err(error) => return Err(error),
        };
        tracing::debug!(copy = %edge.label(), %error, "fan-out failed on a holder; rewriting the holders one by one");
        let holders: Vec<Bson> = db
            .collection::<BsonDocument>(&edge.holder)
            .find(self.filter.clone())
            .projection(doc! { "_id": 1 })
            .await?
            .try_collect::<Vec<_>>()
            .await?
            .into_iter()
            .filter_map(|h| h.get("_id").cloned())
            .collect();
        let mut outcome = FanOutOutcome::default();
        for holder in holders {
            // the copied id stays in the filter: a holder that meanwhile points elsewhere is
            // left alone
            let mut one = self.clone();
            one.filter.insert("_id", holder.clone());
            one.holders = Some(vec![holder.clone()]);
            match one.run_and_clear(db, edge, source, log, writer).await {
                Ok(Some(rewritten)) => outcome.rewritten += rewritten,
                Ok(None) => {
                    return Ok(FanOutOutcome {
                        fenced_off: true,
                        ..outcome
                    })
                }
                Err(error) if ErrorClass::of(&error) == ErrorClass::PerDocument => {
                    tracing::error!(copy = %edge.label(), holder = %holder, source = %source, %error, "a holder cannot take its copy; recorded in the sync failures");
                    log.record(db, Failure::new(edge, holder, source.clone(), &error))
                        .await?;
                    outcome.failed += 1;
                }
                Err(error) => return Err(error),
            }
        }
        Ok(outcome)
    }
}
