//! The `async` strategy: a change-stream consumer that rewrites the copies after their source
//! changes or is deleted, persisting its resume token after each applied batch of changes.
//!
//! Delivery is at least once: a worker that dies re-applies, from its last saved token, what it
//! had applied since; every rewrite sets the copy to the source's current values, so applying a
//! change twice changes nothing. One worker per name is active (it holds the [lease](super::lease));
//! the others stand by and take over when its lease expires.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use std::collections::hash_map::Entry;
use std::collections::HashMap;

use futures_util::future::BoxFuture;
use futures_util::stream::FuturesOrdered;
use futures_util::{StreamExt, TryStreamExt};
use mongodb::bson::{doc, Bson, Document as BsonDocument, RawDocumentBuf};
use mongodb::change_stream::event::{
    ChangeStreamEvent, OperationType, ResumeToken, UpdateDescription,
};
use mongodb::change_stream::ChangeStream;
use mongodb::options::{FullDocumentBeforeChangeType, FullDocumentType};
use mongodb::Database;
use tokio::sync::watch;
use tokio::time::Instant;
use tracing::Instrument as _;

use super::events::{self, Fragments, Read, Unreadable};
use super::failures::FailureLog;
use super::fan_out::{FanOut, FanOutOutcome, Writer};
use super::fence::Fence;
use super::lanes::{Lanes, Turn};
use super::lease::{Lease, DEFAULT_LEASE};
use super::metrics;
use super::partitions::{self, Holder, Membership, Partition};
use super::reconcile::reconcile;
use super::retry::{Backoff, ErrorClass};
use super::subsets::SubsetFollow;
use super::{id_key, touches};
use crate::error::server_code;
use crate::model::copy::{SyncEdge, SyncStrategy};
use crate::relations::subset::SubsetRule;
use crate::{Error, Result, SyncGraph};

/// The collection, in the application's database, where workers keep their resume tokens and
/// leases (one document per worker name).
pub const TOKENS_COLLECTION: &str = "mongo_schema_sync";

/// The default of [`SyncWorker::ready_timeout`].
pub const DEFAULT_READY_TIMEOUT: Duration = Duration::from_secs(30);

/// The default of [`SyncWorker::max_batch`].
pub const DEFAULT_MAX_BATCH: usize = 1000;

/// The default of [`SyncWorker::token_save_interval`].
pub const DEFAULT_TOKEN_SAVE_INTERVAL: Duration = Duration::from_secs(60);

/// The default of [`SyncWorker::stall_timeout`].
pub const DEFAULT_STALL_TIMEOUT: Duration = Duration::from_secs(60);

/// At most this many fan-outs of one batch run at once, each on its own fence lane.
pub const FAN_OUT_CONCURRENCY: usize = 8;

/// How long gathering a batch waits for the server's next reply once the driver's buffer is
/// drained: a reply already on its way joins the batch, a `getMore` the server holds (nothing
/// waiting) does not delay the changes gathered. The `getMore` stays in flight and its reply
/// starts the next batch.
const GATHER_DEADLINE: Duration = Duration::from_millis(10);

/// A batch whose newest change is older than this is a worker catching up: it gathers beyond
/// the driver's buffer (the next replies are already waiting on the server) up to
/// [`SyncWorker::max_batch`], so a backlog is applied with one rewrite per renamed source per
/// batch; fresh changes are applied as they come.
const CATCHING_UP: Duration = Duration::from_secs(1);

/// How long a batch runs before the worker reads ahead of it (see `InFlight::may_read_ahead`):
/// long enough for an ordinary batch to finish first, short enough that a change arriving during
/// a large fan-out lands within about a second.
const READ_AHEAD_AFTER: Duration = Duration::from_secs(1);

/// At most this many batches are in flight (read, not yet finished) at once; the stream is not
/// read further until the oldest finishes (the saved token cannot move past it anyway).
const MAX_IN_FLIGHT: usize = 64;

/// `BSONObjectTooLarge`: the next event exceeds what the server can send.
const TOO_LARGE: i32 = 10334;

/// Back-off between reopenings after transient errors.
const BACKOFF_FIRST: Duration = Duration::from_millis(100);
const BACKOFF_CAP: Duration = Duration::from_secs(30);

/// Server codes that mean a stored resume token can no longer be used.
const UNRESUMABLE: [i32; 5] = [
    9,   // FailedToParse: not a token
    260, // InvalidResumeToken
    280, // ChangeStreamFatalError
    286, // ChangeStreamHistoryLost
    222, // CloseChangeStream
];

/// The counters of a running worker at one moment ([`WorkerStats::snapshot`]): plain numbers,
/// copied out, so reading them can neither race with the worker nor change them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WorkerSnapshot {
    /// Change events received.
    pub events: u64,
    /// Events that touched a copied field (or deleted a source whose copies are unset) and
    /// were applied. Delivery is at least once: after a takeover or a crash some are applied
    /// again.
    pub applied: u64,
    /// Changes whose rewrite was folded into a later change of the same source document in
    /// the same batch (its looked-up full document is newer).
    pub coalesced: u64,
    /// Holder documents rewritten.
    pub copies_rewritten: u64,
    /// Holder documents whose copy was unset because its source was deleted.
    pub copies_unset: u64,
    /// Holder documents that could not take their copy; each is recorded in
    /// [`crate::FAILURES_COLLECTION`].
    pub failed: u64,
    /// Full reconciles run because no usable resume token existed.
    pub reconciles: u64,
    /// Times the stream was reopened after an error.
    pub reopened: u64,
    /// Times this worker took the lease (became the active worker of its name).
    pub takeovers: u64,
    /// Parents of an async subset whose previews and count were set from their children (the
    /// refreshes of a batch coalesce per parent).
    pub previews_refreshed: u64,
    /// Changes of a child of an async subset whose parent before the change could not be
    /// known (no pre-image: a deletion, or an update that may have moved the child); reconcile
    /// repairs those parents.
    pub unknown_parents: u64,
    /// Milliseconds between the source change (its `wallTime`) and the copies being rewritten,
    /// for the last applied event.
    pub last_lag_ms: u64,
    /// The largest such lag seen.
    pub max_lag_ms: u64,
    /// Change events the worker could not read (larger than the server can send, or not
    /// decodable): each recorded in [`crate::FAILURES_COLLECTION`] with its document key and
    /// skipped; reconcile repairs what it would have done.
    pub unreadable: u64,
    /// Times the watchdog found the worker stalled (nothing read from its stream and no write
    /// committed for [`SyncWorker::stall_timeout`] while it held the lease) and reopened the
    /// stream from the saved token.
    pub stalls: u64,
}

/// Counters and state of a running worker, readable at any time through
/// [`SyncWorkerHandle::stats`]; [`WorkerStats::snapshot`] copies the counters out.
#[derive(Debug, Default)]
pub struct WorkerStats {
    /// Change events received.
    #[deprecated(
        since = "0.2.0",
        note = "read `WorkerStats::snapshot()`: the counters are the worker's, not to be written"
    )]
    pub events: AtomicU64,
    /// Events that touched a copied field (or deleted a source whose copies are unset) and
    /// were applied. Delivery is at least once: after a takeover or a crash some are applied
    /// again.
    #[deprecated(
        since = "0.2.0",
        note = "read `WorkerStats::snapshot()`: the counters are the worker's, not to be written"
    )]
    pub applied: AtomicU64,
    /// Changes whose rewrite was folded into a later change of the same source document in
    /// the same batch (its looked-up full document is newer).
    #[deprecated(
        since = "0.2.0",
        note = "read `WorkerStats::snapshot()`: the counters are the worker's, not to be written"
    )]
    pub coalesced: AtomicU64,
    /// Holder documents rewritten.
    #[deprecated(
        since = "0.2.0",
        note = "read `WorkerStats::snapshot()`: the counters are the worker's, not to be written"
    )]
    pub copies_rewritten: AtomicU64,
    /// Holder documents whose copy was unset because its source was deleted.
    #[deprecated(
        since = "0.2.0",
        note = "read `WorkerStats::snapshot()`: the counters are the worker's, not to be written"
    )]
    pub copies_unset: AtomicU64,
    /// Holder documents that could not take their copy; each is recorded in
    /// [`crate::FAILURES_COLLECTION`].
    #[deprecated(
        since = "0.2.0",
        note = "read `WorkerStats::snapshot()`: the counters are the worker's, not to be written"
    )]
    pub failed: AtomicU64,
    /// Full reconciles run because no usable resume token existed.
    #[deprecated(
        since = "0.2.0",
        note = "read `WorkerStats::snapshot()`: the counters are the worker's, not to be written"
    )]
    pub reconciles: AtomicU64,
    /// Times the stream was reopened after an error.
    #[deprecated(
        since = "0.2.0",
        note = "read `WorkerStats::snapshot()`: the counters are the worker's, not to be written"
    )]
    pub reopened: AtomicU64,
    /// Times this worker took the lease (became the active worker of its name).
    #[deprecated(
        since = "0.2.0",
        note = "read `WorkerStats::snapshot()`: the counters are the worker's, not to be written"
    )]
    pub takeovers: AtomicU64,
    /// Parents of an async subset whose previews and count were set from their children (the
    /// refreshes of a batch coalesce per parent).
    #[deprecated(
        since = "0.2.0",
        note = "read `WorkerStats::snapshot()`: the counters are the worker's, not to be written"
    )]
    pub previews_refreshed: AtomicU64,
    /// Changes of a child of an async subset whose parent before the change could not be
    /// known (no pre-image: a deletion, or an update that may have moved the child); reconcile
    /// repairs those parents.
    #[deprecated(
        since = "0.2.0",
        note = "read `WorkerStats::snapshot()`: the counters are the worker's, not to be written"
    )]
    pub unknown_parents: AtomicU64,
    /// Milliseconds between the source change (its `wallTime`) and the copies being rewritten,
    /// for the last applied event.
    #[deprecated(
        since = "0.2.0",
        note = "read `WorkerStats::snapshot()`: the counters are the worker's, not to be written"
    )]
    pub last_lag_ms: AtomicU64,
    /// The largest such lag seen.
    #[deprecated(
        since = "0.2.0",
        note = "read `WorkerStats::snapshot()`: the counters are the worker's, not to be written"
    )]
    pub max_lag_ms: AtomicU64,
    unreadable: AtomicU64,
    stalls: AtomicU64,
    /// The state of each partition the worker runs (one when its name is not split).
    parts: Vec<PartState>,
    /// Partitioned: every partition of the name is held by a live worker (this one or
    /// another), as the worker's last look at its name found.
    covered: AtomicBool,
    last_error: Mutex<Option<Error>>,
}

