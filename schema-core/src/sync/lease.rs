//! One active worker per name: a lease (`owner`, `expires`, `epoch`) in the worker's token
//! document, held through the crate's `ServerLease` (server clock, local validity measured on a
//! clock that counts suspended time, from the send time). The holder renews at a third of the
//! lease and starts no batch once the lease may have lapsed, so a standby takes over only after
//! it stopped. Each takeover raises the epoch and claims the lease's [fence](super::fence)
//! lanes before its first write, so a write of a holder that was paused past its lease (already
//! sent, or sent after it resumed) cannot land after the new holder's.
//!
//! A renewal answered after the lease lapsed locally does not end the tenure: a busy server
//! (SecantusDB answers nothing else while it sorts the holders of a large fan-out) can hold a
//! renewal longer than the lease. While it is unanswered the worker starts nothing new
//! ([`Lease::hold`] waits); if the answer says the lease document still names this owner and
//! epoch, nobody took over in between (a takeover changes one of them), and the worker renews
//! again at once, from a fresh send time, and goes on where it was: its fan-out in progress
//! keeps its chunks and its position. Before, the worker gave the lease up at the lapse, took it
//! again under a new epoch and began the fan-out again from its first holder: a fan-out longer
//! than the lease on a busy server never finished (issue 48).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::fan_out::progress::Progress;
use super::fence::{lane_sessions, settle, Fence, LaneSessions};
use crate::lease::{LeaseInstant, ServerLease};
use crate::Result;
use mongodb::bson::{doc, Bson, Document as BsonDocument};
use mongodb::options::ReturnDocument;
use mongodb::Collection;

/// The default lease of a sync worker.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(10);

/// The longest a holder waits, after its lease lapsed locally, for renewals to be answered
/// before it gives the lease up: three leases, and at least 30 s (the driver's server selection
/// timeout, so a server that is being restarted is waited for).
fn late_renewal_limit(lease: Duration) -> Duration {
    (lease * 3).max(Duration::from_secs(30))
}

#[derive(Debug)]
pub(crate) struct Lease {
    tokens: Collection<BsonDocument>,
    /// The `_id` of the token document: the worker's name, or its partition's id (see
    /// [`super::partitions`]).
    id: Bson,
    /// The name in logs (the worker's name, with its partition).
    name: String,
    lease: ServerLease,
    /// Fence lanes a takeover claims.
    lanes: usize,
    /// The fence of the current tenure (`None` while this worker does not hold the lease).
    fence: Mutex<Option<Fence>>,
    /// The sessions of this worker's fenced transactions, one per lane, started at its first
    /// takeover and kept for its life (see [`super::fence`]).
    sessions: tokio::sync::Mutex<Option<LaneSessions>>,
    /// Beats at every fenced commit (the worker's watchdog reads it).
    pulse: Arc<AtomicU64>,
    /// Set while [`Lease::keep`] runs: the lease is not given up yet, even when it lapsed
    /// locally (a renewal may still be answered).
    keeping: AtomicBool,
}

impl Lease {
    /// The lease kept in the token document `id` (a worker's name), whose fenced writes use
    /// `lanes` lanes.
    pub(crate) fn new(
        tokens: Collection<BsonDocument>,
        id: impl Into<Bson>,
        duration: Duration,
        lanes: usize,
    ) -> Self {
        let id = id.into();
        Lease {
            tokens,
            name: match &id {
                Bson::String(name) => name.clone(),
                other => other.to_string(),
            },
            id,
            lease: ServerLease::new(duration),
            lanes,
            fence: Mutex::new(None),
            sessions: tokio::sync::Mutex::new(None),
            pulse: Arc::default(),
            keeping: AtomicBool::new(false),
        }
    }

    /// Holds the lease under `owner` (a partitioned worker's partitions share their handle's),
    /// and names it `name` in logs.
    pub(crate) fn with_owner(mut self, owner: String, name: String) -> Self {
        self.lease = ServerLease::with_owner(self.lease.duration(), owner);
        self.name = name;
        self
    }

    /// The `_id` of the token document this lease lives in.
    pub(crate) fn id(&self) -> &Bson {
        &self.id
    }

    /// The lease's name in logs.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Beats `pulse` at every fenced commit of its fences.
    pub(crate) fn with_pulse(mut self, pulse: Arc<AtomicU64>) -> Self {
        self.pulse = pulse;
        self
    }

