//! The logical replication guard: what this server does about an ID that an
//! apply worker writes (the rule is core `logical_guard.rs`).
//!
//! It must never make an apply fail, so nothing here raises an ERROR: a
//! refusal (no worker id, a state file that cannot be read or written) is
//! logged, rate-limited, and the row goes in. Interrupts still end a wait,
//! as in any query (an apply worker told to stop, stops).
//!
//! `peers` looks at the same subscriptions from the other side: it asks
//! their publishers for their status, so that `snowflake_cluster_check()`
//! names a worker id shared with a peer (or another layout) before any row
//! of it arrives here.

use pgrx::{pg_sys, PgLogLevel, PgSqlErrorCode};
use snowflake_id_core::logical_guard::{self as rule, Verdict};
use snowflake_id_core::mark_record::Kind;
use snowflake_id_core::{epoch, GeneratorState, Layout};

use super::generator::draw::try_generator_settings;
use super::generator::start::try_start;
use super::generator::writer::{policy, query_keeps_going, reserve};
use crate::pg::clock::now_unix_ms;
use crate::pg::report::emit;
use crate::shmem::log_limit::{self, Topic};
use crate::shmem::{self, SharedWorkerSeen, ShortText};

pub mod peers;

/// How long (ms) a shared worker id stays the status view's `problem` after
/// the last row that showed it: long enough for a scrape every minute or
/// two to see it, short enough to clear once the DBA fixed it.
const PROBLEM_FOR_MS: i64 = 600_000;

/// One ID written by an apply worker (the trigger's column value).
pub fn saw(id: i64) {
    let Ok((layout, worker_id)) = try_generator_settings() else {
        // No worker id: this server issues nothing, so nothing to guard.
        return;
    };
    let now_ms = now_unix_ms();
    let now = now_ms.saturating_sub(layout.epoch_ms());
    // The fast path: one spinlock hold decides, and for a row behind the
    // generator or within the mark, also acts.
    let (verdict, shared_worker) = {
        let mut shared = shmem::lock();
        let issued = shared.generator.map(|g| (g.counters.issued, g.floor()));
        let verdict = rule::judge(&layout, worker_id, id, shared.generator.as_ref(), now);
        if verdict == Verdict::NotOurs {
            return;
        }
        let before = shared.logical_guard.issued_at_last_look;
        let tick = rule::tick_of(&layout, id);
        let shared_worker = issued.is_some_and(|(n, floor)| rule::issues_too(before, n, tick, floor));
        if let (Verdict::Raise { tick }, Some(g)) = (verdict, shared.generator.as_mut()) {
            // Within the durable mark: cannot fail but at the layout's end,
            // which judge() already excluded.
            let _ = rule::apply(&layout, g, tick, now);
        }
        shared.logical_guard.issued_at_last_look = shared.generator.map(|g| g.counters.issued);
        shared.logical_guard.received_own += 1;
        (verdict, shared_worker)
    };
    if shared_worker {
        record_shared_worker(worker_id, now_ms);
    }
    match verdict {
        Verdict::Reserve { tick } => reserve_past(&layout, worker_id, tick),
        Verdict::Implausible { tick } => warn_implausible(&layout, worker_id, id, tick),
        Verdict::NotOurs | Verdict::Behind | Verdict::Raise { .. } => {}
    }
}

/// The slow path, once per mark reach (a second of ID time) at most while a
/// burst of rows arrives: the same durable move as `snowflake_advance_past`.
fn reserve_past(layout: &Layout, worker_id: i64, tick: i64) {
    if let Err(e) = try_start(layout, worker_id) {
        warn_failed(worker_id, &e);
        return;
    }
    let Ok(target) = GeneratorState::advance_target(layout, tick, policy()) else {
        return;
    };
    let clocks = shmem::lock().generator.map(|g| g.clocks_after_advance(tick));
    if let Err(e) = reserve(layout, worker_id, tick + 1, target, clocks, Kind::Advance, query_keeps_going) {
        warn_failed(worker_id, &e.to_string());
        return;
    }
    let now = now_unix_ms().saturating_sub(layout.epoch_ms());
    let mut shared = shmem::lock();
    if let Some(g) = shared.generator.as_mut() {
        // Only once the mark past `tick` is durable (reserve returned): a
        // crash before would resume above the old mark, below `tick`, but
        // no ID above the old mark was issued by this move.
        if g.mark() > tick {
            let _ = rule::apply(layout, g, tick, now);
        }
        shared.logical_guard.issued_at_last_look = Some(g.counters.issued);
    }
}

