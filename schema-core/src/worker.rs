//! The `async` strategy: a change-stream consumer that applies `updateMany` to the copies after
//! their source changes, persisting its resume token after each applied batch of changes.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use mongodb::bson::{doc, Document as BsonDocument};
use mongodb::change_stream::event::{ChangeStreamEvent, OperationType, ResumeToken};
use mongodb::options::FullDocumentType;
use mongodb::Database;
use tokio::sync::watch;

use crate::copy::{SyncEdge, SyncStrategy};
use crate::sync::{reconcile, FanOut};
use crate::{Result, SyncGraph};

/// The collection, in the application's database, where workers keep their resume tokens.
pub const TOKENS_COLLECTION: &str = "mongo_schema_sync";

/// At most this many changes are applied between two saves of the resume token.
const TOKEN_BATCH: usize = 100;

/// Server codes that mean a stored resume token can no longer be used.
const UNRESUMABLE: [i32; 5] = [
    9,   // FailedToParse: not a token
    260, // InvalidResumeToken
    280, // ChangeStreamFatalError
    286, // ChangeStreamHistoryLost
    222, // CloseChangeStream
];

/// Counters of a running worker, readable at any time.
#[derive(Debug, Default)]
pub struct WorkerStats {
    /// Change events received.
    pub events: AtomicU64,
    /// Events that touched a copied field and were applied.
    pub applied: AtomicU64,
    /// Holder documents rewritten.
    pub copies_rewritten: AtomicU64,
    /// Full reconciles run because no usable resume token existed.
    pub reconciles: AtomicU64,
    /// Times the stream was reopened after an error.
    pub reopened: AtomicU64,
    /// Milliseconds between the source change (its `wallTime`) and the copies being rewritten,
    /// for the last applied event.
    pub last_lag_ms: AtomicU64,
    /// The largest such lag seen.
    pub max_lag_ms: AtomicU64,
    ready: AtomicBool,
}

impl WorkerStats {
    fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// Reads a counter.
    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }

    /// Whether the change stream is open and initial catch-up is done.
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }
}

/// Follows the change streams of the sources of `async` copies. Build it with
/// [`crate::Schema::sync_worker`], then [`SyncWorker::spawn`] it.
#[derive(Debug, Clone)]
pub struct SyncWorker {
    db: Database,
    graph: SyncGraph,
    name: String,
}

/// A running worker.
#[derive(Debug)]
pub struct SyncWorkerHandle {
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<Result<()>>,
    stats: Arc<WorkerStats>,
}

impl SyncWorker {
    pub(crate) fn new(db: Database, graph: SyncGraph) -> Self {
        SyncWorker {
            db,
            graph,
            name: "default".to_owned(),
        }
    }

    /// The worker's name: the key of its resume token. Workers with different names each see
    /// every change.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Starts the worker on the current tokio runtime.
    pub fn spawn(self) -> SyncWorkerHandle {
        let (stop, stopped) = watch::channel(false);
        let stats = Arc::new(WorkerStats::default());
        let task = tokio::spawn(self.run(stopped, stats.clone()));
        SyncWorkerHandle { stop, task, stats }
    }

    fn edges(&self) -> Vec<&SyncEdge> {
        self.graph.by_strategy(SyncStrategy::Async).collect()
    }

    async fn load_token(&self) -> Result<Option<ResumeToken>> {
        let stored = self
            .db
            .collection::<BsonDocument>(TOKENS_COLLECTION)
            .find_one(doc! { "_id": &self.name })
            .await?;
        Ok(stored
            .and_then(|d| d.get("token").cloned())
            .and_then(|t| mongodb::bson::from_bson(t).ok()))
    }

    async fn save_token(&self, token: Option<ResumeToken>) -> Result<()> {
        let tokens = self.db.collection::<BsonDocument>(TOKENS_COLLECTION);
        match token {
            Some(token) => {
                let token = mongodb::bson::to_bson(&token).map_err(mongodb::error::Error::from)?;
                tokens
                    .update_one(
                        doc! { "_id": &self.name },
                        doc! { "$set": { "token": token, "updated_at": mongodb::bson::DateTime::now() } },
                    )
                    .upsert(true)
                    .await?;
            }
            None => {
                tokens.delete_one(doc! { "_id": &self.name }).await?;
            }
        }
        Ok(())
    }

    async fn run(self, mut stopped: watch::Receiver<bool>, stats: Arc<WorkerStats>) -> Result<()> {
        let sources = self.graph.sources(SyncStrategy::Async);
        if sources.is_empty() {
            stats.ready.store(true, Ordering::Release);
            let _ = stopped.wait_for(|s| *s).await;
            return Ok(());
        }
        let mut backoff = Duration::from_millis(50);
        loop {
            if *stopped.borrow() {
                return Ok(());
            }
            match self.follow(&sources, &mut stopped, &stats).await {
                Ok(()) => return Ok(()), // stopped
                Err(error) => {
                    WorkerStats::add(&stats.reopened, 1);
                    tracing::warn!(worker = %self.name, %error, "change stream failed; reopening from the last saved token");
                    tokio::select! {
                        _ = tokio::time::sleep(backoff) => {}
                        _ = stopped.wait_for(|s| *s) => return Ok(()),
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(2));
                }
            }
        }
    }

