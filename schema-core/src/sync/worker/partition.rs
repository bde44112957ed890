//! A worker's partitions: the run of a name (split or not), the lease of each partition, its
//! saved token, and the watchdog that reopens a stream holding changes it does not apply.

use super::*;

impl SyncWorker {
    /// Runs a name split into partitions: one task per partition, each acquiring and following
    /// its partition when this member's share includes it, and this member's look at its name
    /// every fifth of the lease, which decides the share (see [`super::partitions`]). The first
    /// partition to end on an error stops the others, and its error is the worker's.
    pub(super) async fn run_partitioned(
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
    pub(super) async fn look(
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
    pub(super) async fn run_partition(
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
    pub(super) async fn watchdog(&self, part: &PartState) -> String {
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
    pub(super) async fn record_stall(&self, lease: &Lease, reason: &str) {
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
    pub(super) async fn acquire(
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
    pub(super) async fn load_token(
        &self,
        lease: &Lease,
        partition: Partition,
    ) -> Result<Option<ResumeToken>> {
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
    pub(super) async fn save_token(
        &self,
        lease: &Lease,
        token: Option<ResumeToken>,
        cluster_time: Option<mongodb::bson::Timestamp>,
        lag_ms: Option<u64>,
    ) -> Result<bool> {
        if !lease.hold().await {
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
}
