//! `snowflake_id_status()`: one row a DBA can watch or graph.

use pgrx::prelude::*;

use crate::api::to_timestamptz;
use crate::nextval::{generator_settings, now_unix_ms};
use crate::{guc, shmem};

type Ts = TimestampWithTimeZone;

/// Layout, worker, the generator's clocks and mark, and counters since the
/// server started. The counters are `bigint` and only grow until restart.
#[allow(clippy::type_complexity)]
#[pg_extern(volatile, parallel_safe)]
fn snowflake_id_status() -> TableIterator<
    'static,
    (
        name!(worker_id, i64),
        name!(worker_bits, i32),
        name!(sequence_bits, i32),
        name!(epoch, Ts),
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
    ),
> {
    let (layout, worker_id) = generator_settings();
    let shared = *shmem::lock();
    let now_ms = now_unix_ms();
    let now = now_ms - layout.epoch_ms();
    let epoch = layout.epoch_ms();
    let g = shared.generator;
    let last = g.map(|g| g.last_counter()).filter(|c| *c >= 0);
    let counters = g.map(|g| g.counters).unwrap_or_default();
    let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    TableIterator::once((
        worker_id,
        layout.worker_bits().into(),
        layout.sequence_bits().into(),
        to_timestamptz(epoch),
        g.map(|_| to_timestamptz(shared.started_unix_ms)),
        last.map(|c| layout.id_from_counter(c, worker_id)),
        last.map(|c| to_timestamptz(epoch + (c >> layout.sequence_bits()))),
        to_timestamptz(now_ms),
        last.and(g).map(|g| g.drift(&layout, now).max(0)),
        g.map(|g| g.lease_until()).filter(|t| *t >= 0).map(|t| to_timestamptz(epoch + t)),
        guc::max_drift_ms(),
        count(counters.issued),
        count(counters.borrowed_ms),
        count(counters.waits),
        count(counters.steps_back),
        counters.largest_step_back_ms,
        count(counters.leases),
        count(shared.keeper_mark_writes),
    ))
}
