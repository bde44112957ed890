pub mod cases;
pub mod helpdesk;
pub mod live;

use std::time::{Duration, Instant};

/// Polls until `check` holds, failing the test after `timeout` with `what`.
#[allow(dead_code)]
pub async fn eventually<F, Fut>(timeout: Duration, what: &str, mut check: F) -> Duration
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let start = Instant::now();
    loop {
        if check().await {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < timeout,
            "{what}: not reached within {timeout:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