/// Where the rows being applied come from: the replication origin of the
/// session (both the native apply worker and pglogical's set one) and the
/// process's name (which says the subscription). Only for a log line.
fn source() -> String {
    // SAFETY: plain globals of this process; replorigin_by_oid with
    // missing_ok only reads the catalog (we are in a transaction: a trigger).
    unsafe {
        let mut parts = vec![];
        #[cfg(not(feature = "pg19"))]
        let origin = pg_sys::replorigin_session_origin;
        // 19 keeps the origin of the transaction being applied in a struct.
        #[cfg(feature = "pg19")]
        let origin = pg_sys::replorigin_xact_state.origin;
        if origin != 0 {
            let mut name: *mut std::ffi::c_char = std::ptr::null_mut();
            if pg_sys::replorigin_by_oid(origin, true, &mut name) && !name.is_null() {
                parts.push(format!("origin \"{}\"", std::ffi::CStr::from_ptr(name).to_string_lossy()));
            }
        }
        let worker = pg_sys::MyBgworkerEntry;
        if !worker.is_null() {
            let name = std::ffi::CStr::from_ptr((*worker).bgw_name.as_ptr()).to_string_lossy();
            parts.push(format!("\"{name}\""));
        }
        if parts.is_empty() {
            "a session with session_replication_role = replica".into()
        } else {
            parts.join(", ")
        }
    }
}

fn record_shared_worker(worker_id: i64, now_ms: i64) {
    let from = source();
    {
        let mut shared = shmem::lock();
        shared.logical_guard.shared_worker =
            Some(SharedWorkerSeen { seen_unix_ms: now_ms, worker_id, from: ShortText::new(&from) });
    }
    if log_limit::due(Topic::SharedWorker) {
        emit(
            PgLogLevel::WARNING,
            PgSqlErrorCode::ERRCODE_WARNING,
            format!(
                "snowflake_id: worker id {worker_id} is used by a logical replication peer too: rows carrying it \
                 arrive from {from} while this server issues IDs with it"
            ),
            Some(
                "Two servers issuing with one worker id repeat each other's IDs: an apply stops on a duplicate key, \
                 or a table without a unique key holds the same ID twice. This server moves past every such ID \
                 it receives, which does not prevent IDs issued at the same instant."
                    .into(),
            ),
            Some(
                "Give every server that issues IDs its own snowflake_id.worker_id (or lease them from a registry)."
                    .into(),
            ),
        );
    }
}

/// The status view's `problem` for a shared worker id seen lately, as
/// `SQLSTATE: message` like the others.
pub fn problem(now_ms: i64) -> Option<String> {
    if !shmem::preloaded() {
        return None;
    }
    let seen = shmem::lock().logical_guard.shared_worker?;
    (now_ms.saturating_sub(seen.seen_unix_ms) < PROBLEM_FOR_MS).then(|| {
        format!(
            "01000: snowflake_id: worker id {} is used by a logical replication peer too: rows carrying it arrived \
             from {} at {} while this server issued IDs with it",
            seen.worker_id,
            seen.from,
            epoch::format_unix_ms(seen.seen_unix_ms)
        )
    })
}

fn warn_implausible(layout: &Layout, worker_id: i64, id: i64, tick: i64) {
    if log_limit::due(Topic::LogicalGuard) {
        emit(
            PgLogLevel::WARNING,
            PgSqlErrorCode::ERRCODE_WARNING,
            format!(
                "snowflake_id: a row applied from {} carries ID {id} with this server's worker id {worker_id}, \
                 decoding to {}: not moved past",
                source(),
                epoch::format_unix_ms(tick.saturating_add(layout.epoch_ms()))
            ),
            Some(
                "It is more than five minutes ahead of this server's clock, past the layout's end or past this \
                 server's registry lease: made with another layout or by a clock far off, or crafted."
                    .into(),
            ),
            Some(format!(
                "If the ID is right and this server's clock is behind, a superuser runs SELECT \
                 snowflake_advance_past({id}, force => true);"
            )),
        );
    }
}

fn warn_failed(worker_id: i64, why: &str) {
    if log_limit::due(Topic::LogicalGuard) {
        emit(
            PgLogLevel::WARNING,
            PgSqlErrorCode::ERRCODE_WARNING,
            format!(
                "snowflake_id: could not move the generator past a row applied from {} with this server's worker \
                 id {worker_id}: {why}",
                source()
            ),
            Some("The row was applied; the next received row tries again.".into()),
            None,
        );
    }
}
