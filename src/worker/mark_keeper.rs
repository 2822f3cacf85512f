//! The mark keeper: a background worker that extends the durable mark ahead
//! of the IDs being issued, so that queries do not wait for its fsync.
//!
//! Backends still write a mark themselves when they find it used up (the
//! keeper is late, a burst outran its poll, or it is not running):
//! correctness never depends on it, only latency does.

use std::time::{Duration, Instant};

use pgrx::bgworkers::{BackgroundWorker, BackgroundWorkerBuilder, BgWorkerStartTime, SignalWakeFlags};
use pgrx::prelude::*;
use pgrx::{PgLogLevel, PgSqlErrorCode};

use super::registry_keeper::RegistryKeeper;
use crate::service::generator::writer;
use crate::service::registry::lease;
use crate::settings::{self, registry};
use crate::shmem;

/// How often the keeper looks at the mark.
const POLL: Duration = Duration::from_millis(100);

/// After a failed write the keeper waits this long before trying again: a
/// full disk or a read-only directory must not be retried ten times a
/// second (queries that need the mark still try, and fail with 58030).
const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(1);

/// Registers the keeper; called from `_PG_init` in the postmaster.
pub fn register() {
    BackgroundWorkerBuilder::new("snowflake_id mark keeper")
        .set_type("snowflake_id mark keeper")
        .set_library("snowflake_id")
        .set_function("snowflake_id_mark_keeper_main")
        // Shared memory, and a connection to no database (see the main
        // function) so that pg_stat_activity lists it.
        .enable_spi_access()
        // Only where IDs are issued: a standby's mark comes from WAL, and the
        // postmaster starts the keeper when a standby is promoted. (A worker
        // with a connection cannot start earlier anyway.)
        .set_start_time(BgWorkerStartTime::RecoveryFinished)
        .set_restart_time(Some(Duration::from_secs(5)))
        .load();
}

/// Set once the keeper was asked to stop. pgrx's `sigterm_received()`
/// clears its flag when read, so a SIGTERM seen inside a wait (a registry
/// call, a synchronous standby) would otherwise be lost to the main loop
/// and the keeper would run on.
static STOPPING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Sleeps on the latch for up to `poll`; false when the postmaster died
/// (pgrx's `wait_latch` folds that into "stop", and a keeper must tell a
/// crash, after which it leaves its registry lease alone, from a stop).
pub(super) fn wait(poll: Duration) -> bool {
    // SAFETY: this process's latch; reset after waking as the pattern requires.
    let fired = unsafe {
        let fired = pg_sys::WaitLatch(
            pg_sys::MyLatch,
            (pg_sys::WL_LATCH_SET | pg_sys::WL_TIMEOUT | pg_sys::WL_POSTMASTER_DEATH) as i32,
            poll.as_millis() as _,
            pg_sys::PG_WAIT_EXTENSION,
        );
        pg_sys::ResetLatch(pg_sys::MyLatch);
        fired
    };
    fired & pg_sys::WL_POSTMASTER_DEATH as i32 == 0
}

/// Whether SIGTERM has arrived, now or before (in this keeper process).
fn stopping() -> bool {
    use std::sync::atomic::Ordering;
    if BackgroundWorker::sigterm_received() {
        STOPPING.store(true, Ordering::Relaxed);
    }
    STOPPING.load(Ordering::Relaxed)
}

/// What the keeper does whenever its latch wakes it, in its main loop and in
/// every wait inside a turn (the registry, a synchronous standby): what
/// PostgreSQL's own background processes do in their loops
/// (`HandleMainLoopInterrupts`). A ProcSignalBarrier is absorbed, or `DROP
/// DATABASE`, `ALTER DATABASE ... SET TABLESPACE`, `DROP TABLESPACE` and
/// pg_upgrade wait for this process for ever; the configuration is re-read
/// after SIGHUP (`max_drift`, `synchronous_standby_names`);
/// `pg_log_backend_memory_contexts()` is answered. Returns false once SIGTERM
/// has arrived. A cancel (SIGINT) is left alone, as PostgreSQL's own
/// processes leave it: there is no query to cancel.
pub(super) fn keep_going() -> bool {
    answer_interrupts();
    !stopping()
}

