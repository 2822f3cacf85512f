//! The level map of the history slots (past-instant IDs) in shared memory:
//! the copy every backend claims from, loaded from `snowflake_id.history`
//! by the first claim after a start or a replay, under its own LWLock
//! because a claim writes the file and WAL while holding it (claims are
//! rare: a few dozen per import), and the live generator must not wait on
//! them.

use pgrx::{pg_shmem_init, PGRXSharedMemory, PgLwLock};
use snowflake_id_core::past_instants::{Interval, LevelMap};
use snowflake_id_core::StoredLayout;

/// Intervals the map keeps; more are merged at the larger level
/// (`LevelMap::coarsen`), which only wastes slots.
pub const MAX_INTERVALS: usize = 2048;

#[repr(C)]
#[derive(Clone, Copy)]
pub struct PastInstantsShared {
    /// Whether `layout`, `floor` and the intervals are the file's: false
    /// after a start, and after redo rewrote the file (the next claim reads it).
    pub loaded: bool,
    pub layout: StoredLayout,
    pub floor: i64,
    /// With a leased worker id: the lease (worker id, epoch) whose claims
    /// recorded in the registry the map was raised by (worker id -1: none).
    /// Cleared whenever the map is read from the file again.
    pub applied: (i64, i64),
    pub len: usize,
    pub intervals: [Interval; MAX_INTERVALS],
}

// SAFETY: plain old data with no pointers.
unsafe impl PGRXSharedMemory for PastInstantsShared {}

impl PastInstantsShared {
    pub fn map(&self) -> LevelMap {
        LevelMap::from_parts(self.floor, self.intervals[..self.len].to_vec())
    }

    /// Keeps `map` (at most [`MAX_INTERVALS`] intervals: coarsen it first).
    pub fn set(&mut self, layout: StoredLayout, map: &LevelMap) {
        let intervals = map.intervals();
        assert!(intervals.len() <= MAX_INTERVALS, "a level map of {} intervals", intervals.len());
        self.intervals[..intervals.len()].copy_from_slice(intervals);
        self.len = intervals.len();
        self.floor = map.floor();
        self.layout = layout;
        self.loaded = true;
    }
}

/// The LWLock keeps the name it had before the module was renamed,
/// `snowflake_id_history`: `pg_stat_activity` shows it as a wait event, and
/// monitoring may look for it.
static LEVEL_MAP: PgLwLock<PastInstantsShared> = unsafe { PgLwLock::new(c"snowflake_id_history") };

/// Called from `shmem::init` while preload libraries load.
pub(super) fn init() {
    pg_shmem_init!(
        LEVEL_MAP = PastInstantsShared {
            loaded: false,
            layout: StoredLayout { worker_bits: 0, sequence_bits: 0, epoch_ms: 0, worker_id: -1 },
            floor: 0,
            applied: (-1, 0),
            len: 0,
            intervals: [Interval { from: 0, to: 0, level: 0 }; MAX_INTERVALS],
        }
    );
}

/// The map, held for a claim or a replay (both write the file under it).
pub fn lock() -> pgrx::lwlock::PgLwLockExclusiveGuard<'static, PastInstantsShared> {
    LEVEL_MAP.exclusive()
}
