//! The change stream of a partition: opened from the saved token, read in batches
//! ([`SyncWorker::follow`]), an event too large to send probed, recorded and skipped.

use super::*;

/// What probing an event too large to send found.
pub(super) enum Probed {
    /// Its record written: go on after this token.
    After(ResumeToken),
    /// No position to go on from: reopen and meet it again.
    Unknown,
    /// The record was fenced off: the lease was taken over.
    FencedOff,
}

impl SyncWorker {
    /// Opens the change stream of `pipeline`, after `token` when given; `one_at_a_time`: each
    /// reply carries one event (after an event too large to send, so that the stream's position
    /// stops right before it).
    pub(super) async fn open(
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
    pub(super) async fn pipeline(
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
    pub(super) fn take(
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
    pub(super) async fn skip(
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
            crate::sync::failures::Failure::unreadable(collection, document, code, &event.reason);
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
    pub(super) async fn probe_too_large(
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
    pub(super) async fn follow(
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
                // (counted while it runs, for `ready()`'s timeout to say what it waits for)
                let _reconciling = Reconciling::start(stats);
                let edges = self.edges();
                let writer = Writer::Fenced {
                    fence: &fence,
                    lane: 0,
                };
                // cut between two batches by a stop: nothing saved, the next start reconciles
                // again (its repairs are conditional on the values read)
                let halt = stop.clone();
                let report = reconcile(&self.db, &edges, false, &log, writer, Some(&halt)).await;
                if halted(Some(&halt)) {
                    return Ok(Stopped::Requested);
                }
                if lost_with(report.as_ref().err(), lease).await {
                    lease.lost();
                    return Ok(Stopped::LeaseLost);
                }
                let report = report?;
                let subsets = crate::relations::subset::reconcile::reconcile(
                    &self.db,
                    &self.subsets.rules,
                    false,
                    Some((&fence, 0)),
                    Some(&halt),
                )
                .await;
                if halted(Some(&halt)) {
                    return Ok(Stopped::Requested);
                }
                if lost_with(subsets.as_ref().err(), lease).await {
                    lease.lost();
                    return Ok(Stopped::LeaseLost);
                }
                let subsets = subsets?;
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
        // the stop as the batches' jobs watch it: once raised, no job starts and each fan-out
        // stops at its next chunk boundary (see `SyncWorkerHandle::shutdown`)
        let halt = stop.clone();
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
                    if in_flight.cut {
                        // a stop cut a batch short meanwhile: the token stays before it
                        return Ok(Stopped::Requested);
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
            if !lease.hold().await {
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
                cut_short: false,
            };
            let (log, fence, lanes, halt) = (&log, &fence, &lanes, &halt);
            in_flight.start(Box::pin(async move {
                let applied = self
                    .run_batch(planned, stats, log, fence, lanes, halt)
                    .await?;
                Ok(Finished {
                    fenced_off: applied == Applied::FencedOff,
                    cut_short: applied == Applied::CutShort,
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
    pub(super) async fn open_past_too_large(
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
}

/// The cluster time a resume token carries: mongod's tokens are a KeyString whose first value
/// is the event's (or the post-batch position's) timestamp (type byte 130, then seconds and
/// increment, big-endian); SecantusDB's are a BSON document with the timestamp under `t`.
/// `None` for a token of another form.
pub(super) fn token_time(token: &ResumeToken) -> Option<mongodb::bson::Timestamp> {
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
pub(super) fn pack(time: mongodb::bson::Timestamp) -> u64 {
    (u64::from(time.time) << 32) | u64::from(time.increment)
}

/// A full reconcile counted in [`WorkerStats`] while it runs (until dropped).
struct Reconciling<'a>(&'a WorkerStats);

impl<'a> Reconciling<'a> {
    fn start(stats: &'a WorkerStats) -> Self {
        WorkerStats::add(&stats.reconciling, 1);
        Reconciling(stats)
    }
}

impl Drop for Reconciling<'_> {
    fn drop(&mut self) {
        self.0
            .reconciling
            .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Whether `error`, which ended the reconcile of a fresh start, means the lease was lost: a
/// write fenced off, or the lease no longer held (waiting while a late renewal may keep it).
async fn lost_with(error: Option<&Error>, lease: &Lease) -> bool {
    match error {
        None => false,
        Some(error) => crate::sync::fence::is_fenced_off(error) || !lease.hold().await,
    }
}
