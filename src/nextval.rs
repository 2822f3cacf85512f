//! Drawing one ID: the core's state machine driven under the spinlock, with
//! every slow step it asks for (re-reading the clock, making the mark
//! durable, waiting out `max_drift`, starting the generator) done between
//! lock holds.
//!
//! There is one renewal mechanism: the mark keeper renews ahead of need
//! ([`renew_if_due`]); a query writes a mark only when the mark is used up
//! (`Step::NeedLease`), before its ID is issued. An ID that is issued never
//! waits for a renewal or a standby, and never fails because of one.

use pgrx::{pg_sys, PgLogLevel, PgSqlErrorCode};
use snowflake_id_core::mark_record::Kind;
use snowflake_id_core::state_file::{resume_clocks, resume_floor, RegistryLease, Stored};
use snowflake_id_core::{epoch, Clocks, GeneratorState, Layout, Policy, Step, StoredLayout};

use crate::clock::{now_unix_ms, sleep_on_latch};
use crate::durable::{self, ReadError, WriteError};
use crate::errors::{
    core_refusal, io_refusal, not_preloaded_refusal, raise_core, raise_io, read_only_refusal, setting_refusal, Refusal,
};
use crate::log_limit::{self, Topic};
use crate::{guc, registry, shmem, wal};

/// How far past the generator's position a durable mark reaches: after a
/// crash the next ID is at most this far ahead of the last one issued.
pub const LEASE_MS: i64 = 1000;

/// `snowflake_advance_past` refuses an ID further ahead of the clock than
/// this (ms) unless forced: a day covers any clock skew between servers.
const ADVANCE_LIMIT_MS: i64 = 86_400_000;

/// The mark keeper renews when the mark is this close (ms) to the
/// generator's position: about two writes a second while IDs flow.
const KEEPER_RENEWS_WITHIN_MS: i64 = LEASE_MS / 2;

/// ...for this long (ms) after the last ID, so that a caller after a pause
/// finds the mark ahead; after that an idle server writes nothing.
const KEEPER_ACTIVE_MS: i64 = 10_000;

fn policy() -> Policy {
    Policy { max_drift_ms: guc::max_drift_ms(), lease_ms: LEASE_MS }
}

/// The layout and worker id, or the error that stops IDs being issued.
#[track_caller]
pub fn generator_settings() -> (Layout, i64) {
    match settings() {
        Ok(settings) => settings,
        Err(refusal) => refusal.raise(),
    }
}

fn settings() -> Result<(Layout, i64), Refusal> {
    if !shmem::preloaded() {
        return Err(not_preloaded_refusal());
    }
    let settings = guc::Settings::get();
    if registry::used() {
        let layout = settings.for_registry().map_err(|errors| setting_refusal(&errors))?;
        return registry_worker_id(&layout).map(|w| (layout, w));
    }
    settings.for_ids().map_err(|errors| setting_refusal(&errors))
}

/// The worker id of the registry lease in force, if any.
pub fn leased_worker_id() -> Option<i64> {
    let shared = shmem::lock();
    shared.registry.lease.map(|_| shared.registry.worker_id)
}

/// With a registry, the worker id is the lease's: none until the mark keeper
/// has one (a lost or expired lease still names its worker id; the
/// generator's ceiling stops IDs past it).
fn registry_worker_id(layout: &Layout) -> Result<i64, Refusal> {
    // On every call: read the two words needed, not the whole lease record
    // (its error text is hundreds of bytes).
    let (leased, worker_id, started) = {
        let shared = shmem::lock();
        (shared.registry.lease.is_some(), shared.registry.worker_id, shared.generator.is_some())
    };
    match (leased, started) {
        (true, _) => Ok(worker_id),
        // The first call after a start: a lease on disk is restored with the generator.
        (false, false) if own_stored_lease(layout).is_some() => {
            let (worker_id, _) = own_stored_lease(layout).expect("just seen");
            start(layout, worker_id);
            registry_worker_id(layout)
        }
        (false, _) => {
            let lease = shmem::lock().registry;
            Err(registry::no_lease_refusal(&lease))
        }
    }
}

