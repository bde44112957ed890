//! One active worker per name: a lease (`owner`, `expires`) in the worker's token document, held
//! through the crate's `ServerLease` (server clock, local validity measured from the send time).
//! The holder renews at a third of the lease and stops applying changes once the lease may have
//! lapsed, so a standby takes over only after it stopped; a rewrite already in flight may still
//! land, and rewrites are idempotent and carry the newest source values.

use std::time::Duration;

use mongodb::bson::{doc, Bson, Document as BsonDocument};
use mongodb::options::ReturnDocument;
use mongodb::Collection;
use tokio::time::Instant;

use crate::lease::ServerLease;
use crate::Result;

/// The default lease of a sync worker.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(10);

#[derive(Debug)]
pub(crate) struct Lease {
    tokens: Collection<BsonDocument>,
    name: String,
    lease: ServerLease,
}

impl Lease {
    pub(crate) fn new(tokens: Collection<BsonDocument>, name: &str, duration: Duration) -> Self {
        Lease {
            tokens,
            name: name.to_owned(),
            lease: ServerLease::new(duration),
        }
    }

    /// This worker's owner id.
    pub(crate) fn owner(&self) -> &str {
        self.lease.owner()
    }

    /// The filter that matches the token document while this worker owns it.
    pub(crate) fn owned(&self) -> BsonDocument {
        doc! { "_id": &self.name, "owner": self.owner() }
    }

    /// How often a standby tries to take over.
    pub(crate) fn poll_interval(&self) -> Duration {
        (self.lease.duration() / 10).max(Duration::from_millis(20))
    }

    /// Whether this worker may still act as the owner.
    pub(crate) fn holds(&self) -> bool {
        self.lease.holds()
    }

    /// Forgets the lease locally.
    pub(crate) fn lost(&self) {
        self.lease.lost();
    }

    /// Takes the lease if nobody holds it, it expired, or this worker already holds it.
    /// `false`: another live worker holds it.
    ///
    /// One `findAndModify` with a pipeline update that decides on the server, against its own
    /// clock, whether the lease is free (an `$expr` filter would do the same on mongod, but
    /// SecantusDB does not compare dates with `$$NOW` in a query).
    pub(crate) async fn try_acquire(&self) -> Result<bool> {
        let sent = Instant::now();
        let free = self.lease.free("owner", "expires");
        let update = vec![doc! { "$set": {
            "owner": { "$cond": [free.clone(), self.owner(), "$owner"] },
            "expires": { "$cond": [free, self.lease.expires(), "$expires"] },
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
        let acquired = after.is_some_and(|lease| lease.get_str("owner") == Ok(self.owner()));
        if acquired {
            self.lease.granted(sent);
        } else {
            self.lease.lost();
        }
        Ok(acquired)
    }

    /// Renews at a third of the lease until it is lost (another owner, or no renewal got
    /// through before it lapsed). Never returns while the lease is held.
    pub(crate) async fn keep(&self) {
        loop {
            tokio::time::sleep(self.lease.duration() / 3).await;
            loop {
                let Some(until) = self.lease.until().filter(|u| Instant::now() < *u) else {
                    self.lost();
                    return;
                };
                let renew = self.lease.renew(&self.tokens, self.owned(), "expires");
                match tokio::time::timeout_at(until, renew).await {
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
