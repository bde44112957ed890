//! A lease on the server's clock, shared by the sync worker (one active worker per name, see
//! `sync::lease`) and `apply` (one writer at a time, see `deploy::versions`).
//!
//! Expiry is the server's clock (`$$NOW`), so processes on machines whose clocks disagree still
//! agree on it. The holder may act until its own (monotonic) clock says the lease may have
//! lapsed, measured from the moment it *sent* the write that granted or renewed it, which is no
//! later than the moment the server stamped it, minus a tenth of the lease as a margin; so a
//! contender can only take over after the holder has stopped (a write already in flight may
//! still land).

use std::sync::Mutex;
use std::time::Duration;

use mongodb::bson::{doc, Bson, DateTime, Document as BsonDocument};
use mongodb::Collection;
use tokio::time::Instant;

use crate::sync::retry::random_u64;
use crate::Result;

#[derive(Debug)]
pub(crate) struct ServerLease {
    owner: String,
    duration: Duration,
    /// Until when this process may act as the holder (`None`: it does not hold the lease).
    valid_until: Mutex<Option<Instant>>,
}

impl ServerLease {
    /// A lease of `duration`, with a fresh owner id (process id and a random number).
    pub(crate) fn new(duration: Duration) -> Self {
        ServerLease {
            owner: format!("{}-{:016x}", std::process::id(), random_u64()),
            duration,
            valid_until: Mutex::new(None),
        }
    }

    /// This holder's owner id.
    pub(crate) fn owner(&self) -> &str {
        &self.owner
    }

    /// The lease's length.
    pub(crate) fn duration(&self) -> Duration {
        self.duration
    }

    fn slot(&self) -> std::sync::MutexGuard<'_, Option<Instant>> {
        self.valid_until.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The expiry a grant or renewal writes: the server's now plus the lease.
    pub(crate) fn expires(&self) -> BsonDocument {
        doc! { "$add": ["$$NOW", self.duration.as_millis() as i64] }
    }

    /// The aggregation expression, for a pipeline update, that says whether the lease held in
    /// `owner_field` / `expires_field` is free for this owner: nobody holds it, this owner does,
    /// or it expired. Dates are compared as milliseconds: SecantusDB 0.7 compares a date
    /// computed from `$$NOW` wrongly (and evaluates no `$$NOW` in a query); `$toLong` of a date
    /// is the same test on mongod.
    pub(crate) fn free(&self, owner_field: &str, expires_field: &str) -> BsonDocument {
        let owner = format!("${owner_field}");
        let expires = format!("${expires_field}");
        doc! { "$or": [
            { "$eq": [{ "$ifNull": [owner.as_str(), Bson::Null] }, Bson::Null] },
            { "$eq": [owner.as_str(), &self.owner] },
            { "$lt": [
                { "$toLong": { "$ifNull": [expires.as_str(), DateTime::from_millis(0)] } },
                { "$toLong": "$$NOW" },
            ] },
        ] }
    }

    /// Records a grant or renewal whose write was sent at `sent`.
    pub(crate) fn granted(&self, sent: Instant) {
        *self.slot() = Some(sent + self.duration - self.duration / 10);
    }

    /// Forgets the lease locally.
    pub(crate) fn lost(&self) {
        *self.slot() = None;
    }

    /// Whether this process may still act as the holder.
    pub(crate) fn holds(&self) -> bool {
        self.until().is_some_and(|until| Instant::now() < until)
    }

    /// Whether a grant was recorded and not lost (the lease may have lapsed since).
    pub(crate) fn claimed(&self) -> bool {
        self.slot().is_some()
    }

    /// Until when this process may act as the holder.
    pub(crate) fn until(&self) -> Option<Instant> {
        *self.slot()
    }

    /// Extends the lease in the document `owned` matches (a filter naming this owner); `false`,
    /// and the lease forgotten, when none does (another holder took it).
    pub(crate) async fn renew(
        &self,
        collection: &Collection<BsonDocument>,
        owned: BsonDocument,
        expires_field: &str,
    ) -> Result<bool> {
        let sent = Instant::now();
        let update = vec![doc! { "$set": { expires_field: self.expires() } }];
        let result = collection.update_one(owned, update).await?;
        if result.matched_count == 1 {
            self.granted(sent);
            Ok(true)
        } else {
            self.lost();
            Ok(false)
        }
    }
}
