//! `snowflake_id_status()`: one row a DBA can watch or graph.

use pgrx::pgrx_sql_entity_graph::metadata::{
    ArgumentError, ReturnsError, ReturnsRef, SqlMappingRef, SqlTranslatable, TypeOrigin,
};
use pgrx::prelude::*;
use snowflake_id_core::state_file::Stored;
use snowflake_id_core::Layout;

use super::functions::to_timestamptz;
use crate::mark::{file, wal};
use crate::pg::clock::now_unix_ms;
use crate::pg::recovery::in_recovery;
use crate::service::generator::draw;
use crate::service::logical_guard;
use crate::settings::{self, registry};
use crate::shmem::{self, LeaseState, RegistryShared};

type Ts = TimestampWithTimeZone;

/// A WAL position, returned as PostgreSQL's `pg_lsn` so that a DBA can
/// compare it with `pg_last_wal_replay_lsn()` or `pg_stat_replication`.
pub struct Lsn(u64);

impl pgrx::IntoDatum for Lsn {
    fn into_datum(self) -> Option<pg_sys::Datum> {
        // pg_lsn is a by-value 64-bit type.
        Some(pg_sys::Datum::from(self.0))
    }
    fn type_oid() -> pg_sys::Oid {
        pg_sys::PG_LSNOID
    }
}

// SAFETY: returns the by-value datum built above, or NULL.
unsafe impl pgrx::callconv::BoxRet for Lsn {
    unsafe fn box_into<'fcx>(self, fcinfo: &mut pgrx::callconv::FcInfo<'fcx>) -> pgrx::datum::Datum<'fcx> {
        match pgrx::IntoDatum::into_datum(self) {
            Some(datum) => fcinfo.return_raw_datum(datum),
            None => fcinfo.return_null(),
        }
    }
}

// SAFETY: the SQL type named is the one into_datum builds.
unsafe impl SqlTranslatable for Lsn {
    const TYPE_IDENT: &'static str = pgrx::pgrx_resolved_type!(Lsn);
    const TYPE_ORIGIN: TypeOrigin = TypeOrigin::External;
    const ARGUMENT_SQL: Result<SqlMappingRef, ArgumentError> = Ok(SqlMappingRef::literal("pg_lsn"));
    const RETURN_SQL: Result<ReturnsRef, ReturnsError> = Ok(ReturnsRef::One(SqlMappingRef::literal("pg_lsn")));
}

/// A standby has no generator; its mark is the newest one replayed, or the
/// state file's after a restart (redo keeps the file up to date).
fn standby_mark(replayed: Option<Stored>) -> Option<Stored> {
    Stored::later(replayed, file::read().ok().flatten())
}

/// The end of the newest mark record, for comparing with standbys'
/// positions. After a clean restart no mark has been written or replayed
/// since start, yet the marks before it are in WAL that a standby may not
/// have: the redo pointer of the latest checkpoint (the shutdown
/// checkpoint's, at least) is after every one of them, so it stands in,
/// never too early. NULL only when no mark was ever written here.
fn mark_lsn(seen: u64, recovering: bool) -> Option<Lsn> {
    if seen > 0 {
        return Some(Lsn(seen));
    }
    let stored = !recovering && file::read().ok().flatten().is_some();
    // SAFETY: reads the shared redo pointer under its own spinlock.
    stored.then(|| Lsn(unsafe { pgrx::pg_sys::GetRedoRecPtr() }))
}

/// The keeper's pid if that process is still there.
fn live_pid(pid: i32) -> Option<i32> {
    // SAFETY: signal 0 only checks that the process exists.
    (pid > 0 && unsafe { libc::kill(pid, 0) } == 0).then_some(pid)
}

/// Layout, worker, the generator's clocks and mark, and counters since the
/// server started. The counters are `bigint` and only grow until restart.
///
/// It never raises an ERROR: a DBA looks at it exactly when something is
/// wrong, so a missing preload or a bad setting is a row whose `problem`
/// says what is wrong (the same text `snowflake_nextval()` would raise),
/// with whatever of the layout could be read.
#[allow(clippy::type_complexity)]
#[pg_extern(volatile, parallel_safe)]
fn snowflake_id_status() -> TableIterator<
    'static,
    (
        name!(worker_id, Option<i64>),
        name!(worker_bits, Option<i32>),
        name!(sequence_bits, Option<i32>),
        name!(epoch, Option<Ts>),
        name!(started_at, Option<Ts>),
        name!(last_id, Option<i64>),
        name!(logical_clock, Option<Ts>),
        name!(wall_clock, Ts),
        name!(drift_ms, Option<i64>),
        name!(durable_mark, Option<Ts>),
        name!(max_drift_ms, i64),
        name!(ids_issued, i64),
        name!(ms_borrowed, i64),
        name!(waits, i64),
        name!(clock_steps_back, i64),
        name!(largest_step_back_ms, i64),
        name!(mark_writes, i64),
        name!(mark_writes_by_keeper, i64),
        name!(in_recovery, bool),
        name!(mark_lsn, Option<Lsn>),
        name!(keeper_pid, Option<i32>),
        name!(problem, Option<String>),
        name!(sync_standby_wait_since, Option<Ts>),
        name!(lease_state, String),
        name!(lease_epoch, Option<i64>),
        name!(lease_floor, Option<Ts>),
        name!(lease_ceiling, Option<Ts>),
        name!(lease_renewed_at, Option<Ts>),
        name!(registry_error, Option<String>),
    ),
