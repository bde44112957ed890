//! A lease on the server's clock, shared by the sync worker (one active worker per name, see
//! `sync::lease`) and `apply` (one writer at a time, see `deploy::lock`).
//!
//! Expiry is the server's clock (`$$NOW`), so processes on machines whose clocks disagree still
//! agree on it. The holder may act until its own clock says the lease may have lapsed, measured
//! from the moment it *sent* the write that granted or renewed it, which is no later than the
//! moment the server stamped it, minus a tenth of the lease as a margin; so a contender can only
//! take over after the holder has stopped (a write already in flight may still land: the sync
//! worker fences its writes, see `sync::fence`).
//!
//! The holder's clock is [`LeaseInstant`]: `CLOCK_BOOTTIME` on Linux, which keeps counting while
//! the machine is suspended. `std`'s and tokio's `Instant` (`CLOCK_MONOTONIC`) stop during a
//! suspend, so a laptop or VM resumed after a long sleep would otherwise believe it still holds
//! a lease that lapsed hours ago.

use std::sync::Mutex;
use std::time::Duration;

use mongodb::bson::{doc, Bson, DateTime, Document as BsonDocument};
use mongodb::Collection;
use tokio::time::Instant;

use crate::error::Result;
use crate::random::random_u64;

/// A point on the lease clock: time since boot *including* time suspended (Linux and Android:
/// `CLOCK_BOOTTIME`; macOS and iOS: `CLOCK_MONOTONIC`, which counts sleep there; elsewhere the
/// standard monotonic clock, which may not).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct LeaseInstant(Duration);

impl LeaseInstant {
    /// Now, on the lease clock.
    pub(crate) fn now() -> LeaseInstant {
        LeaseInstant(clock_now())
    }

    /// The time from `self` until `later` (zero if `later` is not later).
    pub(crate) fn until(self, later: LeaseInstant) -> Duration {
        later.0.saturating_sub(self.0)
    }
}

impl std::ops::Add<Duration> for LeaseInstant {
    type Output = LeaseInstant;
    fn add(self, rhs: Duration) -> LeaseInstant {
        LeaseInstant(self.0 + rhs)
    }
}

