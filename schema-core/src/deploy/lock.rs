//! The apply lock: a lease in the schema's record (see [`super::record::META_COLLECTION`] for
//! why there is one and how it keeps an older version from undoing a newer one). Taking it
//! raises the recorded version in the same write; the holder renews it on a task of its own.

use std::sync::Arc;
use std::time::Duration;

use mongodb::bson::{doc, Bson, Document as BsonDocument};
use mongodb::options::ReturnDocument;
use mongodb::Collection;

use super::record::{RecordedVersion, APPLYING, FAILED};
use crate::error::server_code;
use crate::lease::ServerLease;
use crate::Result;

/// The lease of the apply lock.
pub(crate) const LEASE: Duration = Duration::from_secs(10);

/// How often an apply waiting for the lock looks again.
pub(crate) fn poll_interval() -> Duration {
    (LEASE / 20).max(Duration::from_millis(50))
}

/// The outcome of the lock stage.
#[derive(Debug)]
pub(crate) enum Taken {
    /// This apply holds the lock, renewed on its own task while the claim is kept.
    Held(Claimed),
    /// Another apply holds it.
    Busy,
    /// A newer version is recorded and downgrades are not allowed.
    Newer(u64),
}

/// The lock held by this apply: the record as the claim left it, and the lease's renewal
/// (stopped when this is dropped).
#[derive(Debug)]
pub(crate) struct Claimed {
    /// The record after the claim (`completed` is whether the claimed version and state were
    /// recorded applied already).
    pub(crate) record: RecordedVersion,
    _renewal: Renewal,
}

/// The outcome of one attempt to take the apply lock.
#[derive(Debug)]
pub(crate) enum Claim {
    /// This apply holds the lock; the record after the claim.
    Held(RecordedVersion),
    /// Another apply holds it.
    Busy,
    /// A newer version is recorded and downgrades are not allowed.
    Newer(u64),
}

/// The apply lock in the record (see the module documentation), held through the crate's
/// [`ServerLease`].
#[derive(Debug)]
pub(crate) struct ApplyLock {
    meta: Collection<BsonDocument>,
    /// The `_id` of the schema's record.
    name: String,
    lease: ServerLease,
}

impl ApplyLock {
    pub(crate) fn new(meta: Collection<BsonDocument>, name: &str, lease: Duration) -> Self {
        ApplyLock {
            meta,
            name: name.to_owned(),
            lease: ServerLease::new(lease),
        }
    }

    /// The record's collection.
    pub(crate) fn meta(&self) -> &Collection<BsonDocument> {
        &self.meta
    }

    /// Whether this apply took the lock and has not given it back (its lease may have lapsed).
    pub(crate) fn claimed(&self) -> bool {
        self.lease.claimed()
    }

    /// Whether this apply may still write as the lock holder.
    pub(crate) fn holds(&self) -> bool {
        self.lease.holds()
    }

    /// The filter that matches the record only while this apply holds the lock: every write
    /// made as the holder goes through it.
    pub(crate) fn fence(&self) -> BsonDocument {
        self.owned()
    }

    fn owned(&self) -> BsonDocument {
        doc! { "_id": &self.name, "locked_by": self.lease.owner() }
    }

