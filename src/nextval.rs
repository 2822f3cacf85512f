//! Drawing one ID: the core's state machine driven under the spinlock, with
//! every slow step it asks for (re-reading the clock, making the mark
//! durable, waiting out `max_drift`, starting the generator) done between
//! lock holds.

use std::cell::Cell;
use std::time::Instant;

use pgrx::{check_for_interrupts, pg_sys, PgLogLevel, PgSqlErrorCode};
use snowflake_id_core::generator::lease_target;
use snowflake_id_core::state_file::{resume_floor, Stored};
use snowflake_id_core::{GeneratorState, Layout, Policy, Step, StoredLayout};

use crate::durable::{self, ReadError};
use crate::errors::{raise_core, raise_io, raise_not_preloaded, raise_setting};
use crate::{guc, shmem};

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
    (ts.tv_sec as i64) * 1000 + (ts.tv_nsec as i64).div_euclid(1_000_000)
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

pub fn next_id() -> i64 {
    let (layout, worker_id) = generator_settings();
    let policy = Policy {
        max_drift_ms: guc::max_drift_ms(),
        lease_ms: LEASE_MS,
        renew_within_ms: BACKEND_RENEWS_WITHIN_MS,
    };
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
            warn_step_back(decision.stepped_back_ms);
        }
        match decision.step {
            Step::Issued { counter, renew } => {
                if renew {
                    let target = lease_target(counter >> layout.sequence_bits(), now, LEASE_MS);
                    // The ID is already covered; a failed early renewal only warns,
                    // and the next caller that needs the mark tries again.
                    if let Err(e) = reserve(&layout, worker_id, target, target) {
                        pgrx::ereport!(
                            PgLogLevel::WARNING,
                            PgSqlErrorCode::ERRCODE_IO_ERROR,
                            format!("snowflake_id: could not renew the durable mark early: {e}")
                        );
                    }
                }
                return layout.id_from_counter(counter, worker_id);
            }
            Step::Recheck { seen } => confirm = Some(seen),
            Step::NeedLease { through } => {
                let target = lease_target(through, now, LEASE_MS);
                if let Err(e) = reserve(&layout, worker_id, through, target) {
                    raise_io("write", &durable::path().to_string_lossy(), &e);
                }
            }
            Step::Wait { until } => wait_ms(until - now),
        }
    }
}

/// Starts the shared generator above the durable mark, once per server start.
fn start(layout: &Layout, worker_id: i64) {
    let outcome = {
        let _io = shmem::state_io();
        if shmem::lock().generator.is_some() {
            return;
        }
        let now_ms = now_unix_ms();
        (|| {
            layout.check_clock(now_ms).map_err(ReadError::Invalid)?;
            let stored = durable::read()?;
            let now = now_ms - layout.epoch_ms();
            let floor = resume_floor(stored.as_ref(), layout, worker_id, now).map_err(ReadError::Invalid)?;
            let mut guard = shmem::lock();
            guard.generator = Some(GeneratorState::resume(layout, floor, floor - 1, now));
            guard.started_unix_ms = now_ms;
            Ok(())
        })()
    };
    match outcome {
        Ok(()) => {}
        Err(ReadError::Invalid(e)) => raise_core(&e),
        Err(ReadError::Io(e)) => raise_io("read", &durable::path().to_string_lossy(), &e),
    }
}

/// The mark keeper's turn: extends the mark if IDs were issued lately and
/// it is getting close. Returns whether it wrote.
pub fn renew_if_due(layout: &Layout, worker_id: i64) -> std::io::Result<bool> {
    let now = now_unix_ms().saturating_sub(layout.epoch_ms());
    let due = shmem::lock().generator.and_then(|g| {
        g.renewal_due(layout, now, KEEPER_ACTIVE_MS, KEEPER_RENEWS_WITHIN_MS)
            .then(|| lease_target(g.last_counter() >> layout.sequence_bits(), now, LEASE_MS))
    });
    let Some(target) = due else { return Ok(false) };
    let wrote = reserve(layout, worker_id, target, target)?;
    if wrote {
        shmem::lock().keeper_mark_writes += 1;
    }
    Ok(wrote)
}

/// Makes ticks up to `target` durable unless ticks up to `through` already
/// are; the file never moves backwards because all writers hold the LWLock
/// and write at least the mark in force. Returns whether it wrote.
fn reserve(layout: &Layout, worker_id: i64, through: i64, target: i64) -> std::io::Result<bool> {
    let _io = shmem::state_io();
    let current = match shmem::lock().generator.as_ref() {
        Some(g) => g.lease_until(),
        None => return Ok(false),
    };
    if current >= through {
        with_generator(GeneratorState::abandon_renewal);
        return Ok(false);
    }
    let stored = Stored {
        layout: StoredLayout {
            worker_bits: layout.worker_bits(),
            sequence_bits: layout.sequence_bits(),
            epoch_ms: layout.epoch_ms(),
            worker_id,
        },
        lease_until: target.max(current),
    };
    match durable::write(&stored) {
        Ok(()) => {
            with_generator(|g| g.extend_lease(stored.lease_until));
            Ok(true)
        }
        Err(e) => {
            with_generator(GeneratorState::abandon_renewal);
            Err(e)
        }
    }
}

fn with_generator(f: impl FnOnce(&mut GeneratorState)) {
    if let Some(g) = shmem::lock().generator.as_mut() {
        f(g);
    }
}

/// Sleeps on the process latch so that statement_timeout, pg_cancel_backend
/// and postmaster death end the wait at once.
fn wait_ms(ms: i64) {
    let timeout = ms.clamp(1, 1000);
    unsafe {
        pg_sys::WaitLatch(
            pg_sys::MyLatch,
            (pg_sys::WL_LATCH_SET | pg_sys::WL_TIMEOUT | pg_sys::WL_EXIT_ON_PM_DEATH) as i32,
            timeout as _,
            pg_sys::PG_WAIT_EXTENSION,
        );
        pg_sys::ResetLatch(pg_sys::MyLatch);
    }
    check_for_interrupts!();
}

thread_local! {
    static LAST_STEP_WARNING: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// At most one WARNING a minute per backend: a clock that keeps jumping
/// should not flood the client or the log. The status view counts them all.
fn warn_step_back(ms: i64) {
    let now = Instant::now();
    let due = LAST_STEP_WARNING.with(|last| match last.get() {
        Some(t) if now.duration_since(t).as_secs() < 60 => false,
        _ => {
            last.set(Some(now));
            true
        }
    });
    if due {
        pgrx::pg_sys::panic::ErrorReport::new(
            PgSqlErrorCode::ERRCODE_WARNING,
            format!("snowflake_id: the system clock went back by {ms} ms"),
            "snowflake_id",
        )
        .set_detail("IDs continue from the logical clock, which now runs ahead of the wall clock; none is repeated.")
        .set_hint("Check the time synchronisation (NTP, chrony) of this server. snowflake_id_status counts every step.")
        .report(PgLogLevel::WARNING);
    }
}
