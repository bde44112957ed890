//! A batch of changes applied: planned into jobs on the lanes, driven while in flight, its
//! finished position saved as the token.

use super::*;

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
pub(super) struct InFlight<'a> {
    pub(super) running: FuturesOrdered<BoxFuture<'a, Result<Finished>>>,
    pub(super) done: std::collections::VecDeque<Result<Finished>>,
    /// When each running batch was started, oldest first.
    pub(super) started: std::collections::VecDeque<Instant>,
    /// A batch was cut short by a stop (see [`Finished::cut_short`]): neither it nor any batch
    /// after it saves its token, so the saved token stays the position before the oldest
    /// batch not applied whole.
    pub(super) cut: bool,
}

impl<'a> InFlight<'a> {
    /// Whether no batch is running or waiting for its token to be saved.
    pub(super) fn is_empty(&self) -> bool {
        self.running.is_empty() && self.done.is_empty()
    }

    pub(super) fn len(&self) -> usize {
        self.running.len() + self.done.len()
    }

    /// Awaits `work` while the running batches go on (those that finish wait in `done`).
    pub(super) async fn drive<T>(&mut self, work: impl std::future::Future<Output = T>) -> T {
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
    pub(super) fn start(&mut self, batch: BoxFuture<'a, Result<Finished>>) {
        self.running.push_back(batch);
        self.started.push_back(Instant::now());
    }

    /// The oldest running batch finished (`running` yields them in order).
    pub(super) fn finished(&mut self, finished: Option<Result<Finished>>) {
        if let Some(finished) = finished {
            self.started.pop_front();
            self.done.push_back(finished);
        }
    }

    /// Whether the stream may be read ahead now (see [`READ_AHEAD_AFTER`]): nothing running,
    /// or the oldest running batch has run that long and a lane is free; and fewer than
    /// [`MAX_IN_FLIGHT`] batches are in flight.
    pub(super) fn may_read_ahead(&self, lanes: &Lanes) -> bool {
        self.len() < MAX_IN_FLIGHT
            && self
                .started
                .front()
                .is_none_or(|oldest| oldest.elapsed() >= READ_AHEAD_AFTER && lanes.any_free())
    }

    /// A future that resolves when the oldest running batch has run for [`READ_AHEAD_AFTER`]
    /// (never when none runs).
    pub(super) fn long_running(&self) -> impl std::future::Future<Output = ()> + use<> {
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
pub(super) struct Recovery {
    /// After an event too large to send: read one event a time until the stream stops right
    /// before it, then probe its key and go on after it.
    pub(super) one_at_a_time: bool,
}

/// A batch read from the stream, planned: each job and subset parent with its turn on the
/// lanes, and the wall times of the events it applies (for the lag).
pub(super) struct Planned<'e> {
    pub(super) jobs: Vec<(Turn, Job<'e>)>,
    /// Each parent to refresh with the async subsets and counters of it to refresh, in one
    /// transaction and one update.
    pub(super) parents: Vec<(Turn, Vec<usize>, Bson)>,
    pub(super) applied: Vec<Option<mongodb::bson::DateTime>>,
}

/// A batch that finished applying.
pub(super) struct Finished {
    /// A write was fenced off: the lease was taken over.
    pub(super) fenced_off: bool,
    /// The stream's position after the batch (`None`: not to be saved, a split event half
    /// read).
    pub(super) token: Option<ResumeToken>,
    /// The cluster time of its last event.
    pub(super) cluster_time: Option<mongodb::bson::Timestamp>,
    /// The worker was asked to stop while it ran: a fan-out stopped at a chunk boundary, or a
    /// job did not start. It is not applied whole, so its token is not saved (nor any later
    /// batch's): the next worker of the name replays it, and its fan-outs resume from their
    /// progress.
    pub(super) cut_short: bool,
}

/// How the apply of a batch ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Applied {
    /// Every job ran to its end.
    Whole,
    /// A write was fenced off: the lease was taken over.
    FencedOff,
    /// The worker was asked to stop: a job stopped at a chunk boundary or did not start.
    CutShort,
}

/// Why a worker stopped following.
pub(super) enum Stopped {
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
    /// On a requested stop: the batches in flight end (each fan-out at its next chunk
    /// boundary, no job starting: they watch the same stop, see [`SyncWorker::run_batch`]),
    /// and those that were applied whole before the oldest one cut short save their tokens.
    pub(super) async fn drain_and_stop(
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
    pub(super) async fn drain(
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
    pub(super) async fn save_finished(
        &self,
        in_flight: &mut InFlight<'_>,
        lease: &Lease,
        stats: &WorkerStats,
        part: &PartState,
    ) -> Result<Option<bool>> {
        let mut any = false;
        while let Some(finished) = in_flight.done.pop_front() {
            any = true;
            let finished = finished?;
            if finished.cut_short || in_flight.cut {
                // not applied whole, or after one that was not: the token stays before it
                in_flight.cut = true;
                continue;
            }
            let last = in_flight.is_empty();
            let saved = in_flight.drive(self.finished(finished, lease, stats, part, last));
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
    pub(super) async fn finished(
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
    pub(super) fn plan_batch<'e>(
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
        // a parent's subsets and counters refreshed together: one transaction, one update
        let mut parents: Vec<(Vec<usize>, Bson)> = Vec::new();
        let mut parent_slots: HashMap<(String, String), usize> = HashMap::new();
        for event in batch {
            let children = self.subsets.plan(event);
            if children.unknown_parent {
                WorkerStats::add(&stats.unknown_parents, 1);
            }
            if !children.parents.is_empty() {
                applied.push(event.wall_time);
            }
            for (rule, parent) in children.parents {
                let collection = self.subsets.rules[rule].parents.to_string();
                match parent_slots.entry((collection, id_key(&parent))) {
                    Entry::Occupied(slot) => {
                        let rules = &mut parents[*slot.get()].0;
                        if rules.contains(&rule) {
                            WorkerStats::add(&stats.coalesced, 1);
                        } else {
                            rules.push(rule);
                        }
                    }
                    Entry::Vacant(slot) => {
                        slot.insert(parents.len());
                        parents.push((vec![rule], parent));
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
            .map(|(rules, parent)| {
                let collection = &self.subsets.rules[rules[0]].parents;
                let key = format!("parent {collection} {}", id_key(&parent));
                (lanes.turn(key), rules, parent)
            })
            .collect();
        Planned {
            jobs,
            parents,
            applied,
        }
    }

    /// Runs a planned batch: its jobs on the lanes, each in its turn and fenced on its lane
    /// (see [`super::fence`]); measures the lag of the applied changes. [`Applied::FencedOff`]:
    /// a write was fenced off (the lease was taken over); the batch is the new holder's to
    /// apply. [`Applied::CutShort`]: `halt` (the worker's stop) was raised while it ran; a job
    /// that had not started does not, and a fan-out stops at its next chunk boundary, its
    /// progress recorded (see [`crate::sync::fan_out::progress`]).
    #[tracing::instrument(name = "sync_batch", level = "debug", skip_all, fields(worker = %self.name, jobs = planned.jobs.len()))]
    #[allow(deprecated)] // the worker writes its own counters
    pub(super) async fn run_batch(
        &self,
        planned: Planned<'_>,
        stats: &WorkerStats,
        log: &FailureLog,
        fence: &Fence,
        lanes: &Lanes,
        halt: &Halt,
    ) -> Result<Applied> {
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
                    if halted(Some(halt)) {
                        return Ok((job.deletion, FanOutOutcome::stopped()));
                    }
                    let writer = Writer::Fenced { fence, lane };
                    let copy = format!("{}.{}", job.edge.holder, job.edge.copy.path);
                    let started = std::time::Instant::now();
                    let outcome = job
                        .fan_out
                        .run_resilient(db, job.edge, &job.source, log, writer, job.event.as_ref(), Some(halt))
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
        runs.extend(parents.into_iter().map(|(turn, rules, parent)| {
            Box::pin(lanes.run(turn, move |lane| async move {
                if halted(Some(halt)) {
                    return Ok((false, FanOutOutcome::stopped()));
                }
                refresh_parent(subsets, db, stats, log, fence, lane, &rules, parent).await
            })) as BoxFuture<'_, _>
        }));
        // every job concurrently: the lanes' permits bound how many run at once
        let mut outcomes: futures_util::stream::FuturesUnordered<_> = runs.into_iter().collect();
        let (mut fenced_off, mut cut_short) = (false, false);
        while let Some(done) = outcomes.next().await {
            let (deletion, outcome) = done?;
            fenced_off |= outcome.fenced_off;
            cut_short |= outcome.cut_short;
            let rewritten = if deletion {
                &stats.copies_unset
            } else {
                &stats.copies_rewritten
            };
            WorkerStats::add(rewritten, outcome.rewritten);
            WorkerStats::add(&stats.failed, outcome.failed);
        }
        if fenced_off {
            return Ok(Applied::FencedOff);
        }
        if cut_short {
            return Ok(Applied::CutShort);
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
        Ok(Applied::Whole)
    }

    /// The rewrites one change needs; none when it touched no copied field (or its source is
    /// gone since and its deletion follows).
    pub(super) fn plan<'e>(&'e self, event: &ChangeStreamEvent<BsonDocument>) -> Vec<Job<'e>> {
        let Some(collection) = event.ns.as_ref().and_then(|ns| ns.coll.as_ref()) else {
            return Vec::new();
        };
        let edges = self.graph.edges.iter().enumerate().filter(|(_, e)| {
            e.copy.source == *collection && e.copy.strategy == SyncStrategy::Async
        });
        let token = crate::bson_compat::to_bson(&event.id).ok();
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
                        event: token.clone(),
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
                    event: token.clone(),
                })
            })
            .collect()
    }
}

/// Refreshes one parent's async subsets and counters (`rules`), fenced on `lane` like the
/// copies' fan-outs (a worker that lost its lease writes nothing), with the removal of the
/// parent's failure records in the same transaction. When the parent cannot take them (its
/// validator rejects the previews), each rule is tried alone, so the others land and the one
/// refused is recorded in [`crate::FAILURES_COLLECTION`] (target `parents.path`, holder and
/// source the parent).
#[allow(clippy::too_many_arguments)]
#[allow(deprecated)] // the worker writes its own counters
pub(super) async fn refresh_parent(
    subsets: &SubsetFollow,
    db: &Database,
    stats: &WorkerStats,
    log: &FailureLog,
    fence: &Fence,
    lane: usize,
    rules: &[usize],
    parent: Bson,
) -> Result<(bool, FanOutOutcome)> {
    let mut outcome = FanOutOutcome::default();
    let together = subsets
        .refresh_fenced(db, rules, &parent, log, fence, lane)
        .await;
    let refused = match together {
        Ok(true) => {
            WorkerStats::add(&stats.previews_refreshed, rules.len() as u64);
            return Ok((false, outcome));
        }
        Ok(false) => {
            outcome.fenced_off = true;
            return Ok((false, outcome));
        }
        Err(error) if ErrorClass::of(&error) == ErrorClass::Transient => return Err(error),
        Err(error) => error,
    };
    // one rule: its refusal is the one just seen
    let mut refused = (rules.len() == 1).then_some(refused);
    for &rule in rules {
        let alone = if let Some(error) = refused.take() {
            Err(error)
        } else {
            subsets
                .refresh_fenced(db, &[rule], &parent, log, fence, lane)
                .await
        };
        match alone {
            Ok(true) => WorkerStats::add(&stats.previews_refreshed, 1),
            Ok(false) => {
                // the lease was taken over: the rest is the new holder's
                outcome.fenced_off = true;
                break;
            }
            Err(error) if ErrorClass::of(&error) != ErrorClass::Transient => {
                let target = subsets.rules[rule].label();
                tracing::warn!(subset = %target, parent = %parent, %error, "the sync worker could not refresh a subset; recorded");
                // the record is a write of the worker like the previews: under the fence
                let failure = crate::sync::failures::Failure::of_target(
                    target,
                    parent.clone(),
                    parent.clone(),
                    &error,
                );
                if log.record_fenced(db, failure, fence, lane).await? {
                    outcome.failed += 1;
                } else {
                    outcome.fenced_off = true;
                }
            }
            Err(error) => return Err(error),
        }
    }
    Ok((false, outcome))
}

/// One rewrite a batch needs: a copy (`edge`) of one source document.
pub(super) struct Job<'e> {
    pub(super) edge_index: usize,
    pub(super) edge: &'e SyncEdge,
    pub(super) source: Bson,
    pub(super) fan_out: FanOut,
    pub(super) deletion: bool,
    /// The change it applies (its event's resume token): a fan-out cut short resumes for the
    /// same change only (see [`crate::sync::fan_out::progress`]).
    pub(super) event: Option<Bson>,
}

/// The paths an update changed: set, removed, or arrays truncated (`$pop`, `$pull`, a `$push`
/// with `$slice`).
pub(super) fn changed_paths(description: &UpdateDescription) -> impl Iterator<Item = &str> {
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