    /// Takes the lock and, in the same write, raises the recorded version to `version` and
    /// claims `fingerprint` (marking the record `applying` when either changes). The server
    /// decides, on its own clock, whether the lock is free and whether the version may apply.
    /// `collections`: the schema's collection names, recorded so that a schema renamed later
    /// can tell its own default record from another service's.
    pub(crate) async fn claim(
        &self,
        version: u64,
        fingerprint: &str,
        collections: &[String],
        allow_downgrade: bool,
    ) -> Result<Claim> {
        let sent = crate::lease::LeaseInstant::now();
        let version = version as i64;
        let free = self.lease.free("locked_by", "lock_expires");
        // an older version may take the place of a newer one whose apply failed (a rollback)
        let allowed = if allow_downgrade {
            Bson::Boolean(true)
        } else {
            doc! { "$or": [
                { "$lte": [{ "$ifNull": ["$version", -1_i64] }, version] },
                { "$eq": ["$state", FAILED] },
            ] }
            .into()
        };
        let take = doc! { "$and": [free, allowed] };
        let same = doc! { "$and": [
            { "$eq": ["$version", version] },
            { "$eq": ["$fingerprint", fingerprint] },
            { "$ne": ["$state", FAILED] },
        ] };
        let restart = doc! { "$and": [take.clone(), { "$not": [same] }] };
        let update = vec![doc! { "$set": {
            "locked_by": { "$cond": [take.clone(), self.lease.owner(), "$locked_by"] },
            "lock_expires": { "$cond": [take.clone(), self.lease.expires(), "$lock_expires"] },
            "state": { "$cond": [restart.clone(), APPLYING, "$state"] },
            "error": { "$cond": [restart, "$$REMOVE", "$error"] },
            "version": { "$cond": [take.clone(), version, "$version"] },
            "fingerprint": { "$cond": [take.clone(), fingerprint, "$fingerprint"] },
            "collections": { "$cond": [take, { "$literal": collections }, "$collections"] },
        } }];
        let after = match self
            .meta
            .find_one_and_update(doc! { "_id": &self.name }, update)
            .upsert(true)
            .return_document(ReturnDocument::After)
            .await
        {
            Ok(after) => after,
            // two first applies upserted at once and the other one inserted: look again
            Err(e) if server_code(&e) == Some(11000) => return Ok(Claim::Busy),
            Err(e) => return Err(e.into()),
        };
        let Some(after) = after else {
            return Ok(Claim::Busy);
        };
        if after.get_str("locked_by").ok() == Some(self.lease.owner()) {
            self.lease.granted(sent);
            let recorded = RecordedVersion::from_document(&after).unwrap_or(RecordedVersion {
                version: version as u64,
                fingerprint: fingerprint.to_owned(),
                completed: false,
                applied_at: None,
                failure: None,
                missing: Vec::new(),
                observed: Vec::new(),
            });
            return Ok(Claim::Held(recorded));
        }
        self.lease.lost();
        match RecordedVersion::from_document(&after) {
            Some(recorded)
                if !allow_downgrade
                    && recorded.version > version as u64
                    && recorded.failure.is_none() =>
            {
                Ok(Claim::Newer(recorded.version))
            }
            _ => Ok(Claim::Busy),
        }
    }

    /// The third stage of `apply`: takes the lock (see [`ApplyLock::claim`]) and starts renewing
    /// it on a task of its own.
    pub(crate) async fn take(
        self: &Arc<Self>,
        version: u64,
        fingerprint: &str,
        collections: &[String],
        allow_downgrade: bool,
    ) -> Result<Taken> {
        Ok(
            match self
                .claim(version, fingerprint, collections, allow_downgrade)
                .await?
            {
                Claim::Held(record) => Taken::Held(Claimed {
                    record,
                    _renewal: Renewal::start(self),
                }),
                Claim::Busy => Taken::Busy,
                Claim::Newer(version) => Taken::Newer(version),
            },
        )
    }

    /// Extends the lease; `false` if this apply no longer holds the lock.
    pub(crate) async fn renew(&self) -> Result<bool> {
        self.lease
            .renew(&self.meta, self.owned(), "lock_expires")
            .await
    }

    /// Renews the lease at a third of its length, forever (see [`Renewal`]). A failed renewal is retried at the next tick; [`ApplyLock::holds`] turns false
    /// once the lease may have lapsed.
    pub(crate) async fn keep_alive(&self) -> std::convert::Infallible {
        loop {
            tokio::time::sleep(self.lease.duration() / 3).await;
            if let Ok(false) = self.renew().await {
                return std::future::pending().await;
            }
        }
    }

    /// Forgets the lease locally once the record's outcome was written (which released the lock
    /// on the server in the same write).
    pub(crate) fn released(&self) {
        self.lease.lost();
    }

    /// Releases the lock without recording completion (the record stays `applying` if this
    /// apply claimed a new version or fingerprint).
    pub(crate) async fn release(&self) -> Result<()> {
        self.lease.lost();
        self.meta
            .update_one(
                self.owned(),
                doc! { "$unset": { "locked_by": "", "lock_expires": "" } },
            )
            .await?;
        Ok(())
    }
}

/// The renewal of a held lock, on a task of its own so that a step that blocks its thread or
/// a long command cannot starve it; stopped when dropped.
#[derive(Debug)]
pub(crate) struct Renewal(tokio::task::JoinHandle<()>);

impl Renewal {
    /// Starts renewing `lock` (which this apply holds).
    pub(crate) fn start(lock: &Arc<ApplyLock>) -> Renewal {
        let lock = lock.clone();
        Renewal(tokio::spawn(
            async move { match lock.keep_alive().await {} },
        ))
    }
}

impl Drop for Renewal {
    fn drop(&mut self) {
        self.0.abort();
    }
}