const NEXTVAL: &str = "snowflake_nextval()";

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
                Step::NeedLease { .. } => return write_failure.map(|f| io_refusal(f.to_string())),
                _ => return None,
            },
        }
    }
}

/// Set once this backend has seen recovery over: a backend never goes back
/// into recovery, so later calls skip the check (a guarded FFI call).
static OUT_OF_RECOVERY: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether this server is a standby (or still replaying after a crash).
pub fn in_recovery() -> bool {
    use std::sync::atomic::Ordering;
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
        recovery_refusal(function).raise();
    }
    // SAFETY: a plain global of the current transaction.
    if unsafe { pg_sys::XactReadOnly } {
        read_only_refusal(function, "in a read-only transaction", false).raise();
    }
}

pub fn next_id() -> i64 {
    check_may_issue(NEXTVAL);
    let (layout, setting_worker_id) = generator_settings();
    let leased = registry::used();
    let policy = policy();
    let mut confirm = None;
    loop {
        let now = now_unix_ms().saturating_sub(layout.epoch_ms());
        // With a registry the worker id is read in the same lock hold as the
        // step: the keeper may switch to another worker id (a new lease) at
        // any moment, and an ID must carry the one whose lease allowed its tick.
        let (decision, worker_id) = {
            let mut shared = shmem::lock();
            let worker_id = if leased { shared.registry.worker_id } else { setting_worker_id };
            (shared.generator.as_mut().map(|g| g.next(&layout, now, policy, confirm)), worker_id)
        };
        confirm = None;
        let Some(decision) = decision else {
            start(&layout, worker_id);
            continue;
        };
        let decision = decision.unwrap_or_else(|e| step_refusal(&layout, &e).raise());
        if decision.stepped_back_ms > 0 {
            warn_step_back(decision.stepped_back_ms, false);
        }
        match decision.step {
            Step::Issued { counter } => return layout.id_from_counter(counter, worker_id),
            Step::Recheck { seen } => confirm = Some(seen),
            Step::NeedLease { through, target } => {
                if let Err(e) = reserve(&layout, worker_id, through, target, None, Kind::Mark, Writer::Query) {
                    raise_io(e.to_string());
                }
            }
            Step::Wait { until } => wait_ms(until - now),
        }
    }
}

/// Starts the shared generator above the durable mark, once per server
/// start (or promotion): above the later of the state file and the mark
/// replayed from WAL, with the clocks written with it.
fn start(layout: &Layout, worker_id: i64) {
    let outcome = {
        let _io = shmem::state_io();
        if shmem::lock().generator.is_some() {
            return;
        }
        let now_ms = now_unix_ms();
        let own = if registry::used() { own_stored_lease(layout) } else { None };
        resumed(layout, worker_id, now_ms).map(|generator| {
            let mut guard = shmem::lock();
            guard.generator = Some(generator);
            if registry::used() {
                // The registry's worker ids come with a ceiling: the one on
                // disk (a restart within its lease), else none until the
                // keeper has a lease (the generator issues nothing).
                if guard.registry.lease.is_none() {
                    if let Some((worker_id, lease)) = own {
                        guard.registry.lease = Some(lease);
                        guard.registry.worker_id = worker_id;
                        guard.registry.state = registry::State::Held;
                    }
                }
                let lease = guard.registry.lease;
                if let Some(g) = guard.generator.as_mut() {
                    let ceiling = lease.map_or(-1, |l| l.ceiling);
                    let floor = lease.map_or(0, |l| l.floor);
                    g.enter_lease(layout, floor, ceiling, now_ms - layout.epoch_ms());
                }
            }
            guard.written_lease = generator.lease_until();
            guard.started_unix_ms = now_ms;
            generator.counters.largest_step_back_ms
        })
    };
    match outcome {
        Ok(0) => {}
        Ok(behind) => warn_step_back(behind, true),
        Err(e) => read_refusal(e).raise(),
    }
}

