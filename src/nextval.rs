//! Drawing one ID: the core's state machine driven under the spinlock, with
//! every slow step it asks for (re-reading the clock, making the mark
//! durable, waiting out `max_drift`, starting the generator) done between
//! lock holds.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use pgrx::bgworkers::BackgroundWorker;
use pgrx::{pg_sys, PgLogLevel, PgSqlErrorCode};
use snowflake_id_core::generator::lease_target;
use snowflake_id_core::mark_record::Kind;
use snowflake_id_core::state_file::{resume_floor, Stored};
use snowflake_id_core::{GeneratorState, Layout, Policy, Step, StoredLayout};

use crate::durable::{self, ReadError, WriteError};
use crate::errors::{raise_core, raise_io, raise_not_preloaded, raise_read_only, raise_setting};
use crate::{guc, shmem, wal};

/// How far ahead of need a durable reservation reaches: after a crash the
/// next ID is at most this far ahead of the last one issued.
pub const LEASE_MS: i64 = 1000;

/// The mark keeper renews when the mark is this close (ms): two fsyncs per
/// second at most.
const KEEPER_RENEWS_WITHIN_MS: i64 = LEASE_MS / 2;

/// ...for this long (ms) after the last ID, so that a caller after a pause
/// finds the mark ahead; after that an idle server writes nothing.
const KEEPER_ACTIVE_MS: i64 = 10_000;

/// A backend renews on its own only when the keeper is this late: closer to
/// the mark than the keeper waits for, plus more than a poll interval.
const BACKEND_RENEWS_WITHIN_MS: i64 = LEASE_MS / 4;

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

/// The layout and worker id, or the error that stops IDs being issued.
pub fn generator_settings() -> (Layout, i64) {
    if !shmem::preloaded() {
        raise_not_preloaded();
    }
    let settings = guc::Settings::get();
    let layout = *settings.layout.as_ref().unwrap_or_else(|e| raise_setting(e));
    let worker_id = *settings.worker_id.as_ref().unwrap_or_else(|e| raise_setting(e));
    (layout, worker_id)
}

/// Set once this backend has seen recovery over: a backend never goes back
/// into recovery, so later calls skip the check (a guarded FFI call).
static OUT_OF_RECOVERY: AtomicBool = AtomicBool::new(false);

/// Whether this server is a standby (or still replaying after a crash).
pub fn in_recovery() -> bool {
    if OUT_OF_RECOVERY.load(Ordering::Relaxed) {
        return false;
    }
    // SAFETY: plain query of the shared recovery state.
    let recovering = unsafe { pg_sys::RecoveryInProgress() };
    if !recovering {
        OUT_OF_RECOVERY.store(true, Ordering::Relaxed);
    }
    recovering
}

/// Only a primary issues IDs, and only in a transaction that may write,
/// like `nextval()`: a standby would repeat its primary's IDs, and a
/// read-only transaction promised not to change anything durable.
pub fn check_may_issue(function: &str) {
    if in_recovery() {
        raise_read_only(function, "during recovery", true);
    }
    // SAFETY: a plain global of the current transaction.
    if unsafe { pg_sys::XactReadOnly } {
        raise_read_only(function, "in a read-only transaction", false);
    }
}

pub fn next_id() -> i64 {
    check_may_issue("snowflake_nextval()");
    let (layout, worker_id) = generator_settings();
    let policy =
        Policy { max_drift_ms: guc::max_drift_ms(), lease_ms: LEASE_MS, renew_within_ms: BACKEND_RENEWS_WITHIN_MS };
    let mut confirm = None;
    loop {
        let now = now_unix_ms().saturating_sub(layout.epoch_ms());
        let decision = shmem::lock().generator.as_mut().map(|g| g.next(&layout, now, policy, confirm));
        confirm = None;
        let Some(decision) = decision else {
            start(&layout, worker_id);
            continue;
        };
        let decision = decision.unwrap_or_else(|e| raise_core(&e));
        if decision.stepped_back_ms > 0 {
            warn_step_back(decision.stepped_back_ms, false);
        }
        match decision.step {
            Step::Issued { counter, renew } => {
                if renew {
                    let target = lease_target(counter >> layout.sequence_bits(), now, LEASE_MS);
                    // The ID is already covered; a failed early renewal only warns
                    // (rarely), and the next caller that needs the mark tries again.
                    if let Err(e) = reserve(&layout, worker_id, target, target, Kind::Mark, Writer::Query, true) {
                        warn_write_failure(&e);
                    }
                }
                return layout.id_from_counter(counter, worker_id);
            }
            Step::Recheck { seen } => confirm = Some(seen),
            Step::NeedLease { through } => {
                let target = lease_target(through, now, LEASE_MS);
                if let Err(e) = reserve(&layout, worker_id, through, target, Kind::Mark, Writer::Query, false) {
                    raise_io(e.to_string());
                }
            }
            Step::Wait { until } => wait_ms(until - now),
        }
    }
}

