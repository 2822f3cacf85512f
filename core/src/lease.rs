//! The registry lease rule: how a worker id is shared in time between the
//! servers that hold it one after another (or, in a split brain, at once).
//! This file is the one place the rule is written down; `sql/install/registry_functions.sql`
//! (the registry's side) computes the same numbers in SQL (checked against
//! this file on a real server by `tests/registry_model.rs`), and
//! `src/service/registry/lease.rs` and `src/worker/registry_keeper.rs` (the node's
//! side) call the functions here.
//!
//! # What a lease is
//!
//! A lease on a worker id is a range of ID time, `[floor, ceiling]` in ticks
//! (milliseconds since the layout's epoch). Its holder issues IDs under that
//! worker id only with ticks inside it. Every grant bumps the worker id's
//! lease epoch and draws a random, non-zero holder token; renewals and
//! releases name both, so a holder whose lease was replaced (or lost by a
//! registry crash and handed out again under the same epoch) is fenced off:
//! its renewals fail and it stops at the ceiling it has.
//!
//! # Why two holders never overlap (invariant 8)
//!
//! - A grant starts above every ceiling granted before for the worker id:
//!   `floor = previous ceiling + 1` ([`grant`]).
//! - The registry never lowers a held lease's ceiling ([`renew`] takes the
//!   maximum); only a release lowers it, and only to the last tick its holder
//!   issued, which the holder made its own ceiling first ([`closed`],
//!   [`release`]).
//! - A holder uses a ceiling only after the registry committed it, durably
//!   (the keeper sets `synchronous_commit = on`; the registry runs with
//!   `fsync` on and, if it can fail over, synchronous replication). Its own
//!   ceiling is the highest one it was answered ([`raised_ceiling`]), so it is
//!   never above the registry's.
//!
//! Hence every tick issued under an earlier grant is below the floor of
//! every later grant, whatever the clocks of the holders or the registry do,
//! however long a holder is paused, partitioned or split from its standby:
//! clocks decide only *when* a takeover may happen ([`takeover`]), never
//! *where* the new range starts. The one assumption is durability: a
//! registry that loses a commit a node acted on (a grant or a renewal) can
//! hand the same range out twice. The fencing token then stops the old
//! holder's renewals but not the IDs it issues up to the ceiling it was told.
//!
//! # How far ahead of the clock a lease reaches (invariant 7)
//!
//! A ceiling is `max(tick + horizon, floor + horizon / 4)`, where `tick` is
//! the node's position ([`position`]: its clock, or its last ID less three
//! quarters of a horizon when that is later) capped
//! at a day past the registry's clock ([`request_tick`]): one node with a
//! clock far ahead cannot push the ceilings, and so the next holders'
//! floors, more than a day ahead. A new holder therefore starts at most
//! `horizon + 1` ms past the position its predecessor last renewed at (and
//! never more than `day + horizon + 1` past the registry's clock then), or
//! `horizon / 4 + 1` past the predecessor's own floor when that was higher.
//! So takeovers in a row hardly add up: a restart granted anew waits
//! [`silence_ms`] at least (a quarter horizon, or a tenth plus 6 s), and
//! the next floor is at most a quarter horizon plus the IDs' own lead
//! (`max_drift` past the floor) past the last one, so each restart adds at
//! most `max_drift + horizon / 4 - silence`: nothing with the defaults
//! (30 s, 1 s), a second with a 60 s lease; promotions at once, one after
//! another, add up to a quarter horizon each. (Before 0.4.0 a ceiling was
//! `max(floor, tick) + horizon` with the last ID as the position: each
//! takeover in a row added a horizon.) The generator jumps to a floor ahead of its clock as skew,
//! like `advance_past`, and issues at the floor until its clock catches up;
//! from the floor on, IDs stay within `max_drift` plus the mark's reach of
//! that floor-moved reference. So with sane clocks a holder's IDs are within
//! `max_drift + lease` (about a second) of its clock, except after a takeover,
//! when they are up to `horizon + 1` ms more ahead per takeover not yet caught
//! up with. A clean stop ([`release`]) lowers the ceiling to the last ID
//! issued, so the next holder starts right above it instead.
//!
//! # Who may take a worker id now
//!
//! A worker id never granted, released, or stale (not renewed for its
//! horizon plus the namespace's margin, by the registry's clock) is free to
//! any node. A live one is taken at once only by its holder's own cluster
//! (same system identifier) when it is a promoted standby or point-in-time
//! restore (a later timeline: its old primary may still be running, and is
//! fenced by the new floor). A copy of a data directory on the same timeline
//! with an older lease on disk is another holder: it waits until the lease
//! is stale; a copy of a running holder, its current lease on disk, is
//! refused while the holder runs ([`copies`]).
//!
//! # The node's side
//!
//! A node makes a grant durable with a mark at least one below its floor
//! ([`grant_mark`]) before using it, so a restart resumes inside it; a lease
//! on disk on the node's own timeline, not released ([`resumes_own`]), is
//! presented to the registry at a start, and resumed once the registry
//! answers that it goes on ([`Takeover::Continued`]), or after
//! [`START_WAIT_MS`] without an answer ([`resumes_unconfirmed`]). A node that
//! switches from another worker id (its lease was lost, it asked for any
//! free one) starts past the tick of its last ID ([`holder_floor`]). Its
//! mark keeper renews when the ceiling is within an eighth of a horizon of
//! where IDs are issued, or a [`heartbeat_ms`] after the registry's last answer by a
//! monotonic clock ([`renewal_due`]), so that the registry sees a running
//! node as running, whatever the node's wall clock does.

