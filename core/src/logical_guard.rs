//! The logical replication guard's rule: which IDs that arrive through
//! logical replication matter to this server's generator, and what it must
//! do about each. (The guard's row trigger keeps its SQL name,
//! `snowflake_id_received`: it is on users' tables and in their dumps.)
//!
//! A subscriber learns nothing from the rows it applies the way a physical
//! standby learns the mark from WAL. Yet an ID carrying this server's worker
//! id, made by a peer (a blue/green predecessor, a clone), is one this
//! server must never issue again: so the generator is moved past its tick.
//! An ID with another worker id can never equal one of ours, and an ID that
//! decodes far ahead of the clock was not made in this layout by a sane
//! clock: moving past it would push every later ID into the future for good
//! (mission, invariant 7), so it is only reported.

use crate::{Error, GeneratorState, Layout};

/// A received ID further ahead of this server's clock than this (ms) is not
/// moved past, only reported: a peer whose clock is up to five minutes ahead
/// (plus its `max_drift` and lease) is followed, and a row crafted far ahead
/// (a publication's owner inserts what it likes) cannot push every later ID
/// further into the future than that (invariant 7). Further is the DBA's
/// call: `snowflake_advance_past`, superuser only. (A day, the reach of
/// `advance_past` without `force`, let any publisher keep IDs a day
/// ahead.)
pub const PLAUSIBLE_AHEAD_MS: i64 = 300_000;

/// What the generator does about one received ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Negative, or another worker id: it can never equal an ID of ours.
    NotOurs,
    /// Ours, but the generator is already past it: nothing to do (the common
    /// case once a burst has been seen: one compare under the spinlock).
    Behind,
    /// Ours and ahead of the generator, but within the durable mark: move the
    /// logical clock past `tick` in shared memory; a restart resumes above
    /// the mark anyway, so nothing is written.
    Raise { tick: i64 },
    /// Ours and at or past the durable mark: make a mark past `tick` durable
    /// first, then move the logical clock past it.
    Reserve { tick: i64 },
    /// Ours by its bits, but at `tick`, more than [`PLAUSIBLE_AHEAD_MS`]
    /// ahead of the clock, past the layout's last tick, or past the lease
    /// ceiling of a registry: another layout, or a clock far off. Left alone
    /// and reported; the DBA decides (`snowflake_advance_past(id, force => true)`).
    Implausible { tick: i64 },
}

/// The verdict on `id`, received while the generator is `g` (`None`: not
/// started yet, so anything of ours needs a durable mark), with this
/// server's `worker_id`, the wall clock at tick `now`.
pub fn judge(layout: &Layout, worker_id: i64, id: i64, g: Option<&GeneratorState>, now: i64) -> Verdict {
    if id < 0 {
        return Verdict::NotOurs;
    }
    let tick = tick_of(layout, id);
    let worker = (id >> layout.sequence_bits()) & layout.max_worker_id();
    if worker != worker_id {
        return Verdict::NotOurs;
    }
    let ceiling = g.map_or(layout.max_tick(), GeneratorState::ceiling);
    if tick >= layout.max_tick() || tick > ceiling || tick > now.saturating_add(PLAUSIBLE_AHEAD_MS) {
        return Verdict::Implausible { tick };
    }
    match g {
        Some(g) if last_counter_of(layout, tick) <= g.last_counter() => Verdict::Behind,
        Some(g) if tick <= g.mark() => Verdict::Raise { tick },
        _ => Verdict::Reserve { tick },
    }
}

/// The counter of the last ID of `tick`: past it, the generator is past
/// every ID of that tick, whatever its worker id and sequence.
fn last_counter_of(layout: &Layout, tick: i64) -> i64 {
    (tick << layout.sequence_bits()) | layout.max_sequence()
}

/// Whether this server issues IDs itself while it receives IDs of its own
/// worker id: the generator's count of issued IDs moved since the guard last
/// looked (`None`: it never looked since the start, so no interval to judge),
/// and the received ID's `tick` is at or above the generator's `floor` (an ID
/// from before this start, or before this server's registry lease began, was
/// made by an earlier holder: a row that arrives late is no conflict).
/// Two peers that both issue under one worker id repeat each other's IDs
/// sooner or later; a subscriber that only receives (blue/green before the
/// switchover) is no conflict, and neither is a switchover after which the
/// old server sends nothing more.
pub fn issues_too(issued_at_last_look: Option<u64>, issued_now: u64, tick: i64, floor: i64) -> bool {
    tick >= floor && issued_at_last_look.is_some_and(|before| issued_now > before)
}

/// The tick of an ID in `layout` (the ID is not negative).
pub fn tick_of(layout: &Layout, id: i64) -> i64 {
    id >> (layout.worker_bits() + layout.sequence_bits())
}