> {
    let settings = settings::Settings::get();
    let layout = settings.layout.as_ref().ok().copied();
    let lease = shmem::preloaded().then(|| shmem::lock().registry);
    // With a registry the worker id in force is the lease's (none before one).
    let worker_id = match lease {
        Some(l) if registry::used() => l.lease.map(|_| l.worker_id),
        _ => settings.worker_id.as_ref().ok().copied(),
    };
    let shown_worker_id = if registry::used() { worker_id } else { settings.values.worker_id };
    let now_ms = now_unix_ms();
    // A refusal first: it stops IDs. A shared worker id among logical peers
    // does not, but is as urgent (duplicates), so it shows when nothing refuses.
    let problem = draw::refusal().map(|r| r.summary()).or_else(|| logical_guard::problem(now_ms));
    // Without the preload there is no shared memory to look at.
    let shared = shmem::preloaded().then(|| *shmem::lock());
    let g = shared.and_then(|s| s.generator);
    let counters = g.map(|g| g.counters).unwrap_or_default();
    let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    let recovering = in_recovery();
    let (mut started_at, mut last_id, mut logical_clock, mut drift_ms, mut durable_mark) =
        (None, None, None, None, None);
    if let (Some(layout), Some(g)) = (layout, g) {
        let epoch = layout.epoch_ms();
        let last = Some(g.last_counter()).filter(|c| *c >= 0);
        started_at = shared.map(|s| to_timestamptz(s.started_unix_ms));
        last_id = last.zip(worker_id).map(|(c, w)| layout.id_from_counter(c, w));
        logical_clock = last.map(|c| to_timestamptz(epoch + (c >> layout.sequence_bits())));
        drift_ms = last.map(|_| g.drift(&layout, now_ms - epoch).max(0));
        durable_mark = (g.mark() >= 0).then(|| to_timestamptz(epoch + g.mark()));
    } else if recovering {
        durable_mark =
            standby_mark(shared.and_then(|s| s.replayed)).map(|m| to_timestamptz(m.layout.epoch_ms + m.mark));
    }
    // Each layout value that could be read, even when another one is bad.
    let read = settings.values;
    TableIterator::once((
        shown_worker_id,
        read.worker_bits.and_then(|b| i32::try_from(b).ok()),
        read.sequence_bits.and_then(|b| i32::try_from(b).ok()),
        read.epoch_ms.map(to_timestamptz),
        started_at,
        last_id,
        logical_clock,
        to_timestamptz(now_ms),
        drift_ms,
        durable_mark,
        settings::max_drift_ms(),
        count(counters.issued),
        count(counters.borrowed_ms),
        count(counters.waits),
        count(counters.steps_back),
        counters.largest_step_back_ms,
        count(counters.mark_writes),
        count(shared.map_or(0, |s| s.keeper_mark_writes)),
        recovering,
        mark_lsn(shared.map_or(0, |s| s.mark_lsn), recovering),
        shared.and_then(|s| live_pid(s.keeper_pid)),
        problem,
        shared.and_then(|s| wal::standby_wait_since(&s, now_ms)).map(to_timestamptz),
        lease_state(lease, layout, now_ms).name().to_string(),
        lease.and_then(|l| l.lease).map(|l| l.epoch),
        layout.zip(lease.and_then(|l| l.lease)).map(|(lay, l)| to_timestamptz(lay.epoch_ms() + l.floor)),
        layout.zip(lease.and_then(|l| l.lease)).map(|(lay, l)| to_timestamptz(lay.epoch_ms() + l.ceiling)),
        lease.filter(|l| l.renewed_unix_ms > 0).map(|l| to_timestamptz(l.renewed_unix_ms)),
        lease.and_then(|l| l.error).map(|e| e.to_string()),
    ))
}

/// Where the lease stands for a DBA: as the keeper left it, but a held
/// lease whose ceiling the clock has passed is expired (IDs stop there).
fn lease_state(lease: Option<RegistryShared>, layout: Option<Layout>, now_ms: i64) -> LeaseState {
    use LeaseState as State;
    match (registry::used(), lease) {
        (false, _) | (_, None) => State::None,
        (true, Some(l)) => match (l.state, l.lease, layout) {
            (State::Lost, _, _) => State::Lost,
            (State::Confirming, None, _) => State::Confirming,
            (_, None, _) => State::Acquiring,
            (_, Some(held), Some(layout)) if held.ceiling < now_ms - layout.epoch_ms() => State::Expired,
            _ => State::Held,
        },
    }
}