/// Starts the shared generator above the durable mark, once per server
/// start (or promotion): above the later of the state file and the mark
/// replayed from WAL, and the clock.
fn start(layout: &Layout, worker_id: i64) {
    let outcome = {
        let _io = shmem::state_io();
        if shmem::lock().generator.is_some() {
            return;
        }
        let now_ms = now_unix_ms();
        (|| {
            layout.check_clock(now_ms).map_err(ReadError::Invalid)?;
            let stored = Stored::later(durable::read()?, shmem::lock().replayed);
            let now = now_ms - layout.epoch_ms();
            let floor = resume_floor(stored.as_ref(), layout, worker_id, now, guc::allow_layout_change())
                .map_err(ReadError::Invalid)?;
            // A mark reaches at most a lease past the clock of the moment it
            // was written, so a clock further behind it than that went back
            // while the server was down (or the old logical clock had run
            // ahead). Count it like a step back while running.
            let behind = (floor - 1 - LEASE_MS - now).max(0);
            let mut generator = GeneratorState::resume(layout, floor, floor - 1, now);
            if behind > 0 {
                generator.counters.steps_back = 1;
                generator.counters.largest_step_back_ms = behind;
            }
            let mut guard = shmem::lock();
            guard.generator = Some(generator);
            guard.written_lease = floor - 1;
            guard.started_unix_ms = now_ms;
            Ok(behind)
        })()
    };
    match outcome {
        Ok(0) => {}
        Ok(behind) => warn_step_back(behind, true),
        Err(ReadError::Invalid(e)) => raise_core(&e),
        Err(ReadError::Io(e)) => durable::raise_read_failure(&e),
    }
}

/// The mark keeper's turn: extends the mark if IDs were issued lately and
/// it is getting close. Returns whether it wrote.
pub fn renew_if_due(layout: &Layout, worker_id: i64) -> Result<bool, WriteError> {
    if in_recovery() {
        // Only where IDs are issued; a standby's mark comes from WAL.
        return Ok(false);
    }
    let now = now_unix_ms().saturating_sub(layout.epoch_ms());
    let due = shmem::lock().generator.and_then(|g| {
        g.renewal_due(layout, now, KEEPER_ACTIVE_MS, KEEPER_RENEWS_WITHIN_MS)
            .then(|| lease_target(g.last_counter() >> layout.sequence_bits(), now, LEASE_MS))
    });
    let Some(target) = due else { return Ok(false) };
    let wrote = reserve(layout, worker_id, target, target, Kind::Mark, Writer::Keeper, true)?;
    if wrote {
        shmem::lock().keeper_mark_writes += 1;
    }
    Ok(wrote)
}

/// Who makes the mark durable, which decides how a wait for synchronous
/// standbys may end.
#[derive(Clone, Copy)]
pub enum Writer {
    /// A backend: statement_timeout and pg_cancel_backend end the wait with an ERROR.
    Query,
    /// The mark keeper: SIGTERM ends the wait.
    Keeper,
}

impl Writer {
    fn keep_waiting(self) -> fn() -> bool {
        match self {
            Writer::Query => || {
                crate::errors::check_for_interrupts();
                true
            },
            Writer::Keeper => || !BackgroundWorker::sigterm_received(),
        }
    }
}

