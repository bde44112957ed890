//! Fenced writes: the sync worker's copy writes commit only while it still holds its lease, so
//! no write of a worker that was paused (a VM pause, a stalled runtime, SIGSTOP) and lost its
//! lease lands after the writes of the worker that took over.
//!
//! Each write runs in a transaction that, as its last statement, increments a counter in a
//! *lane* document `{ _id: { lease, lane }, owner, epoch }` filtered on this holder's owner id
//! and epoch. A takeover raises the lease's epoch and rewrites every lane document to the new
//! owner and epoch before the new holder writes anything. Whatever the interleaving, the two
//! cannot both succeed:
//! - the lane was claimed before the transaction began: its filter matches nothing, and the
//!   transaction is aborted;
//! - the lane was claimed after the transaction's snapshot: its write to the lane conflicts
//!   (`WriteConflict`), the transaction is aborted, and its next attempt matches nothing;
//! - the transaction wrote the lane first: the takeover's write to that lane waits until the
//!   transaction ends, so its writes land before the new holder's first.
//!
//! The lane document is written last, so a holder paused in the middle of its writes does not
//! hold the lane (and the takeover) up; transactions on different lanes never conflict on the
//! fence, and renewals of the lease write another document, so neither do they.
//!
//! A fence is one kind of target's business only through the body it runs: copies of extended
//! references today, other targets (subset parents) with the same lanes.
//!
//! A holder that dies inside a fenced transaction after its lane write (a crashed process, or a
//! task aborted while its commit waited for a connection: the driver marks a commit sent before
//! it is, so dropping it neither commits nor aborts) leaves that transaction open on the server,
//! holding its lane document, until the server reaps it (`transactionLifetimeLimitSeconds`, 60 s
//! by default on mongod and SecantusDB). A takeover's claim of that lane would wait behind it
//! that long: this is why, in the fault test, no worker became active within 60 s (issue 38,
//! item 0; `tests/sync_faults.rs` and `lease::tests`). So each holder runs its fenced
//! transactions on one session per lane, held for its life and named on the lane document when
//! it claims the lane; a takeover kills the sessions an older epoch named (`killSessions`, which
//! aborts their transactions) before it claims their lanes. A session killed while its holder
//! still lives only aborts a transaction that could no longer commit anyway.
//!
//! A holder whose pass is cancelled in the middle of a fenced transaction (its lease lapsed
//! while it was paused, so the worker stopped following where it stood) may leave that
//! transaction open on the server without knowing it: the driver marks a transaction in
//! progress only once its first statement has answered, so neither `abortTransaction` nor
//! dropping the session ends one whose first statement was cancelled on its way. Its writes
//! then hold their documents, and every fenced write of the new holder to them conflicts until
//! the server reaps the transaction (60 s), although the takeover killed the sessions this
//! holder named *before* the late statement arrived (issue 48: a standby took over, applied a
//! rename, and then applied nothing for 40 s once the paused holder was released and shut
//! down). Two guards close it:
//! - each lane remembers that a transaction may be open on it (`LaneSession::open`) until its
//!   commit or abort has answered; a cancelled pass leaves the mark, and the holder kills its
//!   own marked sessions ([`settle`]) before it stands by, reopens or stops, and before the
//!   lane's next transaction;
//! - a new holder whose fenced write keeps conflicting kills the older holder's sessions again
//!   (the ones its claim found named on the lanes), for a late statement that reached the
//!   server after the claim's kill (a partition that delivered it late, a holder that died
//!   before settling).

use super::fan_out::progress::Progress;
use std::time::Duration;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use mongodb::bson::{doc, Bson, Document as BsonDocument};
use mongodb::{Client, ClientSession, Collection};
use tokio::sync::Mutex as AsyncMutex;

use super::retry::Backoff;
use crate::error::WorkerStop;
use crate::{Error, Result};

/// Attempts of one fenced write before a transient error (a write conflict with another
/// writer of the same holder) is returned.
const FENCED_ATTEMPTS: u32 = 8;

/// Commit retries of one attempt whose outcome is unknown (the rewrites are idempotent: a
/// commit sent twice writes the same values).
const COMMIT_RETRIES: u32 = 3;

