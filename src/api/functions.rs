//! The SQL functions for application developers.

use pgrx::prelude::*;
use pgrx::PgSqlErrorCode;
use snowflake_id_core::{Layout, Parts};

use crate::pg::report::raise;
use crate::refusal::raise_core;
use crate::service::generator::{advance, draw};
use crate::service::past_instants;
use crate::settings::{self, raise_setting};

/// The next ID of this server's shared generator.
///
/// VOLATILE: every call returns a new value. PARALLEL SAFE: the generator
/// lives in shared memory and parallel workers attach to it like any other
/// backend, so IDs drawn by workers are as unique and increasing as any;
/// unlike `nextval()` there is no per-backend cache and nothing is
/// WAL-logged.
#[pg_extern(volatile, parallel_safe)]
fn snowflake_nextval() -> i64 {
    draw::next_id()
}

/// The most IDs one block call hands out. A million IDs are 8 MB in the
/// caller's memory and a quarter of a second of the default layout's
/// numbering; more in one call is far more likely a mistake (a row count
/// passed for a byte count) than a need, and would run the logical clock as
/// far ahead of the wall clock, or make the caller wait it out (`max_drift`).
pub const MAX_BLOCK: i32 = 1_000_000;

/// `n` new IDs in ascending order, one row each: for keys an application
/// assigns before its insert (a parent and its children in one batch), at a
/// fraction of the cost of `n` calls of `snowflake_nextval()`. Every
/// guarantee of single IDs holds for each; other backends' IDs may fall
/// between them. VOLATILE and STRICT like `snowflake_nextval()`, but
/// PARALLEL RESTRICTED (since 0.6.0): a block in FROM under a Gather would be
/// called once by the leader and once by every worker, and one call asked
/// for n IDs would hand out up to three times n, a different block to each
/// part of the join. The leader calls it once.
#[pg_extern(volatile, parallel_restricted)]
fn snowflake_nextval_block(n: i32) -> SetOfIterator<'static, i64> {
    SetOfIterator::new(block(n, "snowflake_nextval_block(integer)"))
}

/// The same IDs as [`snowflake_nextval_block`] in one array value: one row,
/// one parameter, for drivers that fetch a block in one round trip.
/// PARALLEL RESTRICTED for the same reason.
#[pg_extern(volatile, parallel_restricted)]
fn snowflake_nextval_array(n: i32) -> Vec<i64> {
    block(n, "snowflake_nextval_array(integer)")
}

fn block(n: i32, function: &str) -> Vec<i64> {
    if !(1..=MAX_BLOCK).contains(&n) {
        raise(
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("snowflake_id: {function} takes 1 to {MAX_BLOCK} IDs, not {n}"),
            None,
            Some(format!("Ask for at most {MAX_BLOCK} IDs per call; call it again for more.")),
        );
    }
    draw::next_block(function, n.into())
}

/// A new ID whose time part is `ts` (to the millisecond), for rows that
/// happened before they got an ID: imports, and re-keyed old rows. Unique
/// by construction (invariant 9): it takes one of the history slots at the
/// top of each millisecond's sequence numbers, which live IDs never use,
/// under a claim made durable before it is returned. When a millisecond's
/// slots are used up, the next millisecond with one left.
///
/// VOLATILE and STRICT (NULL gives NULL). PARALLEL UNSAFE: the slots a
/// backend may hand out are in its own memory.
#[pg_extern(volatile, strict, parallel_unsafe)]
fn snowflake_nextval_at(ts: TimestampWithTimeZone) -> i64 {
    if ts.is_infinity() || ts.is_neg_infinity() {
        raise(
            PgSqlErrorCode::ERRCODE_DATETIME_FIELD_OVERFLOW,
            "snowflake_id: timestamp infinity has no ID".into(),
            None,
            Some("Give the instant the row happened at.".into()),
        );
    }
    past_instants::nextval_at(unix_ms_of(ts))
}

/// Moves this server's generator past `id`: every ID it issues afterwards is
/// greater, across crashes and failovers (the new mark is WAL-logged). For
/// data that arrived without its mark: `pg_upgrade`, a dump restored into a
/// new cluster, a server rebuilt with the same worker id. Superuser only
/// (the SQL script also revokes it from PUBLIC). An `id` more than a day
/// ahead of the clock is refused unless `force`: a mark cannot be taken
/// back, so a typo would push every later ID of the server into the future.
#[pg_extern(volatile, strict, parallel_unsafe, name = "snowflake_advance_past")]
fn snowflake_advance_past_checked(id: i64, force: default!(bool, false)) -> i64 {
    require_superuser_to_advance();
    advance::advance_past(id, force)
}

pub fn require_superuser_to_advance() {
    // SAFETY: a plain catalog check of the current user.
    if !unsafe { pg_sys::superuser() } {
        raise(
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            "permission denied for function snowflake_advance_past".into(),
            Some("Moving the generator's mark affects every ID this server issues.".into()),
            Some("Run it as a superuser.".into()),
        );
    }
}

// Decoding. `snowflake_decode` is an SQL function over these accessors
// (sql/install/decode.sql), so that the planner inlines it: `(snowflake_decode(id)).ts`
// becomes `snowflake_timestamp(id)`, and `FROM t, snowflake_decode(t.id)` (see
// planner.rs) three accessor calls, with no composite built per row. The
// forms without a layout use the server's and are STABLE (a restart may change
// it); those with one are IMMUTABLE, for expression indexes and generated
// columns.

