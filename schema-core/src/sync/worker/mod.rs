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
use super::fan_out::{halted, FanOut, FanOutOutcome, Halt, Writer};
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
use crate::sync::failures::FailureLog;
use crate::sync::fence::Fence;
use crate::{Error, Result, SyncGraph};

mod batch;
mod handle;
mod partition;
mod stats;
mod stream;

use batch::*;
use handle::{stop_requested, unwanted};
use stream::*;

pub use handle::SyncWorkerHandle;
pub(crate) use stats::PartState;
pub use stats::{WorkerSnapshot, WorkerStats};

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

    pub(super) fn edges(&self) -> Vec<&SyncEdge> {
        self.graph.by_strategy(SyncStrategy::Async).collect()
    }

    #[allow(deprecated)] // the worker writes its own counters
    pub(super) async fn run(
        self,
        mut stop: watch::Receiver<bool>,
        stats: Arc<WorkerStats>,
    ) -> Result<()> {
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
