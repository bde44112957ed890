//! One active worker per name: a lease (owner, expiry) in the worker's token document.
//!
//! Expiry is the server's clock (`$$NOW`), so workers on machines whose clocks disagree still
//! agree on it. The holder renews at a third of the lease; it stops applying changes once its own
//! (monotonic) clock says the lease may have lapsed: it measures from the moment it *sent* the
//! renewal, which is no later than the moment the server stamped it, so a standby can only take
//! over after the holder has stopped (a write already in flight may still land; the rewrites are
//! idempotent and carry the newest source values).

use std::sync::Mutex;
use std::time::Duration;

use mongodb::bson::{doc, Bson, Document as BsonDocument};
use mongodb::options::ReturnDocument;
use mongodb::Collection;
use tokio::time::Instant;

use super::retry::random_u64;
use crate::Result;

/// The default lease of a sync worker.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(10);

#[derive(Debug)]
pub(crate) struct Lease {
    tokens: Collection<BsonDocument>,
    name: String,
    owner: String,
    duration: Duration,
    /// Until when this worker may act as the owner (`None`: it does not hold the lease).
    valid_until: Mutex<Option<Instant>>,
}

impl Lease {
    pub(crate) fn new(tokens: Collection<BsonDocument>, name: &str, duration: Duration) -> Self {
        Lease {
            tokens,
            name: name.to_owned(),
            owner: format!("{}-{:016x}", std::process::id(), random_u64()),
            duration,
            valid_until: Mutex::new(None),
        }
    }

    /// This worker's owner id.
    pub(crate) fn owner(&self) -> &str {
        &self.owner
    }

    /// The filter that matches the token document while this worker owns it.
    pub(crate) fn owned(&self) -> BsonDocument {
        doc! { "_id": &self.name, "owner": &self.owner }
    }

    /// How often a standby tries to take over.
    pub(crate) fn poll_interval(&self) -> Duration {
        (self.duration / 10).max(Duration::from_millis(20))
    }

    fn expires(&self) -> BsonDocument {
        doc! { "$add": ["$$NOW", self.duration.as_millis() as i64] }
    }

    fn granted(&self, sent: Instant) {
        // a tenth of the lease as a margin for in-flight writes and clock rates
        let until = sent + self.duration - self.duration / 10;
        *self.valid_until.lock().unwrap_or_else(|e| e.into_inner()) = Some(until);
    }

    /// Whether this worker may still act as the owner.
    pub(crate) fn holds(&self) -> bool {
        self.valid_until
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some_and(|until| Instant::now() < until)
    }

    fn until(&self) -> Option<Instant> {
        *self.valid_until.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes the lease if nobody holds it, it expired, or this worker already holds it.
    /// `false`: another live worker holds it.
    ///
    /// One `findAndModify` with a pipeline update that decides on the server, against its own
    /// clock, whether the lease is free (an `$expr` filter would do the same on mongod, but
    /// SecantusDB does not compare dates with `$$NOW` in a query).
    pub(crate) async fn try_acquire(&self) -> Result<bool> {
        let sent = Instant::now();
        let free = doc! { "$or": [
            { "$eq": ["$owner", &self.owner] },
            { "$eq": [{ "$ifNull": ["$owner", Bson::Null] }, Bson::Null] },
            // compared as milliseconds: SecantusDB 0.7 compares a date computed from `$$NOW`
            // wrongly; `$toLong` of a date is the same test on mongod
            { "$lt": [
                { "$toLong": { "$ifNull": ["$expires", mongodb::bson::DateTime::from_millis(0)] } },
                { "$toLong": "$$NOW" },
            ] },
        ] };
        let update = vec![doc! { "$set": {
            "owner": { "$cond": [free.clone(), &self.owner, "$owner"] },
            "expires": { "$cond": [free, self.expires(), "$expires"] },
        } }];
        let after = match self
            .tokens
            .find_one_and_update(doc! { "_id": &self.name }, update)
            .upsert(true)
            .return_document(ReturnDocument::After)
            .await
        {
            Ok(after) => after,
            // two first workers upserted at once and the other one inserted: it holds the lease
            Err(e) if crate::error::server_code(&e) == Some(11000) => None,
            Err(e) => return Err(e.into()),
        };
        let acquired = after.is_some_and(|lease| lease.get_str("owner") == Ok(&self.owner));
        if acquired {
            self.granted(sent);
        } else {
            self.lost();
        }
        Ok(acquired)
    }

    /// Renews the lease; `false` when another worker owns it now.
    async fn renew(&self) -> Result<bool> {
        let sent = Instant::now();
        let update = vec![doc! { "$set": { "expires": self.expires() } }];
        let result = self.tokens.update_one(self.owned(), update).await?;
        if result.matched_count == 1 {
            self.granted(sent);
            Ok(true)
        } else {
            self.lost();
            Ok(false)
        }
    }

    /// Forgets the lease locally.
    pub(crate) fn lost(&self) {
        *self.valid_until.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// Renews at a third of the lease until it is lost (another owner, or no renewal got
    /// through before it lapsed). Never returns while the lease is held.
    pub(crate) async fn keep(&self) {
        loop {
            tokio::time::sleep(self.duration / 3).await;
            loop {
                let Some(until) = self.until().filter(|u| Instant::now() < *u) else {
                    self.lost();
                    return;
                };
                match tokio::time::timeout_at(until, self.renew()).await {
                    Ok(Ok(true)) => break,
                    Ok(Ok(false)) => return,
                    Ok(Err(error)) => {
                        tracing::warn!(worker = %self.name, %error, "lease renewal failed; retrying");
                        tokio::time::sleep(self.poll_interval()).await;
                    }
                    Err(_) => {
                        self.lost();
                        return;
                    }
                }
            }
        }
    }

    /// Gives the lease up so a standby takes over at once.
    pub(crate) async fn release(&self) {
        self.lost();
        let release = self.tokens.update_one(
            self.owned(),
            doc! { "$set": { "owner": Bson::Null, "expires": mongodb::bson::DateTime::from_millis(0) } },
        );
        if let Ok(Err(error)) = tokio::time::timeout(Duration::from_secs(5), release).await {
            tracing::warn!(worker = %self.name, %error, "could not release the lease; it expires by itself");
        }
    }
}