const TRANSIENT: &str = "TransientTransactionError";
const UNKNOWN_COMMIT: &str = "UnknownTransactionCommitResult";

/// The error a fenced pass returns when its writes were fenced off (the caller stands by).
pub(crate) fn fenced_off() -> Error {
    Error::worker(WorkerStop::FencedOff, "")
}

/// Whether `error` is [`fenced_off`]'s.
pub(crate) fn is_fenced_off(error: &Error) -> bool {
    matches!(
        error,
        Error::Worker {
            kind: WorkerStop::FencedOff,
            ..
        }
    )
}

/// How long a takeover waits for the server to kill an older holder's sessions.
const KILL_DEADLINE: Duration = Duration::from_secs(5);

/// After this many conflicting attempts of one fenced write, the older holder's sessions are
/// killed again (see the module documentation).
const KILL_AGAIN_AFTER: u32 = 2;

/// The session one lane's fenced transactions run on.
#[derive(Debug)]
pub(crate) struct LaneSession {
    session: AsyncMutex<ClientSession>,
    /// The server's id of the session (what `killSessions` names).
    id: BsonDocument,
    /// Set from the start of a transaction until its commit or abort has answered: a pass
    /// cancelled in between leaves it set, and the transaction may still be open on the server.
    open: AtomicBool,
}

/// The sessions a holder runs its fenced transactions on, one per lane, for the holder's life
/// (across its tenures); see the module documentation.
pub(crate) type LaneSessions = Arc<Vec<LaneSession>>;

/// Starts `lanes` sessions for fenced transactions.
pub(crate) async fn lane_sessions(client: &Client, lanes: usize) -> Result<LaneSessions> {
    let mut sessions = Vec::with_capacity(lanes);
    for _ in 0..lanes.max(1) {
        let session = client.start_session().await?;
        sessions.push(LaneSession {
            id: session.id().clone(),
            session: AsyncMutex::new(session),
            open: AtomicBool::new(false),
        });
    }
    Ok(Arc::new(sessions))
}

/// Kills `sessions` on the server (aborting their open transactions), within [`KILL_DEADLINE`].
/// `false`: the server refused or did not answer in time (logged).
async fn kill_sessions(client: &Client, sessions: Vec<BsonDocument>, whose: &str) -> bool {
    if sessions.is_empty() {
        return true;
    }
    let admin = client.database("admin");
    let kill = admin.run_command(doc! { "killSessions": sessions });
    match tokio::time::timeout(KILL_DEADLINE, kill).await {
        Ok(Ok(_)) => true,
        Ok(Err(error)) => {
            tracing::warn!(%error, "could not kill {whose} sessions");
            false
        }
        Err(_) => {
            tracing::warn!("killing {whose} sessions took longer than {KILL_DEADLINE:?}");
            false
        }
    }
}

/// Ends, on the server, every transaction a cancelled pass may have left open on `sessions`
/// (those marked `open`), by killing their sessions; the marks are cleared once the server
/// confirmed. A holder calls it whenever it stops following (see the module documentation).
/// `false`: a kill was refused or timed out (the server reaps the transaction at its lifetime
/// limit, and the mark stays for the next attempt).
pub(crate) async fn settle(client: &Client, sessions: &LaneSessions) -> bool {
    let marked: Vec<&LaneSession> = sessions
        .iter()
        .filter(|lane| lane.open.load(Ordering::Acquire))
        .collect();
    if marked.is_empty() {
        return true;
    }
    let ids = marked.iter().map(|lane| lane.id.clone()).collect();
    if !kill_sessions(client, ids, "this holder's own cancelled").await {
        return false;
    }
    for lane in marked {
        lane.open.store(false, Ordering::Release);
    }
    true
}

