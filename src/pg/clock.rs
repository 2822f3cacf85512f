//! Reading the wall clock and sleeping, the two things every slow path
//! needs; kept apart so that the modules using them do not import each other.

use pgrx::pg_sys;

use super::wait_event::{self, Wait};

/// Wall clock in Unix milliseconds, from `clock_gettime(CLOCK_REALTIME)`
/// called through libc (so libfaketime shifts it in tests like every other
/// reader). Called directly rather than through `SystemTime`, whose checks
/// cost a third more on a path taken once per ID.
pub fn now_unix_ms() -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid out-pointer; CLOCK_REALTIME always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    // Floor division keeps instants before 1970 (a badly set clock) ordered.
    ts.tv_sec * 1000 + ts.tv_nsec.div_euclid(1_000_000)
}

/// Sleeps on the process latch for up to `ms` (a signal that sets the
/// latch, such as a cancel, ends it early; postmaster death ends the process),
/// showing `wait` in `pg_stat_activity` meanwhile.
pub fn sleep_on_latch(ms: i64, wait: Wait) {
    // SAFETY: MyLatch is this process's latch.
    unsafe {
        pg_sys::WaitLatch(
            pg_sys::MyLatch,
            (pg_sys::WL_LATCH_SET | pg_sys::WL_TIMEOUT | pg_sys::WL_EXIT_ON_PM_DEATH) as i32,
            ms as _,
            wait_event::info(wait),
        );
        pg_sys::ResetLatch(pg_sys::MyLatch);
    }
}