use crate::state_file::RegistryLease;

mod copies;
pub mod registry;
pub use copies::{
    heartbeat_ms, proven_copy, renewal_instance, resumes_unconfirmed, silence_ms, Busy, CALL_TIMEOUT_MS, START_WAIT_MS,
};

/// A node's tick is taken at most this far (ms) past the registry's clock.
pub const DAY_MS: i64 = 86_400_000;

/// The token a node writes for a lease it released at a clean stop. The
/// registry never hands it out (tokens are at least 1), so neither a restart
/// nor a renewal can use a released lease.
pub const RELEASED_TOKEN: i64 = 0;

/// A lease's range of ID time: ticks `floor ..= ceiling`. A ceiling of
/// `floor - 1` is an empty lease (released before any ID was issued).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    pub floor: i64,
    pub ceiling: i64,
}

// ---------------------------------------------------------------------------
// The registry's side (sql/install/registry_functions.sql)
// ---------------------------------------------------------------------------

/// The tick a node's grant or renewal counts at: its own position, but at
/// most a day past the registry's clock (`registry_tick`, in the layout's
/// ticks). A node's clock decides only how far its ceiling reaches, never
/// whether ranges overlap; the cap keeps a clock far ahead from pushing the
/// ceilings, and with them the floors of every later holder, far ahead.
pub fn request_tick(node_tick: i64, registry_tick: i64) -> i64 {
    node_tick.min(registry_tick.saturating_add(DAY_MS))
}

/// A grant's range: from right above the last ceiling granted for the
/// worker id (`previous_ceiling`, none for a worker id never granted) to a
/// horizon past the node's (capped) tick, and at least [`floor_reach_ms`]
/// past the floor.
///
/// The floor is what keeps holders apart: the previous holder may issue up
/// to its ceiling, even after the grant (paused, partitioned, split brain),
/// and nothing it issues can be at or above the new floor. A floor ahead of
/// the node's tick gets a quarter horizon of room, not a whole horizon past
/// it: the next takeover starts above this ceiling, and a whole horizon
/// would push each one in a row a horizon further ahead of the clock.
pub fn grant(previous_ceiling: Option<i64>, tick: i64, horizon_ms: i64) -> Range {
    let floor = previous_ceiling.map_or(0, |c| c + 1);
    Range { floor, ceiling: (floor + floor_reach_ms(horizon_ms)).max(tick + horizon_ms) }
}

