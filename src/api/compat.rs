//! C entry points that only the SQL of an older extension version calls.
//!
//! A new library is installed before `ALTER EXTENSION snowflake_id UPDATE`
//! runs, and until then the database still holds the old version's function
//! definitions, which name these symbols. They keep working (the decoders
//! slowly: they build the composite per call) until the upgrade scripts
//! replace them. No SQL is generated for them.

use pgrx::prelude::*;
use pgrx::PgSqlErrorCode;
use snowflake_id_core::Parts;

use super::functions::{decode, given_layout, require_superuser_to_advance, server_layout, to_timestamptz};
use crate::pg::report::raise;
use crate::service::generator::advance;

/// 0.1.0's `snowflake_decode(bigint)`, declared there with
/// `SET search_path = @extschema@` so that the type is found by name.
#[pg_extern(sql = false)]
fn snowflake_decode(id: i64) -> pgrx::composite_type!('static, "snowflake_parts") {
    parts_tuple(decode(&server_layout(), id))
}

/// 0.1.0's `snowflake_decode(bigint, timestamptz, integer, integer)`.
#[pg_extern(sql = false)]
fn snowflake_decode_with_layout(
    id: i64,
    epoch: TimestampWithTimeZone,
    worker_bits: i32,
    sequence_bits: i32,
) -> pgrx::composite_type!('static, "snowflake_parts") {
    parts_tuple(decode(&given_layout(epoch, worker_bits, sequence_bits), id))
}

/// 0.2.0's `snowflake_advance_past(bigint)`, until the update to 0.3.0 adds
/// `force`: the same refusal of an ID more than a day ahead.
#[pg_extern(sql = false)]
fn snowflake_advance_past(id: i64) -> i64 {
    require_superuser_to_advance();
    advance::advance_past(id, false)
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