/// [`keep_going`] for the one wait that goes on after SIGTERM: releasing the
/// registry lease at a clean stop runs until the call's own timeout.
fn keep_going_after_sigterm() -> bool {
    answer_interrupts();
    true
}

fn answer_interrupts() {
    // SAFETY: flags set by PostgreSQL's signal handlers in this process, and
    // the functions its own processes call when they are set; this process
    // holds no spinlock or LWLock at any of the waits that call this.
    unsafe {
        if pg_sys::ProcSignalBarrierPending != 0 {
            pg_sys::ProcessProcSignalBarrier();
        }
        if BackgroundWorker::sighup_received() {
            pg_sys::ProcessConfigFile(pg_sys::GucContext::PGC_SIGHUP);
        }
        if pg_sys::LogMemoryContextPending != 0 {
            pg_sys::ProcessLogMemoryContextInterrupt();
        }
    }
}

#[pg_guard]
#[no_mangle]
pub extern "C-unwind" fn snowflake_id_mark_keeper_main(_arg: pg_sys::Datum) {
    BackgroundWorker::attach_signal_handlers(SignalWakeFlags::SIGHUP | SignalWakeFlags::SIGTERM);
    // Connected to no database, like PostgreSQL's logical replication
    // launcher: it then has a row in pg_stat_activity (backend_type
    // "snowflake_id mark keeper", and the wait event while it waits for a
    // standby), and pg_terminate_backend() reaches it. It reads no catalog.
    BackgroundWorker::connect_worker_to_spi(None, None);
    // Every line this process logs is about snowflake_id, the registry
    // keeper's too: each names the node.
    crate::pg::report::name_the_node_in_this_process();
    let settings = settings::Settings::get();
    let fixed_worker_id = settings.worker_id.as_ref().ok().copied();
    let (Ok(layout), true) = (&settings.layout, fixed_worker_id.is_some() || registry::used()) else {
        // snowflake_nextval() refuses to run with these settings (the start-up
        // WARNING says why, as does the status view): there is no mark to
        // keep. Exit code 0: not restarted.
        return;
    };
    // With a registry the keeper also holds the worker id's lease.
    let mut lease_keeper = registry::used().then(RegistryKeeper::new);
    shmem::lock().keeper_pid = std::process::id() as i32;
    ereport!(PgLogLevel::LOG, PgSqlErrorCode::ERRCODE_SUCCESSFUL_COMPLETION, "snowflake_id: mark keeper started");
    let mut retry_at = Instant::now();
    let mut postmaster_died = false;
    loop {
        if !wait(POLL) {
            postmaster_died = true;
            break;
        }
        if !keep_going() {
            break;
        }
        if let Some(keeper) = lease_keeper.as_mut() {
            keeper.turn(layout, keep_going);
        }
        if Instant::now() < retry_at {
            continue;
        }
        let worker_id = if registry::used() { lease::leased_worker_id() } else { fixed_worker_id };
        let Some(worker_id) = worker_id else { continue };
        if !writer::retry_failed_write(layout, worker_id) {
            retry_at = Instant::now() + RETRY_AFTER_FAILURE;
            continue;
        }
        if let Err(e) = writer::renew_if_due(layout, worker_id, keep_going) {
            // Backends write the mark themselves when they need it, and fail
            // with the same error (58030) if it persists.
            writer::warn_write_failure(&e);
            retry_at = Instant::now() + RETRY_AFTER_FAILURE;
        }
    }
    // SIGTERM: at shutdown the postmaster does not restart anyone; otherwise
    // (someone killed it) exit code 1 makes it start the keeper again after
    // the restart interval, as it does for its own workers.
    shmem::lock().keeper_pid = 0;
    if let Some(keeper) = lease_keeper.as_mut().filter(|_| !postmaster_died) {
        // SIGTERM: at shutdown the next holder starts right above our last
        // ID; if only the keeper was stopped, its successor takes a new lease
        // within the restart interval (IDs pause until then). Not when the
        // postmaster died: that is a crash, and the restart goes on within
        // the lease on disk.
        keeper.release(layout, keep_going_after_sigterm);
    }
    // SAFETY: ends this background worker process; nothing of ours is held.
    unsafe { pg_sys::proc_exit(1) };
}
