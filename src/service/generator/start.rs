//! Starting the shared generator, once per server start (or promotion),
//! above the durable mark.

use pgrx::{PgLogLevel, PgSqlErrorCode};
use snowflake_id_core::Layout;

use super::resume::{read_refusal, resumed};
use crate::pg::clock::now_unix_ms;
use crate::service::registry::lease;
use crate::settings::registry;
use crate::shmem;
use crate::shmem::log_limit::{self, Topic};

/// Starts the shared generator above the durable mark, once per server
/// start (or promotion): above the later of the state file and the mark
/// replayed from WAL, with the clocks written with it.
pub fn start(layout: &Layout, worker_id: i64) {
    if let Err(refusal) = started(layout, worker_id) {
        refusal.raise();
    }
}

/// [`start`] for the logical replication guard, which must never raise:
/// why the generator could not start, as text.
pub fn try_start(layout: &Layout, worker_id: i64) -> Result<(), String> {
    started(layout, worker_id).map_err(|refusal| refusal.summary())
}

fn started(layout: &Layout, worker_id: i64) -> Result<(), crate::pg::report::Refusal> {
    let outcome = {
        let _io = shmem::state_io();
        if shmem::lock().generator.is_some() {
            return Ok(());
        }
        let now_ms = now_unix_ms();
        resumed(layout, worker_id, now_ms).map(|generator| {
            let mut guard = shmem::lock();
            guard.generator = Some(generator);
            if registry::used() {
                lease::enter_at_start(&mut guard, layout, now_ms);
            }
            guard.written_mark = generator.mark();
            guard.started_unix_ms = now_ms;
            generator.counters.largest_step_back_ms
        })
    };
    match outcome {
        Ok(0) => Ok(()),
        Ok(behind) => {
            warn_step_back(behind, true);
            Ok(())
        }
        Err(e) => Err(read_refusal(e)),
    }
}

/// At most one WARNING a minute across the server: a clock that keeps
/// jumping should not flood the client or the log. The status view counts
/// them all.
pub fn warn_step_back(ms: i64, at_start: bool) {
    if log_limit::due(Topic::StepBack) {
        let message = if at_start {
            format!(
                "snowflake_id: the system clock is {ms} ms behind the clock readings recorded with the durable mark"
            )
        } else {
            format!("snowflake_id: the system clock went back by {ms} ms")
        };
        crate::pg::report::emit(
            PgLogLevel::WARNING,
            PgSqlErrorCode::ERRCODE_WARNING,
            message,
            Some(
                "IDs continue from the logical clock, which now runs ahead of the wall clock; none is repeated.".into(),
            ),
            Some(
                "Check the time synchronisation (NTP, chrony) of this server. snowflake_id_status counts every step."
                    .into(),
            ),
        );
    }
}