/// The state of one partition a worker runs (see [`super::partitions`]).
#[derive(Debug, Default)]
pub(crate) struct PartState {
    /// Ticks at every reply of the partition's change stream and every fenced commit: what its
    /// watchdog watches (shared with its lease's fences).
    pulse: Arc<AtomicU64>,
    /// The cluster time up to which every change of the partition has been applied (or
    /// concerned no copy), packed as `time << 32 | increment`; 0 before the first.
    through: AtomicU64,
    ready: AtomicBool,
    active: AtomicBool,
    standby: AtomicBool,
}

impl PartState {
    /// One beat of the partition's pulse (a stream reply, a fenced commit).
    fn beat(&self) {
        self.pulse.fetch_add(1, Ordering::Relaxed);
    }

    /// Moves the position every change before which has been applied (never back).
    fn applied_through(&self, time: Option<mongodb::bson::Timestamp>) {
        if let Some(time) = time {
            self.through.fetch_max(pack(time), Ordering::AcqRel);
        }
    }

    fn is_active(&self) -> bool {
        self.active.load(Ordering::Acquire)
    }

    fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    fn role(&self, active: bool, standby: bool) {
        self.active.store(active, Ordering::Release);
        self.standby.store(standby, Ordering::Release);
        if !active {
            self.ready.store(false, Ordering::Release);
        }
    }
}

impl WorkerStats {
    /// The stats of a worker that runs `partitions` partitions.
    fn with_partitions(partitions: usize) -> WorkerStats {
        WorkerStats {
            parts: (0..partitions.max(1))
                .map(|_| PartState::default())
                .collect(),
            ..WorkerStats::default()
        }
    }

    /// How many partitions this worker holds now.
    fn held(&self) -> usize {
        self.parts.iter().filter(|p| p.is_active()).count()
    }

    fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// Reads a counter.
    #[deprecated(since = "0.2.0", note = "read `WorkerStats::snapshot()`")]
    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }

    /// The counters now, as plain numbers (each read on its own: a worker applying a batch
    /// may move one between two reads).
    #[allow(deprecated)]
    pub fn snapshot(&self) -> WorkerSnapshot {
        let read = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        WorkerSnapshot {
            events: read(&self.events),
            applied: read(&self.applied),
            coalesced: read(&self.coalesced),
            copies_rewritten: read(&self.copies_rewritten),
            copies_unset: read(&self.copies_unset),
            failed: read(&self.failed),
            reconciles: read(&self.reconciles),
            reopened: read(&self.reopened),
            takeovers: read(&self.takeovers),
            previews_refreshed: read(&self.previews_refreshed),
            unknown_parents: read(&self.unknown_parents),
            last_lag_ms: read(&self.last_lag_ms),
            max_lag_ms: read(&self.max_lag_ms),
            unreadable: read(&self.unreadable),
            stalls: read(&self.stalls),
        }
    }

    /// Whether this worker holds the lease, its change stream is open and any initial catch-up
    /// is done. With [`SyncWorker::partitions`]: it holds at least one partition, the stream
    /// of every partition it holds is open and caught up in that sense, and every partition of
    /// its name is held by a live worker (this one or another).
    pub fn is_ready(&self) -> bool {
        let mut held = self.parts.iter().filter(|p| p.is_active()).peekable();
        held.peek().is_some()
            && held.all(PartState::is_ready)
            && (self.parts.len() <= 1 || self.covered.load(Ordering::Acquire))
    }

    /// Whether this worker holds the lease of its name (the one worker of that name that
    /// applies changes); with [`SyncWorker::partitions`], the lease of at least one partition.
    pub fn is_active(&self) -> bool {
        self.parts.iter().any(PartState::is_active)
    }

    /// Whether this worker is standing by: another live worker of its name holds the lease.
    /// With [`SyncWorker::partitions`]: it holds no partition, and other live workers hold
    /// every one.
    pub fn is_standby(&self) -> bool {
        match self.parts.as_slice() {
            [] => false,
            [whole] => whole.standby.load(Ordering::Acquire),
            parts => {
                !parts.iter().any(PartState::is_active) && self.covered.load(Ordering::Acquire)
            }
        }
    }

    /// How many partitions of its name this worker holds now (0 or 1 without
    /// [`SyncWorker::partitions`]).
    pub fn partitions_held(&self) -> usize {
        self.held()
    }

    /// The last error the worker met (it may have recovered since).
    pub fn last_error(&self) -> Option<Error> {
        self.last_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn set_last_error(&self, error: &Error) {
        *self.last_error.lock().unwrap_or_else(|e| e.into_inner()) = Some(error.clone());
    }
}

/// Follows the change streams of the sources of `async` copies. Build it with
/// [`crate::Schema::sync_worker`], then [`SyncWorker::spawn`] it.
#[derive(Debug, Clone)]
pub struct SyncWorker {
    db: Database,
    graph: SyncGraph,
    name: String,
    ready_timeout: Duration,
    lease: Duration,
    max_batch: usize,
    max_await_time: Option<Duration>,
    token_save_interval: Duration,
    stall_timeout: Duration,
    /// How many partitions the name's events are split into (1: not split).
    partitions: usize,
    subsets: SubsetFollow,
    /// Test support: events of this document key are read as undecodable.
    unreadable_key: Option<Bson>,
    /// Test support: the next batch's apply never ends (once).
    stall_once: Arc<AtomicBool>,
}

/// A running worker. Dropping it detaches the worker, which keeps running until
/// [`SyncWorkerHandle::shutdown`] (on another handle: there is none) or until its tokio runtime
/// ends; keep it to stop the worker cleanly.
#[derive(Debug)]
pub struct SyncWorkerHandle {
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<Result<()>>,
    stats: Arc<WorkerStats>,
    ready_timeout: Duration,
    db: Database,
    /// The `_id` of each partition's token document (the name alone when it is not split).
    ids: Vec<Bson>,
}

/// What probing an event too large to send found.
enum Probed {
    /// Its record written: go on after this token.
    After(ResumeToken),
    /// No position to go on from: reopen and meet it again.
    Unknown,
    /// The record was fenced off: the lease was taken over.
    FencedOff,
}

/// The batches of a stream read and not yet finished, oldest first (see [`super::lanes`]),
/// and those that finished and wait for their token to be saved, in order.
///
/// Every await of the loop that reads the stream goes through [`InFlight::drive`], which polls
/// the running batches meanwhile: a batch left unpolled keeps the pool connection of the
/// command it is in the middle of, and enough of them (the jobs of 8 lanes, the failure log's
/// refresh of each batch) held every connection of the client's pool (10 by default), so that
/// the stream's next `getMore` and the lease's renewal waited for a connection until the lease
/// lapsed: a worker catching up 10,000 renames lost and retook its lease every 9 s and saved
/// no token (found by the sync benchmark; the worker's own client, shared with the service,
/// was blocked too).
#[derive(Default)]
struct InFlight<'a> {
    running: FuturesOrdered<BoxFuture<'a, Result<Finished>>>,
    done: std::collections::VecDeque<Result<Finished>>,
    /// When each running batch was started, oldest first.
    started: std::collections::VecDeque<Instant>,
}

impl<'a> InFlight<'a> {
    /// Whether no batch is running or waiting for its token to be saved.
    fn is_empty(&self) -> bool {
        self.running.is_empty() && self.done.is_empty()
    }

    fn len(&self) -> usize {
        self.running.len() + self.done.len()
    }

    /// Awaits `work` while the running batches go on (those that finish wait in `done`).
    async fn drive<T>(&mut self, work: impl std::future::Future<Output = T>) -> T {
        let mut work = std::pin::pin!(work);
        loop {
            tokio::select! {
                biased;
                out = &mut work => return out,
                finished = self.running.next(), if !self.running.is_empty() => {
                    self.finished(finished);
                }
            }
        }
    }

    /// Starts a batch.
    fn start(&mut self, batch: BoxFuture<'a, Result<Finished>>) {
        self.running.push_back(batch);
        self.started.push_back(Instant::now());
    }

    /// The oldest running batch finished (`running` yields them in order).
    fn finished(&mut self, finished: Option<Result<Finished>>) {
        if let Some(finished) = finished {
            self.started.pop_front();
            self.done.push_back(finished);
        }
    }

    /// Whether the stream may be read ahead now (see [`READ_AHEAD_AFTER`]): nothing running,
    /// or the oldest running batch has run that long and a lane is free; and fewer than
    /// [`MAX_IN_FLIGHT`] batches are in flight.
    fn may_read_ahead(&self, lanes: &Lanes) -> bool {
        self.len() < MAX_IN_FLIGHT
            && self
                .started
                .front()
                .is_none_or(|oldest| oldest.elapsed() >= READ_AHEAD_AFTER && lanes.any_free())
    }

    /// A future that resolves when the oldest running batch has run for [`READ_AHEAD_AFTER`]
    /// (never when none runs).
    fn long_running(&self) -> impl std::future::Future<Output = ()> + use<> {
        let at = self
            .started
            .front()
            .map(|oldest| *oldest + READ_AHEAD_AFTER);
        async move {
            match at {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        }
    }
}

/// What a worker keeps across reopenings of its stream.
#[derive(Debug, Default)]
struct Recovery {
    /// After an event too large to send: read one event a time until the stream stops right
    /// before it, then probe its key and go on after it.
    one_at_a_time: bool,
}

/// A batch read from the stream, planned: each job and subset parent with its turn on the
/// lanes, and the wall times of the events it applies (for the lag).
struct Planned<'e> {
    jobs: Vec<(Turn, Job<'e>)>,
    parents: Vec<(Turn, usize, Bson)>,
    applied: Vec<Option<mongodb::bson::DateTime>>,
}

/// A batch that finished applying.
struct Finished {
    /// A write was fenced off: the lease was taken over.
    fenced_off: bool,
    /// The stream's position after the batch (`None`: not to be saved, a split event half
    /// read).
    token: Option<ResumeToken>,
    /// The cluster time of its last event.
    cluster_time: Option<mongodb::bson::Timestamp>,
}

/// Why a worker stopped following.
enum Stopped {
    /// Asked to stop.
    Requested,
    /// Its lease was taken or lapsed: stand by again.
    LeaseLost,
    /// The watchdog found it stalled (the reason): reopen from the saved token.
    Stalled(String),
    /// The partition left this member's share of its name: release it.
    Released,
}

impl SyncWorker {
    pub(crate) fn new(db: Database, graph: SyncGraph) -> Self {
        SyncWorker {
            // leases, lanes, tokens and fenced commits: primary, majority
            db: crate::concern::pinned(&db),
            graph,
            name: "default".to_owned(),
            ready_timeout: DEFAULT_READY_TIMEOUT,
            lease: DEFAULT_LEASE,
            max_batch: DEFAULT_MAX_BATCH,
            max_await_time: None,
            token_save_interval: DEFAULT_TOKEN_SAVE_INTERVAL,
            stall_timeout: DEFAULT_STALL_TIMEOUT,
            partitions: 1,
            subsets: SubsetFollow::default(),
            unreadable_key: None,
            stall_once: Arc::default(),
        }
    }

