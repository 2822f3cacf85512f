//! The level map: which history slots of which milliseconds a claim owns.
//! Why it exists is in the module above; this file is only its rule.

/// One interval of the level map: every slot below `level` of every
/// millisecond in `[from, to)` may have been used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interval {
    pub from: i64,
    pub to: i64,
    pub level: i64,
}

/// Slots `base .. base + width` of every millisecond in `[from, to)`, as the
/// level map granted them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    pub from: i64,
    pub to: i64,
    pub base: i64,
    pub width: i64,
}

/// Which milliseconds a piecewise claim ([`LevelMap::claim_pieces`]) may
/// make full (every slot used).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fill {
    /// Any: a dense claim, for rows at a millisecond past what it held.
    Any,
    /// This millisecond alone: a row's own, which it needs a slot of.
    Only(i64),
    /// None: time claimed for rows yet to come.
    None,
}

/// Why a claim cannot be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimError {
    /// The interval is empty or the width not positive.
    Empty,
    /// Some millisecond of the interval has every slot used: `level` of `slots`.
    Full { level: i64, slots: i64 },
}

/// The levels of a worker id's history slots over time, as sorted,
/// non-overlapping intervals; a millisecond in no interval is at `floor`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LevelMap {
    /// The level of every millisecond no interval names: 0, or after a
    /// change of worker id the highest level of the old map (conservative).
    floor: i64,
    intervals: Vec<Interval>,
}

impl LevelMap {
    pub fn new() -> LevelMap {
        LevelMap::default()
    }

    /// From its parts as stored (sorted, non-overlapping: checked by the
    /// reader of the file).
    pub fn from_parts(floor: i64, intervals: Vec<Interval>) -> LevelMap {
        LevelMap { floor, intervals }
    }

    pub fn floor(&self) -> i64 {
        self.floor
    }

    pub fn intervals(&self) -> &[Interval] {
        &self.intervals
    }

    /// The highest level anywhere: a new worker id's map starts there when
    /// this one's is replaced (the slots of the old one are not known apart).
    pub fn highest(&self) -> i64 {
        self.intervals.iter().map(|i| i.level).fold(self.floor, i64::max)
    }

    /// The highest level of any millisecond in `[from, to)`.
    pub fn level_over(&self, from: i64, to: i64) -> i64 {
        self.intervals.iter().filter(|i| i.from < to && from < i.to).map(|i| i.level).fold(self.floor, i64::max)
    }

    /// The first millisecond at or after `at` with a slot left below
    /// `slots`, if any: where a row whose millisecond is full spills to.
    pub fn first_not_full(&self, at: i64, slots: i64) -> Option<i64> {
        let mut t = at;
        for i in self.intervals.iter().filter(|i| i.to > at) {
            if i.from > t {
                // A gap at the floor.
                return (self.floor < slots).then_some(t);
            }
            if i.level < slots {
                return Some(t);
            }
            t = i.to;
        }
        (self.floor < slots).then_some(t)
    }

    /// The widest part of `[from, to)` around `at` whose every millisecond
    /// has a slot left below `slots`, if `at` has one: what a claim spanning
    /// a full millisecond shrinks to, rather than to `at` alone (which made
    /// every later row up to the full millisecond a claim of its own).
    pub fn room_around(&self, at: i64, from: i64, to: i64, slots: i64) -> Option<(i64, i64)> {
        if !(from <= at && at < to) || self.level_over(at, at + 1) >= slots {
            return None;
        }
        if self.floor >= slots {
            return Some((at, at + 1)); // only named intervals may have room
        }
        let (mut a, mut b) = (from, to);
        for i in self.intervals.iter().filter(|i| i.level >= slots && i.from < to && from < i.to) {
            if i.to <= at {
                a = a.max(i.to);
            } else {
                b = b.min(i.from);
            }
        }
        Some((a, b))
    }

    /// Claims up to `width` slots of every millisecond in `[from, to)`: the
    /// base is the highest level over the interval, the width granted is
    /// what fits below `slots`, and the whole interval is raised to
    /// `base + granted`. The claimer owns slots `base .. base + granted` of
    /// each of those milliseconds; no other claim, before or after, owns any
    /// of them, because a level never goes down.
    pub fn claim(&mut self, from: i64, to: i64, width: i64, slots: i64) -> Result<(i64, i64), ClaimError> {
        if from >= to || width <= 0 {
            return Err(ClaimError::Empty);
        }
        let base = self.level_over(from, to);
        let granted = width.min(slots - base);
        if granted <= 0 {
            return Err(ClaimError::Full { level: base, slots });
        }
        self.set(from, to, base + granted);
        Ok((base, granted))
    }