/// The generator a start at `now_ms` would resume, read from the state file
/// and the replayed mark; nothing is changed.
fn resumed(layout: &Layout, worker_id: i64, now_ms: i64) -> Result<GeneratorState, ReadError> {
    layout.check_clock(now_ms).map_err(ReadError::Invalid)?;
    let stored = stored_mark()?;
    let now = now_ms - layout.epoch_ms();
    let floor = resume_floor(stored.as_ref(), layout, worker_id, now, guc::allow_layout_change())
        .map_err(ReadError::Invalid)?;
    Ok(GeneratorState::resume(layout, floor, resume_clocks(stored.as_ref(), layout), now))
}

/// The newest mark: the state file's, or one replayed from WAL that is later.
fn stored_mark() -> Result<Option<Stored>, ReadError> {
    Ok(Stored::later(durable::read()?, shmem::lock().replayed))
}

/// The registry lease on disk, with its worker id, if it is of this layout.
/// One held on another timeline (the old primary's, replayed here before a
/// promotion) is for asking the registry to hand it over, never for issuing.
pub fn stored_lease(layout: &Layout) -> Option<(i64, RegistryLease)> {
    let stored = stored_mark().ok().flatten()?;
    (stored.layout.layout() == *layout).then_some(())?;
    stored.registry.map(|lease| (stored.layout.worker_id, lease))
}

/// The lease on disk that this very server holds (same timeline, not
/// released at a clean stop): a restart within it goes on without the registry.
fn own_stored_lease(layout: &Layout) -> Option<(i64, RegistryLease)> {
    stored_lease(layout)
        .filter(|(_, lease)| lease.timeline == registry::current_timeline() && lease.token != RELEASED_TOKEN)
}

/// The token a lease released at a clean stop is written with: the registry
/// never hands it out, so neither a restart nor a renewal can use it.
pub const RELEASED_TOKEN: i64 = 0;

/// The tick of the last ID issued since start, if any.
pub fn last_tick() -> Option<i64> {
    let shift = guc::Settings::get().layout.as_ref().ok()?.sequence_bits();
    let last = shmem::lock().generator?.last_counter();
    Some(last >> shift).filter(|t| *t >= 0)
}

/// Puts this server's own lease from disk (same timeline) in force if none
/// is yet: what a restart within its lease goes on with, renewed by the
/// keeper rather than replaced by a new grant.
pub fn restore_own_lease(layout: &Layout) {
    if shmem::lock().registry.lease.is_some() {
        return;
    }
    let Some((worker_id, lease)) = own_stored_lease(layout) else { return };
    let _io = shmem::state_io();
    let now = now_unix_ms().saturating_sub(layout.epoch_ms());
    let mut shared = shmem::lock();
    if shared.registry.lease.is_none() && shared.registry.state != registry::State::Lost {
        shared.registry.lease = Some(lease);
        shared.registry.worker_id = worker_id;
        shared.registry.state = registry::State::Held;
        if let Some(g) = shared.generator.as_mut() {
            g.enter_lease(layout, lease.floor, lease.ceiling, now);
        }
    }
}