    /// The async subsets to keep current (`Schema::sync_worker` passes them).
    pub(crate) fn follow_subsets(mut self, rules: Vec<SubsetRule>) -> Self {
        self.subsets = SubsetFollow { rules };
        self
    }

    /// The worker's name: the key of its resume token and lease. Workers with different names
    /// each see every change; of the workers that share a name one is active at a time.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// How long [`SyncWorkerHandle::ready`] waits (default 30 s).
    pub fn ready_timeout(mut self, timeout: Duration) -> Self {
        self.ready_timeout = timeout;
        self
    }

    /// The lease of the active worker (default 10 s, at least 300 ms): renewed at a third of it;
    /// a standby takes over within about this time after the active worker dies.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease.max(Duration::from_millis(300));
        self
    }

    /// At most this many changes, of those the server has already sent, are applied together
    /// before the resume token is saved (default 1,000, at least 1). Within a batch the
    /// rewrites coalesce per copy and source document, so a worker that is behind catches up
    /// with one rewrite per renamed source instead of one per rename; after a crash at most one
    /// batch is applied again (rewrites are idempotent). Lower it to save the token more often.
    pub fn max_batch(mut self, changes: usize) -> Self {
        self.max_batch = changes.max(1);
        self
    }

    /// How long the server may hold a `getMore` of the change stream when no change is waiting
    /// (`maxAwaitTimeMS`; unset, the server's default: 1 s on mongod). mongod answers as soon as
    /// a change arrives, so there this only bounds how often an idle worker asks again.
    /// SecantusDB 0.7 answers only when the time is up, which delays every change by up to that
    /// time: set it low there (100 ms) when lag matters.
    pub fn max_await_time(mut self, wait: Duration) -> Self {
        self.max_await_time = Some(wait);
        self
    }

    /// How long a stream with no change to apply goes without its token saved (default 60 s,
    /// at least 10 ms). The stream's position still moves on (its post-batch resume token follows
    /// the writes of other collections, the worker's own lease renewals among them), and the
    /// worker saves it at least this often, so a source that changes rarely does not restart
    /// from a token older than the oplog window (error 286) and pay a full reconcile.
    pub fn token_save_interval(mut self, interval: Duration) -> Self {
        self.token_save_interval = interval.max(Duration::from_millis(10));
        self
    }

    /// How long the active worker may go with nothing read from its change stream and no write
    /// committed before its watchdog calls it stalled (default 60 s, at least three times
    /// [`max_await_time`](SyncWorker::max_await_time)): the server answers a `getMore` within
    /// `maxAwaitTimeMS` even when nothing changed, and a fan-out commits a chunk of at most
    /// [`crate::FAN_OUT_CHUNK`] holders at a time, so a worker silent that long is stuck (a
    /// command that never returns, a transaction that waits for ever). The watchdog then logs a
    /// `tracing` warning, counts it ([`WorkerSnapshot::stalls`], the metric
    /// `mongo_schema_sync_stalls_total`), records it on the worker's token document (`status`
    /// exits 2 for [`crate::cli::STALLED_WORKER_AFTER`] after it) and reopens the stream from the
    /// saved token: what was not applied is applied again (every rewrite is idempotent).
    pub fn stall_timeout(mut self, timeout: Duration) -> Self {
        self.stall_timeout = timeout;
        self
    }

    /// Splits the name's change events among `partitions` partitions (default 1: not split) by
    /// a hash of the changed document's `_id`, computed by the server in each partition's
    /// stream, so that every event of one source document falls in one partition, in order.
    /// Each partition has its own lease, epoch, fence lanes and resume token (a token document
    /// `_id: { worker: name, partition: i, of: n }`), and the workers running the name, in this
    /// process or others, share the partitions evenly: each renews a heartbeat, and every fifth
    /// of the [lease](SyncWorker::lease) a worker holding more than its share releases the
    /// surplus while one holding fewer takes free or expired partitions; a worker with no
    /// share stands by. A worker that joins takes a share from the others, one that shuts
    /// down releases its partitions at once, and one that stops renewing loses them once its
    /// leases lapse.
    ///
    /// Every worker of a name must use the same count. Workers of another count that joined
    /// earlier (or a worker of the name without partitions holding its lease) keep the name, and
    /// a worker stands by until they leave; a partition without a token of its own starts from
    /// the oldest token the name saved under another count (or without partitions), so adding
    /// partitions to a running name replays from where it was, and applies nothing twice but
    /// idempotently. The [`WorkerStats`] of a partitioned worker add up over the partitions it
    /// holds; see [`SyncWorkerHandle::ready`] and [`SyncWorkerHandle::caught_up`] for what
    /// they wait for, and the module `mongo_schema::sync`'s scaling guide
    /// (`docs/guide/scaling.md`) for the hash, which `_id` types it spreads (numbers, strings,
    /// ObjectIds, dates; a binary UUID `_id` falls in partition 0) and what partitions cost.
    pub fn partitions(mut self, partitions: usize) -> Self {
        self.partitions = partitions.max(1);
        self
    }

    /// Test support, not part of the API: the partition (`0..partitions`) the worker's streams
    /// give the changes of a document whose `_id` is `id`.
    #[doc(hidden)]
    pub fn __partition_of(id: &Bson, partitions: usize) -> usize {
        super::partitions::partition_of(id, partitions)
    }

    /// Test support, not part of the API: the next batch's apply never ends, as a command that
    /// never returns would hold it, so a test can watch the watchdog recover.
    #[doc(hidden)]
    pub fn __stall_next_batch(self) -> Self {
        self.stall_once.store(true, Ordering::Release);
        self
    }

    /// Test support, not part of the API: the worker reads every change event whose document
    /// key's `_id` equals `key` as undecodable (the fault of an event the driver cannot decode,
    /// which the test server cannot store), so a test can watch it recorded and skipped.
    #[doc(hidden)]
    pub fn __unreadable_key(mut self, key: impl Into<Bson>) -> Self {
        self.unreadable_key = Some(key.into());
        self
    }

    /// Starts the worker on the current tokio runtime.
    #[must_use = "dropping the handle detaches the worker (it runs until its runtime ends); keep it to call `shutdown().await`"]
    pub fn spawn(self) -> SyncWorkerHandle {
        let (stop, stopped) = watch::channel(false);
        let stats = Arc::new(WorkerStats::with_partitions(self.partitions));
        let ready_timeout = self.ready_timeout;
        let db = self.db.clone();
        let ids = (0..self.partitions)
            .map(|index| {
                Partition {
                    index,
                    count: self.partitions,
                }
                .id(&self.name)
            })
            .collect();
        let task = tokio::spawn(self.run(stopped, stats.clone()));
        SyncWorkerHandle {
            stop,
            task,
            stats,
            ready_timeout,
            db,
            ids,
        }
    }

    fn edges(&self) -> Vec<&SyncEdge> {
        self.graph.by_strategy(SyncStrategy::Async).collect()
    }

    #[allow(deprecated)] // the worker writes its own counters
    async fn run(self, mut stop: watch::Receiver<bool>, stats: Arc<WorkerStats>) -> Result<()> {
        let sources = self.graph.sources(SyncStrategy::Async);
        if sources.is_empty() && self.subsets.rules.is_empty() {
            for part in &stats.parts {
                part.role(true, false);
                part.ready.store(true, Ordering::Release);
            }
            stats.covered.store(true, Ordering::Release);
            stop_requested(&mut stop).await;
            return Ok(());
        }
        if self.partitions <= 1 {
            return self
                .run_partition(Partition::whole(), &sources, stop, &stats, None)
                .await;
        }
        Arc::new(self).run_partitioned(sources, stop, stats).await
    }

    /// Runs a name split into partitions: one task per partition, each acquiring and following
    /// its partition when this member's share includes it, and this member's look at its name
    /// every fifth of the lease, which decides the share (see [`super::partitions`]). The first
    /// partition to end on an error stops the others, and its error is the worker's.
    async fn run_partitioned(
        self: Arc<Self>,
        sources: Vec<String>,
        mut stop: watch::Receiver<bool>,
        stats: Arc<WorkerStats>,
    ) -> Result<()> {
        let count = self.partitions;
        let owner = crate::lease::ServerLease::fresh_owner();
        let tokens = self.db.collection::<BsonDocument>(TOKENS_COLLECTION);
        let mut membership = Membership::new(tokens, &self.name, &owner, count, self.lease);
        let (halt, halted) = watch::channel(false);
        let mut wants = Vec::with_capacity(count);
        // dropped with this task (a `kill`), the set aborts the partitions' tasks with it
        let mut tasks = tokio::task::JoinSet::new();
        for index in 0..count {
            let (want, wanted) = watch::channel(false);
            wants.push(want);
            let (this, sources, stats, halted, owner) = (
                self.clone(),
                sources.clone(),
                stats.clone(),
                halted.clone(),
                owner.clone(),
            );
            tasks.spawn(async move {
                let partition = Partition { index, count };
                this.run_partition(partition, &sources, halted, &stats, Some((wanted, owner)))
                    .await
            });
        }
        let tick = (self.lease / 5).max(Duration::from_millis(50));
        let mut joined = false;
        let mut next_look = Duration::ZERO;
        let mut outcome = Ok(());
        loop {
            tokio::select! {
                biased;
                _ = stop_requested(&mut stop) => break,
                ended = tasks.join_next() => {
                    match ended {
                        Some(Ok(Ok(()))) => continue,
                        Some(Ok(Err(error))) => outcome = Err(error),
                        Some(Err(join)) => {
                            outcome = Err(Error::worker(
                                crate::error::WorkerStop::Panicked,
                                join.to_string(),
                            ));
                        }
                        None => {}
                    }
                    break;
                }
                () = tokio::time::sleep(next_look) => {
                    // the first look only announces this member: the next one, a tick later,
                    // sees the members that started with it, so they share without churn
                    next_look = tick;
                    let look = self.look(&mut membership, &stats, &wants, joined);
                    match tokio::time::timeout(self.lease, look).await {
                        Ok(Ok(())) => joined = true,
                        Ok(Err(error)) => {
                            stats.set_last_error(&error);
                            tracing::warn!(worker = %self.name, %error, "could not read the members and partitions of the name; retrying");
                        }
                        Err(_) => {
                            tracing::warn!(worker = %self.name, "reading the members and partitions of the name took longer than the lease; retrying");
                        }
                    }
                }
            }
        }
        let _ = halt.send(true);
        membership.leave().await;
        while let Some(ended) = tasks.join_next().await {
            match ended {
                Ok(Ok(())) => {}
                Ok(Err(error)) if outcome.is_ok() => outcome = Err(error),
                Err(join) if outcome.is_ok() => {
                    outcome = Err(Error::worker(
                        crate::error::WorkerStop::Panicked,
                        join.to_string(),
                    ));
                }
                _ => {}
            }
        }
        outcome
    }