    /// Claims up to `width` slots of every millisecond in `[from, to)`
    /// **piece by piece**: each run of the map at one level `L` is raised
    /// from `L` by what fits, not from the highest level of the span, so a
    /// busy millisecond inside a long span does not make the rest of the
    /// span as busy (a claim at the span's highest level plus one made weeks
    /// full around one busy instant, and later rows spilled weeks late
    /// under the first write-ahead). `fill` says which
    /// milliseconds may lose their last free slot to this claim: the claim
    /// of a row's own millisecond ([`Fill::Only`]) or of a dense run
    /// ([`Fill::Any`]) may; time claimed ahead of rows ([`Fill::None`])
    /// never becomes full, so no later row spills because of it. Returns
    /// the pieces granted (runs with nothing to grant are skipped), at most
    /// `max_pieces` of them: past that the span is cut short (around the
    /// row's millisecond for [`Fill::Only`], else at its end).
    pub fn claim_pieces(
        &mut self,
        from: i64,
        to: i64,
        width: i64,
        slots: i64,
        fill: Fill,
        max_pieces: usize,
    ) -> Vec<Grant> {
        let pieces = self.pieces(from, to, width, slots, fill);
        self.take_pieces(pieces, fill, max_pieces)
    }

    /// The pieces [`LevelMap::claim_pieces`] would grant over `[from, to)`
    /// with no most, without granting them.
    pub fn pieces(&self, from: i64, to: i64, width: i64, slots: i64, fill: Fill) -> Vec<Grant> {
        if from >= to || width <= 0 {
            return vec![];
        }
        // The runs of one level over [from, to), the row's millisecond a run of its own.
        let mut runs: Vec<(i64, i64, i64)> = vec![];
        let mut run = |a: i64, b: i64, level: i64| {
            let cut = match fill {
                Fill::Only(at) => [a.max(at.min(b)), a.max((at + 1).min(b))],
                _ => [a, a],
            };
            for (x, y) in [(a, cut[0]), (cut[0], cut[1]), (cut[1], b)] {
                if x < y {
                    runs.push((x, y, level));
                }
            }
        };
        let mut at = from;
        for i in self.intervals.iter().filter(|i| i.from < to && from < i.to) {
            if at < i.from {
                run(at, i.from, self.floor);
            }
            run(i.from.max(from), i.to.min(to), i.level);
            at = i.to.min(to);
        }
        if at < to {
            run(at, to, self.floor);
        }
        let mut pieces: Vec<Grant> = vec![];
        for (a, b, level) in runs {
            let top = match fill {
                Fill::Any => slots,
                Fill::Only(at) if a == at && b == at + 1 => slots,
                _ => slots - 1,
            };
            let granted = width.min(top - level);
            if granted <= 0 {
                continue;
            }
            match pieces.last_mut() {
                Some(p) if p.to == a && p.base == level && p.width == granted => p.to = b,
                _ => pieces.push(Grant { from: a, to: b, base: level, width: granted }),
            }
        }
        pieces
    }

    /// Grants `pieces` of [`LevelMap::pieces`] (made with `fill`, on this
    /// map as it is), at most `max_pieces` of them: past that the span is
    /// cut short (around the row's millisecond for [`Fill::Only`], else at
    /// its end). Returns the pieces granted.
    pub fn take_pieces(&mut self, mut pieces: Vec<Grant>, fill: Fill, max_pieces: usize) -> Vec<Grant> {
        if max_pieces == 0 {
            return vec![];
        }
        if pieces.len() > max_pieces {
            let first = match fill {
                // The window of pieces around the row's millisecond.
                Fill::Only(at) => {
                    let k = pieces.partition_point(|p| p.to <= at);
                    k.saturating_sub(max_pieces / 2).min(pieces.len() - max_pieces)
                }
                _ => 0,
            };
            pieces = pieces[first..first + max_pieces].to_vec();
        }
        for p in &pieces {
            self.set(p.from, p.to, p.base + p.width);
        }
        pieces
    }

