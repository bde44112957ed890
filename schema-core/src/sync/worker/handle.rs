//! The handle of a running worker: ready, caught up, stats, shutdown.

use super::*;

/// A running worker. Dropping it detaches the worker, which keeps running until
/// [`SyncWorkerHandle::shutdown`] (on another handle: there is none) or until its tokio runtime
/// ends; keep it to stop the worker cleanly.
#[derive(Debug)]
pub struct SyncWorkerHandle {
    pub(super) stop: watch::Sender<bool>,
    pub(super) task: tokio::task::JoinHandle<Result<()>>,
    pub(super) stats: Arc<WorkerStats>,
    pub(super) ready_timeout: Duration,
    pub(super) db: Database,
    /// The `_id` of each partition's token document (the name alone when it is not split).
    pub(super) ids: Vec<Bson>,
}

/// Resolves when the partition leaves this member's share (`want` turns false); never for a
/// name that is not split (`None`), nor once the member stopped deciding (it is stopping).
pub(super) async fn unwanted(want: Option<&mut watch::Receiver<bool>>) {
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
pub(super) async fn stop_requested(stop: &mut watch::Receiver<bool>) {
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
                    operation: format!(
                        "waiting for the sync worker to be ready (waiting for {}; a first start over a large database takes longer: raise `SyncWorker::ready_timeout(..)`)",
                        self.stats.waiting_for()
                    ),
                    after: self.ready_timeout,
                    last: self.stats.last_error().map(Box::new),
                });
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Asks the worker to stop, and waits for it to end: it stops at the next chunk boundary of
    /// what it is applying, gives up the lease so a standby takes over at once, and ends.
    ///
    /// What it waits for: each write of the worker that is under way (a fan-out's chunk of at
    /// most [`crate::FAN_OUT_CHUNK`] holders in its fenced transaction, a subset parent's
    /// refresh, a token save) commits or aborts; then the lease is released. It does not wait
    /// for a fan-out to end: a fan-out starts no chunk after the stop (each committed chunk
    /// recorded its progress in [`TOKENS_COLLECTION`](crate::TOKENS_COLLECTION), in its own
    /// transaction), and a job of a batch that had not started does not start. So shutdown takes about one chunk's time, however
    /// many holders a fan-out in flight has (a rename of a source held by 100,000 holders
    /// returned only once all were rewritten, after minutes: issue 48).
    ///
    /// The batches applied whole before the oldest one cut short save their tokens; the saved
    /// token never moves past a batch that was not applied whole. The next worker of the name
    /// replays from it (idempotently): a fan-out that was cut resumes after its last committed
    /// chunk, and changes received but not applied (a batch being gathered) are applied then.
    ///
    /// A first start's full reconcile (no usable saved token) stops the same way, at its next
    /// chunk of repairs or batch of holders, and saves no token: the next worker of the name
    /// reconciles again (a repair is conditional on the value read, so what was repaired
    /// stays). [`SyncWorkerHandle::kill`] stops at once, like a crash.
    ///
    /// # Errors
    ///
    /// The error that ended the worker, if one did: [`Error::Worker`] whose [`WorkerStop`](crate::error::WorkerStop)
    /// says why (authentication, change streams unsupported, a panic, ...) and whose `source`
    /// is the error underneath.
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
    pub(super) async fn behind(&self, target: u64) -> Result<Option<usize>> {
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
    pub(super) async fn newest_change(&self) -> Result<u64> {
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
    pub(super) async fn saved_through(&self, id: &Bson) -> Result<u64> {
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
    /// nor gives up its lease, and returns at once (the task is aborted, not awaited). What it
    /// received but did not save is applied again by the next active worker, from the saved
    /// token, once the lease has expired (a standby of the name takes over within about the
    /// lease, [`crate::DEFAULT_LEASE`] unless set). A write it had under way in a fenced
    /// transaction either committed or is ended by the server or the next holder; a fan-out
    /// it cut resumes after its last committed chunk.
    ///
    /// For a process that must stop now, and for tests of what a crash leaves; a service
    /// stopping normally calls [`SyncWorkerHandle::shutdown`], which hands the lease over at
    /// once.
    pub fn kill(self) {
        self.task.abort();
    }
}