    /// One look at the name: renews this member's heartbeat, reads the members and the
    /// partitions' leases, and tells each partition task whether this member's share
    /// includes it (`decide`: not on the first look, which only announces the member).
    async fn look(
        &self,
        membership: &mut Membership,
        stats: &WorkerStats,
        wants: &[watch::Sender<bool>],
        decide: bool,
    ) -> Result<()> {
        let now = membership.heartbeat().await?;
        let look = membership.look(now).await?;
        let me = membership.me();
        let holders: Vec<Holder> = stats
            .parts
            .iter()
            .zip(&look.owners)
            .map(|(part, owner)| match owner {
                _ if part.is_active() => Holder::Me,
                Some(owner) if *owner != me.owner => Holder::Other,
                _ => Holder::Free,
            })
            .collect();
        let decision = partitions::decide(&me, &look.members, &holders, look.unsplit_held);
        stats.covered.store(decision.covered, Ordering::Release);
        if decide {
            for (want, wanted) in wants.iter().zip(decision.want) {
                want.send_if_modified(|current| std::mem::replace(current, wanted) != wanted);
            }
        }
        metrics::held(&self.name, stats.held());
        Ok(())
    }

    /// Runs one partition (the whole name when it is not split): stands by until it holds the
    /// partition's lease, follows its stream while it does, and stands by again when the lease
    /// is lost. Partitioned (`share`: this member's wish for the partition, and the owner id
    /// its partitions share), it acquires only while the share includes the partition, and
    /// releases the lease when the share no longer does.
    #[allow(deprecated)] // the worker writes its own counters
    async fn run_partition(
        &self,
        partition: Partition,
        sources: &[String],
        mut stop: watch::Receiver<bool>,
        stats: &WorkerStats,
        share: Option<(watch::Receiver<bool>, String)>,
    ) -> Result<()> {
        let part = &stats.parts[partition.index];
        let tokens = self.db.collection::<BsonDocument>(TOKENS_COLLECTION);
        let mut lease = Lease::new(
            tokens,
            partition.id(&self.name),
            self.lease,
            FAN_OUT_CONCURRENCY,
        )
        .with_pulse(part.pulse.clone());
        let mut want = None;
        if let Some((wanted, owner)) = share {
            lease = lease.with_owner(owner, partition.label(&self.name));
            want = Some(wanted);
        }
        let label = lease.name().to_owned();
        let mut backoff = Backoff::new(BACKOFF_FIRST, BACKOFF_CAP);
        let mut recovery = Recovery::default();
        let outcome = loop {
            if let Some(want) = want.as_mut() {
                // outside this member's share: nothing to do until it includes the partition
                tokio::select! {
                    wanted = want.wait_for(|w| *w) => if wanted.is_err() { break Ok(()) },
                    _ = stop_requested(&mut stop) => break Ok(()),
                }
            }
            // stand by until this worker holds the lease
            let acquired = tokio::select! {
                acquired = self.acquire(&lease, part, want.as_mut()) => acquired,
                _ = stop_requested(&mut stop) => break Ok(()),
            };
            let followed = match acquired {
                Ok(false) => continue,
                Ok(true) => {
                    part.role(true, false);
                    WorkerStats::add(&stats.takeovers, 1);
                    metrics::took_over(&self.name);
                    metrics::held(&self.name, stats.held());
                    tracing::info!(worker = %label, owner = lease.owner(), "holds the lease: following the change streams");
                    tokio::select! {
                        followed = self.follow(partition, sources, &mut stop, stats, part, &lease, &mut backoff, &mut recovery) => followed,
                        () = lease.keep() => Ok(Stopped::LeaseLost),
                        reason = self.watchdog(part) => Ok(Stopped::Stalled(reason)),
                        () = unwanted(want.as_mut()) => Ok(Stopped::Released),
                    }
                }
                Err(error) => Err(error),
            };
            part.role(false, false);
            metrics::held(&self.name, stats.held());
            // a pass cancelled inside a fenced transaction (the lease lapsed while it was
            // paused) may have left it open on the server: end it before standing by
            lease.settle().await;
            match followed {
                Ok(Stopped::Requested) => break Ok(()),
                Ok(Stopped::Released) => {
                    tracing::info!(worker = %label, "outside this worker's share of the name's partitions: released");
                    lease.release().await;
                }
                Ok(Stopped::LeaseLost) => {
                    tracing::warn!(worker = %label, "lease lost: another worker of this name took over; standing by");
                }
                Ok(Stopped::Stalled(reason)) => {
                    WorkerStats::add(&stats.stalls, 1);
                    metrics::stalled(&self.name);
                    tracing::warn!(worker = %label, %reason, "sync worker stalled: reopening its change stream from the saved token");
                    self.record_stall(&lease, &reason).await;
                    let wait = backoff.next_wait();
                    tokio::select! {
                        _ = tokio::time::sleep(wait) => {}
                        _ = stop_requested(&mut stop) => break Ok(()),
                    }
                }
                Err(error) => {
                    stats.set_last_error(&error);
                    if ErrorClass::of(&error) == ErrorClass::Permanent {
                        tracing::error!(worker = %label, %error, "sync worker stopped: this error cannot be retried");
                        break Err(Error::worker_stopped_by(error));
                    }
                    WorkerStats::add(&stats.reopened, 1);
                    metrics::reopened(&self.name);
                    let wait = backoff.next_wait();
                    tracing::warn!(worker = %label, %error, ?wait, "change stream failed; reopening from the last saved token");
                    tokio::select! {
                        _ = tokio::time::sleep(wait) => {}
                        _ = stop_requested(&mut stop) => break Ok(()),
                    }
                }
            }
        };
        lease.release().await;
        outcome
    }

    /// Resolves when the partition, ready and holding its lease, has gone
    /// [`stall_timeout`](SyncWorker::stall_timeout) without progress (its pulse did not beat),
    /// with the reason: no fenced commit while batches were in flight, and no reply from its
    /// change stream while none was. (A job that hangs while other jobs commit is not seen.)
    async fn watchdog(&self, part: &PartState) -> String {
        let floor = self.max_await_time.map_or(Duration::ZERO, |wait| wait * 3);
        let bound = self
            .stall_timeout
            .max(floor)
            .max(Duration::from_millis(100));
        let step = (bound / 4).max(Duration::from_millis(25));
        let mut seen = part.pulse.load(Ordering::Relaxed);
        let mut since = Instant::now();
        loop {
            tokio::time::sleep(step).await;
            let now = part.pulse.load(Ordering::Relaxed);
            if now != seen || !part.is_ready() {
                seen = now;
                since = Instant::now();
                continue;
            }
            if since.elapsed() >= bound {
                return format!(
                    "no reply from its change stream (nothing in flight) and no write committed (a batch in flight) for {:?} (stall_timeout {bound:?})",
                    since.elapsed()
                );
            }
        }
    }

    /// Records a stall on the partition's token document (`stalled_at`, `stall`, `stalls`),
    /// for `status`; best effort.
    async fn record_stall(&self, lease: &Lease, reason: &str) {
        let tokens = self.db.collection::<BsonDocument>(TOKENS_COLLECTION);
        let record = tokens.update_one(
            doc! { "_id": lease.id().clone(), "owner": lease.owner() },
            doc! {
                "$set": { "stalled_at": mongodb::bson::DateTime::now(), "stall": reason },
                "$inc": { "stalls": 1_i64 },
            },
        );
        if let Ok(Err(error)) = tokio::time::timeout(Duration::from_secs(5), record).await {
            tracing::warn!(worker = %lease.name(), %error, "could not record the stall");
        }
    }

    /// Waits until this worker holds the lease, polling while another live worker holds it.
    /// `false`: the partition left this member's share meanwhile (`want`).
    async fn acquire(
        &self,
        lease: &Lease,
        part: &PartState,
        mut want: Option<&mut watch::Receiver<bool>>,
    ) -> Result<bool> {
        loop {
            if want.as_ref().is_some_and(|want| !*want.borrow()) {
                return Ok(false);
            }
            if lease.try_acquire().await? {
                return Ok(true);
            }
            part.role(false, true);
            let wait = tokio::time::sleep(lease.poll_interval());
            match want.as_mut() {
                Some(want) => {
                    tokio::select! {
                        () = wait => {}
                        _ = want.changed() => {}
                    }
                }
                None => wait.await,
            }
        }
    }

    /// The token saved for the lease's partition; for a partition that has none yet, the
    /// oldest token its name saved under another partition count (or without partitions), so
    /// a name that is split, or split again, goes on from where it was.
    async fn load_token(&self, lease: &Lease, partition: Partition) -> Result<Option<ResumeToken>> {
        let tokens = self.db.collection::<BsonDocument>(TOKENS_COLLECTION);
        let read = |d: BsonDocument| {
            d.get("token")
                .cloned()
                .and_then(|t| crate::bson_compat::from_bson::<ResumeToken>(t).ok())
        };
        let stored = tokens.find_one(doc! { "_id": lease.id().clone() }).await?;
        if let Some(token) = stored.and_then(read) {
            return Ok(Some(token));
        }
        if partition.count <= 1 {
            return Ok(None);
        }
        let mut others = tokens
            .find(doc! {
                "$or": [
                    { "_id": &self.name },
                    { "_id.worker": &self.name, "_id.partition": { "$exists": true }, "_id.of": { "$ne": partition.count as i64 } },
                ],
                "token": { "$ne": Bson::Null },
            })
            .projection(doc! { "token": 1, "token_time": 1 })
            .await?;
        let mut oldest: Option<(u64, ResumeToken)> = None;
        while let Some(other) = others.try_next().await? {
            let time = other.get_timestamp("token_time").map_or(0, pack);
            if let Some(token) = read(other) {
                if oldest.as_ref().is_none_or(|(at, _)| time < *at) {
                    oldest = Some((time, token));
                }
            }
        }
        if oldest.is_some() {
            tracing::info!(worker = %lease.name(), "no token of this partition yet: starting from the oldest token its name saved under another partition count");
        }
        Ok(oldest.map(|(_, token)| token))
    }

    /// Saves the token if this worker still owns the lease; `false` if it does not.
    async fn save_token(
        &self,
        lease: &Lease,
        token: Option<ResumeToken>,
        cluster_time: Option<mongodb::bson::Timestamp>,
        lag_ms: Option<u64>,
    ) -> Result<bool> {
        if !lease.holds() {
            return Ok(false);
        }
        let mut set = doc! { "updated_at": mongodb::bson::DateTime::now() };
        if let Some(lag) = lag_ms {
            set.insert("lag_ms", lag as i64); // what `status` shows as the worker's lag
        }
        match &token {
            Some(token) => {
                let token =
                    crate::bson_compat::to_bson(token).map_err(mongodb::error::Error::from)?;
                set.insert("token", token);
            }
            None => {
                set.insert("token", Bson::Null);
            }
        }
        // the time of the last event applied, or else the time the token itself carries (a
        // quiet stream's post-batch resume token)
        if let Some(time) = cluster_time.or_else(|| token.as_ref().and_then(token_time)) {
            set.insert("token_time", time);
        }
        let saved = self
            .db
            .collection::<BsonDocument>(TOKENS_COLLECTION)
            .update_one(lease.owned(), doc! { "$set": set })
            .await?;
        if saved.matched_count == 1 {
            metrics::token_saved(&self.name, cluster_time);
        }
        Ok(saved.matched_count == 1)
    }

