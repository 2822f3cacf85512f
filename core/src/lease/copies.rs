//! Copies of a running holder: the part of the lease rule that tells a
//! holder's own restart from a copy of its data directory ([`super::takeover`],
//! [`renewal_instance`]).
//!
//! A data directory copied from a running holder (a VM snapshot, a
//! `pg_basebackup` started as a primary) has the holder's lease on disk, its
//! epoch and token, and its timeline: nothing on disk tells it from the
//! holder's own restart after a crash. What differs is the process: every
//! postmaster start draws a random *instance*, which the registry records
//! with the grant and which every renewal names. A start that presents the
//! lease on disk (same cluster, timeline, epoch and token) is:
//!
//! - the same instance (its keeper restarted, or a crash reinitialised shared
//!   memory under the same postmaster): the lease goes on, unchanged
//!   ([`super::Takeover::Continued`]);
//! - another instance while the recorded one renewed within [`silence_ms`]:
//!   refused. A live holder renews at least every [`heartbeat_ms`], so a
//!   copy of a running node is refused while the original runs; refused
//!   for longer than the silence, it is a [`proven_copy`] and presents the
//!   lease no more, so that a slow renewal of the original later on does
//!   not hand it the lease;
//! - another instance after that silence: the recorded one stopped renewing,
//!   a crash most likely, but possibly a pause or a partition of a holder
//!   that still issues up to its ceiling, from a disk this start has an
//!   older copy of. So it is granted anew, above the old ceiling
//!   ([`super::Takeover::Resumed`]), like a takeover: a crash restart pays a wait
//!   of at most [`silence_ms`] and a floor up to a horizon ahead; uniqueness
//!   pays nothing.
//!
//! A renewal or release naming another instance than the recorded one is
//! refused ([`renewal_instance`]): it comes from a start that went on under
//! the lease on disk without the registry's answer (unreachable at start,
//! see [`resumes_unconfirmed`]), beside or after the recorded instance. It
//! stops at once, not at its ceiling (the other one issues under the same
//! lease), and asks for a grant like any start; its release would lower the
//! ceiling to *its* last tick, below what the other one issued, so it
//! changes nothing. That start issued under the copied lease until then:
//! a copy started during a registry outage repeats the original's IDs until
//! its first contact, the one window the rule leaves open. A node older
//! than 0.4.0 names no instance and is not fenced.

/// Why a worker id may not be granted to a claimant now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Busy {
    /// Another node holds it live (SQLSTATE SFL02).
    Held,
    /// Another start of this very lease runs and renews it: the claimant is
    /// a copy of a running holder's data directory, or the holder restarted
    /// less than [`silence_ms`] after its last renewal (SFL05).
    Running,
}

/// How often a live holder renews at least: a tenth of its horizon (3 s by
/// default), whatever its ceiling needs, so that the registry can tell a
/// running holder from a stopped one within [`silence_ms`].
pub fn heartbeat_ms(horizon_ms: i64) -> i64 {
    (horizon_ms / 10).max(1)
}

/// How long one call of a node to the registry may take, connect included
/// (the mark keeper's timeout): a renewal may be that late and still come.
pub const CALL_TIMEOUT_MS: i64 = 5_000;

/// How long the instance holding a lease must have been silent (not
/// renewed, by the registry's clock) before another start of the same lease
/// is granted it anew: a quarter of the horizon, and at least a heartbeat
/// plus a call that takes its whole timeout plus a second (9 s with the
/// default 30 s lease), so that a running holder's slowest renewal comes
/// before its copy could be taken for its restart (and even then it would
/// only be fenced, never overlapped).
pub fn silence_ms(horizon_ms: i64) -> i64 {
    (horizon_ms / 4).max(heartbeat_ms(horizon_ms) + CALL_TIMEOUT_MS + 1_000)
}