    /// Raises `[from, to)` to at least `level` (redo of a claim made
    /// elsewhere): the same map whichever order claims are replayed in.
    pub fn raise(&mut self, from: i64, to: i64, level: i64) {
        if from >= to {
            return;
        }
        // Piece by piece: parts already above `level` keep theirs.
        let mut pieces = vec![];
        let mut at = from;
        for i in self.intervals.iter().filter(|i| i.from < to && from < i.to) {
            if at < i.from {
                pieces.push(Interval { from: at, to: i.from, level: level.max(self.floor) });
            }
            pieces.push(Interval { from: i.from.max(from), to: i.to.min(to), level: level.max(i.level) });
            at = i.to.min(to);
        }
        if at < to {
            pieces.push(Interval { from: at, to, level: level.max(self.floor) });
        }
        for p in pieces {
            self.set(p.from, p.to, p.level);
        }
    }

    /// The map of many claims at once (a registry's record of a worker
    /// id): every millisecond at the highest level of the claims over it,
    /// in O(n log n) where raising claim by claim would cost O(n^2).
    pub fn envelope(claims: impl IntoIterator<Item = Interval>) -> LevelMap {
        let mut edges: Vec<(i64, bool, i64)> = vec![];
        for c in claims.into_iter().filter(|c| c.from < c.to && c.level > 0) {
            edges.push((c.from, true, c.level));
            edges.push((c.to, false, c.level));
        }
        edges.sort_unstable();
        // The levels of the claims open at the sweep, with their counts.
        let mut open = std::collections::BTreeMap::<i64, usize>::new();
        let mut intervals: Vec<Interval> = vec![];
        let mut at = i64::MIN;
        for (tick, starts, level) in edges {
            if let Some((&top, _)) = open.last_key_value() {
                if tick > at {
                    match intervals.last_mut() {
                        Some(last) if last.to == at && last.level == top => last.to = tick,
                        _ => intervals.push(Interval { from: at, to: tick, level: top }),
                    }
                }
            }
            at = tick;
            if starts {
                *open.entry(level).or_insert(0) += 1;
            } else if let Some(n) = open.get_mut(&level) {
                *n -= 1;
                if *n == 0 {
                    open.remove(&level);
                }
            }
        }
        LevelMap { floor: 0, intervals }
    }

    /// Sets `[from, to)` to `level`, splitting what overlaps it.
    fn set(&mut self, from: i64, to: i64, level: i64) {
        let mut next = Vec::with_capacity(self.intervals.len() + 2);
        for i in &self.intervals {
            if i.to <= from || to <= i.from {
                next.push(*i);
                continue;
            }
            if i.from < from {
                next.push(Interval { to: from, ..*i });
            }
            if to < i.to {
                next.push(Interval { from: to, ..*i });
            }
        }
        next.push(Interval { from, to, level });
        next.sort_by_key(|i| i.from);
        self.intervals = next;
    }