    /// Opens the change stream of `pipeline`, after `token` when given; `one_at_a_time`: each
    /// reply carries one event (after an event too large to send, so that the stream's position
    /// stops right before it).
    async fn open(
        &self,
        pipeline: &[BsonDocument],
        token: Option<ResumeToken>,
        one_at_a_time: bool,
    ) -> Result<ChangeStream<RawDocumentBuf>> {
        let mut watch = self
            .db
            .watch()
            .pipeline(pipeline.to_vec())
            .full_document(FullDocumentType::UpdateLookup);
        if !self.subsets.rules.is_empty() {
            // a deleted child's parent, from the pre-image `apply` enabled
            watch = watch.full_document_before_change(FullDocumentBeforeChangeType::WhenAvailable);
        }
        if let Some(wait) = self.max_await_time {
            watch = watch.max_await_time(wait);
        }
        if one_at_a_time {
            watch = watch.batch_size(1);
        }
        let stream = match token {
            Some(token) => watch.start_after(token).await?,
            None => watch.await?,
        };
        // read raw: an event that does not decode is recorded and skipped, not an error
        Ok(stream.with_type::<RawDocumentBuf>())
    }

    /// The stages of the worker's stream: which changes (`$match`), projected down to what the
    /// worker reads, split when the server can split (see [`super::events`]).
    async fn pipeline(
        &self,
        sources: &[String],
        partition: Partition,
    ) -> Result<Vec<BsonDocument>> {
        let mut matched = doc! { "$or": [
            {
                "operationType": { "$in": ["update", "replace", "delete"] },
                "ns.coll": { "$in": sources },
            },
            {
                "operationType": { "$in": ["insert", "update", "replace", "delete"] },
                "ns.coll": { "$in": self.subsets.children() },
            },
        ] };
        if let Some(own) = partition.filter() {
            // the partition's own events only, chosen by the server (see `super::partitions`)
            matched = doc! { "$and": [matched, own] };
        }
        let mut post: Vec<String> = self
            .edges()
            .iter()
            .flat_map(|edge| edge.copy.fields.iter().cloned())
            .collect();
        let mut pre: Vec<String> = Vec::new();
        for rule in &self.subsets.rules {
            pre.push(rule.parent_field.to_string());
            pre.extend(rule.filter.iter().flat_map(|f| f.keys().cloned()));
        }
        post.extend(pre.iter().cloned());
        let pre = (!self.subsets.rules.is_empty()).then_some(pre);
        let hello = self.db.run_command(doc! { "hello": 1 }).await?;
        let wire = match hello.get("maxWireVersion") {
            Some(Bson::Int32(n)) => i64::from(*n),
            Some(Bson::Int64(n)) => *n,
            _ => 0,
        };
        let split = wire >= i64::from(events::SPLIT_WIRE_VERSION);
        Ok(events::pipeline(matched, &post, pre.as_deref(), split))
    }

    /// Reads one raw event into the batch (or the list of unreadable ones).
    fn take(
        &self,
        raw: &RawDocumentBuf,
        fragments: &mut Fragments,
        batch: &mut Vec<ChangeStreamEvent<BsonDocument>>,
        unreadable: &mut Vec<Unreadable>,
    ) {
        let injected = self
            .unreadable_key
            .as_ref()
            .is_some_and(|key| events::raw_key(raw).as_ref() == Some(key));
        match fragments.read(raw, injected) {
            Read::Event(event) => batch.push(*event),
            Read::Partial => {}
            Read::Unreadable(event) => unreadable.push(event),
        }
    }

    /// Records an event that could not be read, once per event (a replay after a crash meets
    /// the same record), so reconcile's repair is asked for; the worker goes on after it. The
    /// record is a write of the worker like its copies: under the fence (on lane 0, free while
    /// no batch is applied), so a worker that lost its lease records nothing. `false`: fenced
    /// off (the event is the new holder's to meet).
    #[allow(deprecated)] // the worker writes its own counters
    async fn skip(
        &self,
        event: Unreadable,
        code: Option<i32>,
        stats: &WorkerStats,
        log: &FailureLog,
        fence: &Fence,
    ) -> Result<bool> {
        let collection = event
            .collection
            .as_deref()
            .unwrap_or("(unknown collection)");
        let document = event.document.clone().unwrap_or(Bson::Null);
        let failure =
            super::failures::Failure::unreadable(collection, document, code, &event.reason);
        if !log.record_fenced(&self.db, failure, fence, 0).await? {
            return Ok(false);
        }
        tracing::error!(worker = %self.name, collection = ?event.collection, document = ?event.document, reason = %event.reason, "a change event could not be read: recorded and skipped; reconcile repairs its copies");
        WorkerStats::add(&stats.unreadable, 1);
        Ok(true)
    }

