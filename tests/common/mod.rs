pub mod cases;
pub mod gate;
pub mod helpdesk;
pub mod live;

use std::time::{Duration, Instant};

/// Polls until `check` holds, failing the test after `timeout` with `what`; a check that hangs
/// is cut at the same deadline and fails the test too.
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
            Err(_) => panic!("{what}: a check did not return within {timeout:?}"),
        }
        assert!(
            start.elapsed() < timeout,
            "{what}: not reached within {timeout:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