    /// This worker's lane sessions, at least `lanes` of them.
    async fn sessions(&self, lanes: usize) -> Result<LaneSessions> {
        let mut sessions = self.sessions.lock().await;
        if let Some(started) = sessions.as_ref().filter(|s| s.len() >= lanes) {
            return Ok(started.clone());
        }
        let started = lane_sessions(self.tokens.client(), lanes).await?;
        *sessions = Some(started.clone());
        Ok(started)
    }

    /// This worker's owner id.
    pub(crate) fn owner(&self) -> &str {
        self.lease.owner()
    }

    /// The filter that matches the token document while this worker owns it, in this tenure.
    pub(crate) fn owned(&self) -> BsonDocument {
        let mut owned = doc! { "_id": self.id.clone(), "owner": self.owner() };
        if let Some(fence) = self.fence() {
            owned.insert("epoch", fence.epoch());
        }
        owned
    }

    /// The fence of the current tenure: writes through it land only while it lasts.
    pub(crate) fn fence(&self) -> Option<Fence> {
        self.fence.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn set_fence(&self, fence: Option<Fence>) {
        *self.fence.lock().unwrap_or_else(|e| e.into_inner()) = fence;
    }

    /// How often a standby tries to take over.
    pub(crate) fn poll_interval(&self) -> Duration {
        (self.lease.duration() / 10).max(Duration::from_millis(20))
    }

    /// Whether this worker may still act as the owner.
    pub(crate) fn holds(&self) -> bool {
        self.lease.holds()
    }

    /// Whether this worker may act as the owner, waiting while the lease lapsed locally and
    /// [`Lease::keep`] still renews it (see the module documentation). `false`: it was lost.
    pub(crate) async fn hold(&self) -> bool {
        loop {
            if self.holds() {
                return true;
            }
            if !self.keeping.load(Ordering::Acquire) {
                return false;
            }
            tokio::time::sleep(self.poll_interval()).await;
        }
    }

    /// Forgets the lease locally.
    pub(crate) fn lost(&self) {
        self.lease.lost();
    }

    /// How much longer this worker may act as the owner (`None`: it may not).
    pub(crate) fn remaining(&self) -> Option<Duration> {
        self.lease.remaining()
    }

    /// Takes the lease if nobody holds it, it expired, or this worker already holds it, raising
    /// its epoch, then claims the fence lanes for that epoch. `false`: another live worker holds
    /// it (or took it over while the lanes were being claimed).
    ///
    /// One `findAndModify` with a pipeline update that decides on the server, against its own
    /// clock, whether the lease is free (an `$expr` filter would do the same on mongod, but
    /// SecantusDB does not compare dates with `$$NOW` in a query).
    pub(crate) async fn try_acquire(&self) -> Result<bool> {
        self.set_fence(None);
        // the newest epoch of the lanes: a token document deleted (or restored from an old
        // backup) must not restart the epoch below them, or every claim fails until the epoch
        // has climbed back, one poll at a time
        let lanes_epoch = self.lanes_epoch().await?;
        let sent = LeaseInstant::now();
        let free = self.lease.free("owner", "expires");
        let update = vec![doc! { "$set": {
            "owner": { "$cond": [free.clone(), self.owner(), "$owner"] },
            "expires": { "$cond": [free.clone(), self.lease.expires(), "$expires"] },
            "epoch": { "$cond": [
                free,
                { "$add": [{ "$max": [{ "$ifNull": ["$epoch", 0_i64] }, lanes_epoch] }, 1_i64] },
                "$epoch",
            ] },
            // the most lanes any release of this worker fenced with: a takeover claims them
            // all, so a holder of a release with more lanes cannot write on one left unclaimed
            "lanes": { "$max": [{ "$ifNull": ["$lanes", 0_i64] }, self.lanes as i64] },
        } }];
        let after = match self
            .tokens
            .find_one_and_update(doc! { "_id": self.id.clone() }, update)
            .upsert(true)
            .return_document(ReturnDocument::After)
            .await
        {
            Ok(after) => after,
            // two first workers upserted at once and the other one inserted: it holds the lease
            Err(e) if crate::error::server_code(&e) == Some(11000) => None,
            Err(e) => return Err(e.into()),
        };
        let mine = after.filter(|lease| lease.get_str("owner").ok() == Some(self.owner()));
        let number = |lease: &BsonDocument, key: &str| match lease.get(key) {
            Some(Bson::Int64(n)) => Some(*n),
            Some(Bson::Int32(n)) => Some(i64::from(*n)),
            Some(Bson::Double(n)) => Some(*n as i64),
            _ => None,
        };
        let Some(epoch) = mine.as_ref().and_then(|lease| number(lease, "epoch")) else {
            self.lease.lost();
            return Ok(false);
        };
        let lanes = mine
            .as_ref()
            .and_then(|lease| number(lease, "lanes"))
            .map_or(self.lanes, |recorded| {
                (recorded.max(0) as usize).max(self.lanes)
            });
        self.lease.granted(sent);
        let sessions = self.sessions(lanes).await?;
        let fence = Fence::new(
            self.tokens.clone(),
            self.id.clone(),
            self.owner(),
            epoch,
            sessions,
        )
        .with_pulse(self.pulse.clone());
        if !fence.claim(lanes).await? {
            self.lease.lost();
            return Ok(false);
        }
        // the fan-outs an earlier holder cut short resume where they got to
        let progress = Progress::load(self.tokens.clone(), self.id.clone()).await?;
        self.set_fence(Some(fence.with_progress(progress)));
        Ok(true)
    }

    /// The highest epoch among this lease's lane documents (0 when there are none).
    async fn lanes_epoch(&self) -> Result<i64> {
        let newest = self
            .tokens
            .find_one(doc! { "_id.lease": self.id.clone(), "epoch": { "$exists": true } })
            .sort(doc! { "epoch": -1 })
            .projection(doc! { "epoch": 1 })
            .await?;
        Ok(newest
            .and_then(|lane| match lane.get("epoch") {
                Some(Bson::Int64(n)) => Some(*n),
                Some(Bson::Int32(n)) => Some(i64::from(*n)),
                _ => None,
            })
            .unwrap_or(0))
    }

    /// Renews at a third of the lease until it is lost: another owner or epoch on the lease
    /// document, or no renewal answered within [`late_renewal_limit`] of the local lapse. A
    /// renewal answered late keeps the lease (see the module documentation). Never returns
    /// while the lease is held.
    pub(crate) async fn keep(&self) {
        /// Clears `keeping` however `keep` ends (returned, or dropped by the worker's select).
        struct Keeping<'a>(&'a AtomicBool);
        impl Drop for Keeping<'_> {
            fn drop(&mut self) {
                self.0.store(false, Ordering::Release);
            }
        }
        self.keeping.store(true, Ordering::Release);
        let _keeping = Keeping(&self.keeping);
        loop {
            tokio::time::sleep(self.lease.duration() / 3).await;
            if !self.renew().await {
                self.lost();
                return;
            }
        }
    }

    /// Renews until a renewal is answered while the lease still holds locally: `true`; `false`
    /// when the lease document names another owner or epoch, or when no renewal was answered
    /// within [`late_renewal_limit`] of the lapse.
    async fn renew(&self) -> bool {
        let mut lapsed: Option<tokio::time::Instant> = None;
        let limit = late_renewal_limit(self.lease.duration());
        loop {
            // how long this attempt may take: until the lapse, then what is left of the limit
            let mut late_left = || {
                let since = *lapsed.get_or_insert_with(tokio::time::Instant::now);
                limit.checked_sub(since.elapsed())
            };
            let (mut bound, mut is_late) = match self.remaining() {
                Some(remaining) => (remaining, false),
                None => match late_left() {
                    Some(left) => (left, true),
                    None => return false,
                },
            };
            let renew = self.lease.renew(&self.tokens, self.owned(), "expires");
            tokio::pin!(renew);
            let answer = loop {
                match tokio::time::timeout(bound, &mut renew).await {
                    Ok(answer) => break answer,
                    Err(_) if !is_late => {
                        // lapsed locally with the renewal unanswered: wait on for its answer
                        tracing::warn!(worker = %self.name, "the lease lapsed with its renewal unanswered (a busy server); starting nothing until it is answered");
                        match late_left() {
                            Some(left) => (bound, is_late) = (left, true),
                            None => return false,
                        }
                    }
                    Err(_) => return false,
                }
            };
            match answer {
                Ok(true) if self.holds() => return true,
                // answered late, still this owner and epoch: nobody took over, and the lease
                // runs again from the server's answer; renewed at once, so that this worker's
                // own clock counts from a send it knows
                Ok(true) => {
                    tracing::info!(worker = %self.name, "a late renewal found the lease still this worker's: renewing again");
                }
                Ok(false) => return false,
                Err(error) => {
                    tracing::warn!(worker = %self.name, %error, "lease renewal failed; retrying");
                    tokio::time::sleep(self.poll_interval()).await;
                }
            }
        }
    }

    /// Ends, on the server, any fenced transaction a cancelled pass of this worker left open
    /// (see [`super::fence`]): called whenever the worker stops following, so that what it
    /// wrote in a transaction nobody will finish does not hold the next holder's writes up.
    pub(crate) async fn settle(&self) {
        let sessions = self.sessions.lock().await.clone();
        if let Some(sessions) = sessions {
            if !settle(self.tokens.client(), &sessions).await {
                tracing::warn!(worker = %self.name, "a transaction this worker left open could not be ended; the server ends it at its lifetime limit");
            }
        }
    }

    /// Gives the lease up so a standby takes over at once.
    pub(crate) async fn release(&self) {
        self.settle().await;
        self.lost();
        let owned = self.owned();
        if let Some(fence) = self.fence() {
            let unname = fence.unname_sessions();
            if let Ok(Err(error)) = tokio::time::timeout(Duration::from_secs(5), unname).await {
                tracing::warn!(worker = %self.name, %error, "could not unname the lane sessions");
            }
        }
        self.set_fence(None);
        let release = self.tokens.update_one(
            owned,
            doc! { "$set": { "owner": Bson::Null, "expires": mongodb::bson::DateTime::from_millis(0) } },
        );
        if let Ok(Err(error)) = tokio::time::timeout(Duration::from_secs(5), release).await {
            tracing::warn!(worker = %self.name, %error, "could not release the lease; it expires by itself");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use mongodb::bson::{doc, Document as BsonDocument};

    use super::Lease;
    use crate::sync::fence::{transact, Fenced};

    /// Issue 38, item 0: the fault test's "no worker became active within 60 s". A holder died
    /// inside a fenced transaction after writing its lane document (a crash, or a task aborted
    /// while its commit waited for a connection: the driver then neither commits nor aborts).
    /// The transaction stays open on the server, holding the lane, until the server reaps it
    /// (60 s); the takeover's claim of that lane waited behind it, both workers standing by with
    /// the lease expired and that one lane still at the dead holder's epoch. The takeover now
    /// kills the sessions an older epoch named on its lanes, so it holds the lease within twice
    /// the lease period; the dead holder's write never lands.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_takeover_does_not_wait_for_a_holder_that_died_inside_a_fenced_transaction() {
        let db = mongo_schema_testkit::database("lease_dead_transaction").await;
        let tokens = db.collection::<BsonDocument>("tokens");
        let period = Duration::from_millis(1000);
        let dead = Lease::new(tokens.clone(), "w", period, 2);
        assert!(dead.try_acquire().await.unwrap(), "the first holder");
        let fence = dead.fence().unwrap();
        let lane = doc! { "_id": { "lease": "w", "lane": 1_i64 } };
        {
            let mut session = fence.session(1).lock().await;
            session.start_transaction().await.unwrap();
            tokens
                .update_one(
                    doc! { "_id": { "lease": "w", "lane": 1_i64 }, "epoch": fence.epoch() },
                    doc! { "$inc": { "writes": 1_i64 } },
                )
                .session(&mut *session)
                .await
                .unwrap();
        }
        // the holder is dead from here on: it neither renews, commits nor aborts
        let died = Instant::now();

        let standby = Lease::new(tokens.clone(), "w", period, 2);
        let deadline = died + 2 * period;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let taken = tokio::time::timeout(left, standby.try_acquire())
                .await
                .unwrap_or_else(|_| panic!("no takeover within twice the lease ({:?})", 2 * period))
                .unwrap();
            if taken {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "no takeover within twice the lease"
            );
            tokio::time::sleep(standby.poll_interval()).await;
        }
        let new = standby.fence().unwrap();
        assert!(new.epoch() > fence.epoch());

        // the new holder writes through the lane; the dead holder's transaction cannot commit
        let written = tokio::time::timeout(
            Duration::from_secs(10),
            transact(db.client(), Some((&new, 1)), |_| Box::pin(async { Ok(()) })),
        )
        .await
        .expect("a fenced write of the new holder does not wait")
        .unwrap();
        assert_eq!(written, Fenced::Committed(()));
        let late = fence.session(1).lock().await.commit_transaction().await;
        assert!(late.is_err(), "the dead holder's transaction was aborted");
        let held = tokens.find_one(lane).await.unwrap().unwrap();
        assert_eq!(held.get_i64("epoch").ok(), Some(new.epoch()));
        assert_eq!(
            held.get_i64("writes").ok(),
            Some(1),
            "only the new holder's write landed: {held}"
        );
        drop(dead);
    }

    /// Issue 48, item 0: a renewal answered after the lease lapsed locally keeps the lease when
    /// nobody took over (same owner, same epoch, the worker goes on: a fan-out longer than the
    /// lease on a busy server finishes), and loses it when a standby did. The renewal is held
    /// in the driver's command monitoring past twice the lease, as a busy server holds it; the
    /// holder runs on a runtime of its own, which the hold freezes whole (on a shared runtime
    /// the frozen thread may be the one that drives the timers).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_renewal_answered_after_the_lease_lapsed_keeps_it_unless_it_was_taken_over() {
        use std::sync::{mpsc, Arc};
        let period = Duration::from_millis(600);
        let uri = tokio::task::spawn_blocking(mongo_schema_testkit::uri)
            .await
            .unwrap();
        for taken_over in [false, true] {
            let db = mongo_schema_testkit::database("lease_late_renewal").await;
            let tokens = db.collection::<BsonDocument>("tokens");
            let (handed, hand) = mpsc::channel();
            let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
            let (uri, name) = (uri.clone(), db.name().to_owned());
            let holder_thread = std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                runtime.block_on(async move {
                    // the first renewal: an `update` of the lease document with a pipeline
                    let (client, held, release) =
                        mongo_schema_testkit::holding_client(&uri, |started| {
                            started.command_name == "update"
                                && started
                                    .command
                                    .get_array("updates")
                                    .ok()
                                    .and_then(|u| u.first()?.as_document()?.get_array("u").ok())
                                    .is_some()
                        })
                        .await;
                    let busy = client.database(&name).collection::<BsonDocument>("tokens");
                    let holder = Arc::new(Lease::new(busy, "w", period, 1));
                    assert!(holder.try_acquire().await.unwrap(), "the first holder");
                    handed.send((holder.clone(), held, release)).unwrap();
                    tokio::select! {
                        () = holder.keep() => "lost",
                        _ = stopped => "still kept",
                    }
                })
            });
            let (holder, held, release) =
                tokio::task::spawn_blocking(move || hand.recv_timeout(Duration::from_secs(30)))
                    .await
                    .unwrap()
                    .expect("the holder took the lease");
            let epoch = holder.fence().unwrap().epoch();
            tokio::task::spawn_blocking(move || held.recv_timeout(Duration::from_secs(30)))
                .await
                .unwrap()
                .expect("the renewal was held");
            tokio::time::sleep(2 * period).await;
            assert!(
                !holder.holds(),
                "the lease lapsed locally while its renewal was held"
            );
            let standby = Lease::new(tokens.clone(), "w", period, 1);
            if taken_over {
                assert!(
                    standby.try_acquire().await.unwrap(),
                    "the standby takes over"
                );
            }
            release.send(()).unwrap();
            if taken_over {
                // the late renewal finds the standby's owner: the lease is lost
                let ended = tokio::task::spawn_blocking(move || holder_thread.join())
                    .await
                    .unwrap()
                    .unwrap();
                assert_eq!(ended, "lost");
                assert!(!holder.hold().await, "lost");
                assert!(standby.holds());
            } else {
                // the late renewal finds the lease still this holder's: it holds it again, in
                // the same tenure, and keep goes on
                assert!(
                    tokio::time::timeout(Duration::from_secs(20), holder.hold())
                        .await
                        .expect("hold() answers within its deadline"),
                    "the lease is held again after the late renewal"
                );
                assert_eq!(holder.fence().unwrap().epoch(), epoch, "the same tenure");
                let stored = tokens.find_one(doc! { "_id": "w" }).await.unwrap().unwrap();
                assert_eq!(stored.get_str("owner").ok(), Some(holder.owner()));
                assert_eq!(stored.get_i64("epoch").ok(), Some(epoch));
                // and a standby cannot take it over now
                assert!(!standby.try_acquire().await.unwrap(), "the holder keeps it");
                stop.send(()).unwrap();
                let ended = tokio::task::spawn_blocking(move || holder_thread.join())
                    .await
                    .unwrap()
                    .unwrap();
                assert_eq!(ended, "still kept", "keep never gave the lease up");
            }
        }
    }
}