    /// After `BSONObjectTooLarge`, with the stream stopped right before that event (read one
    /// event at a time): reads the event's token, namespace and document key from a stream of
    /// the same changes that asks for no document and keeps nothing else (so it is small),
    /// records it (under the fence: [`Probed::FencedOff`] when the lease was taken over), and
    /// returns its token, after which the worker goes on.
    async fn probe_too_large(
        &self,
        pipeline: &[BsonDocument],
        before: Option<ResumeToken>,
        stats: &WorkerStats,
        log: &FailureLog,
        fence: &Fence,
    ) -> Result<Probed> {
        let Some(before) = before else {
            // no position to probe from (the very first event of a fresh stream): the worker
            // reopens and meets it again; documented as a limit
            return Ok(Probed::Unknown);
        };
        let keep = doc! { "$project": {
            "_id": 1, "operationType": 1, "ns": 1, "documentKey": 1, "clusterTime": 1,
        } };
        let mut probe = self
            .db
            .watch()
            .pipeline(vec![pipeline[0].clone(), keep])
            .batch_size(1)
            .start_after(before)
            .await?
            .with_type::<RawDocumentBuf>();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let next = tokio::time::timeout_at(deadline, probe.next_if_any())
                .await
                .map_err(|_| Error::Timeout {
                    operation: "reading the key of a change event too large to send".to_owned(),
                    after: Duration::from_secs(30),
                    last: None,
                })??;
            let Some(raw) = next else { continue };
            let token = probe.resume_token();
            let mut unreadable = match Fragments::default().read(&raw, false) {
                Read::Event(event) => Unreadable {
                    collection: event.ns.and_then(|ns| ns.coll),
                    document: event.document_key.and_then(|k| k.get("_id").cloned()),
                    reason: String::new(),
                },
                Read::Unreadable(event) => event,
                Read::Partial => continue,
            };
            unreadable.reason =
                "larger than the server can send (BSONObjectTooLarge, 10334), even projected"
                    .to_owned();
            if !self
                .skip(unreadable, Some(TOO_LARGE), stats, log, fence)
                .await?
            {
                return Ok(Probed::FencedOff);
            }
            return Ok(token.map_or(Probed::Unknown, Probed::After));
        }
    }

    /// Opens the stream (from the saved token, or fresh with a reconcile) and applies events
    /// until stopped, the lease is lost, or an error.
    #[allow(deprecated)] // the worker writes its own counters
    #[allow(clippy::too_many_arguments)]
    async fn follow(
        &self,
        partition: Partition,
        sources: &[String],
        stop: &mut watch::Receiver<bool>,
        stats: &WorkerStats,
        part: &PartState,
        lease: &Lease,
        backoff: &mut Backoff,
        recovery: &mut Recovery,
    ) -> Result<Stopped> {
        let log = FailureLog::new(&self.name);
        let Some(fence) = lease.fence() else {
            return Ok(Stopped::LeaseLost);
        };
        let pipeline = self.pipeline(sources, partition).await?;
        let saved = self.load_token(lease, partition).await?;
        let opened = match saved {
            Some(token) => match self
                .open_past_too_large(&pipeline, token, recovery, stats, &log, &fence)
                .await
            {
                Err(Error::Driver(e))
                    if server_code(&e).is_some_and(|c| UNRESUMABLE.contains(&c)) =>
                {
                    tracing::warn!(worker = %self.name, error = %e, "saved resume token unusable; full reconcile");
                    None
                }
                Ok(None) => {
                    lease.lost();
                    return Ok(Stopped::LeaseLost);
                }
                other => other?,
            },
            None => None,
        };
        let mut stream = match opened {
            Some(stream) => stream,
            None => {
                // fresh start: open first, then reconcile, so nothing between them is missed
                let stream = self.open(&pipeline, None, false).await?;
                let edges = self.edges();
                let writer = Writer::Fenced {
                    fence: &fence,
                    lane: 0,
                };
                let report = match reconcile(&self.db, &edges, false, &log, writer).await {
                    Err(error) if super::fence::is_fenced_off(&error) || !lease.holds() => {
                        lease.lost();
                        return Ok(Stopped::LeaseLost);
                    }
                    other => other?,
                };
                let subsets = match crate::relations::subset::reconcile::reconcile(
                    &self.db,
                    &self.subsets.rules,
                    false,
                    Some((&fence, 0)),
                )
                .await
                {
                    Err(error) if super::fence::is_fenced_off(&error) || !lease.holds() => {
                        lease.lost();
                        return Ok(Stopped::LeaseLost);
                    }
                    other => other?,
                };
                WorkerStats::add(&stats.reconciles, 1);
                WorkerStats::add(&stats.copies_rewritten, report.repaired());
                WorkerStats::add(
                    &stats.previews_refreshed,
                    subsets.iter().map(|s| s.repaired).sum(),
                );
                if !self
                    .save_token(lease, stream.resume_token(), None, None)
                    .await?
                {
                    return Ok(Stopped::LeaseLost);
                }
                // a fresh stream starts now, and everything before it was reconciled
                part.applied_through(stream.resume_token().as_ref().and_then(token_time));
                stream
            }
        };
        // A resumed stream's position is known once the server has answered a read: the
        // post-batch token of a resuming `aggregate` may carry the time of the open while it
        // sits at the saved position (SecantusDB's does), and `caught_up` must not take it
        // for the position (it returned while the copies were stale, in the new-user try).
        part.ready.store(true, Ordering::Release);
        let mut replies_since_open: u64 = 0;
        backoff.reset();
        let mut quiet_until = Instant::now() + self.token_save_interval;
        let mut fragments = Fragments::default();
        // the batches read and not yet finished, oldest first (see `super::lanes`)
        let lanes = Lanes::new(FAN_OUT_CONCURRENCY);
        let mut in_flight = InFlight::default();
        loop {
            // the batches that finished, in order: their tokens saved
            match self
                .save_finished(&mut in_flight, lease, stats, part)
                .await?
            {
                None => return Ok(Stopped::LeaseLost),
                Some(true) if in_flight.is_empty() => {
                    quiet_until = Instant::now() + self.token_save_interval;
                    backoff.reset();
                }
                Some(_) => {}
            }
            // one `getMore` at a time (the server holds it up to `maxAwaitTime` when nothing
            // waits), so the stream's position can be read between two of them; meanwhile
            // the batches in flight go on, and each one that finishes in order saves its token.
            // The stream is read ahead of an unfinished batch only once it has run for
            // READ_AHEAD_AFTER and while a lane is free: a large fan-out holding one lane
            // leaves the others to the next changes, while a backlog read faster than the
            // lanes apply it would only queue (and load the server: on a busy one the lease's
            // renewals then came too late, and the token never moved)
            let read_ahead = in_flight.may_read_ahead(&lanes);
            let long_running = in_flight.long_running();
            let first = tokio::select! {
                biased;
                _ = stop_requested(stop) => {
                    return self.drain_and_stop(in_flight, lease, stats, part).await;
                }
                finished = in_flight.running.next(), if !in_flight.running.is_empty() => {
                    in_flight.finished(finished);
                    continue;
                }
                // a lane given back, or the oldest batch running long: may read ahead now
                () = lanes.freed(), if !read_ahead => continue,
                () = long_running, if !read_ahead => continue,
                first = stream.next_if_any(), if read_ahead => first,
            };
            if in_flight.is_empty() {
                // with batches in flight, only their commits are progress (the watchdog)
                part.beat();
            }
            replies_since_open += 1;
            let first = match first {
                Err(e) if server_code(&e) == Some(TOO_LARGE) => {
                    // every batch before the event finishes (and saves its token) first, so
                    // that the position saved below is not ahead of unfinished work
                    if !self.drain(&mut in_flight, lease, stats, part).await? {
                        return Ok(Stopped::LeaseLost);
                    }
                    let Some(position) = stream.resume_token() else {
                        // no position to go on from: reopened from the saved token
                        return Err(e.into());
                    };
                    if !recovery.one_at_a_time {
                        tracing::warn!(worker = %self.name, "a change event is too large to send even projected: reading one event at a time up to it");
                    }
                    // one event at a time up to it, then probed from right before it
                    let probe_now = recovery.one_at_a_time;
                    recovery.one_at_a_time = true;
                    let from = if probe_now {
                        match self
                            .probe_too_large(&pipeline, Some(position.clone()), stats, &log, &fence)
                            .await?
                        {
                            Probed::After(token) => {
                                recovery.one_at_a_time = false;
                                token
                            }
                            Probed::Unknown => position,
                            Probed::FencedOff => {
                                lease.lost();
                                return Ok(Stopped::LeaseLost);
                            }
                        }
                    } else {
                        position
                    };
                    if !self
                        .save_token(lease, Some(from.clone()), None, None)
                        .await?
                    {
                        return Ok(Stopped::LeaseLost);
                    }
                    fragments = Fragments::default();
                    replies_since_open = 0;
                    stream = match self
                        .open_past_too_large(&pipeline, from, recovery, stats, &log, &fence)
                        .await?
                    {
                        Some(stream) => stream,
                        None => {
                            lease.lost();
                            return Ok(Stopped::LeaseLost);
                        }
                    };
                    continue;
                }
                other => other?,
            };
            let Some(first) = first else {
                if !stream.is_alive() {
                    return Err(Error::Driver(mongodb::error::Error::custom(
                        "change stream ended",
                    )));
                }
                if !fragments.pending() && in_flight.is_empty() && replies_since_open > 1 {
                    // every change before the stream's position was applied or concerned no copy
                    // (not the first reply: it may be the opening `aggregate`'s, see above)
                    part.applied_through(stream.resume_token().as_ref().and_then(token_time));
                }
                if Instant::now() >= quiet_until && !fragments.pending() && in_flight.is_empty() {
                    // nothing to apply for a while: save where the stream is (every change
                    // before its post-batch resume token was applied or concerned no copy)
                    if !self
                        .save_token(lease, stream.resume_token(), None, None)
                        .await?
                    {
                        return Ok(Stopped::LeaseLost);
                    }
                    quiet_until = Instant::now() + self.token_save_interval;
                }
                continue;
            };
            if !lease.holds() {
                return Ok(Stopped::LeaseLost);
            }
            // the batch: what the driver has already received, and a reply arriving within
            // GATHER_DEADLINE (never a wait for more changes: a trickle is applied as it
            // comes; a worker catching up reads on, see CATCHING_UP), plus the rest of a split
            // event; then started on the lanes, its token saved once it and every batch before
            // it finished: a crash re-applies what was unfinished (the rewrites are idempotent)
            let mut batch = Vec::new();
            let mut unreadable = Vec::new();
            self.take(&first, &mut fragments, &mut batch, &mut unreadable);
            let gathering_until = Instant::now() + GATHER_DEADLINE;
            while (batch.len() < self.max_batch && !recovery.one_at_a_time) || fragments.pending() {
                let whole_event = fragments.pending();
                // changes already late (a worker catching up): the next reply is waiting on
                // the server, and applying them with it coalesces more rewrites
                let catching_up = batch.last().and_then(|e| e.wall_time).is_some_and(|wall| {
                    mongodb::bson::DateTime::now().timestamp_millis() - wall.timestamp_millis()
                        > CATCHING_UP.as_millis() as i64
                });
                let read = async {
                    if whole_event || catching_up {
                        Some(stream.next_if_any().await)
                    } else {
                        tokio::time::timeout_at(gathering_until, stream.next_if_any())
                            .await
                            .ok()
                    }
                };
                let next = tokio::select! {
                    // the batches in flight go on while the next one is gathered
                    next = in_flight.drive(read) => next,
                    // the batch being gathered is left to the next worker, from the saved token
                    _ = stop_requested(stop) => {
                        return self.drain_and_stop(in_flight, lease, stats, part).await;
                    }
                };
                if next.is_some() && in_flight.is_empty() {
                    part.beat();
                }
                match next {
                    None => break,
                    Some(Err(e)) if server_code(&e) == Some(TOO_LARGE) => break,
                    Some(next) => match next? {
                        Some(raw) => self.take(&raw, &mut fragments, &mut batch, &mut unreadable),
                        None if whole_event => continue,
                        None => break,
                    },
                }
            }
            for event in unreadable {
                let skipped = in_flight.drive(self.skip(event, None, stats, &log, &fence));
                if !skipped.await? {
                    tracing::warn!(worker = %self.name, "the record of an unreadable event was fenced off: the lease was taken over");
                    lease.lost();
                    return Ok(Stopped::LeaseLost);
                }
            }
            let planned = self.plan_batch(&batch, stats, &lanes);
            let finished = Finished {
                fenced_off: false,
                // a split event half read when an error ended the gathering: its token is
                // saved once the event is whole
                token: (!fragments.pending())
                    .then(|| stream.resume_token())
                    .flatten(),
                cluster_time: batch.iter().rev().find_map(|e| e.cluster_time),
            };
            let (log, fence, lanes) = (&log, &fence, &lanes);
            in_flight.start(Box::pin(async move {
                let applied = self.run_batch(planned, stats, log, fence, lanes).await?;
                Ok(Finished {
                    fenced_off: !applied,
                    ..finished
                })
            }));
        }
    }

    /// Opens the stream after `from`, where the change right after it may be too large to send
    /// even projected: on mongod the reopening `aggregate` itself then fails with 10334, not
    /// only a `getMore`. It is opened again one event at a time (the failing event is then
    /// the first after `from`), and failing again the event is probed from `from`, recorded
    /// and skipped, and the stream opened after it. The one-at-a-time state lives in
    /// `recovery`, across reopenings of the stream. `None`: the record was fenced off.
    async fn open_past_too_large(
        &self,
        pipeline: &[BsonDocument],
        mut from: ResumeToken,
        recovery: &mut Recovery,
        stats: &WorkerStats,
        log: &FailureLog,
        fence: &Fence,
    ) -> Result<Option<ChangeStream<RawDocumentBuf>>> {
        loop {
            match self
                .open(pipeline, Some(from.clone()), recovery.one_at_a_time)
                .await
            {
                Err(Error::Driver(e)) if server_code(&e) == Some(TOO_LARGE) => {
                    if !recovery.one_at_a_time {
                        tracing::warn!(worker = %self.name, "reopening the change stream failed: an event is too large to send even projected; reading one event at a time");
                        recovery.one_at_a_time = true;
                        continue;
                    }
                    match self
                        .probe_too_large(pipeline, Some(from.clone()), stats, log, fence)
                        .await?
                    {
                        Probed::After(token) => {
                            recovery.one_at_a_time = false;
                            from = token;
                        }
                        Probed::Unknown => return Err(e.into()),
                        Probed::FencedOff => return Ok(None),
                    }
                }
                other => return other.map(Some),
            }
        }
    }

    /// On a requested stop: the batches in flight finish and save their tokens, as a batch
    /// being applied always did before the worker stopped.
    async fn drain_and_stop(
        &self,
        mut in_flight: InFlight<'_>,
        lease: &Lease,
        stats: &WorkerStats,
        part: &PartState,
    ) -> Result<Stopped> {
        if !self.drain(&mut in_flight, lease, stats, part).await? {
            return Ok(Stopped::LeaseLost);
        }
        Ok(Stopped::Requested)
    }

    /// Waits for every batch in flight to finish, saving their tokens in order. `false`: the
    /// lease was lost.
    async fn drain(
        &self,
        in_flight: &mut InFlight<'_>,
        lease: &Lease,
        stats: &WorkerStats,
        part: &PartState,
    ) -> Result<bool> {
        loop {
            if self
                .save_finished(in_flight, lease, stats, part)
                .await?
                .is_none()
            {
                return Ok(false);
            }
            match in_flight.running.next().await {
                Some(finished) => in_flight.finished(Some(finished)),
                None => return Ok(true),
            }
        }
    }

    /// Saves the tokens of the batches that finished, in order, while the others go on.
    /// `None`: the lease was lost; `Some(any)`: whether any batch finished.
    async fn save_finished(
        &self,
        in_flight: &mut InFlight<'_>,
        lease: &Lease,
        stats: &WorkerStats,
        part: &PartState,
    ) -> Result<Option<bool>> {
        let mut any = false;
        while let Some(finished) = in_flight.done.pop_front() {
            any = true;
            let last = in_flight.is_empty();
            let saved = in_flight.drive(self.finished(finished?, lease, stats, part, last));
            if !saved.await? {
                return Ok(None);
            }
        }
        Ok(Some(any))
    }

    /// A batch finished: its token saved when every batch before it has finished (they finish
    /// in order: `in_flight` is ordered). `false`: the lease was lost (a write fenced off, or
    /// the token's save).
    #[allow(deprecated)] // the worker reads its own counters
    async fn finished(
        &self,
        finished: Finished,
        lease: &Lease,
        stats: &WorkerStats,
        part: &PartState,
        last: bool,
    ) -> Result<bool> {
        if finished.fenced_off {
            tracing::warn!(worker = %self.name, "a fenced write was refused: the lease was taken over");
            lease.lost();
            return Ok(false);
        }
        let Some(token) = finished.token else {
            return Ok(true);
        };
        // the lag saved is the last applied event's; a batch behind others saves its own
        let lag = last.then(|| WorkerStats::get(&stats.last_lag_ms));
        if !self
            .save_token(lease, Some(token.clone()), finished.cluster_time, lag)
            .await?
        {
            return Ok(false);
        }
        part.applied_through(token_time(&token));
        Ok(true)
    }

    /// Plans a batch of changes: the rewrites they need, coalesced per copy and source
    /// document (the full document looked up for a later change makes an earlier one's
    /// redundant, and a deletion supersedes both), and the subset parents to refresh, each
    /// with its turn on the lanes, taken now, in the order the stream delivered the changes.
    #[allow(deprecated)] // the worker writes its own counters
    fn plan_batch<'e>(
        &'e self,
        batch: &[ChangeStreamEvent<BsonDocument>],
        stats: &WorkerStats,
        lanes: &Lanes,
    ) -> Planned<'e> {
        WorkerStats::add(&stats.events, batch.len() as u64);
        metrics::events_received(&self.name, batch.len());
        let mut jobs: Vec<Job<'_>> = Vec::new();
        let mut slots: HashMap<(usize, String), usize> = HashMap::new();
        let mut applied = Vec::new();
        let mut parents: Vec<(usize, Bson)> = Vec::new();
        let mut parent_slots: HashMap<(usize, String), ()> = HashMap::new();
        for event in batch {
            let children = self.subsets.plan(event);
            if children.unknown_parent {
                WorkerStats::add(&stats.unknown_parents, 1);
            }
            if !children.parents.is_empty() {
                applied.push(event.wall_time);
            }
            for (rule, parent) in children.parents {
                match parent_slots.entry((rule, id_key(&parent))) {
                    Entry::Occupied(_) => WorkerStats::add(&stats.coalesced, 1),
                    Entry::Vacant(slot) => {
                        slot.insert(());
                        parents.push((rule, parent));
                    }
                }
            }
            let planned = self.plan(event);
            if planned.is_empty() {
                continue;
            }
            applied.push(event.wall_time);
            for job in planned {
                match slots.entry((job.edge_index, id_key(&job.source))) {
                    Entry::Occupied(slot) => {
                        WorkerStats::add(&stats.coalesced, 1);
                        jobs[*slot.get()] = job;
                    }
                    Entry::Vacant(slot) => {
                        slot.insert(jobs.len());
                        jobs.push(job);
                    }
                }
            }
        }
        let jobs = jobs
            .into_iter()
            .map(|job| {
                let key = format!("copy {} {}", job.edge_index, id_key(&job.source));
                (lanes.turn(key), job)
            })
            .collect();
        let parents = parents
            .into_iter()
            .map(|(rule, parent)| {
                let key = format!("parent {rule} {}", id_key(&parent));
                (lanes.turn(key), rule, parent)
            })
            .collect();
        Planned {
            jobs,
            parents,
            applied,
        }
    }

    /// Runs a planned batch: its jobs on the lanes, each in its turn and fenced on its lane
    /// (see [`super::fence`]); measures the lag of the applied changes. `false`: a write was
    /// fenced off (the lease was taken over); the batch is the new holder's to apply.
    #[tracing::instrument(name = "sync_batch", level = "debug", skip_all, fields(worker = %self.name, jobs = planned.jobs.len()))]
    #[allow(deprecated)] // the worker writes its own counters
    async fn run_batch(
        &self,
        planned: Planned<'_>,
        stats: &WorkerStats,
        log: &FailureLog,
        fence: &Fence,
        lanes: &Lanes,
    ) -> Result<bool> {
        if self.stall_once.swap(false, Ordering::AcqRel) {
            // test support (`__stall_next_batch`): a command that never returns
            std::future::pending::<()>().await;
        }
        let Planned {
            jobs,
            parents,
            applied,
        } = planned;
        if !jobs.is_empty() || !parents.is_empty() {
            log.refresh(&self.db).await?;
        }
        let db = &self.db;
        let worker = self.name.as_str();
        // boxed, so the futures' type names no closure (which keeps the task `Send`)
        let mut runs: Vec<BoxFuture<'_, Result<(bool, FanOutOutcome)>>> = jobs
            .into_iter()
            .map(|(turn, job)| {
                Box::pin(lanes.run(turn, move |lane| async move {
                    let writer = Writer::Fenced { fence, lane };
                    let copy = format!("{}.{}", job.edge.holder, job.edge.copy.path);
                    let started = std::time::Instant::now();
                    let outcome = job
                        .fan_out
                        .run_resilient(db, job.edge, &job.source, log, writer)
                        .instrument(tracing::debug_span!("fan_out", worker, copy = %copy, source = %job.source))
                        .await;
                    if let Ok(done) = &outcome {
                        metrics::fan_out(worker, &copy, job.deletion, started.elapsed(), done.rewritten, done.failed);
                    }
                    Ok((job.deletion, outcome?))
                })) as BoxFuture<'_, _>
            })
            .collect();
        let subsets = &self.subsets;
        runs.extend(parents.into_iter().map(|(turn, rule, parent)| {
            Box::pin(lanes.run(turn, move |lane| {
                refresh_parent(subsets, db, stats, log, fence, lane, rule, parent)
            })) as BoxFuture<'_, _>
        }));
        // every job concurrently: the lanes' permits bound how many run at once
        let mut outcomes: futures_util::stream::FuturesUnordered<_> = runs.into_iter().collect();
        let mut fenced_off = false;
        while let Some(done) = outcomes.next().await {
            let (deletion, outcome) = done?;
            fenced_off |= outcome.fenced_off;
            let rewritten = if deletion {
                &stats.copies_unset
            } else {
                &stats.copies_rewritten
            };
            WorkerStats::add(rewritten, outcome.rewritten);
            WorkerStats::add(&stats.failed, outcome.failed);
        }
        if fenced_off {
            return Ok(false);
        }
        WorkerStats::add(&stats.applied, applied.len() as u64);
        metrics::events_applied(&self.name, applied.len());
        let now = mongodb::bson::DateTime::now().timestamp_millis();
        for wall in applied.into_iter().flatten() {
            let lag = (now - wall.timestamp_millis()).max(0) as u64;
            stats.last_lag_ms.store(lag, Ordering::Relaxed);
            stats.max_lag_ms.fetch_max(lag, Ordering::Relaxed);
            metrics::lag(&self.name, lag);
        }
        Ok(true)
    }

    /// The rewrites one change needs; none when it touched no copied field (or its source is
    /// gone since and its deletion follows).
    fn plan<'e>(&'e self, event: &ChangeStreamEvent<BsonDocument>) -> Vec<Job<'e>> {
        let Some(collection) = event.ns.as_ref().and_then(|ns| ns.coll.as_ref()) else {
            return Vec::new();
        };
        let edges = self.graph.edges.iter().enumerate().filter(|(_, e)| {
            e.copy.source == *collection && e.copy.strategy == SyncStrategy::Async
        });
        if event.operation_type == OperationType::Delete {
            let Some(id) = event.document_key.as_ref().and_then(|k| k.get("_id")) else {
                return Vec::new();
            };
            return edges
                .filter_map(|(edge_index, edge)| {
                    Some(Job {
                        edge_index,
                        edge,
                        source: id.clone(),
                        fan_out: FanOut::deleted(edge, id)?,
                        deletion: true,
                    })
                })
                .collect();
        }
        let Some(source) = &event.full_document else {
            return Vec::new();
        };
        let Some(id) = source.get("_id") else {
            return Vec::new();
        };
        edges
            .filter(
                |(_, edge)| match (&event.operation_type, &event.update_description) {
                    (OperationType::Update, Some(description)) => {
                        touches(changed_paths(description), &edge.copy.fields)
                    }
                    _ => true, // replace: anything may have changed
                },
            )
            .filter_map(|(edge_index, edge)| {
                Some(Job {
                    edge_index,
                    edge,
                    source: id.clone(),
                    fan_out: FanOut::new(edge, source)?,
                    deletion: false,
                })
            })
            .collect()
    }
}