/// A lease just granted by the registry: made durable with a mark at least
/// one below its floor (so a restart resumes inside it), then used. A new
/// worker id also moves the generator past the current tick, since IDs of
/// another worker id in the same millisecond may sort below those issued.
pub fn take_lease(layout: &Layout, worker_id: i64, lease: RegistryLease) -> Result<(), String> {
    if shmem::lock().generator.is_none() {
        let generator = resumed(layout, worker_id, now_unix_ms()).map_err(|e| read_refusal(e).message)?;
        let _io = shmem::state_io();
        let mut shared = shmem::lock();
        if shared.generator.is_none() {
            shared.generator = Some(generator);
            shared.written_lease = generator.lease_until();
            shared.started_unix_ms = now_unix_ms();
        }
    }
    let now = now_unix_ms().saturating_sub(layout.epoch_ms());
    let lsn = {
        let _io = shmem::state_io();
        let (written, clocks, last, previous_worker) = {
            let s = shmem::lock();
            let g = s.generator.expect("started above");
            (s.written_lease, g.clocks(), g.last_counter(), s.registry.lease.map(|_| s.registry.worker_id))
        };
        let floor = match previous_worker {
            Some(w) if w != worker_id => lease.floor.max((last >> layout.sequence_bits()) + 1),
            _ => lease.floor,
        };
        let stored = Stored {
            layout: stored_layout(layout, worker_id),
            lease_until: written.max(floor - 1),
            clocks: Some(clocks),
            registry: Some(RegistryLease { floor, ..lease }),
        };
        durable::write(&stored).map_err(|e| e.to_string())?;
        let lsn = wal::log_mark(Kind::Mark, &stored);
        let mut s = shmem::lock();
        s.written_lease = stored.lease_until;
        s.mark_lsn = lsn;
        s.registry.lease = stored.registry;
        s.registry.worker_id = worker_id;
        if let Some(g) = s.generator.as_mut() {
            g.enter_lease(layout, floor, lease.ceiling, now);
            g.extend_lease(stored.lease_until);
        }
        lsn
    };
    // A promoted standby must know what its primary held before IDs under
    // the lease are issued past the mark (those wait anyway, in reserve).
    wal::wait_for_sync_standbys(lsn, Writer::Keeper.keep_waiting());
    Ok(())
}

/// A renewal committed in the registry: the ceiling may rise now. On disk it
/// rises with the next mark.
pub fn raise_ceiling(layout: &Layout, ceiling: i64) {
    let mut s = shmem::lock();
    if let Some(lease) = s.registry.lease.as_mut() {
        lease.ceiling = lease.ceiling.max(ceiling);
    }
    if let Some(g) = s.generator.as_mut() {
        g.set_ceiling(layout, g.ceiling().max(ceiling));
    }
}

/// A clean stop: the ceiling comes down to the last tick issued, here and
/// on disk, before the registry is told (which lets the next holder start
/// right above it). Returns that tick.
pub fn close_lease(layout: &Layout) -> Option<i64> {
    let _io = shmem::state_io();
    let (last_tick, stored) = {
        let mut s = shmem::lock();
        let lease = s.registry.lease?;
        let mut g = s.generator?;
        g.set_ceiling(layout, -1);
        s.generator = Some(g);
        let last_tick = g.ceiling();
        let closed = RegistryLease { ceiling: last_tick, token: RELEASED_TOKEN, ..lease };
        s.registry.lease = Some(closed);
        let stored = Stored {
            layout: stored_layout(layout, s.registry.worker_id),
            lease_until: s.written_lease,
            clocks: Some(g.clocks()),
            registry: Some(closed),
        };
        (last_tick, stored)
    };
    // Not WAL-logged: the server is stopping; the file is what a restart reads.
    durable::write(&stored).ok()?;
    Some(last_tick)
}

/// What a refused step of the generator says: a ceiling reached is about
/// the registry lease, with what the keeper knows of it.
fn step_refusal(layout: &Layout, e: &snowflake_id_core::Error) -> Refusal {
    match e {
        snowflake_id_core::Error::CeilingReached { ceiling } => {
            let lease = shmem::lock().registry;
            registry::ceiling_refusal(&lease, layout.epoch_ms().saturating_add(*ceiling))
        }
        other => core_refusal(other),
    }
}

fn read_refusal(e: ReadError) -> Refusal {
    match e {
        ReadError::Invalid(e) => core_refusal(&e),
        ReadError::Io(e) => durable::read_failure_refusal(&e),
    }
}

/// After a failed write, the keeper tries the same mark again even while no
/// IDs flow: `problem` shows the failure until a write succeeds, and an idle
/// server would otherwise keep showing it after the disk is fixed. Writes
/// the mark already written (nothing new is reserved); returns whether the
/// failure is gone.
pub fn retry_failed_write(layout: &Layout, worker_id: i64) -> bool {
    if shmem::lock().write_failure.is_none() {
        return true;
    }
    let _io = shmem::state_io();
    let (written, clocks, lease) = {
        let s = shmem::lock();
        match s.generator {
            Some(g) if s.written_lease >= 0 => (s.written_lease, g.clocks(), s.registry.lease),
            _ => return false,
        }
    };
    let stored = Stored {
        layout: stored_layout(layout, worker_id),
        lease_until: written,
        clocks: Some(clocks),
        registry: lease,
    };
    let outcome = durable::write(&stored);
    let failure = outcome.as_ref().err().map(|e| shmem::ShortText::new(&e.to_string()));
    shmem::lock().write_failure = failure;
    outcome.is_ok()
}

