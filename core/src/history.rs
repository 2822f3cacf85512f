//! Where past-instant IDs come from (invariant 9), as pure functions: the
//! history slots of a millisecond, and the level map that hands them out.
//!
//! A past-instant ID for millisecond `t` carries `t`, the server's worker id
//! and a sequence number among the top [`history_slots`] of the millisecond,
//! which the live generator never issues ([`skip_history`]): a past-instant
//! ID can never equal a live one, whatever the instant. The top and not the
//! bottom because releases before 0.4.0 started every fresh millisecond at
//! sequence 0: their IDs reach the top slots only in a millisecond that
//! issued more than [`live_sequences`] IDs on one worker id.
//!
//! Which of a millisecond's history slots a caller may use is decided by the
//! [`LevelMap`]: "every slot below `level` of every millisecond in
//! `[from, to)` may have been used". A claim raises the level over an
//! interval and owns the slots between the old maximum and the new level, so
//! claims that meet in time never share a slot; merging intervals only
//! raises levels, so the map stays small and is still safe. State per
//! millisecond is never kept.
//!
//! Design and trade-offs: docs/design/past-instants.md.

use crate::Layout;

/// How many sequence numbers of each millisecond are kept for past-instant
/// IDs: a sixteenth of them, at least one; none without sequence bits.
pub fn history_slots(layout: &Layout) -> i64 {
    match layout.sequence_bits() {
        0 => 0,
        bits => ((1i64 << bits) / 16).max(1),
    }
}

/// How many sequence numbers of each millisecond the live generator issues.
pub fn live_sequences(layout: &Layout) -> i64 {
    (1i64 << layout.sequence_bits()) - history_slots(layout)
}

/// The first live counter (`tick << sequence_bits | sequence`) at or after
/// `counter`: a sequence number among the history slots carries into the
/// next tick, as an exhausted millisecond does.
pub fn skip_history(layout: &Layout, counter: i64) -> i64 {
    let bits = layout.sequence_bits();
    let sequence = counter & ((1i64 << bits) - 1);
    if sequence < live_sequences(layout) {
        counter
    } else {
        ((counter >> bits) + 1) << bits
    }
}

/// The sequence number of history slot `slot` (0-based).
pub fn history_sequence(layout: &Layout, slot: i64) -> i64 {
    live_sequences(layout) + slot
}

/// One interval of the level map: every slot below `level` of every
/// millisecond in `[from, to)` may have been used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interval {
    pub from: i64,
    pub to: i64,
    pub level: i64,
}

/// Why a claim cannot be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimError {
    /// The interval is empty or the width not positive.
    Empty,
    /// The slots of some millisecond of the interval are used up to `level`
    /// (of `slots`): no `width` more fit.
    Full { level: i64, slots: i64 },
}

/// The levels of a worker id's history slots over time, as sorted,
/// non-overlapping intervals; a millisecond in no interval is at level 0.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LevelMap {
    intervals: Vec<Interval>,
}

impl LevelMap {
    pub fn new() -> LevelMap {
        LevelMap::default()
    }

    /// From intervals as stored (sorted, non-overlapping, positive levels:
    /// checked by the caller that reads them).
    pub fn from_intervals(intervals: Vec<Interval>) -> LevelMap {
        LevelMap { intervals }
    }

    pub fn intervals(&self) -> &[Interval] {
        &self.intervals
    }

    /// The highest level of any millisecond in `[from, to)`.
    pub fn level_over(&self, from: i64, to: i64) -> i64 {
        self.intervals.iter().filter(|i| i.from < to && from < i.to).map(|i| i.level).max().unwrap_or(0)
    }

    /// Claims `width` slots of every millisecond in `[from, to)`: the base
    /// returned is the highest level over the interval, and the whole
    /// interval is raised to `base + width`. The claimer owns slots
    /// `base .. base + width` of each of those milliseconds; no other claim,
    /// before or after, owns any of them.
    pub fn claim(&mut self, from: i64, to: i64, width: i64, slots: i64) -> Result<i64, ClaimError> {
        if from >= to || width <= 0 {
            return Err(ClaimError::Empty);
        }
        let base = self.level_over(from, to);
        if base + width > slots {
            return Err(ClaimError::Full { level: base, slots });
        }
        let mut next = Vec::with_capacity(self.intervals.len() + 2);
        for i in &self.intervals {
            if i.to <= from || to <= i.from {
                next.push(*i);
                continue;
            }
            // The parts of an overlapping interval outside the claim keep their level.
            if i.from < from {
                next.push(Interval { to: from, ..*i });
            }
            if to < i.to {
                next.push(Interval { from: to, ..*i });
            }
        }
        next.push(Interval { from, to, level: base + width });
        next.sort_by_key(|i| i.from);
        self.intervals = next;
        Ok(base)
    }