/// A tokio instant on the lease clock: now on the lease clock minus the monotonic time elapsed
/// since it. Exact unless the machine was suspended in between (then it is later than the true
/// moment): callers that can should take [`LeaseInstant::now`] themselves.
impl From<Instant> for LeaseInstant {
    fn from(instant: Instant) -> LeaseInstant {
        let now = clock_now();
        LeaseInstant(now.saturating_sub(instant.elapsed()))
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
const LEASE_CLOCK: libc::clockid_t = libc::CLOCK_BOOTTIME;
#[cfg(all(unix, not(any(target_os = "linux", target_os = "android"))))]
const LEASE_CLOCK: libc::clockid_t = libc::CLOCK_MONOTONIC;

#[cfg(unix)]
fn clock_now() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid, writable timespec; the clock id is a constant the platform has
    let status = unsafe { libc::clock_gettime(LEASE_CLOCK, &mut now) };
    if status != 0 {
        return fallback_now();
    }
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

#[cfg(not(unix))]
fn clock_now() -> Duration {
    fallback_now()
}

/// The standard monotonic clock, from the first reading in this process.
fn fallback_now() -> Duration {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    START.get_or_init(std::time::Instant::now).elapsed()
}

#[derive(Debug)]
pub(crate) struct ServerLease {
    owner: String,
    duration: Duration,
    /// Until when this process may act as the holder (`None`: it does not hold the lease).
    valid_until: Mutex<Option<LeaseInstant>>,
}

impl ServerLease {
    /// A lease of `duration`, with a fresh owner id (process id and a random number).
    pub(crate) fn new(duration: Duration) -> Self {
        ServerLease {
            owner: Self::fresh_owner(),
            duration,
            valid_until: Mutex::new(None),
        }
    }

    /// A lease of `duration` held under a given owner id (the sync worker's partitions of one
    /// handle share theirs, so `status` tells which process holds which partition).
    pub(crate) fn with_owner(duration: Duration, owner: String) -> Self {
        ServerLease {
            owner,
            duration,
            valid_until: Mutex::new(None),
        }
    }

    /// A fresh owner id: this process's id and a random number.
    pub(crate) fn fresh_owner() -> String {
        format!("{}-{:016x}", std::process::id(), random_u64())
    }

    /// This holder's owner id.
    pub(crate) fn owner(&self) -> &str {
        &self.owner
    }

    /// The lease's length.
    pub(crate) fn duration(&self) -> Duration {
        self.duration
    }

    fn slot(&self) -> std::sync::MutexGuard<'_, Option<LeaseInstant>> {
        self.valid_until.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The expiry a grant or renewal writes: the server's now plus the lease.
    pub(crate) fn expires(&self) -> BsonDocument {
        doc! { "$add": ["$$NOW", self.duration.as_millis() as i64] }
    }

    /// The aggregation expression, for a pipeline update, that says whether the lease held in
    /// `owner_field` / `expires_field` is free for this owner: nobody holds it, this owner does,
    /// or it expired. Dates are compared as milliseconds: SecantusDB 0.7 compares a date
    /// computed from `$$NOW` wrongly (and evaluates no `$$NOW` in a query); `$toLong` of a date
    /// is the same test on mongod.
    pub(crate) fn free(&self, owner_field: &str, expires_field: &str) -> BsonDocument {
        let owner = format!("${owner_field}");
        let expires = format!("${expires_field}");
        doc! { "$or": [
            { "$eq": [{ "$ifNull": [owner.as_str(), Bson::Null] }, Bson::Null] },
            { "$eq": [owner.as_str(), &self.owner] },
            { "$lt": [
                { "$toLong": { "$ifNull": [expires.as_str(), DateTime::from_millis(0)] } },
                { "$toLong": "$$NOW" },
            ] },
        ] }
    }

    /// Records a grant or renewal whose write was sent at `sent` (a [`LeaseInstant`], or a tokio
    /// `Instant`, converted).
    pub(crate) fn granted(&self, sent: impl Into<LeaseInstant>) {
        *self.slot() = Some(sent.into() + (self.duration - self.duration / 10));
    }

    /// Forgets the lease locally.
    pub(crate) fn lost(&self) {
        *self.slot() = None;
    }

    /// Whether this process may still act as the holder.
    pub(crate) fn holds(&self) -> bool {
        self.until()
            .is_some_and(|until| LeaseInstant::now() < until)
    }

    /// Whether a grant was recorded and not lost (the lease may have lapsed since).
    pub(crate) fn claimed(&self) -> bool {
        self.slot().is_some()
    }

    /// Until when this process may act as the holder, on the lease clock.
    pub(crate) fn until(&self) -> Option<LeaseInstant> {
        *self.slot()
    }

    /// How much longer this process may act as the holder (`None`: it may not).
    pub(crate) fn remaining(&self) -> Option<Duration> {
        let until = self.until()?;
        let now = LeaseInstant::now();
        (now < until).then(|| now.until(until))
    }

    /// Extends the lease in the document `owned` matches (a filter naming this owner); `false`,
    /// and the lease forgotten, when none does (another holder took it).
    pub(crate) async fn renew(
        &self,
        collection: &Collection<BsonDocument>,
        owned: BsonDocument,
        expires_field: &str,
    ) -> Result<bool> {
        let sent = LeaseInstant::now();
        let update = vec![doc! { "$set": { expires_field: self.expires() } }];
        let result = collection.update_one(owned, update).await?;
        if result.matched_count == 1 {
            self.granted(sent);
            Ok(true)
        } else {
            self.lost();
            Ok(false)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On Linux the lease clock is `CLOCK_BOOTTIME`, which is what `/proc/uptime` reports
    /// (uptime includes time suspended); `CLOCK_MONOTONIC` falls behind it once a machine has
    /// been suspended.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_lease_clock_counts_time_suspended() {
        let uptime: f64 = std::fs::read_to_string("/proc/uptime")
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let clock = LeaseInstant::now().0.as_secs_f64();
        assert!((clock - uptime).abs() < 1.0, "{clock} vs {uptime}");
    }

    #[test]
    fn a_grant_holds_until_nine_tenths_of_the_lease_after_its_send() {
        let lease = ServerLease::new(Duration::from_millis(400));
        assert!(!lease.holds() && !lease.claimed());
        lease.granted(LeaseInstant::now());
        assert!(lease.holds());
        let remaining = lease.remaining().unwrap();
        assert!(remaining <= Duration::from_millis(360) && remaining > Duration::from_millis(300));
        // a grant sent long ago has lapsed already
        let long_ago = Instant::now()
            .checked_sub(Duration::from_secs(1))
            .unwrap_or_else(Instant::now);
        lease.granted(long_ago);
        assert!(!lease.holds() && lease.claimed() && lease.remaining().is_none());
        lease.lost();
        assert!(!lease.claimed());
    }
}