/// How far past its floor a lease reaches at least: a quarter horizon (as
/// long as the silence a restart waits, [`silence_ms`]), room for a node
/// that issues at a floor ahead of its clock while the clock catches up.
pub fn floor_reach_ms(horizon_ms: i64) -> i64 {
    (horizon_ms / 4).max(1)
}

/// A renewal's new ceiling: a horizon past the node's (capped) tick, at
/// least [`floor_reach_ms`] past the floor, and never below the ceiling already
/// granted. The holder may have issued up to that ceiling already: lowering
/// it would let the next holder start below IDs issued (a node whose clock
/// stepped back, or whose horizon was reloaded smaller, asks for less).
pub fn renew(range: Range, tick: i64, horizon_ms: i64) -> i64 {
    range.ceiling.max(tick + horizon_ms).max(range.floor + floor_reach_ms(horizon_ms))
}

/// A release's new ceiling: down to the last tick the holder issued (it has
/// made that its own ceiling first, see [`closed`]), so that the next holder
/// starts right above it instead of a horizon ahead; never above the ceiling
/// granted (a holder never issued past it) and never below `floor - 1` (a
/// last tick from before this lease says nothing was issued under it, and
/// the range below the floor belongs to earlier holders).
pub fn release(range: Range, last_tick: i64) -> i64 {
    (range.floor - 1).max(range.ceiling.min(last_tick))
}

/// Whether a lease not renewed since `renewed_at_ms` (by the registry's
/// clock, like `now_ms`) is stale: its horizon plus the namespace's margin
/// have passed. The margin covers a renewal in flight and a slow node; like
/// the horizon it decides only how soon a takeover may happen.
pub fn is_stale(renewed_at_ms: i64, horizon_ms: i64, stale_margin_ms: i64, now_ms: i64) -> bool {
    renewed_at_ms + horizon_ms + stale_margin_ms < now_ms
}

/// Whether the worker id whose current lease is `held` is free to any node
/// now: released at a clean stop, or [stale](is_stale). (A live one may
/// still be taken by its holder's own cluster, see [`takeover`].)
pub fn is_free(held: &Holder, stale_margin_ms: i64, now_ms: i64) -> bool {
    held.released || is_stale(held.renewed_at_ms, held.horizon_ms, stale_margin_ms, now_ms)
}

/// The worker id a node asking for any (`auto`) is given to try, among
/// `0 ..= max_worker` whose current leases are `leases` (worker id and
/// holder, in any order; a worker id never granted has none), or `None`
/// when every one is held live (SQLSTATE SFL04).
///
/// First the one whose lease the claimant presents from its disk, of its
/// own cluster and not released (a restart keeps its worker id, whatever
/// [`takeover`] then says of it: a copy of a running holder must be
/// refused, not handed another id); then the lowest [free](is_free) one,
/// so that a fleet fills the low ids and leaves the high ones unused.
pub fn auto_worker<'a>(
    leases: impl IntoIterator<Item = (i64, &'a Holder)> + Clone,
    claimant: &Claimant,
    max_worker: i64,
    stale_margin_ms: i64,
    now_ms: i64,
) -> Option<i64> {
    let own = leases.clone().into_iter().find(|(_, held)| {
        held.system_identifier == claimant.system_identifier
            && claimant.resume == Some((held.epoch, held.token))
            && !held.released
    });
    if let Some((worker_id, _)) = own {
        return Some(worker_id);
    }
    let held_live: std::collections::BTreeSet<i64> = leases
        .into_iter()
        .filter(|(_, held)| !is_free(held, stale_margin_ms, now_ms))
        .map(|(worker_id, _)| worker_id)
        .collect();
    (0..=max_worker).find(|w| !held_live.contains(w))
}

