//! The node's side of the registry lease: every change of the lease in
//! shared memory and on disk happens here, in the order that keeps two
//! holders of one worker id apart (invariant 8): a grant is made durable
//! with a mark at least one below its floor before it is used; a renewal
//! raises the ceiling only after the registry committed it; a clean stop
//! lowers the ceiling to the last tick issued before the registry is told.
//! The arithmetic of each step is the core's (`snowflake_id_core::lease`).
//! The mark keeper (`worker/registry_keeper.rs`) calls these between its
//! calls to the registry; queries meet the lease only as the generator's
//! ceiling and the worker id they encode.

use snowflake_id_core::lease as rule;
use snowflake_id_core::mark_record::Kind;
use snowflake_id_core::state_file::{RegistryLease, Stored};
use snowflake_id_core::Layout;

use crate::mark::{file, wal};
use crate::pg::clock::now_unix_ms;
use crate::pg::report::Refusal;
use crate::pg::KeepGoing;
use crate::service::generator::resume::{own_stored_lease, read_refusal, resumed, stored_layout};
use crate::settings::names::REGISTRY;
use crate::settings::registry::namespace;
use crate::shmem::{self, LeaseState, RegistryShared, Shared, ShortText};

/// The worker id of the registry lease in force, if any.
pub fn leased_worker_id() -> Option<i64> {
    let shared = shmem::lock();
    shared.registry.lease.map(|_| shared.registry.worker_id)
}

/// The generator just started with a registry: it comes with the ceiling of
/// the lease the keeper put in force, else none (it issues nothing). A lease
/// on disk is not in force before the registry confirmed it (or did not
/// answer for `START_WAIT_MS`): it may be a copy's. Called under the spinlock.
pub fn enter_at_start(shared: &mut Shared, layout: &Layout, now_ms: i64) {
    let lease = shared.registry.lease;
    if let Some(g) = shared.generator.as_mut() {
        let ceiling = lease.map_or(-1, |l| l.ceiling);
        let floor = lease.map_or(0, |l| l.floor);
        g.enter_lease(layout, floor, ceiling, now_ms - layout.epoch_ms());
    }
}

/// The worker id the generator's last IDs may have been issued under: the
/// lease's, or the one a lease refused to this start was on (its lease
/// left shared memory, its IDs did not leave the generator).
fn issued_under(s: &Shared) -> Option<i64> {
    Some(s.registry.worker_id).filter(|w| *w >= 0)
}

/// The lease in force from now on, held.
fn hold(shared: &mut Shared, worker_id: i64, lease: RegistryLease) {
    shared.registry.lease = Some(lease);
    shared.registry.worker_id = worker_id;
    shared.registry.state = LeaseState::Held;
}

/// Puts this server's own lease from disk (same timeline) in force if none
/// is yet: what a restart within its lease goes on with, renewed by the
/// keeper rather than replaced by a new grant, once the registry answered
/// that this instance holds it, or did not answer at all.
/// Returns whether it is in force now.
pub fn restore_own_lease(layout: &Layout) -> bool {
    if shmem::lock().registry.lease.is_some() {
        return true;
    }
    let Some((worker_id, lease)) = own_stored_lease(layout) else { return false };
    let _io = shmem::state_io();
    let now = now_unix_ms().saturating_sub(layout.epoch_ms());
    let mut shared = shmem::lock();
    if shared.registry.lease.is_none() && shared.registry.state != LeaseState::Lost {
        hold(&mut shared, worker_id, lease);
        if let Some(g) = shared.generator.as_mut() {
            g.enter_lease(layout, lease.floor, lease.ceiling, now);
        }
    }
    shared.registry.lease.is_some()
}

