//! Drawing one ID: the core's state machine driven under the spinlock, with
//! every slow step it asks for (re-reading the clock, making the mark
//! durable, waiting out `max_drift`, starting the generator) done between
//! lock holds. Also the status view's `problem`: the same checks, on a copy.

use std::sync::OnceLock;

use pgrx::pg_sys;
use snowflake_id_core::mark_record::Kind;
use snowflake_id_core::{Layout, Step};

use super::resume::{read_refusal, resumed};
use super::start::{start, warn_step_back};
use super::writer::{policy, query_keeps_going, reserve};
use crate::pg::clock::{now_unix_ms, sleep_on_latch};
use crate::pg::recovery::in_recovery;
use crate::pg::report::{check_for_interrupts, Refusal};
use crate::pg::wait_event::Wait;
use crate::refusal::{core_refusal, io_refusal, not_preloaded_refusal, raise_io, read_only_refusal};
use crate::service::registry::lease::{ceiling_refusal, no_lease_refusal};
use crate::settings::{self, registry, setting_refusal};
use crate::shmem;

const NEXTVAL: &str = "snowflake_nextval()";

/// The layout and worker id, or the error that stops IDs being issued.
#[track_caller]
pub fn generator_settings() -> (Layout, i64) {
    match settings() {
        Ok(settings) => settings,
        Err(refusal) => refusal.raise(),
    }
}

/// [`generator_settings`] without raising: for the logical replication guard.
pub fn try_generator_settings() -> Result<(Layout, i64), Refusal> {
    settings()
}

fn settings() -> Result<(Layout, i64), Refusal> {
    match checked_settings()? {
        (layout, Some(worker_id)) => Ok((layout, worker_id)),
        (layout, None) => registry_worker_id().map(|w| (layout, w)),
    }
}

/// What [`checked_settings`] answered the first time it found the settings
/// usable, kept for every later call of this backend: all it reads is fixed
/// from server start (whether the library was preloaded, whether a registry
/// is used, the layout and worker id settings as `Settings::get` read them
/// once) but for a `max_drift` a reload refused, which is the one flag
/// checked on every call; while it is up the answer is worked out again.
static USABLE: OnceLock<(Layout, Option<i64>)> = OnceLock::new();

/// The layout, and the worker id unless it comes from a registry lease, or
/// why IDs cannot be issued with these settings.
#[inline]
fn checked_settings() -> Result<(Layout, Option<i64>), Refusal> {
    match USABLE.get() {
        Some(usable) if !settings::max_drift_refused() => Ok(*usable),
        _ => settings_worked_out(),
    }
}

#[cold]
#[inline(never)]
fn settings_worked_out() -> Result<(Layout, Option<i64>), Refusal> {
    let usable = settings_checked_now()?;
    let _ = USABLE.set(usable);
    Ok(usable)
}

fn settings_checked_now() -> Result<(Layout, Option<i64>), Refusal> {
    if !shmem::preloaded() {
        return Err(not_preloaded_refusal());
    }
    let settings = settings::Settings::get();
    if registry::used() {
        return settings.for_registry().map(|layout| (layout, None)).map_err(|errors| setting_refusal(&errors));
    }
    settings.for_ids().map(|(layout, worker_id)| (layout, Some(worker_id))).map_err(|errors| setting_refusal(&errors))
}

/// With a registry, the worker id is the lease's: none until the mark keeper
/// has one (a lost or expired lease still names its worker id; the
/// generator's ceiling stops IDs past it).
fn registry_worker_id() -> Result<i64, Refusal> {
    // On every call: read the two words needed, not the whole lease record
    // (its error text is hundreds of bytes).
    let (leased, worker_id) = {
        let shared = shmem::lock();
        (shared.registry.lease.is_some(), shared.registry.worker_id)
    };
    if leased {
        return Ok(worker_id);
    }
    // A lease on disk is put in force by the mark keeper once the registry
    // confirmed it (it may be a copy's). Copied out first: the refusal is
    // formatted without the spinlock.
    let lease = shmem::lock().registry;
    Err(no_lease_refusal(&lease))
}