    /// Opens the stream (from the saved token, or fresh with a reconcile) and applies events
    /// until stopped (`Ok`) or an error.
    async fn follow(
        &self,
        sources: &[String],
        stopped: &mut watch::Receiver<bool>,
        stats: &WorkerStats,
    ) -> Result<()> {
        let pipeline = vec![doc! { "$match": {
            "operationType": { "$in": ["update", "replace"] },
            "ns.coll": { "$in": sources },
        } }];
        let saved = self.load_token().await?;
        let opened = match saved.clone() {
            Some(token) => {
                let attempt = self
                    .db
                    .watch()
                    .pipeline(pipeline.clone())
                    .full_document(FullDocumentType::UpdateLookup)
                    .start_after(token)
                    .await;
                match attempt {
                    Err(e)
                        if crate::error::server_code(&e)
                            .is_some_and(|c| UNRESUMABLE.contains(&c)) =>
                    {
                        tracing::warn!(worker = %self.name, error = %e, "saved resume token unusable; full reconcile");
                        None
                    }
                    other => Some(other?),
                }
            }
            None => None,
        };
        let mut stream = match opened {
            Some(stream) => stream,
            None => {
                // fresh start: open first, then reconcile, so nothing between them is missed
                let stream = self
                    .db
                    .watch()
                    .pipeline(pipeline)
                    .full_document(FullDocumentType::UpdateLookup)
                    .await?;
                let edges = self.edges();
                let report = reconcile(&self.db, &edges, false).await?;
                WorkerStats::add(&stats.reconciles, 1);
                WorkerStats::add(&stats.copies_rewritten, report.repaired());
                self.save_token(stream.resume_token()).await?;
                stream
            }
        };
        stats.ready.store(true, Ordering::Release);
        loop {
            let event = tokio::select! {
                event = stream.next() => event,
                _ = stopped.wait_for(|s| *s) => return Ok(()),
            };
            let Some(event) = event else {
                return Err(crate::Error::Driver(mongodb::error::Error::custom(
                    "change stream ended",
                )));
            };
            self.handle(&event?, stats).await?;
            // apply what the server has already sent, then save the token once for the batch:
            // a crash re-applies at most one batch, and the rewrites are idempotent
            for _ in 1..TOKEN_BATCH {
                match stream.next_if_any().await? {
                    Some(event) => self.handle(&event, stats).await?,
                    None => break,
                }
            }
            self.save_token(stream.resume_token()).await?;
        }
    }

    /// Counts and applies one change, measuring the lag of applied ones.
    async fn handle(
        &self,
        event: &ChangeStreamEvent<BsonDocument>,
        stats: &WorkerStats,
    ) -> Result<()> {
        WorkerStats::add(&stats.events, 1);
        if self.apply(event, stats).await? {
            WorkerStats::add(&stats.applied, 1);
            if let Some(wall) = event.wall_time {
                let lag = (mongodb::bson::DateTime::now().timestamp_millis()
                    - wall.timestamp_millis())
                .max(0) as u64;
                stats.last_lag_ms.store(lag, Ordering::Relaxed);
                stats.max_lag_ms.fetch_max(lag, Ordering::Relaxed);
            }
        }
        Ok(())
    }

    /// Applies one change to the copies it concerns; `false` when no copied field changed.
    async fn apply(
        &self,
        event: &ChangeStreamEvent<BsonDocument>,
        stats: &WorkerStats,
    ) -> Result<bool> {
        let Some(ns) = &event.ns else {
            return Ok(false);
        };
        let Some(collection) = &ns.coll else {
            return Ok(false);
        };
        let Some(source) = &event.full_document else {
            return Ok(false); // deleted since: nothing to copy
        };
        let mut applied = false;
        for edge in self
            .graph
            .copies_of(collection)
            .filter(|e| e.copy.strategy == SyncStrategy::Async)
        {
            let touched = match (&event.operation_type, &event.update_description) {
                (OperationType::Update, Some(description)) => {
                    let changed = description
                        .updated_fields
                        .keys()
                        .map(String::as_str)
                        .chain(description.removed_fields.iter().map(String::as_str));
                    touches(changed, &edge.copy.fields)
                }
                _ => true, // replace: anything may have changed
            };
            if !touched {
                continue;
            }
            if let Some(fan_out) = FanOut::new(edge, source) {
                let rewritten = fan_out.run(&self.db, &edge.holder, None).await?;
                WorkerStats::add(&stats.copies_rewritten, rewritten);
                applied = true;
            }
        }
        Ok(applied)
    }
}

/// Whether any changed path (`name`, `address.city`, `tags.3`) touches a copied field.
fn touches<'a>(mut changed: impl Iterator<Item = &'a str>, fields: &[String]) -> bool {
    changed.any(|path| {
        fields.iter().any(|field| {
            path == field
                || path.starts_with(&format!("{field}."))
                || field.starts_with(&format!("{path}."))
        })
    })
}

impl SyncWorkerHandle {
    /// The worker's counters.
    pub fn stats(&self) -> &WorkerStats {
        &self.stats
    }

    /// Waits until the stream is open and any initial reconcile is done.
    pub async fn ready(&self) {
        while !self.stats.is_ready() && !self.task.is_finished() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Stops after the event in progress (its token saved) and waits for the worker to end.
    pub async fn shutdown(self) -> Result<()> {
        let _ = self.stop.send(true);
        match self.task.await {
            Ok(result) => result,
            Err(join) => Err(crate::Error::Driver(mongodb::error::Error::custom(
                format!("sync worker panicked: {join}"),
            ))),
        }
    }

    /// Kills the worker at its current await point, like a crash: what was received but not
    /// applied is applied again by the next worker, from the saved token.
    pub fn kill(self) {
        self.task.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::touches;

    #[test]
    fn changed_paths_touch_copied_fields() {
        let fields = vec!["name".to_owned(), "address.city".to_owned()];
        assert!(touches(["name"].into_iter(), &fields));
        assert!(touches(["address"].into_iter(), &fields));
        assert!(touches(["address.city"].into_iter(), &fields));
        assert!(!touches(
            ["email", "address.zip", "names"].into_iter(),
            &fields
        ));
    }
}