/// The fence of one holder of a lease: its owner id and epoch, the lease's lane documents, and
/// the sessions its fenced transactions run on.
#[derive(Debug, Clone)]
pub(crate) struct Fence {
    lanes: Collection<BsonDocument>,
    /// The `_id` of the lease's token document (a worker name, or a partition's id).
    lease: Bson,
    owner: String,
    epoch: i64,
    sessions: LaneSessions,
    /// The sessions older holders named on the lanes this fence claimed (killed by the claim;
    /// killed again when fenced writes keep conflicting).
    older: Arc<Mutex<Vec<BsonDocument>>>,
    /// Beats at every commit (the worker's watchdog reads it).
    pulse: Arc<AtomicU64>,
    /// Where this holder's fan-outs got to (see [`super::fan_out::progress`]).
    progress: Progress,
}

/// What a fenced write did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Fenced<R> {
    /// It committed while its lease was held.
    Committed(R),
    /// The lease was taken over: nothing was written.
    FencedOff,
}

impl Fence {
    /// The fence of `owner` at `epoch` of the lease `lease`, whose lane documents live in
    /// `lanes`.
    pub(crate) fn new(
        lanes: Collection<BsonDocument>,
        lease: impl Into<Bson>,
        owner: &str,
        epoch: i64,
        sessions: LaneSessions,
    ) -> Fence {
        let lease = lease.into();
        Fence {
            progress: Progress::new(lanes.clone(), lease.clone()),
            lanes,
            lease,
            owner: owner.to_owned(),
            epoch,
            sessions,
            older: Arc::default(),
            pulse: Arc::default(),
        }
    }

    /// Resumes the fan-outs of earlier holders from `progress` (loaded at the takeover).
    pub(crate) fn with_progress(mut self, progress: Progress) -> Self {
        self.progress = progress;
        self
    }

    /// Where this holder's fan-outs got to.
    pub(crate) fn progress(&self) -> &Progress {
        &self.progress
    }

    /// Beats `pulse` at every commit through this fence.
    pub(crate) fn with_pulse(mut self, pulse: Arc<AtomicU64>) -> Self {
        self.pulse = pulse;
        self
    }

    /// The session of `lane`'s fenced transactions.
    pub(crate) fn session(&self, lane: usize) -> &AsyncMutex<ClientSession> {
        &self.lane(lane).session
    }

    fn lane(&self, lane: usize) -> &LaneSession {
        &self.sessions[lane % self.sessions.len()]
    }

    /// The session id `lane` names on its lane document.
    fn session_id(&self, lane: usize) -> BsonDocument {
        self.lane(lane).id.clone()
    }

    /// Kills the sessions older holders named on this fence's lanes again: a statement of
    /// theirs that reached the server after the claim killed them may hold documents in a
    /// transaction nobody ends (see the module documentation).
    async fn kill_older_again(&self) {
        let older = self.older.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if !older.is_empty() {
            tracing::warn!(lease = %self.lease, sessions = older.len(), "fenced writes keep conflicting: killing the older holder's sessions again");
            kill_sessions(self.lanes.client(), older, "an older holder's").await;
        }
    }

    /// The epoch this fence writes under.
    pub(crate) fn epoch(&self) -> i64 {
        self.epoch
    }

    fn lane_id(&self, lane: usize) -> BsonDocument {
        doc! { "lease": self.lease.clone(), "lane": lane as i64 }
    }