/// Whether a start refused (SFL05) without a break for `refused_ms` (by
/// its own monotonic clock) is a copy of a running holder: refused again
/// more than the silence (and a second for the clocks' rates) after its
/// first refusal, the registry saw the holder renew after that first
/// refusal, since it grants the lease anew once the holder is silent. A
/// proven copy presents the lease on disk no more: it takes the worker id
/// only when it is stale or released, so a slow renewal of the original
/// later on cannot hand it the lease.
pub fn proven_copy(refused_ms: i64, horizon_ms: i64) -> bool {
    refused_ms > silence_ms(horizon_ms) + 1_000
}

/// The instance a renewal (or release) leaves recorded, or `Err` (SFL05;
/// a release does nothing) when it names another instance than the
/// recorded one: a start that went on under the lease on disk without the
/// registry's answer, beside (or after) the one the registry knows. One
/// naming none (a node older than 0.4.0) changes nothing; a lease with none
/// recorded takes the first one named.
pub fn renewal_instance(recorded: Option<i64>, caller: Option<i64>) -> Result<Option<i64>, Busy> {
    match (recorded, caller) {
        (_, None) => Ok(recorded),
        (None, Some(c)) => Ok(Some(c)),
        (Some(r), Some(c)) if r == c => Ok(recorded),
        _ => Err(Busy::Running),
    }
}

/// How long (ms) a start waits for the registry's answer on the lease it
/// has on disk before it goes on under it unconfirmed: a registry that does
/// not answer must not stop a restarted node that could issue, and a copy
/// that goes on this way is refused at its first renewal that reaches the
/// registry ([`renewal_instance`]).
pub const START_WAIT_MS: i64 = 5_000;

/// Whether a start, `since_start_ms` after its keeper began asking without
/// an answer from the registry, goes on under the lease on disk.
pub fn resumes_unconfirmed(since_start_ms: i64) -> bool {
    since_start_ms >= START_WAIT_MS
}

#[cfg(test)]
mod tests {
    use super::super::*;

    #[test]
    fn a_copy_of_a_running_holder_is_refused_and_a_crash_restart_granted_anew() {
        let held = SAMPLE_HOLDER;
        // Another start (a copy, or a restart) with the lease on disk.
        let copy = Claimant { system_identifier: 1, timeline: 2, resume: Some((3, 77)), instance: Some(42) };
        assert_eq!((heartbeat_ms(30_000), silence_ms(30_000)), (3_000, 9_000));
        assert_eq!(silence_ms(80_000), 20_000, "a quarter of a long lease");
        assert_eq!(takeover(Some(&held), &copy, 10_000, 19_000), Err(Busy::Running), "renewed 9 s ago");
        assert_eq!(takeover(Some(&held), &copy, 10_000, 19_001), Ok(Takeover::Resumed), "silent: a new grant");
        assert!(!proven_copy(10_000, 30_000) && proven_copy(10_001, 30_000));
        // Granted before 0.4.0 (no instance recorded): any start waits for the silence.
        let unknown = Holder { instance: None, ..held };
        assert_eq!(takeover(Some(&unknown), &copy, 10_000, 12_000), Err(Busy::Running));
        // A node older than 0.4.0 names no instance: as before, not fenced.
        assert_eq!(takeover(Some(&held), &Claimant { instance: None, ..copy }, 10_000, 12_000), Ok(Takeover::Resumed));
        // Renewals.
        assert_eq!(renewal_instance(Some(41), Some(41)), Ok(Some(41)));
        assert_eq!(renewal_instance(None, Some(42)), Ok(Some(42)));
        assert_eq!(renewal_instance(Some(41), None), Ok(Some(41)));
        assert_eq!(renewal_instance(Some(41), Some(42)), Err(Busy::Running));
        // A tiny horizon still leaves the silence longer than the heartbeat.
        assert!(silence_ms(4) > heartbeat_ms(4));
        assert!(!resumes_unconfirmed(START_WAIT_MS - 1) && resumes_unconfirmed(START_WAIT_MS));
    }
}
