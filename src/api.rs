//! The SQL functions for application developers.

use pgrx::prelude::*;
use pgrx::PgSqlErrorCode;
use snowflake_id_core::{Layout, Parts};

use crate::errors::{raise, raise_core, raise_setting};
use crate::{guc, nextval};

/// The next ID of this server's shared generator.
///
/// VOLATILE: every call returns a new value. PARALLEL SAFE: the generator
/// lives in shared memory and parallel workers attach to it like any other
/// backend, so IDs drawn by workers are as unique and increasing as any;
/// unlike `nextval()` there is no per-backend cache and nothing is
/// WAL-logged.
#[pg_extern(volatile, parallel_safe)]
fn snowflake_nextval() -> i64 {
    nextval::next_id()
}

/// Moves this server's generator past `id`: every ID it issues afterwards is
/// greater, across crashes and failovers (the new mark is WAL-logged). For
/// data that arrived without its mark: `pg_upgrade`, a dump restored into a
/// new cluster, a server rebuilt with the same worker id. Superuser only
/// (the SQL script also revokes it from PUBLIC).
#[pg_extern(volatile, strict, parallel_unsafe)]
fn snowflake_advance_past(id: i64) -> i64 {
    // SAFETY: a plain catalog check of the current user.
    if !unsafe { pg_sys::superuser() } {
        raise(
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            "permission denied for function snowflake_advance_past".into(),
            Some("Moving the generator's mark affects every ID this server issues.".into()),
            Some("Run it as a superuser.".into()),
        );
    }
    nextval::advance_past(id)
}

/// Decodes an ID made by this server (or any with the same layout).
/// STABLE, not IMMUTABLE: the answer depends on settings a restart may change.
#[pg_extern(stable, parallel_safe)]
#[search_path(@extschema@)]
fn snowflake_decode(id: i64) -> pgrx::composite_type!('static, "snowflake_parts") {
    parts_tuple(decode(&server_layout(), id))
}

/// Decodes an ID made elsewhere: Twitter's, Discord's, another server's.
#[pg_extern(immutable, parallel_safe, name = "snowflake_decode")]
#[search_path(@extschema@)]
fn snowflake_decode_with_layout(
    id: i64,
    epoch: TimestampWithTimeZone,
    worker_bits: i32,
    sequence_bits: i32,
) -> pgrx::composite_type!('static, "snowflake_parts") {
    let layout =
        Layout::new(worker_bits.into(), sequence_bits.into(), unix_ms_of(epoch)).unwrap_or_else(|e| raise_core(&e));
    parts_tuple(decode(&layout, id))
}

/// The smallest ID of the millisecond holding `ts`, so that
/// `id >= snowflake_from_timestamp(t)` selects the IDs made at or after t
/// and partition bounds can be written as instants. An instant before the
/// epoch gives 0.
#[pg_extern(stable, parallel_safe)]
fn snowflake_from_timestamp(ts: TimestampWithTimeZone) -> i64 {
    server_layout().smallest_id_at(unix_ms_of(ts)).unwrap_or_else(|e| raise_core(&e))
}

fn server_layout() -> Layout {
    *guc::Settings::get().layout.as_ref().unwrap_or_else(|e| raise_setting(e))
}

fn decode(layout: &Layout, id: i64) -> Parts {
    layout.decode(id).unwrap_or_else(|e| raise_core(&e))
}

fn parts_tuple(parts: Parts) -> pgrx::composite_type!('static, "snowflake_parts") {
    let built = (|| -> Result<_, Box<dyn std::error::Error>> {
        let mut tuple = PgHeapTuple::new_composite_type("snowflake_parts")?;
        tuple.set_by_name("ts", to_timestamptz(parts.unix_ms))?;
        // Worker ids and sequences have at most 22 bits: they always fit an int.
        tuple.set_by_name("worker_id", parts.worker_id as i32)?;
        tuple.set_by_name("sequence", parts.sequence as i32)?;
        Ok(tuple)
    })();
    built.unwrap_or_else(|e| {
        raise(PgSqlErrorCode::ERRCODE_INTERNAL_ERROR, format!("could not build snowflake_parts: {e}"), None, None)
    })
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