fn stored_layout(layout: &Layout, worker_id: i64) -> StoredLayout {
    StoredLayout {
        worker_bits: layout.worker_bits(),
        sequence_bits: layout.sequence_bits(),
        epoch_ms: layout.epoch_ms(),
        worker_id,
    }
}

/// After a failed write, renewals ahead of need (the keeper's, a query's
/// early one) wait this long (ms) before trying again: a full disk or a
/// read-only directory must not be retried, and warned about, per ID.
const WRITE_RETRY_MS: i64 = 1000;

/// At most one WARNING about failed writes per this many ms, server-wide.
const WRITE_WARNING_EVERY_MS: i64 = 10_000;

/// Makes ticks up to `target` durable unless ticks up to `through` already
/// are, then lets the generator use them. Returns whether it wrote.
/// `optional` renewals (ahead of need) are skipped while a failed write is
/// backing off; a needed one always tries, and its failure is the caller's
/// ERROR.
///
/// Under the LWLock: the state file first (so that a base backup taken
/// meanwhile copies a mark at least as new as any record before its
/// checkpoint), then the WAL record, flushed. Then, without any lock, the
/// wait for synchronous standbys, which may be long and must stay
/// interruptible; only after it may IDs under the new mark be issued. The
/// file never moves backwards because all writers hold the LWLock and write
/// at least what was written before.
#[allow(clippy::too_many_arguments)]
fn reserve(
    layout: &Layout,
    worker_id: i64,
    through: i64,
    target: i64,
    kind: Kind,
    writer: Writer,
    optional: bool,
) -> Result<bool, WriteError> {
    let (lease, lsn, wrote) = {
        let _io = shmem::state_io();
        let (usable, written, lsn) = {
            let shared = shmem::lock();
            match shared.generator.as_ref() {
                Some(g) => (g.lease_until(), shared.written_lease, shared.mark_lsn),
                None => return Ok(false),
            }
        };
        if usable >= through {
            with_generator(GeneratorState::abandon_renewal);
            return Ok(false);
        }
        if written >= through {
            // Written by another caller whose standby wait is not over yet.
            (written, lsn, false)
        } else {
            let now_ms = now_unix_ms();
            if optional && now_ms < shmem::lock().write_retry_after_unix_ms {
                with_generator(GeneratorState::abandon_renewal);
                return Ok(false);
            }
            let stored = Stored { layout: stored_layout(layout, worker_id), lease_until: target.max(written) };
            if let Err(e) = durable::write(&stored) {
                shmem::lock().write_retry_after_unix_ms = now_ms + WRITE_RETRY_MS;
                with_generator(GeneratorState::abandon_renewal);
                return Err(e);
            }
            let lsn = wal::log_mark(kind, &stored);
            let mut shared = shmem::lock();
            shared.write_retry_after_unix_ms = 0;
            shared.written_lease = stored.lease_until;
            shared.mark_lsn = lsn;
            if let Some(g) = shared.generator.as_mut() {
                g.counters.leases += 1;
            }
            (stored.lease_until, lsn, true)
        }
    };
    if !wal::wait_for_sync_standbys(lsn, writer.keep_waiting()) {
        with_generator(GeneratorState::abandon_renewal);
        return Ok(false);
    }
    with_generator(|g| g.extend_lease(lease));
    Ok(wrote)
}

