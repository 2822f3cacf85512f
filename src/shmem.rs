//! The generator's home in shared memory.
//!
//! A spinlock (PostgreSQL's `slock_t`, see `pg/spinlock.rs`) guards the
//! generator state rather than one compare-and-swap word: the state is several words (the counter,
//! the durable mark, the clock-step bookkeeping and the counters the status
//! view shows) that must change together, and the critical section is a
//! handful of arithmetic instructions with no clock read, no I/O and no
//! allocation, which is what a spinlock is for. Anything slow (making the
//! mark durable, starting the generator) is serialised by an LWLock, which
//! sleeps instead of spinning.

use std::sync::atomic::{AtomicBool, Ordering};

use pgrx::prelude::*;
use pgrx::{pg_shmem_init, PGRXSharedMemory, PgAtomic, PgLwLock};
use snowflake_id_core::state_file::Stored;
use snowflake_id_core::GeneratorState;

use crate::pg::spinlock::{Guard, SpinLocked};

pub mod lease;
pub mod log_limit;
pub mod past_instants;
pub mod short_text;

pub use lease::{LeaseState, RegistryShared};
pub use short_text::ShortText;

/// How many topics `log_limit` keeps a time for.
pub const LOG_TOPICS: usize = 6;

/// The shared generator; `generator` is `None` until the first call after
/// server start has read the durable mark.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Shared {
    pub generator: Option<GeneratorState>,
    /// Wall clock (Unix ms) when the generator started, for the status view.
    pub started_unix_ms: i64,
    /// Durable-mark writes done by the mark keeper rather than by a query.
    pub keeper_mark_writes: u64,
    /// The mark written to the state file and WAL. It becomes the
    /// generator's usable mark once synchronous standbys (if any) have the
    /// record; until then it is only a floor for the next start.
    pub written_mark: i64,
    /// End of the newest mark record written here, or replayed here.
    pub mark_lsn: u64,
    /// The newest mark replayed from WAL (crash recovery, a standby).
    pub replayed: Option<Stored>,
    /// The mark keeper's pid while it runs, else 0.
    pub keeper_pid: i32,
    /// When the last rate-limited log line of each topic was sent (Unix ms).
    pub logged_unix_ms: [i64; LOG_TOPICS],
    /// Since when (Unix ms) IDs wait for synchronous standbys, 0 if they do
    /// not, and when a waiter last said it still waits (see `mark/wal.rs`).
    pub standby_wait_since_unix_ms: i64,
    pub standby_wait_seen_unix_ms: i64,
    /// Why the last attempt to write the mark failed, until one succeeds:
    /// the next attempt will most likely fail the same way, and the status
    /// view says so before a query finds out.
    pub write_failure: Option<ShortText>,
    /// The worker id's lease from a registry, when one is used.
    pub registry: RegistryShared,
    pub logical_guard: LogicalGuardShared,
}

/// What the logical replication guard (`service/logical_guard.rs`) remembers.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct LogicalGuardShared {
    /// The generator's count of issued IDs when the guard last saw a row of
    /// its worker id (`None`: not since the start).
    pub issued_at_last_look: Option<u64>,
    /// Rows of this server's worker id applied since the start.
    pub received_own: u64,
    /// The last time rows of its worker id arrived while it issued IDs too.
    pub shared_worker: Option<SharedWorkerSeen>,
}

/// The last rows of this server's worker id that arrived while it issued
/// IDs too: a peer shares the worker id.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct SharedWorkerSeen {
    pub seen_unix_ms: i64,
    pub worker_id: i64,
    /// Where the rows came from: origin and apply worker.
    pub from: ShortText,
}

// SAFETY: plain old data with no pointers.
unsafe impl PGRXSharedMemory for Shared {}

static SHARED: PgAtomic<SpinLocked<Shared>> = unsafe { PgAtomic::new(c"snowflake_id_generator") };

/// Held while the generator starts and while the durable mark is written.
/// Its data is unused: the lock itself is the point.
static STATE_IO: PgLwLock<()> = unsafe { PgLwLock::new(c"snowflake_id_state_io") };

/// Set in the postmaster by `_PG_init` when loaded through
/// `shared_preload_libraries`; every backend inherits it by fork.
static PRELOADED: AtomicBool = AtomicBool::new(false);

/// Called from `_PG_init`: requests the shared memory, but only when
/// PostgreSQL is loading preload libraries, the only time it can be had.
pub fn init() {
    // SAFETY: read-only flag that PostgreSQL sets around preload-library loading.
    if unsafe { !pg_sys::process_shared_preload_libraries_in_progress } {
        return;
    }
    pg_shmem_init!(
        SHARED = SpinLocked::new(Shared {
            generator: None,
            started_unix_ms: 0,
            keeper_mark_writes: 0,
            written_mark: -1,
            mark_lsn: 0,
            replayed: None,
            keeper_pid: 0,
            logged_unix_ms: [0; LOG_TOPICS],
            standby_wait_since_unix_ms: 0,
            standby_wait_seen_unix_ms: 0,
            write_failure: None,
            registry: RegistryShared::new(),
            logical_guard: LogicalGuardShared { issued_at_last_look: None, received_own: 0, shared_worker: None },
        })
    );
    pg_shmem_init!(STATE_IO);
    past_instants::init();
    PRELOADED.store(true, Ordering::Relaxed);
}

pub fn preloaded() -> bool {
    PRELOADED.load(Ordering::Relaxed)
}

/// The spinlock-guarded state. Keep the guard for a few instructions only.
#[inline(always)]
pub fn lock() -> Guard<'static, Shared> {
    SHARED.get().lock()
}

/// Serialises the slow paths; see [`STATE_IO`].
pub fn state_io() -> pgrx::lwlock::PgLwLockExclusiveGuard<'static, ()> {
    STATE_IO.exclusive()
}
