//! Moving the generator past an ID from elsewhere (a restored dump, a
//! cluster copied by pg_upgrade): the one way to raise the mark on purpose.

use pgrx::{PgLogLevel, PgSqlErrorCode};
use snowflake_id_core::mark_record::Kind;
use snowflake_id_core::{epoch, GeneratorState};

use super::draw::{check_may_issue, generator_settings};
use super::start::start;
use super::writer::{policy, query_keeps_going, reserve};
use crate::pg::clock::now_unix_ms;
use crate::pg::report::raise;
use crate::refusal::{raise_core, raise_io};
use crate::shmem;

/// `snowflake_advance_past` refuses an ID further ahead of the clock than
/// this (ms) unless forced: a day covers any clock skew between servers.
const ADVANCE_LIMIT_MS: i64 = 86_400_000;

/// Moves the generator past `id` (IDs restored from a dump, copied from
/// another cluster): every ID issued afterwards is greater. The new mark
/// (one reach past `id`) is made durable and WAL-logged first, so a crash or
/// failover right after keeps it. Returns the smallest ID the next call may
/// return.
pub fn advance_past(id: i64, force: bool) -> i64 {
    check_may_issue("snowflake_advance_past()");
    let (layout, worker_id) = generator_settings();
    let tick = layout.decode(id).map(|p| p.unix_ms - layout.epoch_ms()).unwrap_or_else(|e| raise_core(&e));
    let ahead_ms = tick.saturating_add(layout.epoch_ms()).saturating_sub(now_unix_ms());
    if ahead_ms > ADVANCE_LIMIT_MS && !force {
        raise(
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
                 SELECT snowflake_id_internal.snowflake_advance_past({id}::bigint, force => true);"
            )),
        );
    }
    let target = GeneratorState::advance_target(&layout, tick, policy()).unwrap_or_else(|e| raise_core(&e));
    if shmem::lock().generator.is_none() {
        start(&layout, worker_id);
    }
    let clocks = shmem::lock().generator.map(|g| g.clocks_after_advance(tick));
    if let Err(e) = reserve(&layout, worker_id, tick + 1, target, clocks, Kind::Advance, query_keeps_going) {
        raise_io(e.to_string());
    }
    let now = now_unix_ms().saturating_sub(layout.epoch_ms());
    let next =
        shmem::lock().generator.as_mut().map(|g| g.advance_past(&layout, tick, now).map(|_| g.last_counter() + 1));
    match next {
        Some(Ok(next)) => {
            let reserved = shmem::lock().generator.map_or(target, |g| g.mark());
            crate::pg::report::emit(
                PgLogLevel::NOTICE,
                PgSqlErrorCode::ERRCODE_SUCCESSFUL_COMPLETION,
                format!(
                    "snowflake_id: the generator is past {}; IDs up to {} are reserved",
                    epoch::format_unix_ms(tick.saturating_add(layout.epoch_ms())),
                    epoch::format_unix_ms(reserved.saturating_add(layout.epoch_ms()))
                ),
                None,
                None,
            );
            layout.id_from_counter(next, worker_id)
        }
        Some(Err(e)) => raise_core(&e),
        // start() above returns only with a generator in place.
        None => raise(
            PgSqlErrorCode::ERRCODE_INTERNAL_ERROR,
            "snowflake_id: the generator is not running".into(),
            None,
            None,
        ),
    }
}
