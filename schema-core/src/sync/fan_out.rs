//! The fan-out update shared by every strategy: one `updateMany` that brings the copies of one
//! source document in line with it, and, when one holder cannot take it, the holders one by one
//! so that every other holder still converges.

use futures_util::TryStreamExt;
use mongodb::bson::{doc, Bson, Document as BsonDocument};
use mongodb::options::UpdateOptions;
use mongodb::{ClientSession, Database};

use super::failures::{Failure, FailureLog};
use super::get_path;
use super::retry::ErrorClass;
use crate::model::copy::{CopyShape, OnDelete, SyncEdge};
use crate::{Error, Result};

/// The `updateMany` that brings the copies of one source document in line with it. It filters
/// on the copied id alone, which the fan-out index serves (a negation such as `$ne` in the
/// filter keeps some planners off the index), and is idempotent: rewriting an equal value
/// changes nothing.
#[derive(Debug, Clone)]
pub(crate) struct FanOut {
    pub filter: BsonDocument,
    pub update: BsonDocument,
    pub array_filters: Option<Vec<BsonDocument>>,
}

/// What a fan-out did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct FanOutOutcome {
    /// Holder documents changed.
    pub rewritten: u64,
    /// Holder documents that could not take the update (recorded).
    pub failed: u64,
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
        })
    }

    /// The same update restricted to the holder documents `holders`.
    pub(crate) fn only(mut self, holders: Vec<Bson>) -> FanOut {
        self.filter.insert("_id", doc! { "$in": holders });
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

    /// Runs the `updateMany`; when it fails for one document (a holder its validator rejects, one
    /// that would exceed 16 MiB, ...), rewrites the matching holders one by one, records each that
    /// fails in `log` and goes on, so every other holder converges. Errors that are not a single
    /// document's (network, shutdown, ...) are returned.
    pub(crate) async fn run_resilient(
        &self,
        db: &Database,
        edge: &SyncEdge,
        source: &Bson,
        log: &FailureLog,
    ) -> Result<FanOutOutcome> {
        let error = match self.run(db, &edge.holder, None).await {
            Ok(rewritten) => {
                return Ok(FanOutOutcome {
                    rewritten,
                    failed: 0,
                })
            }
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
            let collection = db.collection::<BsonDocument>(&edge.holder);
            let result = collection
                .update_one(one.filter.clone(), one.update.clone())
                .with_options(one.options())
                .await
                .map_err(Error::from);
            match result {
                Ok(result) => outcome.rewritten += result.modified_count,
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