/// The mark keeper's turn: writes the mark the core's lease rule asks for
/// ahead of need, if any. Returns whether it wrote.
pub fn renew_if_due(layout: &Layout, worker_id: i64) -> Result<bool, WriteError> {
    if in_recovery() {
        // Only where IDs are issued; a standby's mark comes from WAL.
        return Ok(false);
    }
    let now = now_unix_ms().saturating_sub(layout.epoch_ms());
    let policy = policy();
    let due = shmem::lock().generator.and_then(|g| {
        g.renewal(layout, now, policy, KEEPER_ACTIVE_MS, KEEPER_RENEWS_WITHIN_MS)
            .map(|(target, clocks)| (g.lease_until(), target, clocks))
    });
    let Some((mark, target, clocks)) = due else { return Ok(false) };
    let wrote = reserve(layout, worker_id, mark + 1, target, Some(clocks), Kind::Mark, Writer::Keeper)?;
    if wrote {
        shmem::lock().keeper_mark_writes += 1;
    }
    Ok(wrote)
}

/// Who makes the mark durable, which decides how a wait for synchronous
/// standbys may end.
#[derive(Clone, Copy)]
pub enum Writer {
    /// A backend: statement_timeout and pg_cancel_backend end the wait with
    /// an ERROR (no ID has been issued under the new mark yet).
    Query,
    /// The mark keeper: SIGTERM ends the wait; barriers, reloads and
    /// memory-context requests are answered while it lasts.
    Keeper,
}