/// The instant of the millisecond an ID was made in.
#[pg_extern(stable, parallel_safe)]
fn snowflake_timestamp(id: i64) -> TimestampWithTimeZone {
    to_timestamptz(decode(&server_layout(), id).unix_ms)
}

/// The worker id that made an ID.
#[pg_extern(stable, parallel_safe)]
fn snowflake_worker_id(id: i64) -> i32 {
    // Worker ids and sequences have at most 22 bits: they always fit an int.
    decode(&server_layout(), id).worker_id as i32
}

/// An ID's number within its millisecond.
#[pg_extern(stable, parallel_safe)]
fn snowflake_sequence(id: i64) -> i32 {
    decode(&server_layout(), id).sequence as i32
}

#[pg_extern(immutable, parallel_safe, name = "snowflake_timestamp")]
fn snowflake_timestamp_with_layout(
    id: i64,
    epoch: TimestampWithTimeZone,
    worker_bits: i32,
    sequence_bits: i32,
) -> TimestampWithTimeZone {
    to_timestamptz(decode(&given_layout(epoch, worker_bits, sequence_bits), id).unix_ms)
}

#[pg_extern(immutable, parallel_safe, name = "snowflake_worker_id")]
fn snowflake_worker_id_with_layout(id: i64, epoch: TimestampWithTimeZone, worker_bits: i32, sequence_bits: i32) -> i32 {
    decode(&given_layout(epoch, worker_bits, sequence_bits), id).worker_id as i32
}

#[pg_extern(immutable, parallel_safe, name = "snowflake_sequence")]
fn snowflake_sequence_with_layout(id: i64, epoch: TimestampWithTimeZone, worker_bits: i32, sequence_bits: i32) -> i32 {
    decode(&given_layout(epoch, worker_bits, sequence_bits), id).sequence as i32
}

/// How many IDs one worker's numbering covers in `span`, with the server's
/// layout: `'1 day'` gives 86,400,000 << (worker_bits + sequence_bits). For
/// range partitions of equal length in time (pg_partman's `p_interval`).
/// Days count as 24 hours (IDs are in UTC); months have no fixed length and
/// are refused.
#[pg_extern(stable, parallel_safe)]
fn snowflake_id_span(span: Interval) -> i64 {
    if span.months() != 0 {
        raise(
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("snowflake_id: a span of months has no fixed number of IDs: {} months", span.months()),
            None,
            Some(
                "Give the span in days or smaller units; bound calendar months with snowflake_from_timestamp().".into(),
            ),
        );
    }
    let micros = i64::from(span.days()).checked_mul(86_400_000_000).and_then(|d| d.checked_add(span.micros()));
    let ms = match micros {
        Some(us) if us % 1000 == 0 => us / 1000,
        _ => raise(
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            "snowflake_id: the span is not a whole number of milliseconds".into(),
            None,
            Some("IDs count milliseconds; give a span such as '1 day' or '15 minutes'.".into()),
        ),
    };
    server_layout().span(ms).unwrap_or_else(|e| raise_core(&e))
}

/// The smallest ID of the millisecond holding `ts`, so that
/// `id >= snowflake_from_timestamp(t)` selects the IDs made at or after t
/// and partition bounds can be written as instants. An instant before the
/// epoch gives 0.
#[pg_extern(stable, parallel_safe)]
fn snowflake_from_timestamp(ts: TimestampWithTimeZone) -> i64 {
    if ts.is_infinity() {
        raise(
            PgSqlErrorCode::ERRCODE_DATETIME_FIELD_OVERFLOW,
            "snowflake_id: timestamp infinity has no ID".into(),
            None,
            Some("For an open-ended partition bound write MAXVALUE; for a range, leave the upper bound out.".into()),
        );
    }
    if ts.is_neg_infinity() {
        return 0;
    }
    server_layout().smallest_id_at(unix_ms_of(ts)).unwrap_or_else(|e| raise_core(&e))
}

pub fn server_layout() -> Layout {
    *settings::Settings::get().layout.as_ref().unwrap_or_else(|e| raise_setting(e))
}

pub fn given_layout(epoch: TimestampWithTimeZone, worker_bits: i32, sequence_bits: i32) -> Layout {
    Layout::new(worker_bits.into(), sequence_bits.into(), unix_ms_of(epoch)).unwrap_or_else(|e| raise_core(&e))
}

pub fn decode(layout: &Layout, id: i64) -> Parts {
    layout.decode(id).unwrap_or_else(|e| raise_core(&e))
}

/// Unix milliseconds of 2000-01-01, PostgreSQL's timestamp zero.
const PG_EPOCH_UNIX_MS: i64 = 946_684_800_000;

pub fn to_timestamptz(unix_ms: i64) -> TimestampWithTimeZone {
    unix_ms
        .checked_sub(PG_EPOCH_UNIX_MS)
        .and_then(|ms| ms.checked_mul(1000))
        .and_then(|us| TimestampWithTimeZone::try_from(us).ok())
        .unwrap_or_else(|| {
            raise(
                PgSqlErrorCode::ERRCODE_DATETIME_FIELD_OVERFLOW,
                format!("snowflake_id: timestamp out of range: {unix_ms} ms after 1970"),
                None,
                Some("The epoch given to snowflake_decode() puts this ID outside PostgreSQL's timestamp range.".into()),
            )
        })
}

pub fn unix_ms_of(ts: TimestampWithTimeZone) -> i64 {
    let us: i64 = ts.into();
    us.div_euclid(1000).saturating_add(PG_EPOCH_UNIX_MS)
}