/// A lease just granted by the registry: made durable with a mark at least
/// one below its floor (so a restart resumes inside it), then used. A new
/// worker id also moves the generator past the current tick, since IDs of
/// another worker id in the same millisecond may sort below those issued.
pub fn take_lease(layout: &Layout, worker_id: i64, lease: RegistryLease, keep_going: KeepGoing) -> Result<(), String> {
    if shmem::lock().generator.is_none() {
        let generator = resumed(layout, worker_id, now_unix_ms()).map_err(|e| read_refusal(e).message)?;
        let _io = shmem::state_io();
        let mut shared = shmem::lock();
        if shared.generator.is_none() {
            let now_ms = now_unix_ms();
            shared.generator = Some(generator);
            // As start() does: the lease in force bounds the generator from
            // its first step (none yet: no ID until the one below is entered).
            enter_at_start(&mut shared, layout, now_ms);
            shared.written_mark = generator.mark();
            shared.started_unix_ms = now_ms;
        }
    }
    let now = now_unix_ms().saturating_sub(layout.epoch_ms());
    let (lsn, mark) = {
        let _io = shmem::state_io();
        let (written, clocks, last, previous_worker) = {
            let s = shmem::lock();
            let g = s.generator.expect("started above");
            (s.written_mark, g.clocks(), g.last_counter(), issued_under(&s))
        };
        let floor = rule::holder_floor(lease.floor, worker_id, previous_worker, last >> layout.sequence_bits());
        let stored = Stored {
            layout: stored_layout(layout, worker_id),
            mark: rule::grant_mark(written, floor),
            clocks: Some(clocks),
            registry: Some(RegistryLease { floor, ..lease }),
        };
        file::write(&stored).map_err(|e| e.to_string())?;
        let lsn = wal::log_mark(Kind::Mark, &stored);
        let mut s = shmem::lock();
        s.written_mark = stored.mark;
        s.mark_lsn = lsn;
        s.registry.lease = stored.registry;
        s.registry.worker_id = worker_id;
        if let Some(g) = s.generator.as_mut() {
            // Backends went on issuing under the old worker id while the
            // file and WAL were written: the floor is taken again past the
            // tick they reached, in the hold that switches the worker id
            // (an ID of a lower worker id in that tick would sort below
            // theirs). IDs past the mark written wait for a new one.
            let floor = floor.max(rule::holder_floor(
                lease.floor,
                worker_id,
                previous_worker,
                g.last_counter() >> layout.sequence_bits(),
            ));
            g.enter_lease(layout, floor, lease.ceiling, now);
        }
        (lsn, stored.mark)
    };
    // A promoted standby must know what its primary held before IDs under
    // the lease are issued past the mark: the mark counts as written only
    // once the synchronous standbys have it (IDs past it wait in reserve).
    let on_standbys = wal::wait_for_sync_standbys(lsn, keep_going);
    let mut s = shmem::lock();
    if let (true, Some(g)) = (on_standbys, s.generator.as_mut()) {
        g.extend_mark(mark);
    }
    s.registry = RegistryShared {
        state: LeaseState::Held,
        worker_id,
        lease: Some(lease),
        renewed_unix_ms: now_unix_ms(),
        ..s.registry
    };
    Ok(())
}

/// A renewal of `lease` committed in the registry up to `ceiling`: the
/// ceiling may rise now. On disk it rises with the next mark.
pub fn renewed(layout: &Layout, lease: RegistryLease, ceiling: i64) {
    raise_ceiling(layout, ceiling);
    let mut shared = shmem::lock();
    shared.registry.state = LeaseState::Held;
    shared.registry.lease = Some(RegistryLease { ceiling, ..lease });
    shared.registry.renewed_unix_ms = now_unix_ms();
}

fn raise_ceiling(layout: &Layout, ceiling: i64) {
    let mut s = shmem::lock();
    if let Some(lease) = s.registry.lease.as_mut() {
        lease.ceiling = rule::raised_ceiling(lease.ceiling, ceiling);
    }
    if let Some(g) = s.generator.as_mut() {
        g.set_ceiling(layout, rule::raised_ceiling(g.ceiling(), ceiling));
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
        let closed = rule::closed(lease, last_tick);
        s.registry.lease = Some(closed);
        let stored = Stored {
            layout: stored_layout(layout, s.registry.worker_id),
            mark: s.written_mark,
            clocks: Some(g.clocks()),
            registry: Some(closed),
        };
        (last_tick, stored)
    };
    // Not WAL-logged: the server is stopping; the file is what a restart reads.
    file::write(&stored).ok()?;
    Some(last_tick)
}

/// The keeper is asking the registry for a worker id; `confirming` the one
/// of the lease on disk it presents, which is not in force until it answers.
pub fn acquiring(confirming: Option<i64>) {
    let mut shared = shmem::lock();
    if shared.registry.lease.is_none() {
        shared.registry.state = match confirming {
            Some(worker_id) => {
                shared.registry.worker_id = worker_id;
                LeaseState::Confirming
            }
            None => LeaseState::Acquiring,
        };
    }
}