/// The cluster time a resume token carries: mongod's tokens are a KeyString whose first value
/// is the event's (or the post-batch position's) timestamp (type byte 130, then seconds and
/// increment, big-endian); SecantusDB's are a BSON document with the timestamp under `t`.
/// `None` for a token of another form.
fn token_time(token: &ResumeToken) -> Option<mongodb::bson::Timestamp> {
    let token = crate::bson_compat::to_document(token).ok()?;
    let data = token.get_str("_data").ok()?;
    let bytes: Vec<u8> = (0..data.len() / 2)
        .map(|i| u8::from_str_radix(data.get(2 * i..2 * i + 2)?, 16).ok())
        .collect::<Option<_>>()?;
    if bytes.first() == Some(&130) && bytes.len() >= 9 {
        let word = |at: usize| {
            u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
        };
        return Some(mongodb::bson::Timestamp {
            time: word(1),
            increment: word(5),
        });
    }
    let document = mongodb::bson::Document::from_reader(bytes.as_slice()).ok()?;
    document.get_timestamp("t").ok()
}

/// A cluster time as one ordered number.
fn pack(time: mongodb::bson::Timestamp) -> u64 {
    (u64::from(time.time) << 32) | u64::from(time.increment)
}

/// Refreshes one parent of an async subset, fenced on `lane` like the copies' fan-outs (a
/// worker that lost its lease writes nothing), with the removal of the parent's failure record
/// in the same transaction. A parent that cannot take its previews (its validator rejects
/// them) is recorded in [`crate::FAILURES_COLLECTION`] (target `parents.path`, holder and source
/// the parent) and the others go on.
#[allow(clippy::too_many_arguments)]
#[allow(deprecated)] // the worker writes its own counters
async fn refresh_parent(
    subsets: &SubsetFollow,
    db: &Database,
    stats: &WorkerStats,
    log: &FailureLog,
    fence: &Fence,
    lane: usize,
    rule: usize,
    parent: Bson,
) -> Result<(bool, FanOutOutcome)> {
    let mut outcome = FanOutOutcome::default();
    let target = subsets.rules[rule].label();
    let done = subsets
        .refresh_fenced(db, rule, &parent, log, fence, lane)
        .await;
    match done {
        Ok(true) => WorkerStats::add(&stats.previews_refreshed, 1),
        Ok(false) => outcome.fenced_off = true,
        Err(error) if ErrorClass::of(&error) != ErrorClass::Transient => {
            tracing::warn!(subset = %target, parent = %parent, %error, "the sync worker could not refresh a subset; recorded");
            // the record is a write of the worker like the previews: under the fence
            let failure =
                super::failures::Failure::of_target(target, parent.clone(), parent, &error);
            if log.record_fenced(db, failure, fence, lane).await? {
                outcome.failed += 1;
            } else {
                outcome.fenced_off = true;
            }
        }
        Err(error) => return Err(error),
    }
    Ok((false, outcome))
}