/// Applies a [`Verdict::Raise`] or, once its mark is durable, a
/// [`Verdict::Reserve`]: the generator's next ID is above every ID of `tick`.
pub fn apply(layout: &Layout, g: &mut GeneratorState, tick: i64, now: i64) -> Result<bool, Error> {
    g.advance_past(layout, tick, now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Policy;
    use proptest::prelude::*;

    const EPOCH: i64 = 1_735_689_600_000;

    fn policy() -> Policy {
        Policy { max_drift_ms: 10_000, mark_reach_ms: 1_000 }
    }

    fn issue(layout: &Layout, g: &mut GeneratorState, now: i64) -> i64 {
        let mut confirm = None;
        loop {
            let d = g.next(layout, now, policy(), confirm).expect("next");
            confirm = None;
            match d.step {
                crate::Step::Issued { counter } => return counter,
                crate::Step::NeedMark { target, .. } => g.extend_mark(target),
                crate::Step::Recheck { seen } => confirm = Some(seen),
                crate::Step::Wait { .. } => panic!("no burst here"),
            }
        }
    }

    proptest! {
        /// Whatever the generator's state, a received ID of our worker id is
        /// either below the next ID we issue, or left alone as implausible;
        /// an ID of another worker id or a negative one is never acted on;
        /// and nothing is written unless the ID is at or past the durable mark.
        #[test]
        fn after_the_verdict_every_new_id_is_above_a_received_one_of_ours(
            worker_bits in 1i64..=10,
            sequence_bits in 1i64..=12,
            own in 0i64..1024,
            sender in 0i64..1024,
            start_s in 0i64..10_000_000,
            issued in 0usize..50,
            received_offset_ms in -100_000i64..200_000_000,
            sequence in 0i64..4096,
            negative in proptest::bool::ANY,
            behind_ms in 0i64..10_000,
        ) {
            let layout = Layout::new(worker_bits, sequence_bits, EPOCH).unwrap();
            let own = own & layout.max_worker_id();
            let sender = sender & layout.max_worker_id();
            let now = start_s * 1000;
            let mut g = GeneratorState::resume(&layout, now - 5_000, None, now);
            for _ in 0..issued {
                issue(&layout, &mut g, now);
            }
            let tick = (now + received_offset_ms).max(0);
            let id = if negative {
                -1 - (tick << 20)
            } else {
                layout.encode(tick.min(layout.max_tick()), sender, sequence & layout.max_sequence()).unwrap()
            };
            let before = g;
            // The receiving server's clock may be behind the sender's.
            let local_now = now - behind_ms;
            match judge(&layout, own, id, Some(&g), local_now) {
                Verdict::NotOurs => {
                    prop_assert!(id < 0 || sender != own);
                }
                Verdict::Implausible { tick } => {
                    prop_assert!(tick > local_now + PLAUSIBLE_AHEAD_MS || tick >= layout.max_tick());
                }
                Verdict::Behind => {
                    prop_assert_eq!(sender, own);
                    let next = issue(&layout, &mut g, local_now);
                    prop_assert!(layout.id_from_counter(next, own) > id);
                }
                Verdict::Raise { tick } => {
                    prop_assert!(tick <= before.mark());
                    apply(&layout, &mut g, tick, local_now).unwrap();
                    let next = issue(&layout, &mut g, local_now);
                    prop_assert!(layout.id_from_counter(next, own) > id);
                }
                Verdict::Reserve { tick } => {
                    prop_assert!(tick > before.mark());
                    let target = GeneratorState::advance_target(&layout, tick, policy()).unwrap();
                    g.extend_mark(target);
                    apply(&layout, &mut g, tick, local_now).unwrap();
                    prop_assert_eq!(judge(&layout, own, id, Some(&g), local_now), Verdict::Behind);
                    let next = issue(&layout, &mut g, local_now);
                    prop_assert!(layout.id_from_counter(next, own) > id);
                    // Only the received tick is passed: the time part stays
                    // the received ID's (invariant 7), not further.
                    prop_assert!(next >> layout.sequence_bits() <= (tick + 1).max(local_now) + 1);
                }
            }
        }
    }

    #[test]
    fn a_peer_that_issues_is_named_only_between_two_looks() {
        assert!(!issues_too(None, 10, 5, 0));
        assert!(!issues_too(Some(10), 10, 5, 0));
        assert!(issues_too(Some(10), 11, 5, 0));
        // Made before this holder's floor: an earlier holder's, late.
        assert!(!issues_too(Some(10), 11, 5, 6));
    }

    #[test]
    fn no_generator_yet_means_a_durable_mark() {
        let layout = Layout::new(10, 12, EPOCH).unwrap();
        let id = layout.encode(1_000, 5, 0).unwrap();
        assert_eq!(judge(&layout, 5, id, None, 1_000), Verdict::Reserve { tick: 1_000 });
        assert_eq!(judge(&layout, 4, id, None, 1_000), Verdict::NotOurs);
        assert_eq!(judge(&layout, 5, -id, None, 1_000), Verdict::NotOurs);
    }
}
