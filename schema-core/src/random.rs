//! Random numbers without a dependency: the jitter of the sync worker's back-off and the
//! owner id of a lease.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};

/// A random 64-bit number from the standard library's per-instance hash keys (no extra
/// dependency; good enough for jitter and for an id that only needs to differ between
/// processes).
pub(crate) fn random_u64() -> u64 {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(0x9e37_79b9_7f4a_7c15);
    hasher.finish()
}