fn recovery_refusal(function: &str) -> Refusal {
    read_only_refusal(function, "during recovery", true)
}

/// Why `snowflake_nextval()` would refuse now, if it would, as it would say
/// it: the status view's `problem`. The same checks in the same order as
/// [`next_id`], the generator's next step taken on a copy of the shared
/// state (so nothing is issued, started or written): a refusal cannot be
/// missing here that a call would raise. Two reasons are not computed but
/// recorded: a mark write fails only when tried, so the last attempt's
/// failure stands for the next one; and a read-only transaction is the
/// caller's, not the server's.
pub fn refusal() -> Option<Refusal> {
    if in_recovery() {
        return Some(recovery_refusal(NEXTVAL));
    }
    let (layout, worker_id) = match settings() {
        Ok(settings) => settings,
        Err(refusal) => return Some(refusal),
    };
    let now_ms = now_unix_ms();
    let (generator, write_failure) = {
        let shared = shmem::lock();
        (shared.generator, shared.write_failure)
    };
    let mut generator = match generator {
        Some(g) => g,
        None => match resumed(&layout, worker_id, now_ms) {
            Ok(g) => g,
            Err(e) => return Some(read_refusal(e)),
        },
    };
    let now = now_ms.saturating_sub(layout.epoch_ms());
    let mut confirm = None;
    loop {
        match generator.next(&layout, now, policy(), confirm) {
            Err(e) => return Some(step_refusal(&layout, &e)),
            Ok(d) => match d.step {
                Step::Recheck { seen } if confirm.is_none() => confirm = Some(seen),
                Step::NeedMark { .. } => return write_failure.map(|f| io_refusal(f.to_string())),
                _ => return None,
            },
        }
    }
}

/// Only a primary issues IDs, and only in a transaction that may write,
/// like `nextval()`: a standby would repeat its primary's IDs, and a
/// read-only transaction promised not to change anything durable.
#[inline]
pub fn check_may_issue(function: &str) {
    if in_recovery() {
        raise_recovery(function);
    }
    // SAFETY: a plain global of the current transaction.
    if unsafe { pg_sys::XactReadOnly } {
        raise_read_only(function);
    }
}

#[cold]
#[inline(never)]
fn raise_recovery(function: &str) -> ! {
    recovery_refusal(function).raise()
}

#[cold]
#[inline(never)]
fn raise_read_only(function: &str) -> ! {
    read_only_refusal(function, "in a read-only transaction", false).raise()
}

/// One ID. The common case is one step of the generator: the settings
/// usable (as checked before), a lease in force if there is a registry, and
/// the step an issue (core `try_issue`) under the same lock hold as the
/// worker id it reads, as in [`draw`]. Anything else (the first call, a
/// start, a recheck, a mark to write, a wait, a refusal, no lease) leaves the
/// generator untouched and takes [`draw`], which decides it again from a new
/// clock reading.
pub fn next_id() -> i64 {
    check_may_issue(NEXTVAL);
    if let Ok((layout, setting_worker_id)) = checked_settings() {
        let policy = policy();
        let now = now_unix_ms().saturating_sub(layout.epoch_ms());
        let issued = {
            let mut shared = shmem::lock();
            let worker_id = match setting_worker_id {
                Some(worker_id) => worker_id,
                None if shared.registry.lease.is_some() => shared.registry.worker_id,
                None => -1,
            };
            match shared.generator.as_mut() {
                Some(g) if worker_id >= 0 => g.try_issue(&layout, now, policy).map(|counter| (counter, worker_id)),
                _ => None,
            }
        };
        if let Some((counter, worker_id)) = issued {
            return layout.id_from_counter(counter, worker_id);
        }
    }
    next_id_drawn()
}

/// [`next_id`]'s every other case, out of line so that its frame is not
/// set up for the common one.
#[cold]
#[inline(never)]
fn next_id_drawn() -> i64 {
    let mut id = 0;
    draw(NEXTVAL, 1, |layout, counter, _, worker_id| id = layout.id_from_counter(counter, worker_id));
    id
}