impl Writer {
    fn keep_waiting(self) -> fn() -> bool {
        match self {
            Writer::Query => || {
                crate::errors::check_for_interrupts();
                true
            },
            Writer::Keeper => crate::mark_keeper::keep_going,
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

/// Makes ticks up to `target` durable unless ticks up to `through` already
/// are, then lets the generator use them. Returns whether it wrote. The
/// clocks written with the mark are the generator's, or `clocks` when given
/// (an advance writes the clocks it is about to move to, the keeper those it
/// read with its target).
///
/// Under the LWLock: the state file first (so that a base backup taken
/// meanwhile copies a mark at least as new as any record before its
/// checkpoint), then the WAL record, flushed. Then, without any lock, the
/// wait for synchronous standbys, which may be long and must stay
/// interruptible; only after it may IDs under the new mark be issued. The
/// file never moves backwards because all writers hold the LWLock and write
/// at least what was written before.
fn reserve(
    layout: &Layout,
    worker_id: i64,
    through: i64,
    target: i64,
    clocks: Option<Clocks>,
    kind: Kind,
    writer: Writer,
) -> Result<bool, WriteError> {
    let (lease, lsn, wrote) = {
        let _io = shmem::state_io();
        let (usable, written, lsn, current) = {
            let shared = shmem::lock();
            match shared.generator.as_ref() {
                Some(g) => (g.lease_until(), shared.written_lease, shared.mark_lsn, g.clocks()),
                None => return Ok(false),
            }
        };
        if usable >= through {
            return Ok(false);
        }
        if written >= through {
            // Written by another caller whose standby wait is not over yet.
            (written, lsn, false)
        } else {
            let clocks = clocks.unwrap_or(current);
            let stored = Stored {
                layout: stored_layout(layout, worker_id),
                lease_until: target.max(written),
                clocks: Some(clocks),
                registry: shmem::lock().registry.lease,
            };
            let written = durable::write(&stored);
            let failure = written.as_ref().err().map(|e| shmem::ShortText::new(&e.to_string()));
            shmem::lock().write_failure = failure;
            written?;
            let lsn = wal::log_mark(kind, &stored);
            let mut shared = shmem::lock();
            shared.written_lease = stored.lease_until;
            shared.mark_lsn = lsn;
            if let Some(g) = shared.generator.as_mut() {
                g.counters.leases += 1;
            }
            (stored.lease_until, lsn, true)
        }
    };
    if !wal::wait_for_sync_standbys(lsn, writer.keep_waiting()) {
        return Ok(false);
    }
    if let Some(g) = shmem::lock().generator.as_mut() {
        g.extend_lease(lease);
    }
    Ok(wrote)
}

/// Moves the generator past `id` (IDs restored from a dump, copied from
/// another cluster): every ID issued afterwards is greater. The new mark
/// (one lease past `id`) is made durable and WAL-logged first, so a crash or
/// failover right after keeps it. Returns the smallest ID the next call may
/// return.
pub fn advance_past(id: i64, force: bool) -> i64 {
    check_may_issue("snowflake_advance_past()");
    let (layout, worker_id) = generator_settings();
    let tick = layout.decode(id).map(|p| p.unix_ms - layout.epoch_ms()).unwrap_or_else(|e| raise_core(&e));
    let ahead_ms = tick.saturating_add(layout.epoch_ms()).saturating_sub(now_unix_ms());
    if ahead_ms > ADVANCE_LIMIT_MS && !force {
        crate::errors::raise(
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!(
                "snowflake_id: ID {id} decodes to {}, more than a day ahead of the clock",
                epoch::format_unix_ms(tick.saturating_add(layout.epoch_ms()))
            ),
            Some(
                "A move cannot be taken back: every later ID of this server would decode to that instant or later, \
                 across restarts and failovers."
                    .into(),
            ),
            Some(format!(
                "Check the ID. If it is right (IDs copied from a server whose clock ran ahead), run \
                 SELECT snowflake_advance_past({id}, force => true);"
            )),
        );
    }
    let target = GeneratorState::advance_target(&layout, tick, policy()).unwrap_or_else(|e| raise_core(&e));
    if shmem::lock().generator.is_none() {
        start(&layout, worker_id);
    }
    let clocks = shmem::lock().generator.map(|g| g.clocks_after_advance(tick));
    if let Err(e) = reserve(&layout, worker_id, tick + 1, target, clocks, Kind::Advance, Writer::Query) {
        raise_io(e.to_string());
    }
    let now = now_unix_ms().saturating_sub(layout.epoch_ms());
    let next =
        shmem::lock().generator.as_mut().map(|g| g.advance_past(&layout, tick, now).map(|_| g.last_counter() + 1));
    match next {
        Some(Ok(next)) => {
            let reserved = shmem::lock().generator.map_or(target, |g| g.lease_until());
            pgrx::ereport!(
                PgLogLevel::NOTICE,
                PgSqlErrorCode::ERRCODE_SUCCESSFUL_COMPLETION,
                format!(
                    "snowflake_id: the generator is past {}; IDs up to {} are reserved",
                    epoch::format_unix_ms(tick.saturating_add(layout.epoch_ms())),
                    epoch::format_unix_ms(reserved.saturating_add(layout.epoch_ms()))
                )
            );
            layout.id_from_counter(next, worker_id)
        }
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
/// across the server.
pub fn warn_write_failure(e: &WriteError) {
    if log_limit::due(Topic::WriteFailure) {
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

/// Waits out `max_drift` so that statement_timeout, pg_cancel_backend and
/// postmaster death end the wait at once. Sleeps no longer than the core
/// counts as one step of the reference clock while the wall clock is behind.
fn wait_ms(ms: i64) {
    sleep_on_latch(ms.clamp(1, snowflake_id_core::generator::MAX_SKEWED_ADVANCE_MS), crate::wait_event::Wait::MaxDrift);
    crate::errors::check_for_interrupts();
}

/// At most one WARNING a minute across the server: a clock that keeps
/// jumping should not flood the client or the log. The status view counts
/// them all.
fn warn_step_back(ms: i64, at_start: bool) {
    if log_limit::due(Topic::StepBack) {
        let message = if at_start {
            format!(
                "snowflake_id: the system clock is {ms} ms behind the clock readings recorded with the durable mark"
            )
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
