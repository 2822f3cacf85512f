//! This postmaster start's identity: a random number drawn once in the
//! postmaster (at `_PG_init`) and inherited by every process it forks, the
//! ones forked after a crash reinitialised shared memory included. A copy
//! of the data directory, or the same one started again, draws another:
//! the registry tells them apart by it (`snowflake_registry.instance`).

use std::sync::atomic::{AtomicI64, Ordering};

static INSTANCE: AtomicI64 = AtomicI64::new(0);

/// Draws the instance; in the postmaster, before it forks anything.
pub fn init() {
    let mut bytes = [0u8; 8];
    // SAFETY: the buffer is valid for its length.
    let strong = unsafe { pgrx::pg_sys::pg_strong_random(bytes.as_mut_ptr().cast(), bytes.len()) };
    let mut value = i64::from_ne_bytes(bytes) & i64::MAX;
    if !strong || value == 0 {
        // No strong randomness: time and process id still differ between
        // starts, which is all the identity needs.
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        value = ((nanos as i64) ^ (i64::from(std::process::id()) << 40)).abs().max(1);
    }
    INSTANCE.store(value, Ordering::Relaxed);
}

/// The instance drawn at this postmaster's start (0 before `init`).
pub fn id() -> i64 {
    INSTANCE.load(Ordering::Relaxed)
}