    /// Merges neighbouring intervals (and the gap between them) at the
    /// larger level until at most `max` remain: levels only rise, so no slot
    /// a claim owned can be claimed again. The pair merged first is the one
    /// whose merge raises the fewest slot-milliseconds.
    pub fn coarsen(&mut self, max: usize) {
        let max = max.max(1);
        let floor = self.floor;
        while self.intervals.len() > max {
            let cost = |a: &Interval, b: &Interval| {
                let level = a.level.max(b.level);
                let raised = |i: &Interval| (level - i.level) as i128 * (i.to - i.from) as i128;
                raised(a) + raised(b) + (level - floor) as i128 * (b.from - a.to) as i128
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

    #[test]
    fn a_claim_over_a_used_interval_starts_above_it() {
        let mut map = LevelMap::new();
        assert_eq!(map.claim(10, 20, 4, 16), Ok((0, 4)));
        assert_eq!(map.claim(15, 30, 4, 16), Ok((4, 4)));
        assert_eq!(map.level_over(0, 10), 0);
        assert_eq!(map.level_over(10, 15), 4);
        assert_eq!(map.claim(29, 30, 100, 16), Ok((8, 8)));
        assert_eq!(map.claim(29, 30, 1, 16), Err(ClaimError::Full { level: 16, slots: 16 }));
    }

    #[test]
    fn raising_is_idempotent_and_keeps_what_is_higher() {
        let mut map = LevelMap::new();
        map.claim(10, 20, 8, 16).unwrap();
        let mut twice = map.clone();
        map.raise(0, 30, 4);
        twice.raise(0, 30, 4);
        twice.raise(0, 30, 4);
        assert_eq!(map, twice);
        assert_eq!(map.level_over(10, 20), 8);
        assert_eq!(map.level_over(0, 10), 4);
        assert_eq!(map.level_over(20, 30), 4);
    }

    proptest! {
        /// The room around a millisecond is all below `slots`, holds it, and
        /// cannot grow within the span.
        #[test]
        fn the_room_around_a_millisecond_is_the_widest_with_a_slot_left(
            claims in prop::collection::vec((0i64..64, 1i64..24, 1i64..6), 0..30),
            at in 0i64..80, before in 0i64..40, after in 1i64..40,
        ) {
            let slots = 4;
            let mut map = LevelMap::new();
            for (from, len, level) in claims {
                map.raise(from, from + len, level);
            }
            let (from, to) = (at - before, at + after);
            let full = |t: i64| map.level_over(t, t + 1) >= slots;
            match map.room_around(at, from, to, slots) {
                None => prop_assert!(full(at)),
                Some((a, b)) => {
                    prop_assert!(from <= a && a <= at && at < b && b <= to);
                    prop_assert!((a..b).all(|t| !full(t)));
                    prop_assert!(a == from || full(a - 1));
                    prop_assert!(b == to || full(b));
                }
            }
        }

        /// The envelope of many claims is the map raised by each in turn.
        #[test]
        fn the_envelope_is_every_claim_raised_in_turn(
            claims in prop::collection::vec((0i64..64, 1i64..24, 1i64..6), 0..40),
        ) {
            let claims: Vec<Interval> =
                claims.into_iter().map(|(from, len, level)| Interval { from, to: from + len, level }).collect();
            let mut raised = LevelMap::new();
            for c in &claims {
                raised.raise(c.from, c.to, c.level);
            }
            let envelope = LevelMap::envelope(claims);
            for t in -1..90 {
                prop_assert_eq!(envelope.level_over(t, t + 1), raised.level_over(t, t + 1), "ms {}", t);
            }
            for w in envelope.intervals().windows(2) {
                prop_assert!(w[0].to <= w[1].from);
            }
        }

        /// Any sequence of claims, replays of them elsewhere and
        /// coarsenings: no (millisecond, slot) is owned by two claims, no
        /// claim owns a slot past the last, and a map that replays every
        /// claim (a standby, crash recovery) is never below the one that
        /// made them.
        #[test]
        fn claims_never_share_a_slot(
            ops in prop::collection::vec((0i64..64, 1i64..24, 1i64..6, 0usize..6), 1..60),
            floor in 0i64..4,
        ) {
            let slots = 16;
            let mut map = LevelMap::from_parts(floor, vec![]);
            let mut replica = LevelMap::from_parts(floor, vec![]);
            let mut owned: HashSet<(i64, i64)> = HashSet::new();
            for (from, len, width, coarsen_to) in ops {
                let to = from + len;
                match map.claim(from, to, width, slots) {
                    Ok((base, granted)) => {
                        prop_assert!(granted >= 1 && granted <= width && base >= floor);
                        prop_assert!(base + granted <= slots);
                        for t in from..to {
                            for s in base..base + granted {
                                prop_assert!(owned.insert((t, s)), "slot {} of ms {} claimed twice", s, t);
                            }
                        }
                        replica.raise(from, to, base + granted);
                    }
                    Err(ClaimError::Full { level, .. }) => prop_assert!(level >= slots),
                    Err(ClaimError::Empty) => prop_assert!(false, "non-empty claim refused as empty"),
                }
                if coarsen_to > 0 {
                    map.coarsen(coarsen_to);
                    prop_assert!(map.intervals().len() <= coarsen_to);
                    replica.coarsen(coarsen_to);
                }
                for w in map.intervals().windows(2) {
                    prop_assert!(w[0].to <= w[1].from);
                }
                let mut top = std::collections::HashMap::new();
                for &(t, s) in &owned {
                    let e = top.entry(t).or_insert(0);
                    *e = (*e).max(s + 1);
                }
                for (&t, &level) in &top {
                    prop_assert!(replica.level_over(t, t + 1) >= level);
                    let free = map.first_not_full(t, slots);
                    prop_assert!(free.is_none_or(|f| f >= t && map.level_over(f, f + 1) < slots));
                    prop_assert!(free.is_none_or(|f| (t..f).all(|u| map.level_over(u, u + 1) >= slots)));
                }
            }
        }
    }
}