/// The registry's record of a worker id's current lease, as far as the
/// takeover rule reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Holder {
    pub epoch: i64,
    pub token: i64,
    /// The holder's cluster (`pg_control_system().system_identifier`).
    pub system_identifier: u64,
    /// The timeline the holder was on when it was granted the lease.
    pub timeline: i64,
    /// Released at a clean stop.
    pub released: bool,
    /// When it was last granted or renewed, by the registry's clock (ms).
    pub renewed_at_ms: i64,
    /// The horizon of its last grant or renewal.
    pub horizon_ms: i64,
    /// The postmaster start it was granted to, or that renewed it first
    /// (none: granted before 0.4.0, or to a node older than that).
    pub instance: Option<i64>,
}

/// The node that asks for a worker id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Claimant {
    pub system_identifier: u64,
    pub timeline: i64,
    /// The `(epoch, token)` of the lease on its disk, if any: its own to
    /// resume, or (on a later timeline) its old primary's.
    pub resume: Option<(i64, i64)>,
    /// Its postmaster start's random identity (none: a node older than 0.4.0).
    pub instance: Option<i64>,
}

/// Why a worker id may be granted to a claimant now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Takeover {
    /// Never granted.
    Unheld,
    /// Released at a clean stop.
    Released,
    /// Not renewed for its horizon plus the margin.
    Stale,
    /// The same cluster on a later timeline: a promoted standby (or a
    /// point-in-time restore) of the holder. Its old primary may still run,
    /// so it must not wait for the lease to go stale, and need not: the new
    /// floor fences the old primary off.
    Promoted,
    /// A start presenting the lease on disk (same cluster, timeline, epoch
    /// and token) after the instance holding it fell silent (or from a node
    /// older than 0.4.0): a new grant above the old ceiling.
    Resumed,
    /// The same instance presenting the lease it holds (its keeper restarted,
    /// or shared memory reinitialised after a crash): the lease goes on as
    /// it is, no new grant.
    Continued,
}

/// Whether (and why) the worker id whose current lease is `held` may be
/// granted to `claimant` now, `now_ms` by the registry's clock, or why not.
/// Whoever takes it, a new lease starts above the old ceiling ([`grant`]):
/// this decides when a takeover may happen, never whether ranges overlap.
/// Only [`Takeover::Continued`] keeps a lease as it is, and only for the
/// instance it was granted to.
pub fn takeover(
    held: Option<&Holder>,
    claimant: &Claimant,
    stale_margin_ms: i64,
    now_ms: i64,
) -> Result<Takeover, Busy> {
    let Some(held) = held else { return Ok(Takeover::Unheld) };
    if held.released {
        return Ok(Takeover::Released);
    }
    if is_stale(held.renewed_at_ms, held.horizon_ms, stale_margin_ms, now_ms) {
        return Ok(Takeover::Stale);
    }
    if held.system_identifier != claimant.system_identifier {
        return Err(Busy::Held);
    }
    if claimant.timeline > held.timeline {
        return Ok(Takeover::Promoted);
    }
    if claimant.timeline != held.timeline || claimant.resume != Some((held.epoch, held.token)) {
        return Err(Busy::Held);
    }
    match claimant.instance {
        None => Ok(Takeover::Resumed),
        Some(i) if held.instance == Some(i) => Ok(Takeover::Continued),
        Some(_) if held.renewed_at_ms + silence_ms(held.horizon_ms) < now_ms => Ok(Takeover::Resumed),
        Some(_) => Err(Busy::Running),
    }
}

// ---------------------------------------------------------------------------
// The node's side (src/service/registry/lease.rs, src/worker/registry_keeper.rs)
// ---------------------------------------------------------------------------

/// The floor a node uses for a lease granted with floor `granted_floor` on
/// `worker_id`, when the lease in force before was on `previous_worker` and
/// its last ID has tick `last_tick`.
///
/// On the same worker id (or none before), the grant's floor. On another
/// worker id, also past the last tick issued: an ID is ordered by its tick
/// first and its worker id second, so an ID of a lower worker id in the same
/// millisecond would sort below those already issued (invariant 1), and a
/// grant of a worker id whose last holder stopped long ago may start far
/// below this node's logical clock. Raising the floor this way is the node's
/// own business: it uses a part of its lease, and the registry is not told.
pub fn holder_floor(granted_floor: i64, worker_id: i64, previous_worker: Option<i64>, last_tick: i64) -> i64 {
    match previous_worker {
        Some(w) if w != worker_id => granted_floor.max(last_tick + 1),
        _ => granted_floor,
    }
}