/// `n` IDs in ascending order, each with every guarantee of a single one,
/// drawn in runs (core `next_run`): one spinlock hold per run, not per ID.
/// Another backend's IDs may fall between two runs, as between two calls.
/// `n` is checked by the caller (1 ..= the documented maximum).
pub fn next_block(function: &str, n: i64) -> Vec<i64> {
    let mut ids = Vec::with_capacity(usize::try_from(n).unwrap_or(0));
    draw(function, n, |layout, first, count, worker_id| {
        ids.extend((first..first + count).map(|counter| layout.id_from_counter(counter, worker_id)))
    });
    ids
}

/// Draws `want` IDs (at least one), handing each run to `issued` as the
/// layout, its first counter, its length and the worker id it carries.
/// Everything slow a step asks for (re-reading the clock, a mark write, a
/// `max_drift` wait, a start) happens here between lock holds.
#[inline(always)]
fn draw(function: &str, want: i64, mut issued: impl FnMut(&Layout, i64, i64, i64)) {
    check_may_issue(function);
    let (layout, setting_worker_id) = checked_settings().unwrap_or_else(|refusal| refusal.raise());
    let policy = policy();
    let mut confirm = None;
    let mut left = want.max(1);
    loop {
        let now = now_unix_ms().saturating_sub(layout.epoch_ms());
        // With a registry the worker id, and whether a lease is in force at
        // all, are read in the same lock hold as the step: the keeper may
        // switch to another worker id (a new lease) at any moment, an ID must
        // carry the one whose lease allowed its tick, and one hold per run
        // costs half of two.
        let (run, worker_id) = {
            let mut shared = shmem::lock();
            match setting_worker_id {
                Some(worker_id) => {
                    (shared.generator.as_mut().map(|g| g.next_run(&layout, now, policy, confirm, left)), worker_id)
                }
                None if shared.registry.lease.is_none() => (None, -1),
                None => {
                    let worker_id = shared.registry.worker_id;
                    (shared.generator.as_mut().map(|g| g.next_run(&layout, now, policy, confirm, left)), worker_id)
                }
            }
        };
        if worker_id < 0 {
            // No lease in force (it went since the settings were read): this
            // refuses, unless the keeper put one in force meanwhile.
            registry_worker_id().unwrap_or_else(|refusal| refusal.raise());
            continue;
        }
        confirm = None;
        let Some(run) = run else {
            start(&layout, worker_id);
            continue;
        };
        let run = run.unwrap_or_else(|e| step_refusal(&layout, &e).raise());
        if run.decision.stepped_back_ms > 0 {
            warn_step_back(run.decision.stepped_back_ms, false);
        }
        match run.decision.step {
            Step::Issued { counter } => {
                issued(&layout, counter, run.count, worker_id);
                left -= run.count;
                if left <= 0 {
                    return;
                }
                // A block of many runs answers a cancel between them.
                check_for_interrupts();
            }
            Step::Recheck { seen } => confirm = Some(seen),
            Step::NeedMark { through, target } => {
                if let Err(e) = reserve(&layout, worker_id, through, target, None, Kind::Mark, query_keeps_going) {
                    raise_io(e.to_string());
                }
            }
            Step::Wait { until } => wait_ms(until - now),
        }
    }
}

/// What a refused step of the generator says: a ceiling reached is about
/// the registry lease, with what the keeper knows of it.
fn step_refusal(layout: &Layout, e: &snowflake_id_core::Error) -> Refusal {
    match e {
        snowflake_id_core::Error::CeilingReached { ceiling } => {
            let lease = shmem::lock().registry;
            ceiling_refusal(&lease, layout.epoch_ms().saturating_add(*ceiling))
        }
        other => core_refusal(other),
    }
}

/// Waits out `max_drift` so that statement_timeout, pg_cancel_backend and
/// postmaster death end the wait at once. Sleeps no longer than the core
/// counts as one step of the reference clock while the wall clock is behind.
fn wait_ms(ms: i64) {
    sleep_on_latch(ms.clamp(1, snowflake_id_core::generator::MAX_SKEWED_ADVANCE_MS), Wait::MaxDrift);
    check_for_interrupts();
}