/// Moves the generator past `id` (IDs restored from a dump, copied from
/// another cluster): every ID issued afterwards is greater. The new mark is
/// made durable and WAL-logged first, so a crash or failover right after
/// keeps it. Returns the smallest ID the next call may return.
pub fn advance_past(id: i64) -> i64 {
    check_may_issue("snowflake_advance_past()");
    let (layout, worker_id) = generator_settings();
    let tick = layout.decode(id).map(|p| p.unix_ms - layout.epoch_ms()).unwrap_or_else(|e| raise_core(&e));
    if tick >= layout.max_tick() {
        raise_core(&snowflake_id_core::Error::Exhausted { last_ms: layout.last_unix_ms() });
    }
    if shmem::lock().generator.is_none() {
        start(&layout, worker_id);
    }
    let now = now_unix_ms().saturating_sub(layout.epoch_ms());
    let through = tick + 1;
    let target = lease_target(through, now, LEASE_MS);
    if let Err(e) = reserve(&layout, worker_id, through, target, Kind::Advance, Writer::Query, false) {
        raise_io(e.to_string());
    }
    let next =
        shmem::lock().generator.as_mut().map(|g| g.advance_past(&layout, tick, now).map(|_| g.last_counter() + 1));
    match next {
        Some(Ok(next)) => layout.id_from_counter(next, worker_id),
        Some(Err(e)) => raise_core(&e),
        // start() above returns only with a generator in place.
        None => crate::errors::raise(
            PgSqlErrorCode::ERRCODE_INTERNAL_ERROR,
            "snowflake_id: the generator is not running".into(),
            None,
            None,
        ),
    }
}

/// A renewal ahead of need failed: a WARNING, at most one every ten seconds
/// across the server, whoever hit it (queries or the keeper).
pub fn warn_write_failure(e: &WriteError) {
    let now_ms = now_unix_ms();
    let due = {
        let mut shared = shmem::lock();
        let due = now_ms - shared.write_warned_unix_ms >= WRITE_WARNING_EVERY_MS;
        if due {
            shared.write_warned_unix_ms = now_ms;
        }
        due
    };
    if due {
        pgrx::pg_sys::panic::ErrorReport::new(
            PgSqlErrorCode::ERRCODE_IO_ERROR,
            format!("snowflake_id: could not renew the durable mark: {e}"),
            "snowflake_id",
        )
        .set_detail("IDs stop with SQLSTATE 58030 once the current mark, at most a second ahead, is used up.")
        .set_hint("Check the permissions and free space of the data directory. This warning repeats at most every 10 seconds.")
        .report(PgLogLevel::WARNING);
    }
}

fn with_generator(f: impl FnOnce(&mut GeneratorState)) {
    if let Some(g) = shmem::lock().generator.as_mut() {
        f(g);
    }
}

/// Sleeps on the process latch for up to `ms` (a signal that sets the
/// latch, such as a cancel, ends it early; postmaster death ends the process).
pub fn sleep_on_latch(ms: i64) {
    // SAFETY: MyLatch is this process's latch.
    unsafe {
        pg_sys::WaitLatch(
            pg_sys::MyLatch,
            (pg_sys::WL_LATCH_SET | pg_sys::WL_TIMEOUT | pg_sys::WL_EXIT_ON_PM_DEATH) as i32,
            ms as _,
            pg_sys::PG_WAIT_EXTENSION,
        );
        pg_sys::ResetLatch(pg_sys::MyLatch);
    }
}

/// Waits out `max_drift` so that statement_timeout, pg_cancel_backend and
/// postmaster death end the wait at once.
fn wait_ms(ms: i64) {
    sleep_on_latch(ms.clamp(1, 1000));
    crate::errors::check_for_interrupts();
}

thread_local! {
    static LAST_STEP_WARNING: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// At most one WARNING a minute per backend: a clock that keeps jumping
/// should not flood the client or the log. The status view counts them all.
fn warn_step_back(ms: i64, at_start: bool) {
    let now = Instant::now();
    let due = LAST_STEP_WARNING.with(|last| match last.get() {
        Some(t) if now.duration_since(t).as_secs() < 60 => false,
        _ => {
            last.set(Some(now));
            true
        }
    });
    if due {
        let message = if at_start {
            format!("snowflake_id: the system clock is at least {ms} ms behind the IDs issued before this start")
        } else {
            format!("snowflake_id: the system clock went back by {ms} ms")
        };
        pgrx::pg_sys::panic::ErrorReport::new(PgSqlErrorCode::ERRCODE_WARNING, message, "snowflake_id")
            .set_detail(
                "IDs continue from the logical clock, which now runs ahead of the wall clock; none is repeated.",
            )
            .set_hint(
                "Check the time synchronisation (NTP, chrony) of this server. snowflake_id_status counts every step.",
            )
            .report(PgLogLevel::WARNING);
    }
}
