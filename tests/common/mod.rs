pub mod authors;
pub mod cases;
pub mod gate;
pub mod helpdesk;
pub mod live;

use std::time::{Duration, Instant};

/// Polls until `check` holds, failing the test after `timeout` with `what`. A check that hangs
/// (a read from a server that stopped answering) fails the test at the same deadline: each
/// check is cut at the time left.
#[allow(dead_code)]
pub async fn eventually<F, Fut>(timeout: Duration, what: &str, mut check: F) -> Duration
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let start = Instant::now();
    loop {
        let left = timeout.saturating_sub(start.elapsed());
        match tokio::time::timeout(left, check()).await {
            Ok(true) => return start.elapsed(),
            Ok(false) => {}
            Err(_) => panic!("{what}: a check still running at the deadline of {timeout:?}"),
        }
        assert!(
            start.elapsed() < timeout,
            "{what}: not reached within {timeout:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Awaits `future`, failing the test with `what` if it is not done within `timeout`.
#[allow(dead_code)]
pub async fn within<T>(
    timeout: Duration,
    what: &str,
    future: impl std::future::Future<Output = T>,
) -> T {
    tokio::time::timeout(timeout, future)
        .await
        .unwrap_or_else(|_| panic!("{what}: not done within {timeout:?}"))
}

/// Waits until `worker` is ready (holding its lease, or standing by), failing the test after
/// 30 s.
#[allow(dead_code)]
pub async fn ready(worker: &mongo_schema::SyncWorkerHandle) {
    ready_within(worker, Duration::from_secs(30)).await;
}

/// Waits until `worker` is ready, failing the test after `timeout` (a worker that starts
/// behind a large catch-up or on a loaded server).
#[allow(dead_code)]
pub async fn ready_within(worker: &mongo_schema::SyncWorkerHandle, timeout: Duration) {
    within(timeout, "the sync worker is ready", worker.ready())
        .await
        .expect("the sync worker is ready");
}

/// Shuts `worker` down, failing the test unless it ends cleanly within 30 s.
#[allow(dead_code)]
pub async fn shut_down(worker: mongo_schema::SyncWorkerHandle) {
    within(
        Duration::from_secs(30),
        "the sync worker shuts down",
        worker.shutdown(),
    )
    .await
    .expect("the sync worker ends cleanly");
}