    /// Takes lanes `0..lanes` for this owner and epoch (a takeover does this before its first
    /// write), first killing the session an older holder named on each (its open transaction,
    /// if it died inside one, would hold the lane until the server reaped it). A lane held by a
    /// newer epoch is left alone; `false` then: this holder was taken over already.
    pub(crate) async fn claim(&self, lanes: usize) -> Result<bool> {
        for lane in 0..lanes {
            let id = self.lane_id(lane);
            self.kill_older_session(lane).await?;
            let session = self.session_id(lane);
            // a pipeline update: the epoch only goes up
            let newer = doc! { "$gt": [{ "$ifNull": ["$epoch", i64::MIN] }, self.epoch] };
            let update = vec![doc! { "$set": {
                "owner": { "$cond": [newer.clone(), "$owner", &self.owner] },
                "epoch": { "$cond": [newer.clone(), "$epoch", self.epoch] },
                "session": { "$cond": [newer, "$session", { "$literal": session }] },
            } }];
            let after = self
                .lanes
                .find_one_and_update(doc! { "_id": id }, update)
                .upsert(true)
                .return_document(mongodb::options::ReturnDocument::After)
                .await;
            let after = match after {
                Ok(after) => after,
                // two takeovers upserted the lane at once: the other one inserted it; look again
                Err(e) if crate::error::server_code(&e) == Some(11000) => {
                    self.lanes
                        .find_one(doc! { "_id": self.lane_id(lane) })
                        .await?
                }
                Err(e) => return Err(e.into()),
            };
            let mine = after.is_some_and(|lane| {
                lane.get_str("owner").ok() == Some(self.owner.as_str())
                    && lane.get_i64("epoch").ok() == Some(self.epoch)
            });
            if !mine {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Kills the session an older epoch named on `lane`, if any: a transaction it left open
    /// there is aborted, so this claim does not wait for the server to reap it. Best effort: a
    /// server that refuses (a user that may not kill another's sessions) leaves the claim to
    /// wait, as it did before.
    async fn kill_older_session(&self, lane: usize) -> Result<()> {
        let Some(held) = self
            .lanes
            .find_one(doc! { "_id": self.lane_id(lane) })
            .await?
        else {
            return Ok(());
        };
        let older = match held.get("epoch") {
            Some(Bson::Int64(epoch)) => *epoch < self.epoch,
            Some(Bson::Int32(epoch)) => i64::from(*epoch) < self.epoch,
            _ => true,
        };
        let Some(Bson::Document(session)) = held.get("session") else {
            return Ok(());
        };
        if !older || *session == self.session_id(lane) {
            return Ok(());
        }
        {
            let mut known = self.older.lock().unwrap_or_else(|e| e.into_inner());
            if !known.contains(session) {
                known.push(session.clone());
            }
        }
        // refused or too slow: the claim waits for the transaction to end, as it did before
        kill_sessions(
            self.lanes.client(),
            vec![session.clone()],
            "an older holder's",
        )
        .await;
        Ok(())
    }

    /// Forgets the sessions named on this holder's lanes (on release: a later takeover then
    /// kills none of them, once they serve other operations of this process).
    pub(crate) async fn unname_sessions(&self) -> Result<()> {
        self.lanes
            .update_many(
                doc! { "_id.lease": &self.lease, "owner": &self.owner, "epoch": self.epoch },
                doc! { "$unset": { "session": "" } },
            )
            .await?;
        Ok(())
    }
}

/// Runs `body` in a transaction. With a fence, on its lane: the transaction commits only while
/// that holder's epoch still owns the lane, and [`Fenced::FencedOff`] (nothing written) once it
/// does not. Without one it commits (or fails). A transient error (a write conflict) runs the
/// whole body again, with back-off, up to [`FENCED_ATTEMPTS`] times; any other error of the body
/// aborts and is returned (a document-level error is the caller's to handle one holder at a
/// time).
pub(crate) async fn transact<R>(
    client: &Client,
    fence: Option<(&Fence, usize)>,
    mut body: impl for<'s> FnMut(&'s mut ClientSession) -> BoxFuture<'s, Result<R>>,
) -> Result<Fenced<R>> {
    // fenced: the lane's session (see the module documentation); else a session of its own
    let mut own = None;
    let mut lane_session = None;
    let open = fence.map(|(fence, lane)| &fence.lane(lane).open);
    let session: &mut ClientSession = match fence {
        Some((fence, lane)) => {
            let session = lane_session.insert(fence.session(lane).lock().await);
            // a transaction left open on it by a pass that was cancelled (a lost lease stops
            // the follower where it stands) ends here: on the server by killing the session
            // when the pass may have sent a statement the driver does not count, then here
            if fence.lane(lane).open.load(Ordering::Acquire)
                && kill_sessions(
                    client,
                    vec![fence.session_id(lane)],
                    "this holder's own cancelled",
                )
                .await
            {
                fence.lane(lane).open.store(false, Ordering::Release);
            }
            let _ = session.abort_transaction().await;
            session
        }
        None => own.insert(client.start_session().await?),
    };
    // set while the transaction's outcome is unknown to the server's side of things; a
    // cancelled pass leaves it set (see `settle`)
    let mark_open = |maybe_open: bool| {
        if let Some(open) = open {
            open.store(maybe_open, Ordering::Release);
        }
    };
    let mut backoff = Backoff::new(Duration::from_millis(5), Duration::from_millis(500));
    let mut attempt = 0;
    loop {
        attempt += 1;
        mark_open(true);
        session
            .start_transaction()
            .with_options(crate::concern::transaction())
            .await?;
        let outcome = match body(session).await {
            Ok(result) => match fence {
                None => commit(session).await.map(|()| result),
                Some((fence, lane)) => {
                    // the fence, last: see the module documentation
                    let filter = doc! {
                        "_id": fence.lane_id(lane),
                        "owner": &fence.owner,
                        "epoch": fence.epoch,
                    };
                    let fenced = fence
                        .lanes
                        .update_one(filter, doc! { "$inc": { "writes": 1_i64 } })
                        .session(&mut *session)
                        .await;
                    match fenced {
                        Ok(fenced) if fenced.matched_count == 1 => {
                            commit(session).await.map(|()| result)
                        }
                        Ok(_) => {
                            if session.abort_transaction().await.is_ok() {
                                mark_open(false);
                            }
                            return Ok(Fenced::FencedOff);
                        }
                        Err(e) => Err(Error::from(e)),
                    }
                }
            },
            Err(error) => Err(error),
        };
        let error = match outcome {
            Ok(result) => {
                mark_open(false);
                if let Some((fence, _)) = fence {
                    fence.pulse.fetch_add(1, Ordering::Relaxed);
                }
                return Ok(Fenced::Committed(result));
            }
            Err(error) => error,
        };
        if session.abort_transaction().await.is_ok() {
            mark_open(false);
        }
        if !error.contains_label(TRANSIENT) || attempt >= FENCED_ATTEMPTS {
            return Err(error);
        }
        if attempt == KILL_AGAIN_AFTER {
            if let Some((fence, _)) = fence {
                fence.kill_older_again().await;
            }
        }
        tokio::time::sleep(backoff.next_wait()).await;
    }
}

/// Commits, sending the commit again (a few times) when its outcome is unknown.
async fn commit(session: &mut ClientSession) -> Result<()> {
    let mut backoff = Backoff::new(Duration::from_millis(10), Duration::from_millis(500));
    let mut retries = 0;
    loop {
        match session.commit_transaction().await {
            Ok(()) => return Ok(()),
            Err(e) if e.contains_label(UNKNOWN_COMMIT) && retries < COMMIT_RETRIES => {
                retries += 1;
                tokio::time::sleep(backoff.next_wait()).await;
            }
            Err(e) => return Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    use mongodb::bson::{doc, Document as BsonDocument};
    use tokio::sync::Notify;

    use super::*;

    /// Two holders of one lease: the first is in the middle of a fenced write when the second
    /// takes over (claims the lanes at a newer epoch). The first one's transaction cannot
    /// commit, on any attempt, and the second one's write is the last.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_write_begun_before_a_takeover_never_commits_after_it() {
        let db = mongo_schema_testkit::database("fence_unit").await;
        let lanes = db.collection::<BsonDocument>("lanes");
        let copies = db.collection::<BsonDocument>("copies");
        copies
            .insert_one(doc! { "_id": 1, "name": "original" })
            .await
            .unwrap();
        let old = Fence::new(
            lanes.clone(),
            "w",
            "old-owner",
            1,
            lane_sessions(db.client(), 2).await.unwrap(),
        );
        let new = Fence::new(
            lanes.clone(),
            "w",
            "new-owner",
            2,
            lane_sessions(db.client(), 2).await.unwrap(),
        );
        assert!(old.claim(2).await.unwrap());

        // the old holder writes "older" in its transaction, then waits for the takeover
        let taken_over = Arc::new(Notify::new());
        let writing = Arc::new(Notify::new());
        let first_attempt = Arc::new(AtomicBool::new(true));
        let late = {
            let (old, client, copies) = (old.clone(), db.client().clone(), copies.clone());
            let (taken_over, writing, first_attempt) =
                (taken_over.clone(), writing.clone(), first_attempt.clone());
            tokio::spawn(async move {
                transact(&client, Some((&old, 1)), |session| {
                    let (copies, taken_over, writing, first_attempt) = (
                        copies.clone(),
                        taken_over.clone(),
                        writing.clone(),
                        first_attempt.clone(),
                    );
                    Box::pin(async move {
                        copies
                            .update_one(doc! { "_id": 1 }, doc! { "$set": { "name": "older" } })
                            .session(&mut *session)
                            .await?;
                        if first_attempt.swap(false, Ordering::SeqCst) {
                            writing.notify_one();
                            taken_over.notified().await;
                        }
                        Ok(())
                    })
                })
                .await
            })
        };
        tokio::time::timeout(std::time::Duration::from_secs(10), writing.notified())
            .await
            .expect("the old holder is writing");
        // the takeover: every lane to the new epoch, while the old write is open
        assert!(new.claim(2).await.unwrap());
        taken_over.notify_one();
        let outcome = tokio::time::timeout(std::time::Duration::from_secs(30), late)
            .await
            .expect("the late write ends")
            .unwrap()
            .unwrap();
        assert_eq!(outcome, Fenced::FencedOff);
        assert_eq!(
            copies.find_one(doc! { "_id": 1 }).await.unwrap().unwrap(),
            doc! { "_id": 1, "name": "original" },
            "nothing of the late write landed"
        );

        // the new holder writes; an old holder cannot claim the lanes back
        let written = transact(db.client(), Some((&new, 1)), |session| {
            let copies = copies.clone();
            Box::pin(async move {
                copies
                    .update_one(doc! { "_id": 1 }, doc! { "$set": { "name": "newer" } })
                    .session(&mut *session)
                    .await?;
                Ok(())
            })
        })
        .await
        .unwrap();
        assert_eq!(written, Fenced::Committed(()));
        assert!(
            !old.claim(2).await.unwrap(),
            "an older epoch never takes a lane back"
        );
        let late_again = transact(db.client(), Some((&old, 0)), |session| {
            let copies = copies.clone();
            Box::pin(async move {
                copies
                    .update_one(doc! { "_id": 1 }, doc! { "$set": { "name": "older" } })
                    .session(&mut *session)
                    .await?;
                Ok(())
            })
        })
        .await
        .unwrap();
        assert_eq!(late_again, Fenced::FencedOff);
        assert_eq!(
            copies.find_one(doc! { "_id": 1 }).await.unwrap().unwrap(),
            doc! { "_id": 1, "name": "newer" }
        );
        let lane = lanes
            .find_one(doc! { "_id": { "lease": "w", "lane": 1_i64 } })
            .await
            .unwrap()
            .unwrap();
        assert_eq!(lane.get_i64("epoch").ok(), Some(2));
        assert_eq!(
            lane.get_i64("writes").ok(),
            Some(1),
            "one committed fenced write: {lane}"
        );
    }

    /// Issue 48: a statement of the old holder that reaches the server after the takeover's
    /// claim killed its sessions (a partition delivered it late) opens a transaction nobody
    /// ends. The new holder's fenced writes to the same document conflict; after
    /// `KILL_AGAIN_AFTER` attempts it kills the old holder's sessions again and commits, well
    /// before the server would reap the transaction (60 s).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_late_statement_of_the_old_holder_does_not_hold_the_new_one_up() {
        let db = mongo_schema_testkit::database("fence_late_statement").await;
        let lanes = db.collection::<BsonDocument>("lanes");
        let copies = db.collection::<BsonDocument>("copies");
        copies
            .insert_one(doc! { "_id": 1, "name": "original" })
            .await
            .unwrap();
        let old = Fence::new(
            lanes.clone(),
            "w",
            "old-owner",
            1,
            lane_sessions(db.client(), 1).await.unwrap(),
        );
        assert!(old.claim(1).await.unwrap());
        let new = Fence::new(
            lanes.clone(),
            "w",
            "new-owner",
            2,
            lane_sessions(db.client(), 1).await.unwrap(),
        );
        assert!(new.claim(1).await.unwrap(), "the takeover");
        // the late statement: on the old holder's lane session, after the claim's kill, and
        // never committed nor aborted
        let mut late = old.session(0).lock().await;
        late.start_transaction().await.unwrap();
        copies
            .update_one(doc! { "_id": 1 }, doc! { "$set": { "name": "older" } })
            .session(&mut *late)
            .await
            .unwrap();
        let started = std::time::Instant::now();
        let written = tokio::time::timeout(
            std::time::Duration::from_secs(20),
            transact(db.client(), Some((&new, 0)), |session| {
                let copies = copies.clone();
                Box::pin(async move {
                    copies
                        .update_one(doc! { "_id": 1 }, doc! { "$set": { "name": "newer" } })
                        .session(&mut *session)
                        .await?;
                    Ok(())
                })
            }),
        )
        .await
        .expect("the new holder's write does not wait for the server to reap the late one")
        .unwrap();
        assert_eq!(written, Fenced::Committed(()));
        println!("committed after {:?}", started.elapsed());
        assert!(
            late.commit_transaction().await.is_err(),
            "the late one was aborted"
        );
        assert_eq!(
            copies.find_one(doc! { "_id": 1 }).await.unwrap().unwrap(),
            doc! { "_id": 1, "name": "newer" }
        );
    }

    /// Issue 48: a fenced pass cancelled while its first statement was on its way leaves a
    /// transaction open that the driver does not know of (it neither aborts nor ends it); the
    /// lane stays marked, and `settle` ends it on the server, so another writer of the document
    /// is not held up.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_cancelled_pass_is_settled_on_the_server() {
        let db = mongo_schema_testkit::database("fence_settle").await;
        let lanes = db.collection::<BsonDocument>("lanes");
        let copies = db.collection::<BsonDocument>("copies");
        copies
            .insert_one(doc! { "_id": 1, "name": "original" })
            .await
            .unwrap();
        let sessions = lane_sessions(db.client(), 1).await.unwrap();
        let holder = Fence::new(lanes.clone(), "w", "owner", 1, sessions.clone());
        assert!(holder.claim(1).await.unwrap());
        let wrote = Arc::new(Notify::new());
        let pass = {
            let (holder, client, copies, wrote) = (
                holder.clone(),
                db.client().clone(),
                copies.clone(),
                wrote.clone(),
            );
            tokio::spawn(async move {
                transact(&client, Some((&holder, 0)), |session| {
                    let (copies, wrote) = (copies.clone(), wrote.clone());
                    Box::pin(async move {
                        copies
                            .update_one(doc! { "_id": 1 }, doc! { "$set": { "name": "cut" } })
                            .session(&mut *session)
                            .await?;
                        wrote.notify_one();
                        std::future::pending::<()>().await;
                        Ok(())
                    })
                })
                .await
            })
        };
        tokio::time::timeout(std::time::Duration::from_secs(10), wrote.notified())
            .await
            .expect("the pass wrote");
        pass.abort(); // the pass is cancelled where it stands
        let _ = pass.await;
        assert!(
            sessions[0].open.load(Ordering::Acquire),
            "the lane is marked"
        );
        // another writer conflicts with the open transaction
        let other = || async {
            let mut session = db.client().start_session().await.unwrap();
            session.start_transaction().await.unwrap();
            let wrote = copies
                .update_one(doc! { "_id": 1 }, doc! { "$set": { "name": "other" } })
                .session(&mut session)
                .await;
            match wrote {
                Ok(_) => session.commit_transaction().await.map_err(Error::from),
                Err(e) => {
                    let _ = session.abort_transaction().await;
                    Err(Error::from(e))
                }
            }
        };
        assert!(
            other().await.is_err(),
            "the cancelled pass holds the document"
        );
        assert!(settle(db.client(), &sessions).await);
        assert!(!sessions[0].open.load(Ordering::Acquire));
        other().await.expect("the document is free once settled");
        assert_eq!(
            copies.find_one(doc! { "_id": 1 }).await.unwrap().unwrap(),
            doc! { "_id": 1, "name": "other" },
            "nothing of the cancelled pass landed"
        );
    }
}
