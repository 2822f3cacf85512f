//! Where this server stands in replication: in recovery or not, on which
//! timeline, and which cluster it is.

use std::sync::atomic::{AtomicBool, Ordering};

use pgrx::pg_sys;

/// Set once this backend has seen recovery over: a backend never goes back
/// into recovery, so later calls skip the check (a guarded FFI call).
static OUT_OF_RECOVERY: AtomicBool = AtomicBool::new(false);

/// Whether this server is a standby (or still replaying after a crash).
/// Inlined: once recovery is over it is one load on every ID's path.
#[inline]
pub fn in_recovery() -> bool {
    if OUT_OF_RECOVERY.load(Ordering::Relaxed) {
        return false;
    }
    asked_in_recovery()
}

#[cold]
#[inline(never)]
fn asked_in_recovery() -> bool {
    // SAFETY: plain query of the shared recovery state.
    let recovering = unsafe { pg_sys::RecoveryInProgress() };
    if !recovering {
        OUT_OF_RECOVERY.store(true, Ordering::Relaxed);
    }
    recovering
}

/// The timeline this server writes WAL on (only asked where IDs are issued,
/// so never during recovery).
pub fn current_timeline() -> i64 {
    // SAFETY: a plain read of shared state.
    unsafe { pg_sys::GetWALInsertionTimeLine() }.into()
}

/// The system identifier (shared by a primary and its standbys), as text
/// since it is an unsigned 64-bit number.
pub fn system_identifier() -> String {
    // SAFETY: a plain read of the control file's copy in shared memory.
    unsafe { pg_sys::GetSystemIdentifier() }.to_string()
}