/// One rewrite a batch needs: a copy (`edge`) of one source document.
struct Job<'e> {
    edge_index: usize,
    edge: &'e SyncEdge,
    source: Bson,
    fan_out: FanOut,
    deletion: bool,
}

/// The paths an update changed: set, removed, or arrays truncated (`$pop`, `$pull`, a `$push`
/// with `$slice`).
fn changed_paths(description: &UpdateDescription) -> impl Iterator<Item = &str> {
    description
        .updated_fields
        .keys()
        .map(String::as_str)
        .chain(description.removed_fields.iter().map(String::as_str))
        .chain(
            description
                .truncated_arrays
                .iter()
                .flatten()
                .map(|t| t.field.as_str()),
        )
}

/// Resolves when the partition leaves this member's share (`want` turns false); never for a
/// name that is not split (`None`), nor once the member stopped deciding (it is stopping).
async fn unwanted(want: Option<&mut watch::Receiver<bool>>) {
    match want {
        Some(want) => {
            if want.wait_for(|w| !*w).await.is_err() {
                std::future::pending::<()>().await;
            }
        }
        None => std::future::pending::<()>().await,
    }
}

/// Resolves when a stop is requested; never when the handle was dropped (a dropped handle
/// detaches the worker).
async fn stop_requested(stop: &mut watch::Receiver<bool>) {
    if stop.wait_for(|s| *s).await.is_err() {
        std::future::pending::<()>().await;
    }
}

impl SyncWorkerHandle {
    /// The worker's counters and state.
    pub fn stats(&self) -> &WorkerStats {
        &self.stats
    }

    /// Waits until the worker is either following (it holds the lease, its stream is open and
    /// any initial reconcile is done) or standing by behind another live worker of its name.
    ///
    /// With [`SyncWorker::partitions`]: until every partition of the name is held by a live
    /// worker (this one or another) and the stream of each one this worker holds is open and
    /// caught up in that sense ([`WorkerStats::is_ready`]), or this worker holds none while
    /// others hold them all ([`WorkerStats::is_standby`]). It does not wait for this worker to
    /// take its share: a worker that joins a name whose partitions are all held is ready at
    /// once and takes its share within about a fifth of the lease after the others see it.
    ///
    /// # Errors
    ///
    /// Gives up after [`SyncWorker::ready_timeout`] with [`Error::Timeout`] carrying the last
    /// error the worker saw; returns the worker's error at once if it ended (an
    /// [`Error::Worker`], as [`SyncWorkerHandle::shutdown`] does).
    ///
    /// # Errors
    ///
    /// [`crate::Error::Timeout`] after the worker's `ready_timeout` (30 s by default), or the worker's
    /// own error if it stopped before it was ready.
    pub async fn ready(&self) -> Result<()> {
        let deadline = Instant::now() + self.ready_timeout;
        loop {
            if self.stats.is_ready() || self.stats.is_standby() {
                return Ok(());
            }
            if self.task.is_finished() {
                return Err(self.stats.last_error().map_or_else(
                    || Error::worker(crate::error::WorkerStop::Ended, ""),
                    Error::worker_stopped_by,
                ));
            }
            if Instant::now() >= deadline {
                return Err(Error::Timeout {
                    operation: "waiting for the sync worker to be ready".to_owned(),
                    after: self.ready_timeout,
                    last: self.stats.last_error().map(Box::new),
                });
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Stops after the batch being applied (its token saved), gives up the lease so a standby
    /// takes over at once, and waits for the worker to end. Changes received but not yet applied
    /// (a batch being gathered) are left to the next worker of the name, from the saved token.
    ///
    /// # Errors
    ///
    /// The error that ended the worker, if one did: [`Error::Worker`] whose [`WorkerStop`](crate::error::WorkerStop)
    /// says why (authentication, change streams unsupported, a panic, ...) and whose `source`
    /// is the error underneath.
    ///
    /// # Errors
    ///
    /// The worker's final error, if it stopped on one.
    pub async fn shutdown(self) -> Result<()> {
        let _ = self.stop.send(true);
        match self.task.await {
            Ok(result) => result,
            Err(join) => Err(Error::worker(
                crate::error::WorkerStop::Panicked,
                join.to_string(),
            )),
        }
    }

    /// Resolves once the worker has applied every change committed before the call: each
    /// copy it keeps holds what its source held then (or newer). Tests and request handlers
    /// await it instead of polling for a copy to change.
    ///
    /// The call reads the newest entry of the server's oplog (`local.oplog.rs`; where that is
    /// not readable, the cluster time of a `ping`, which only the next write after it passes),
    /// then waits until this worker's change stream has passed it with every change before it
    /// applied. A worker standing by waits for the saved token of its name (the active
    /// worker saves it after every batch, and at least every
    /// [`token_save_interval`](SyncWorker::token_save_interval) on a quiet stream).
    ///
    /// With [`SyncWorker::partitions`] it waits for every partition of the name, so it means
    /// the same: every change committed before the call is in its copies, whichever worker
    /// applied it. A partition this worker holds is waited for by what it applied, one held
    /// elsewhere by its saved token (which a quiet partition saves every
    /// `token_save_interval`: lower that where `caught_up` is awaited on every worker).
    ///
    /// # Errors
    ///
    /// The error that stopped the worker, if it ends before catching up ([`Error::Worker`]);
    /// a server error reading the oplog's newest entry.
    pub async fn caught_up(&self) -> Result<()> {
        let target = self.newest_change().await?;
        loop {
            if self.behind(target).await?.is_none() {
                return Ok(());
            }
            if self.task.is_finished() {
                return Err(match self.stats.last_error() {
                    Some(error) => Error::worker_stopped_by(error),
                    None => Error::worker(
                        crate::error::WorkerStop::Ended,
                        "it stopped before catching up",
                    ),
                });
            }
            // a partition held elsewhere is read from its saved token on the server: less often
            let poll = if self.stats.parts.iter().all(PartState::is_active) {
                5
            } else {
                100
            };
            tokio::time::sleep(Duration::from_millis(poll)).await;
        }
    }

    /// The first partition not yet past `target` (`None`: all are): one this worker holds by
    /// what it applied, another by its saved token.
    async fn behind(&self, target: u64) -> Result<Option<usize>> {
        for (index, (part, id)) in self.stats.parts.iter().zip(&self.ids).enumerate() {
            let through = if part.is_active() {
                part.through.load(Ordering::Acquire)
            } else {
                self.saved_through(id).await?
            };
            if through < target {
                return Ok(Some(index));
            }
        }
        Ok(None)
    }

    /// The cluster time of the newest change on the server, packed (see [`pack`]).
    async fn newest_change(&self) -> Result<u64> {
        let newest = self
            .db
            .client()
            .database("local")
            .collection::<BsonDocument>("oplog.rs")
            .find_one(doc! {})
            .sort(doc! { "$natural": -1 })
            .projection(doc! { "ts": 1 })
            .await;
        if let Ok(Some(entry)) = newest {
            if let Ok(ts) = entry.get_timestamp("ts") {
                return Ok(pack(ts));
            }
        }
        let ping = self.db.run_command(doc! { "ping": 1 }).await?;
        Ok(ping.get_timestamp("operationTime").map_or(0, pack))
    }

    /// The time of the token saved in the token document `id` (a name, or a partition's),
    /// packed (0 when none).
    async fn saved_through(&self, id: &Bson) -> Result<u64> {
        let saved = self
            .db
            .collection::<BsonDocument>(TOKENS_COLLECTION)
            .find_one(doc! { "_id": id.clone() })
            .projection(doc! { "token_time": 1 })
            .await?;
        Ok(saved
            .and_then(|d| d.get_timestamp("token_time").ok())
            .map_or(0, pack))
    }

    /// Whether the worker has ended (stopped, or ended on an error).
    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }

    /// Kills the worker at its current await point, like a crash: it neither saves its token
    /// nor gives up its lease. What it received but did not save is applied again by the next
    /// active worker, from the saved token, once the lease has expired.
    pub fn kill(self) {
        self.task.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::{changed_paths, token_time, touches};

    #[test]
    fn a_token_tells_its_time() {
        let token = |data: &str| -> mongodb::change_stream::event::ResumeToken {
            crate::bson_compat::from_document(doc! { "_data": data }).unwrap()
        };
        // mongod: 130, then seconds 0x6757_1d2e and increment 3
        let mongod = token(
            "826757 1D2E00000003 2B022C0100296E5A1004"
                .replace(' ', "")
                .as_str(),
        );
        assert_eq!(
            token_time(&mongod),
            Some(mongodb::bson::Timestamp {
                time: 0x6757_1d2e,
                increment: 3
            })
        );
        // SecantusDB: a BSON document `{ s, t, .. }`
        let secantus = token("3d000000107300030000001174000700000093260f6b026e00060000006578702e7800036b0016000000075f6964006b0f2693ab490cfd5de1180d0000");
        assert_eq!(
            token_time(&secantus),
            Some(mongodb::bson::Timestamp {
                time: 1_796_155_027,
                increment: 7
            })
        );
        assert_eq!(token_time(&token("zz")), None);
    }
    use mongodb::bson::doc;
    use mongodb::change_stream::event::UpdateDescription;

    #[test]
    fn a_truncated_array_touches_a_copied_field() {
        let fields = vec!["name".to_owned(), "tags".to_owned()];
        let description: UpdateDescription = crate::bson_compat::from_document(doc! {
            "updatedFields": { "email": "x" },
            "removedFields": ["nick"],
            "truncatedArrays": [{ "field": "tags", "newSize": 2 }],
        })
        .unwrap();
        let changed: Vec<&str> = changed_paths(&description).collect();
        assert_eq!(changed, ["email", "nick", "tags"]);
        assert!(touches(changed_paths(&description), &fields));
        let untouched: UpdateDescription = crate::bson_compat::from_document(doc! {
            "updatedFields": { "email": "x" },
            "removedFields": [],
        })
        .unwrap();
        assert!(!touches(changed_paths(&untouched), &fields));
    }
}