/// The mark written with a grant, the previous mark being `written`: at
/// least one below the floor, so that a restart (which resumes above the
/// mark) starts inside the lease, and never lower than before.
pub fn grant_mark(written: i64, floor: i64) -> i64 {
    written.max(floor - 1)
}

/// Whether the lease on disk is this server's own to resume at a restart,
/// once the registry confirms it ([`takeover`]): written on the timeline the server is on (a
/// promoted standby's lease on disk is its old primary's, which may still be
/// running under it: that one must be taken over in the registry) and not
/// released at a clean stop (the registry may have granted it again since).
pub fn resumes_own(lease: &RegistryLease, timeline: i64) -> bool {
    lease.timeline == timeline && lease.token != RELEASED_TOKEN
}

/// Whether a renewal's answer is one the registry's rule can give: at most
/// `asked`, the highest [`renew`] of the ranges, ticks and horizons this
/// holder sent under the lease (the registry only caps the tick, which
/// lowers it). A higher one is not from the registry's function: a ceiling
/// past anything the registry recorded would let the holder issue IDs the
/// next holder is granted.
pub fn renewal_answer_fits(answer: i64, asked: i64) -> bool {
    answer <= asked
}

/// The holder's ceiling after the registry answered a renewal with
/// `renewed`: never lower than the one it has (an answer can only be lower
/// if it belongs to an older lease; the registry never lowers a held one).
pub fn raised_ceiling(held: i64, renewed: i64) -> i64 {
    held.max(renewed)
}

/// The lease a clean stop leaves on disk (and tells the registry about):
/// the ceiling down to `last_tick`, the last tick issued (the generator's
/// ceiling, lowered first so that no ID is issued past it), and the
/// released token, so that a restart asks the registry rather than resuming
/// a lease the registry may grant to another node as soon as it hears of
/// the release.
pub fn closed(lease: RegistryLease, last_tick: i64) -> RegistryLease {
    RegistryLease { ceiling: last_tick, token: RELEASED_TOKEN, ..lease }
}

/// The node's position, which grants and renewals are measured from: its
/// clock, or, when its last ID's tick is ahead of it (a burst, a clock step
/// back, `advance_past`, a floor after a takeover), that tick less three
/// quarters of a horizon. A renewal then reaches at least [`floor_reach_ms`]
/// past the IDs being issued (never standing at its ceiling while the
/// registry answers), but not a whole horizon past IDs that are ahead of
/// the clock: a floor ahead, reached by a whole horizon, would push the
/// next takeover's floor a horizon further ahead at each takeover in a row
/// (0.3.0 counted the last ID whole: 110 s ahead after five crash restarts).
/// The price: after a clock step back of more than three quarters of a
/// horizon, a registry outage is ridden through for a quarter horizon of
/// ID time rather than a whole one.
pub fn position(clock_tick: i64, last_tick: Option<i64>, horizon_ms: i64) -> i64 {
    let discounted = last_tick.unwrap_or(0).saturating_sub(horizon_ms - floor_reach_ms(horizon_ms));
    clock_tick.max(discounted)
}

/// Whether the mark keeper renews now: unless the ceiling is more than an
/// eighth of a horizon past `at` (the later of the clock and the last ID:
/// where IDs are issued, not the discounted [`position`]) *and* the
/// registry answered less than a [`heartbeat_ms`] ago by a monotonic clock.
/// The first keeps IDs flowing through a renewal's round trip (a renewal
/// leaves at least a quarter horizon past the last ID, so a node ahead of
/// its clock does not renew at every turn); the second tells the registry
/// the holder runs (a copy of it is refused while it does), whatever its
/// wall clock does.
pub fn renewal_due(ceiling: i64, at: i64, horizon_ms: i64, since_answer_ms: i64) -> bool {
    !(ceiling - at > horizon_ms / 8 && since_answer_ms < heartbeat_ms(horizon_ms))
}

