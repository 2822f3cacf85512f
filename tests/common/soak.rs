//! What the chaos soaks (tests/chaos.rs, tests/fleet_chaos.rs) share: how
//! long they run, the seed of their random choices, and the generator that
//! replays those choices from it.

use std::time::{SystemTime, UNIX_EPOCH};

/// The soak's length and seed: `SNOWFLAKE_CHAOS_SECS` (else `default_secs`)
/// and `SNOWFLAKE_CHAOS_SEED` (else one from the clock). Prints
/// `{name}: {secs} s, SNOWFLAKE_CHAOS_SEED={seed}` first, so that a failed
/// run can be replayed with the seed it printed.
pub fn settings(name: &str, default_secs: u64) -> (u64, u64) {
    let secs: u64 = std::env::var("SNOWFLAKE_CHAOS_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(default_secs);
    let seed: u64 = std::env::var("SNOWFLAKE_CHAOS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| SystemTime::now().duration_since(UNIX_EPOCH).expect("clock").as_nanos() as u64 | 1);
    println!("{name}: {secs} s, SNOWFLAKE_CHAOS_SEED={seed}");
    (secs, seed)
}

/// xorshift64*: enough randomness for choosing steps, and replayable from a seed.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// A number from `lo` to `hi`, both included.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
    /// A number from 0 to `n - 1`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    pub fn coin(&mut self) -> bool {
        self.next() & 1 == 1
    }
}