/// The registry said another start of this very lease renews it (SFL05):
/// this server went on under its lease on disk unconfirmed and is a copy of
/// the holder, or was replaced by a restart of it. Not one more ID under it,
/// not even up to its ceiling, which the other one issues under too: the
/// lease leaves shared memory (IDs are refused as without a lease) and the
/// generator's ceiling comes down to its last tick.
pub fn refused_as_another_start(layout: &Layout) {
    let mut s = shmem::lock();
    s.registry.lease = None;
    s.registry.state = LeaseState::Lost;
    if let Some(g) = s.generator.as_mut() {
        g.set_ceiling(layout, -1);
    }
}

/// The registry answered: its last failure is over.
pub fn registry_answered() {
    let mut shared = shmem::lock();
    shared.registry.error = None;
    shared.registry.error_since_unix_ms = 0;
}

/// A call to the registry failed with `text`; `lost` when it said the lease
/// is another node's now (or released): no ID past its ceiling, ever.
pub fn registry_failed(text: &str, lost: bool) {
    let text = ShortText::new(text);
    let mut shared = shmem::lock();
    if shared.registry.error.is_none() {
        shared.registry.error_since_unix_ms = now_unix_ms();
    }
    shared.registry.error = Some(text);
    if lost {
        shared.registry.state = LeaseState::Lost;
    }
}

/// The registry took the released lease back.
pub fn released() {
    shmem::lock().registry.state = LeaseState::Lost;
}

/// `snowflake_nextval()` with a registry but no lease yet.
pub fn no_lease_refusal(shared: &RegistryShared) -> Refusal {
    if shared.state == LeaseState::Confirming {
        let detail = format!(
            "This server has a lease on worker id {} on disk; the mark keeper asks the registry whether it goes on under this start of the server (a copy of a running node's data directory must not issue under it).{}",
            shared.worker_id,
            shared.error.map_or(String::new(), |e| format!(" The last answer: {e}"))
        );
        return Refusal::new(
            pgrx::PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            "snowflake_id: no worker id yet: the registry has not confirmed this server's lease".into(),
            Some(&detail),
            Some(format!(
                "After a crash this takes until the old start has been silent (9 s with the default snowflake_id.registry_lease); a copy of a running node is refused until it gets its own snowflake_id.worker_id (or auto). Check {REGISTRY}; snowflake_id_status shows the lease and the registry's last answer."
            )),
        );
    }
    let detail = match shared.error {
        Some(error) => format!(
            "The mark keeper has asked the registry for a worker id of namespace \"{}\" since {}; the last answer: {error}",
            namespace(),
            snowflake_id_core::epoch::format_unix_ms(shared.error_since_unix_ms)
        ),
        None => format!("The mark keeper is asking the registry for a worker id of namespace \"{}\".", namespace()),
    };
    Refusal::new(
        pgrx::PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        "snowflake_id: no worker id yet: the registry has not granted a lease".into(),
        Some(&detail),
        Some(format!(
            "IDs flow once the registry grants one; check {REGISTRY} and that the registry database has the extension. snowflake_id_status shows the lease and the registry's last error."
        )),
    )
}

/// `snowflake_nextval()` at the lease's ceiling: the registry has not
/// renewed it (unreachable, or the worker id went to another node).
pub fn ceiling_refusal(shared: &RegistryShared, ceiling_unix_ms: i64) -> Refusal {
    let ceiling = snowflake_id_core::epoch::format_unix_ms(ceiling_unix_ms);
    let (message, detail) = match (shared.state, shared.error) {
        (LeaseState::Lost, error) => (
            format!("snowflake_id: the lease on worker id {} is lost; no ID past {ceiling}", shared.worker_id),
            format!(
                "Another server now holds worker id {} (or the lease was released); this server issues no ID under it past the lease's end.{}",
                shared.worker_id,
                error.map_or(String::new(), |e| format!(" The registry said: {e}"))
            ),
        ),
        (_, Some(error)) => (
            format!("snowflake_id: the lease on worker id {} ends at {ceiling} and the registry has not renewed it", shared.worker_id),
            format!(
                "Since {}: {error}",
                snowflake_id_core::epoch::format_unix_ms(shared.error_since_unix_ms)
            ),
        ),
        (_, None) => (
            format!("snowflake_id: the lease on worker id {} ends at {ceiling}", shared.worker_id),
            "The mark keeper renews it ahead of need; it may be starting, or be stopped.".into(),
        ),
    };
    Refusal::new(
        pgrx::PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        message,
        Some(&detail),
        Some(format!(
            "IDs resume once the registry renews the lease or grants a new one; check {REGISTRY} and the registry server. snowflake_id_status shows the lease."
        )),
    )
}