/// A holder for the rule's unit tests: worker id leased at epoch 3, renewed
/// at 10 s by the registry's clock, by instance 41.
#[cfg(test)]
pub(crate) const SAMPLE_HOLDER: Holder = Holder {
    epoch: 3,
    token: 77,
    system_identifier: 1,
    timeline: 2,
    released: false,
    renewed_at_ms: 10_000,
    horizon_ms: 30_000,
    instance: Some(41),
};

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Every answer the registry's rule gives fits what the holder asked
        /// for, whatever the registry's clock (which only caps the tick);
        /// and an answer a horizon past it never does.
        #[test]
        fn the_registrys_renewals_always_fit_what_was_asked(
            floor in 0i64..1 << 40,
            held in 0i64..1 << 20,
            tick in 0i64..1 << 41,
            registry_tick in 0i64..1 << 41,
            horizon in 1i64..=DAY_MS,
        ) {
            let range = Range { floor, ceiling: floor + held };
            let asked = renew(range, tick, horizon);
            prop_assert!(renewal_answer_fits(renew(range, request_tick(tick, registry_tick), horizon), asked));
            prop_assert!(!renewal_answer_fits(asked + horizon, asked));
        }
    }

    #[test]
    fn grants_start_above_the_last_ceiling_and_last_a_horizon() {
        assert_eq!(grant(None, 10_000, 30_000), Range { floor: 0, ceiling: 40_000 });
        // A takeover: right above the old ceiling, a horizon past the node's tick.
        assert_eq!(grant(Some(50_000), 60_000, 30_000), Range { floor: 50_001, ceiling: 90_000 });
        // A node whose tick is below the floor gets a quarter horizon past it.
        assert_eq!(grant(Some(50_000), 20_000, 30_000), Range { floor: 50_001, ceiling: 57_501 });
    }

    #[test]
    fn a_node_tick_is_capped_a_day_past_the_registry() {
        assert_eq!(request_tick(5, 100), 5);
        assert_eq!(request_tick(i64::MAX, 100), 100 + DAY_MS);
        assert_eq!(request_tick(i64::MAX, i64::MAX), i64::MAX);
    }

    #[test]
    fn renewals_never_lower_and_releases_stop_at_the_last_tick() {
        let r = Range { floor: 100, ceiling: 1_000 };
        assert_eq!(renew(r, 2_000, 500), 2_500);
        assert_eq!(renew(r, 200, 500), 1_000, "a clock stepped back asks for less");
        assert_eq!(renew(r, 900, 100), 1_000, "a smaller horizon asks for less");
        assert_eq!(renew(Range { floor: 5_000, ceiling: 5_100 }, 0, 500), 5_125, "a quarter horizon past the floor");
        assert_eq!(release(r, 500), 500);
        assert_eq!(release(r, 2_000), 1_000);
        assert_eq!(release(r, 10), 99, "nothing issued under this lease: empty");
    }

    #[test]
    fn who_may_take_a_worker_id() {
        let held = SAMPLE_HOLDER;
        let other = Claimant { system_identifier: 9, timeline: 2, resume: None, instance: Some(5) };
        let own = Claimant { system_identifier: 1, timeline: 2, resume: Some((3, 77)), instance: Some(41) };
        assert_eq!(takeover(None, &other, 0, 0), Ok(Takeover::Unheld));
        assert_eq!(takeover(Some(&held), &other, 10_000, 50_000), Err(Busy::Held));
        assert_eq!(takeover(Some(&held), &other, 10_000, 50_001), Ok(Takeover::Stale));
        assert_eq!(takeover(Some(&Holder { released: true, ..held }), &other, 0, 0), Ok(Takeover::Released));
        assert_eq!(takeover(Some(&held), &own, 10_000, 20_000), Ok(Takeover::Continued));
        let promoted = Claimant { timeline: 3, resume: None, ..own };
        assert_eq!(takeover(Some(&held), &promoted, 10_000, 20_000), Ok(Takeover::Promoted));
        // A copy with an older lease on disk, or none, or an older timeline: another holder.
        for claimant in [
            Claimant { resume: Some((2, 77)), ..own },
            Claimant { resume: Some((3, 78)), ..own },
            Claimant { resume: None, ..own },
            Claimant { timeline: 1, ..own },
        ] {
            assert_eq!(takeover(Some(&held), &claimant, 10_000, 20_000), Err(Busy::Held), "{claimant:?}");
        }
    }

    #[test]
    fn auto_takes_the_lease_on_disk_first_then_the_lowest_free_id() {
        let live = SAMPLE_HOLDER;
        let released = Holder { released: true, token: 5, ..live };
        let stale = Holder { renewed_at_ms: 0, token: 6, ..live };
        let leases = [(0, live), (1, released), (2, stale)];
        let leases = || leases.iter().map(|(w, h)| (*w, h));
        let other = Claimant { system_identifier: 9, timeline: 2, resume: None, instance: Some(5) };
        // At 30 s the lease renewed at 0 is stale (30 s + 0 margin), the one at 10 s not.
        assert_eq!(auto_worker(leases(), &other, 3, 0, 30_001), Some(1));
        assert_eq!(auto_worker(leases().skip(1), &other, 3, 0, 30_001), Some(0), "never granted");
        let all_live = [(0, live), (1, Holder { token: 8, ..live })];
        let all_live = || all_live.iter().map(|(w, h)| (*w, h));
        assert_eq!(auto_worker(all_live(), &other, 1, 0, 30_001), None);
        assert_eq!(auto_worker(all_live(), &other, 2, 0, 30_001), Some(2));
        // The lease on disk first, live or not, and whatever the timeline.
        let own = Claimant { system_identifier: 1, timeline: 1, resume: Some((3, 8)), instance: None };
        assert_eq!(auto_worker(all_live(), &own, 1, 0, 30_001), Some(1));
        assert_eq!(auto_worker(all_live(), &Claimant { system_identifier: 9, ..own }, 1, 0, 30_001), None);
        // A released lease on disk is not one's own any more.
        assert_eq!(auto_worker(leases(), &Claimant { resume: Some((3, 5)), ..own }, 3, 0, 30_001), Some(1));
        assert_eq!(auto_worker(leases(), &Claimant { resume: Some((3, 5)), ..own }, 3, 0, 20_000), Some(1));
        assert_eq!(auto_worker(leases(), &Claimant { resume: Some((3, 6)), ..own }, 3, 0, 20_000), Some(2));
    }

    #[test]
    fn the_node_side() {
        assert_eq!(holder_floor(100, 1, Some(1), 5_000), 100);
        assert_eq!(holder_floor(100, 1, None, 5_000), 100);
        assert_eq!(holder_floor(100, 1, Some(0), 5_000), 5_001);
        assert_eq!(holder_floor(9_000, 1, Some(0), 5_000), 9_000);
        assert_eq!(grant_mark(50, 100), 99);
        assert_eq!(grant_mark(500, 100), 500);
        let lease = RegistryLease { epoch: 1, token: 5, floor: 0, ceiling: 100, timeline: 1 };
        assert!(resumes_own(&lease, 1));
        assert!(!resumes_own(&lease, 2));
        assert!(!resumes_own(&closed(lease, 40), 1));
        assert_eq!(closed(lease, 40), RegistryLease { ceiling: 40, token: RELEASED_TOKEN, ..lease });
        assert_eq!(raised_ceiling(100, 90), 100);
        assert_eq!(position(10, Some(20), 4), 17, "ahead: the last ID less three quarters of a horizon");
        assert_eq!(position(10, Some(5), 4), 10);
        assert_eq!(position(10, None, 400), 10);
        assert!(!renewal_due(30_000, 10_000, 30_000, 1_000));
        assert!(renewal_due(13_000, 10_000, 30_000, 1_000), "ceiling within an eighth of a horizon");
        assert!(renewal_due(30_000, 10_000, 30_000, 3_000), "a heartbeat since the last answer");
    }
}
