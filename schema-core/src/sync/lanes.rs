//! The worker's lanes: per-lane progress.
//!
//! A batch's rewrites (a copy of one source document, or one parent of an async subset) run as
//! *jobs*, at most [`FAN_OUT_CONCURRENCY`](super::worker::FAN_OUT_CONCURRENCY) at a time across
//! every batch in flight, each on a fence lane of its own. The worker does not wait for a batch
//! to finish before it reads and starts the next one, so a fan-out to 10^5 holders holds its own
//! lane only: the changes of other sources keep landing meanwhile (issue 48, item 2).
//!
//! Two rules keep it right:
//! - **one key, one job at a time, in order**: a job runs only after the job planned before it
//!   for the same key (a copy of the same source document, a subset parent) has ended, so an
//!   older rewrite never lands over a newer one ([`Lanes::turn`], taken when the batch is
//!   planned, in the order the stream delivered the changes);
//! - **the saved token is the oldest unfinished position**: batches finish in any order, but
//!   the worker saves the resume token after a batch only once every batch before it has
//!   finished, so a restart replays just what was unfinished (the rewrites are idempotent).

use std::collections::HashMap;
use std::future::Future;
use std::sync::Mutex;

use tokio::sync::{oneshot, Notify, Semaphore};

/// When the table of keys grows past this, the keys whose last job has ended are forgotten.
const FORGET_AFTER: usize = 4096;

/// The lanes of one stream: their permits, which lanes are free, and the last job planned for
/// each key.
#[derive(Debug)]
pub(crate) struct Lanes {
    permits: Semaphore,
    free: Mutex<Vec<usize>>,
    last: Mutex<HashMap<String, oneshot::Receiver<()>>>,
    /// Notified when a lane is given back.
    freed: Notify,
}

/// A job's turn for its key: the end of the job planned before it (if any), and the signal of
/// its own end (sent, or dropped, when it ends or is cancelled).
#[derive(Debug)]
pub(crate) struct Turn {
    after: Option<oneshot::Receiver<()>>,
    done: oneshot::Sender<()>,
}

/// A lane taken from the pool, given back when dropped (also when its job is cancelled).
struct Taken<'l> {
    lanes: &'l Lanes,
    lane: usize,
}

impl Drop for Taken<'_> {
    fn drop(&mut self) {
        self.lanes
            .free
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(self.lane);
        self.lanes.freed.notify_one();
    }
}

impl Lanes {
    /// `count` lanes, numbered `0..count`.
    pub(crate) fn new(count: usize) -> Lanes {
        let count = count.max(1);
        Lanes {
            permits: Semaphore::new(count),
            free: Mutex::new((0..count).rev().collect()),
            last: Mutex::new(HashMap::new()),
            freed: Notify::new(),
        }
    }

    /// Whether a lane is free: the worker reads ahead only then, so a backlog is not read
    /// faster than the lanes apply it (a new batch would only queue behind the busy lanes,
    /// and the saved token moves only when the oldest batch finishes).
    pub(crate) fn any_free(&self) -> bool {
        self.permits.available_permits() > 0
    }

    /// Resolves when a lane is given back (at once if one was since the last call).
    pub(crate) async fn freed(&self) {
        self.freed.notified().await;
    }

    /// Takes the next turn of `key`: its job runs once the job planned before it for the same
    /// key has ended. Taken synchronously, in the order the changes were read.
    pub(crate) fn turn(&self, key: String) -> Turn {
        let (done, end) = oneshot::channel();
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if last.len() >= FORGET_AFTER {
            // a key whose last job ended needs no turn to wait for
            last.retain(|_, end| {
                matches!(end.try_recv(), Err(oneshot::error::TryRecvError::Empty))
            });
        }
        let after = last.insert(key, end);
        Turn { after, done }
    }

    /// Runs `job` in its turn, on a free lane (the lane's number is passed to it).
    pub(crate) async fn run<T, F>(&self, turn: Turn, job: impl FnOnce(usize) -> F) -> T
    where
        F: Future<Output = T>,
    {
        if let Some(after) = turn.after {
            // ended, or cancelled (its sender dropped): either way it writes no more
            let _ = after.await;
        }
        let _permit = self
            .permits
            .acquire()
            .await
            .expect("the lanes' semaphore is never closed");
        let lane = self
            .free
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop()
            .expect("a permit means a free lane");
        let taken = Taken { lanes: self, lane };
        let out = job(lane).await;
        drop(taken);
        let _ = turn.done.send(());
        out
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::Lanes;

    /// Jobs of one key run one at a time in the order their turns were taken, whatever order
    /// they are polled in; jobs of other keys do not wait for them; at most `count` run at once.
    #[tokio::test]
    async fn one_key_runs_in_order_and_other_keys_pass() {
        let lanes = Arc::new(Lanes::new(2));
        let log = Arc::new(std::sync::Mutex::new(Vec::new()));
        let first = lanes.turn("a".into());
        let second = lanes.turn("a".into());
        let other = lanes.turn("b".into());
        let job = |name: &'static str, turn, wait: u64| {
            let (lanes, log) = (lanes.clone(), log.clone());
            tokio::spawn(async move {
                lanes
                    .run(turn, |lane| async move {
                        log.lock().unwrap().push(format!("{name} start on {lane}"));
                        tokio::time::sleep(Duration::from_millis(wait)).await;
                        log.lock().unwrap().push(format!("{name} end"));
                    })
                    .await
            })
        };
        // the later job of `a` is started first
        let second = job("a2", second, 1);
        tokio::time::sleep(Duration::from_millis(20)).await;
        let first = job("a1", first, 100);
        tokio::time::sleep(Duration::from_millis(20)).await;
        let other = job("b", other, 1);
        other.await.unwrap();
        {
            let log = log.lock().unwrap();
            assert!(log.contains(&"b end".to_owned()), "{log:?}");
            assert!(
                !log.contains(&"a1 end".to_owned()),
                "b did not wait for a1: {log:?}"
            );
            assert!(
                !log.iter().any(|l| l.starts_with("a2")),
                "a2 waits for a1: {log:?}"
            );
        }
        first.await.unwrap();
        second.await.unwrap();
        let log = log.lock().unwrap();
        let at = |line: &str| log.iter().position(|l| l.starts_with(line)).unwrap();
        assert!(at("a1 end") < at("a2 start"), "{log:?}");
    }

    /// A cancelled job gives its lane back and lets the next job of its key run.
    #[tokio::test]
    async fn a_cancelled_job_frees_its_lane_and_its_key() {
        let lanes = Arc::new(Lanes::new(1));
        let cut = lanes.turn("a".into());
        let next = lanes.turn("a".into());
        let held = {
            let lanes = lanes.clone();
            tokio::spawn(async move { lanes.run(cut, |_| std::future::pending::<()>()).await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        held.abort();
        let _ = held.await;
        let ran = tokio::time::timeout(
            Duration::from_secs(5),
            lanes.run(next, |lane| async move { lane }),
        )
        .await
        .expect("the next job of the key runs on the freed lane");
        assert_eq!(ran, 0);
    }
}
