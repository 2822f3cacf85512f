//! Making the mark durable: the state file, then the WAL record, then (with
//! synchronous standbys) the wait for them, and only then may IDs under the
//! new mark be issued. Two writers: a query that found the mark used up
//! (`Step::NeedMark`, before its ID is issued), and the mark keeper ahead of
//! need ([`renew_if_due`]), so that an ID issued never waits for a renewal
//! or a standby and never fails because of one.

use pgrx::{PgLogLevel, PgSqlErrorCode};
use snowflake_id_core::mark_record::Kind;
use snowflake_id_core::state_file::{RegistryLease, Stored};
use snowflake_id_core::{Clocks, Layout, Policy};

use super::resume::stored_layout;
use crate::mark::file::{self, WriteError};
use crate::mark::wal;
use crate::pg::clock::now_unix_ms;
use crate::pg::recovery::in_recovery;
use crate::pg::report::check_for_interrupts;
use crate::pg::KeepGoing;
use crate::shmem::log_limit::{self, Topic};
use crate::{settings, shmem};

/// How far past the generator's position a durable mark reaches: after a
/// crash the next ID is at most this far ahead of the last one issued.
pub const MARK_REACH_MS: i64 = 1000;

/// The mark keeper renews when the mark is this close (ms) to the
/// generator's position: about two writes a second while IDs flow.
const KEEPER_RENEWS_WITHIN_MS: i64 = MARK_REACH_MS / 2;

/// ...for this long (ms) after the last ID, so that a caller after a pause
/// finds the mark ahead; after that an idle server writes nothing.
const KEEPER_ACTIVE_MS: i64 = 10_000;

pub fn policy() -> Policy {
    Policy { max_drift_ms: settings::max_drift_ms(), mark_reach_ms: MARK_REACH_MS }
}

/// A query's wait: statement_timeout and pg_cancel_backend end it with an
/// ERROR (no ID has been issued under the new mark yet).
pub fn query_keeps_going() -> bool {
    check_for_interrupts();
    true
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
pub fn reserve(
    layout: &Layout,
    worker_id: i64,
    through: i64,
    target: i64,
    clocks: Option<Clocks>,
    kind: Kind,
    keep_going: KeepGoing,
) -> Result<bool, WriteError> {
    let (mark, lsn, wrote) = {
        let _io = shmem::state_io();
        // With a registry, the worker id written is the lease's, read with
        // it under state_io (which a new lease is taken under too), not the
        // caller's, read before: the keeper may have switched leases since,
        // and a file pairing one worker id with another's lease would be
        // resumed as this server's own after a crash. The mark itself does
        // not depend on the worker id.
        let (usable, written, lsn, current, lease, worker_id) = {
            let shared = shmem::lock();
            let (lease, worker_id) = lease_and_worker_id(&shared, worker_id);
            match shared.generator.as_ref() {
                Some(g) => (g.mark(), shared.written_mark, shared.mark_lsn, g.clocks(), lease, worker_id),
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
                mark: target.max(written),
                clocks: Some(clocks),
                registry: lease,
            };
            let written = file::write(&stored);
            let failure = written.as_ref().err().map(|e| shmem::ShortText::new(&e.to_string()));
            shmem::lock().write_failure = failure;
            written?;
            let lsn = wal::log_mark(kind, &stored);
            let mut shared = shmem::lock();
            shared.written_mark = stored.mark;
            shared.mark_lsn = lsn;
            if let Some(g) = shared.generator.as_mut() {
                g.counters.mark_writes += 1;
            }
            (stored.mark, lsn, true)
        }
    };
    if !wal::wait_for_sync_standbys(lsn, keep_going) {
        return Ok(false);
    }
    if let Some(g) = shmem::lock().generator.as_mut() {
        g.extend_mark(mark);
    }
    Ok(wrote)
}

/// The registry lease in force and its worker id, or none and `worker_id`
/// (a fixed one): what a state file written now pairs.
fn lease_and_worker_id(shared: &shmem::Shared, worker_id: i64) -> (Option<RegistryLease>, i64) {
    match shared.registry.lease {
        Some(lease) => (Some(lease), shared.registry.worker_id),
        None => (None, worker_id),
    }
}

/// The mark keeper's turn: writes the mark the core's mark rule asks for
/// ahead of need, if any. Returns whether it wrote.
pub fn renew_if_due(layout: &Layout, worker_id: i64, keep_going: KeepGoing) -> Result<bool, WriteError> {
    if in_recovery() {
        // Only where IDs are issued; a standby's mark comes from WAL.
        return Ok(false);
    }
    let now = now_unix_ms().saturating_sub(layout.epoch_ms());
    let policy = policy();
    let due = shmem::lock().generator.and_then(|g| {
        g.renewal(layout, now, policy, KEEPER_ACTIVE_MS, KEEPER_RENEWS_WITHIN_MS)
            .map(|(target, clocks)| (g.mark(), target, clocks))
    });
    let Some((mark, target, clocks)) = due else { return Ok(false) };
    let wrote = reserve(layout, worker_id, mark + 1, target, Some(clocks), Kind::Mark, keep_going)?;
    if wrote {
        shmem::lock().keeper_mark_writes += 1;
    }
    Ok(wrote)
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
    let (written, clocks, lease, worker_id) = {
        let s = shmem::lock();
        let (lease, worker_id) = lease_and_worker_id(&s, worker_id);
        match s.generator {
            Some(g) if s.written_mark >= 0 => (s.written_mark, g.clocks(), lease, worker_id),
            _ => return false,
        }
    };
    let stored =
        Stored { layout: stored_layout(layout, worker_id), mark: written, clocks: Some(clocks), registry: lease };
    let outcome = file::write(&stored);
    let failure = outcome.as_ref().err().map(|e| shmem::ShortText::new(&e.to_string()));
    shmem::lock().write_failure = failure;
    outcome.is_ok()
}

/// A renewal ahead of need failed: a WARNING, at most one every ten seconds
/// across the server.
pub fn warn_write_failure(e: &WriteError) {
    if log_limit::due(Topic::WriteFailure) {
        crate::pg::report::emit(
            PgLogLevel::WARNING,
            PgSqlErrorCode::ERRCODE_IO_ERROR,
            format!("snowflake_id: could not renew the durable mark: {e}"),
            Some("IDs stop with SQLSTATE 58030 once the current mark, at most a second ahead, is used up.".into()),
            Some("Check the permissions and free space of the data directory. This warning repeats at most every 10 seconds.".into()),
        );
    }
}
