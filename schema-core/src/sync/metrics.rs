//! The sync worker's metrics, through the [`metrics`](https://docs.rs/metrics) facade: any
//! recorder the service installs (a Prometheus exporter, OpenTelemetry, ...) receives them;
//! without one they cost an atomic load. Prometheus naming: counters end in `_total`, durations
//! are `_seconds`, labels are few and bounded (`worker`, the worker's name; `copy`, the copy's
//! `holder.path`; never an id).
//!
//! | name | kind | labels | what |
//! |---|---|---|---|
//! | `mongo_schema_sync_events_total` | counter | `worker` | change events received |
//! | `mongo_schema_sync_events_applied_total` | counter | `worker` | events that touched a copy (or a subset's child) and were applied |
//! | `mongo_schema_sync_holders_rewritten_total` | counter | `worker`, `copy` | holder documents whose copy was rewritten |
//! | `mongo_schema_sync_holders_unset_total` | counter | `worker`, `copy` | holder documents whose copy was unset (source deleted) |
//! | `mongo_schema_sync_failures_total` | counter | `worker`, `copy` | holders that could not take their copy (recorded in `mongo_schema_sync_failures`) |
//! | `mongo_schema_sync_fan_out_seconds` | histogram | `worker`, `copy` | time of one source's fan-out to its holders |
//! | `mongo_schema_sync_chunk_seconds` | histogram | `copy` | time of one chunk of a fan-out (at most [`FAN_OUT_CHUNK`](super::FAN_OUT_CHUNK) holders, one transaction) |
//! | `mongo_schema_sync_lag_seconds` | gauge | `worker` | from the source change's `wallTime` to its copies rewritten, last applied event |
//! | `mongo_schema_sync_takeovers_total` | counter | `worker` | times this process took its name's lease |
//! | `mongo_schema_sync_active` | gauge | `worker` | 1 while this process holds the lease, else 0 (partitioned: how many partitions this worker holds) |
//! | `mongo_schema_sync_reopened_total` | counter | `worker` | change stream reopened after an error |
//! | `mongo_schema_sync_token_age_seconds` | gauge | `worker` | age of the last saved resume token's cluster time, when it was saved |
//! | `mongo_schema_sync_stalls_total` | counter | `worker` | times the watchdog found the worker stalled and reopened its stream ([`SyncWorker::stall_timeout`](crate::SyncWorker::stall_timeout)) |

use std::time::Duration;

/// `mongo_schema_sync_events_total`.
pub const EVENTS: &str = "mongo_schema_sync_events_total";
/// `mongo_schema_sync_events_applied_total`.
pub const EVENTS_APPLIED: &str = "mongo_schema_sync_events_applied_total";
/// `mongo_schema_sync_holders_rewritten_total`.
pub const HOLDERS_REWRITTEN: &str = "mongo_schema_sync_holders_rewritten_total";
/// `mongo_schema_sync_holders_unset_total`.
pub const HOLDERS_UNSET: &str = "mongo_schema_sync_holders_unset_total";
/// `mongo_schema_sync_failures_total`.
pub const FAILURES: &str = "mongo_schema_sync_failures_total";
/// `mongo_schema_sync_fan_out_seconds`.
pub const FAN_OUT_SECONDS: &str = "mongo_schema_sync_fan_out_seconds";
/// `mongo_schema_sync_chunk_seconds`.
pub const CHUNK_SECONDS: &str = "mongo_schema_sync_chunk_seconds";
/// `mongo_schema_sync_lag_seconds`.
pub const LAG_SECONDS: &str = "mongo_schema_sync_lag_seconds";
/// `mongo_schema_sync_takeovers_total`.
pub const TAKEOVERS: &str = "mongo_schema_sync_takeovers_total";
/// `mongo_schema_sync_active`.
pub const ACTIVE: &str = "mongo_schema_sync_active";
/// `mongo_schema_sync_reopened_total`.
pub const REOPENED: &str = "mongo_schema_sync_reopened_total";
/// `mongo_schema_sync_token_age_seconds`.
pub const TOKEN_AGE_SECONDS: &str = "mongo_schema_sync_token_age_seconds";

/// `mongo_schema_sync_stalls_total`.
pub const STALLS: &str = "mongo_schema_sync_stalls_total";

/// Every metric name, for exporters that want to describe them up front.
pub const ALL: [&str; 13] = [
    EVENTS,
    EVENTS_APPLIED,
    HOLDERS_REWRITTEN,
    HOLDERS_UNSET,
    FAILURES,
    FAN_OUT_SECONDS,
    CHUNK_SECONDS,
    LAG_SECONDS,
    TAKEOVERS,
    ACTIVE,
    REOPENED,
    TOKEN_AGE_SECONDS,
    STALLS,
];

pub(crate) fn events_received(worker: &str, received: usize) {
    metrics::counter!(EVENTS, "worker" => worker.to_owned()).increment(received as u64);
}

pub(crate) fn events_applied(worker: &str, applied: usize) {
    metrics::counter!(EVENTS_APPLIED, "worker" => worker.to_owned()).increment(applied as u64);
}

/// One source's fan-out to the holders of `copy` (`holder.path`).
pub(crate) fn fan_out(
    worker: &str,
    copy: &str,
    deletion: bool,
    took: Duration,
    written: u64,
    failed: u64,
) {
    let labels = [("worker", worker.to_owned()), ("copy", copy.to_owned())];
    let written_name = if deletion {
        HOLDERS_UNSET
    } else {
        HOLDERS_REWRITTEN
    };
    metrics::counter!(written_name, &labels).increment(written);
    if failed > 0 {
        metrics::counter!(FAILURES, &labels).increment(failed);
    }
    metrics::histogram!(FAN_OUT_SECONDS, &labels).record(took.as_secs_f64());
}

/// One chunk of a fan-out to the holders of `copy` (`holder.path`), written or not.
pub(crate) fn chunk(copy: &str, took: Duration) {
    metrics::histogram!(CHUNK_SECONDS, "copy" => copy.to_owned()).record(took.as_secs_f64());
}

pub(crate) fn lag(worker: &str, lag_ms: u64) {
    metrics::gauge!(LAG_SECONDS, "worker" => worker.to_owned()).set(lag_ms as f64 / 1000.0);
}

/// This worker took a lease (of its name, or of one of its partitions).
pub(crate) fn took_over(worker: &str) {
    metrics::counter!(TAKEOVERS, "worker" => worker.to_owned()).increment(1);
}

/// How many leases of its name this worker holds: 0 or 1, or, with partitions, how many
/// partitions.
pub(crate) fn held(worker: &str, held: usize) {
    metrics::gauge!(ACTIVE, "worker" => worker.to_owned()).set(held as f64);
}

pub(crate) fn stalled(worker: &str) {
    metrics::counter!(STALLS, "worker" => worker.to_owned()).increment(1);
}

pub(crate) fn reopened(worker: &str) {
    metrics::counter!(REOPENED, "worker" => worker.to_owned()).increment(1);
}

/// A token saved whose last event has cluster time `time` (seconds).
pub(crate) fn token_saved(worker: &str, time: Option<mongodb::bson::Timestamp>) {
    if let Some(time) = time {
        let now = mongodb::bson::DateTime::now().timestamp_millis() as f64 / 1000.0;
        let age = (now - f64::from(time.time)).max(0.0);
        metrics::gauge!(TOKEN_AGE_SECONDS, "worker" => worker.to_owned()).set(age);
    }
}
