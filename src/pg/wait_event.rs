//! The names `pg_stat_activity.wait_event` shows while IDs wait, so that a
//! DBA whose `snowflake_nextval()` hangs sees on what; the one place that
//! knows which PostgreSQL majors have custom wait events.
//!
//! PostgreSQL 17 and later: custom events of type `Extension`
//! (`SnowflakeIdMaxDrift`, `SnowflakeIdMarkSync`, `SnowflakeIdSyncStandby`),
//! also listed in `pg_wait_events` once registered. 15 and 16 show every
//! extension event as `Extension`/`Extension`, so there the three waits
//! borrow PostgreSQL's own events that mean the same: `IPC`/`SyncRep` for the
//! standby wait (what a committing transaction shows while it waits for a
//! synchronous standby), `IO`/`DataFileSync` for the state file, and
//! `Extension`/`Extension` is left to the `max_drift` wait alone.

use pgrx::pg_sys;

/// Why IDs wait.
#[derive(Clone, Copy)]
pub enum Wait {
    /// The logical clock is `max_drift` ahead of the wall clock.
    MaxDrift = 0,
    /// The state file carrying a new mark is written and fsynced.
    MarkSync = 1,
    /// The synchronous standbys have not flushed the mark's WAL record yet.
    SyncStandby = 2,
}

/// The events of 15 and 16 (and the fallback on 17+ where registering one
/// is not safe). The WAL flush of the mark needs none of ours: PostgreSQL's
/// `XLogFlush` reports `IO`/`WALWrite` and `WALSync` itself.
fn builtin(wait: Wait) -> u32 {
    match wait {
        Wait::MaxDrift => pg_sys::PG_WAIT_EXTENSION,
        Wait::MarkSync => pg_sys::WaitEventIO::WAIT_EVENT_DATA_FILE_SYNC,
        Wait::SyncStandby => pg_sys::WaitEventIPC::WAIT_EVENT_SYNC_REP,
    }
}

#[cfg(any(feature = "pg17", feature = "pg18", feature = "pg19"))]
mod custom {
    use std::ffi::CStr;
    use std::sync::atomic::{AtomicU32, Ordering};

    use pgrx::pg_sys;

    use super::Wait;

    const NAMES: [&CStr; 3] = [c"SnowflakeIdMaxDrift", c"SnowflakeIdMarkSync", c"SnowflakeIdSyncStandby"];

    /// Each process asks once per event. The ids live in PostgreSQL's shared
    /// table keyed by name, so every process gets the same id and
    /// `pg_stat_activity` shows the name whichever process registered it.
    static IDS: [AtomicU32; 3] = [AtomicU32::new(0), AtomicU32::new(0), AtomicU32::new(0)];

    /// Registering takes an LWLock and may raise an ERROR (PostgreSQL keeps
    /// at most 128 custom events across all extensions). The postmaster has
    /// neither shared memory attached at `_PG_init` nor a PGPROC, and in the
    /// startup process (replaying a mark) an ERROR would stop recovery: those
    /// use the built-in event. A backend or the keeper that hits the limit
    /// fails that one call, as dblink and postgres_fdw do with theirs.
    fn may_register() -> bool {
        // SAFETY: process-local globals PostgreSQL sets at process start.
        unsafe {
            pg_sys::IsUnderPostmaster
                && !pg_sys::MyProc.is_null()
                && pg_sys::MyBackendType != pg_sys::BackendType::B_STARTUP
        }
    }

    pub fn info(wait: Wait) -> u32 {
        let slot = &IDS[wait as usize];
        let known = slot.load(Ordering::Relaxed);
        if known != 0 {
            return known;
        }
        if !may_register() {
            return super::builtin(wait);
        }
        // SAFETY: a static, NUL-terminated name shorter than NAMEDATALEN;
        // called from a process attached to shared memory (see may_register).
        let id = unsafe { pg_sys::WaitEventExtensionNew(NAMES[wait as usize].as_ptr()) };
        slot.store(id, Ordering::Relaxed);
        id
    }
}

/// The `wait_event_info` to pass to `WaitLatch` or report around a wait.
pub fn info(wait: Wait) -> u32 {
    #[cfg(any(feature = "pg17", feature = "pg18", feature = "pg19"))]
    {
        custom::info(wait)
    }
    #[cfg(not(any(feature = "pg17", feature = "pg18", feature = "pg19")))]
    {
        builtin(wait)
    }
}

/// Shows `wait` in `pg_stat_activity` until dropped, for waits that are not
/// a `WaitLatch` (file I/O). Dropped on every way out, an ERROR's unwinding
/// included.
#[must_use]
pub struct Reported(());

/// `pgstat_report_wait_start()`, a static inline function in C.
pub fn report(wait: Wait) -> Reported {
    let info = info(wait);
    // SAFETY: my_wait_event_info always points at valid storage (a process
    // local until the PGPROC is set up), as pgstat_report_wait_start assumes.
    unsafe { std::ptr::write_volatile(pg_sys::my_wait_event_info, info) };
    Reported(())
}

impl Drop for Reported {
    /// `pgstat_report_wait_end()`.
    fn drop(&mut self) {
        // SAFETY: as in report().
        unsafe { std::ptr::write_volatile(pg_sys::my_wait_event_info, 0) };
    }
}