    /// Merges neighbouring intervals (and the gap between them) at the
    /// larger level until at most `max` remain: levels only rise, so no slot
    /// a claim owned can be claimed again. The pair merged first is the one
    /// whose merge raises the fewest slot-milliseconds.
    pub fn coarsen(&mut self, max: usize) {
        let max = max.max(1);
        while self.intervals.len() > max {
            let cost = |a: &Interval, b: &Interval| {
                let level = a.level.max(b.level);
                let raised = |i: &Interval| (level - i.level) as i128 * (i.to - i.from) as i128;
                raised(a) + raised(b) + level as i128 * (b.from - a.to) as i128
            };
            let at = (0..self.intervals.len() - 1)
                .min_by_key(|&k| cost(&self.intervals[k], &self.intervals[k + 1]))
                .expect("more than one interval");
            let (a, b) = (self.intervals[at], self.intervals[at + 1]);
            self.intervals[at] = Interval { from: a.from, to: b.to, level: a.level.max(b.level) };
            self.intervals.remove(at + 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashSet;

    fn layout(worker_bits: i64, sequence_bits: i64) -> Layout {
        Layout::new(worker_bits, sequence_bits, 0).expect("layout")
    }

    #[test]
    fn the_default_layout_keeps_256_of_4096() {
        let l = layout(10, 12);
        assert_eq!((history_slots(&l), live_sequences(&l)), (256, 3840));
        assert_eq!(history_slots(&layout(6, 6)), 4);
        assert_eq!(history_slots(&layout(10, 1)), 1);
        assert_eq!(history_slots(&layout(10, 0)), 0);
    }

    #[test]
    fn a_history_slot_carries_into_the_next_tick() {
        let l = layout(10, 12);
        assert_eq!(skip_history(&l, (5 << 12) | 3839), (5 << 12) | 3839);
        assert_eq!(skip_history(&l, (5 << 12) | 3840), 6 << 12);
        assert_eq!(skip_history(&l, (5 << 12) | 4095), 6 << 12);
    }

    proptest! {
        /// No live counter is ever a history slot, and skipping never goes back.
        #[test]
        fn live_counters_avoid_history_slots(bits in 0i64..=12, counter in 0i64..(1 << 40)) {
            let l = layout(10, bits);
            let live = skip_history(&l, counter);
            prop_assert!(live >= counter);
            prop_assert!((live & ((1i64 << bits) - 1)) < live_sequences(&l) || bits == 0);
            prop_assert!(live - counter <= history_slots(&l));
        }

        /// Any sequence of claims and coarsenings: no (millisecond, slot) is
        /// owned by two claims, and no claim owns a slot past the last.
        #[test]
        fn claims_never_share_a_slot(
            ops in prop::collection::vec((0i64..64, 1i64..24, 1i64..4, 0usize..6), 1..60),
        ) {
            let slots = 16;
            let mut map = LevelMap::new();
            let mut owned: HashSet<(i64, i64)> = HashSet::new();
            for (from, len, width, coarsen_to) in ops {
                let to = from + len;
                match map.claim(from, to, width, slots) {
                    Ok(base) => {
                        prop_assert!(base + width <= slots);
                        for t in from..to {
                            for s in base..base + width {
                                prop_assert!(owned.insert((t, s)), "slot {} of ms {} claimed twice", s, t);
                            }
                        }
                    }
                    Err(ClaimError::Full { level, .. }) => prop_assert!(level + width > slots),
                    Err(ClaimError::Empty) => prop_assert!(false, "non-empty claim refused as empty"),
                }
                if coarsen_to > 0 {
                    map.coarsen(coarsen_to);
                    prop_assert!(map.intervals().len() <= coarsen_to);
                }
                // Sorted, non-overlapping.
                for w in map.intervals().windows(2) {
                    prop_assert!(w[0].to <= w[1].from);
                }
            }
        }
    }
}
