//! What a step receives: the database, its checkpoint, and a batch helper that walks a
//! collection by `_id` and saves the checkpoint after each batch.

use std::sync::Arc;

use futures_util::TryStreamExt;
use mongodb::bson::{doc, Bson, Document};
use mongodb::Database;

use super::{changelog, StepCounts};
use crate::{Error, Result};

/// The context of a running migration step.
pub struct StepContext {
    db: Database,
    key: String,
    version: u64,
    checkpoint: Option<Bson>,
    counts: StepCounts,
    holds: Arc<dyn Fn() -> bool + Send + Sync>,
}

impl std::fmt::Debug for StepContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StepContext")
            .field("key", &self.key)
            .field("checkpoint", &self.checkpoint)
            .field("counts", &self.counts)
            .finish_non_exhaustive()
    }
}

impl StepContext {
    pub(crate) fn new(
        db: Database,
        key: String,
        version: u64,
        resumed: Option<(Option<Bson>, StepCounts)>,
        holds: Arc<dyn Fn() -> bool + Send + Sync>,
    ) -> StepContext {
        let (checkpoint, counts) = resumed.unwrap_or_default();
        StepContext {
            db,
            key,
            version,
            checkpoint,
            counts,
            holds,
        }
    }

    /// The database the schema is applied to.
    pub fn db(&self) -> &Database {
        &self.db
    }

    /// The version the step belongs to.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Where an interrupted run stopped (`None`: from the start).
    pub fn checkpoint(&self) -> Option<&Bson> {
        self.checkpoint.as_ref()
    }

    /// Documents matched and changed so far (resumed runs start from the saved figures).
    pub fn counts(&self) -> StepCounts {
        self.counts
    }

    /// Fails with [`Error::LockLost`] if `apply` lost its lock (another instance may be running
    /// the step): a step checks it before each write.
    pub fn ensure_lock(&self) -> Result<()> {
        if (self.holds)() {
            Ok(())
        } else {
            Err(Error::LockLost {
                lock: crate::error::LockKind::Apply,
                during: "a migration step".to_owned(),
            })
        }
    }

    /// Records that a batch is done: `checkpoint` is where the next run resumes, and `counts`
    /// are added to the step's figures. Checks the lock first.
    ///
    /// # Errors
    ///
    /// [`crate::Error::LockLost`] when apply's lock was lost (another instance took it), and
    /// the driver's errors.
    pub async fn save(&mut self, checkpoint: Bson, counts: StepCounts) -> Result<()> {
        self.ensure_lock()?;
        self.counts += counts;
        changelog::checkpoint(&self.db, &self.key, &checkpoint, self.counts).await?;
        crate::progress::report(&self.key, self.counts.matched, None, &"documents matched");
        self.checkpoint = Some(checkpoint);
        Ok(())
    }

    /// Adds `counts` to the step's figures without a checkpoint.
    pub fn add_counts(&mut self, counts: StepCounts) {
        self.counts += counts;
    }

    /// The next batch of `collection` matching `filter`, at most `size` documents, after the
    /// checkpoint in `_id` order (call [`StepContext::save`] with the last `_id` once the batch
    /// is written). Empty when the walk is done. The walk visits every document whatever the
    /// BSON types of the `_id`s (numbers, strings, ObjectIds, ... in the server's order).
    ///
    /// # Errors
    ///
    /// The driver's errors of the read.
    pub async fn next_batch(
        &self,
        collection: &str,
        filter: Document,
        size: i64,
    ) -> Result<Vec<Document>> {
        let mut filter = filter;
        if let Some(last) = &self.checkpoint {
            // everything after `last` in the server's order, whatever its type (a `$gt` alone
            // stays in `last`'s type bracket)
            filter = doc! { "$and": [filter, crate::sync::walk::after_id(last)] };
        }
        Ok(self
            .db
            .collection::<Document>(collection)
            .find(filter)
            .sort(doc! { "_id": 1 })
            .limit(size.max(1))
            .await?
            .try_collect()
            .await?)
    }
}
