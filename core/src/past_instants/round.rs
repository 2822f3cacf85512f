//! A back-fill session's round: the per-row path of past-instant IDs.
//!
//! A backend hands out the slots of the claims it was granted, from its own
//! memory, with no lock and no write per row: it counts the rows it issued
//! at each millisecond, and the n-th row at a millisecond takes the n-th
//! slot among the grants that cover it, in the order they were granted
//! (later grants sit higher, so ties keep the order rows came in). Only a
//! row outside every grant, or past what the grants hold at its
//! millisecond, asks for a claim, and claims grow as a round goes on, so an
//! import makes a few dozen durable writes, not one per row.

use std::collections::{BTreeMap, HashMap};

// The write-ahead of a statement's next claims (more methods of `Round`).
pub(super) mod ahead;
use std::hash::{BuildHasherDefault, Hasher};

pub use super::level_map::Grant;

/// What the round answers for a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// The ID's millisecond (the row's, or a later one when the row's is
    /// full) and its history slot.
    Issued { tick: i64, slot: i64 },
    /// Ask the level map for up to `width` slots of every millisecond of
    /// `[from, to)` (`at` is the millisecond the row needs: if the whole
    /// span is full, try `[at, at + 1)` before giving up on `at`), then
    /// report with [`Round::granted`] or [`Round::full_until`] and ask again.
    Claim { from: i64, to: i64, at: i64, width: i64, dense: bool },
}

/// Why a row gets no ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoundError {
    /// Every millisecond from the row's up to `limit` (the first one not in
    /// the past) is full: the row would have to spill into the present.
    NoRoom { tick: i64, limit: i64 },
}

/// The first sparse claim spans about a second around its row; each next
/// one twice the last, up to about 19 hours: a session raises the level by
/// one over what it spans, so a span of a year let a few hundred short
/// sessions (a connection pool) fill two years; 19 hours keeps a random
/// import over two years to about a thousand claims.
const FIRST_SPAN_MS: i64 = 1 << 10;
const MAX_SPAN_MS: i64 = 1 << 26;
/// Past that, a statement that has issued many rows (an import) may claim
/// up to 2^16 ms (about a minute) per row it has issued, up to about 50
/// days. A statement of a thousand rows or fewer claims as above. An import of a
/// million rows over two years in time order makes about 50 claims instead
/// of 1,500 (each waits for two fsyncs and a WAL flush: a few milliseconds,
/// far more on a busy disk); in random order about 1,000 instead of 1,350
/// (its first thousand rows, scattered, leave a thousand gaps, and a claim
/// never spans a grant of its own round). The price: an import's last claims
/// may raise the level by one up to 25 days past its rows (19-hour spans
/// reached 9 hours past them).
const MS_PER_ISSUED_ROW: i64 = 1 << 16;
const MAX_BULK_SPAN_MS: i64 = 1 << 32;
/// Dense claims (a millisecond with more rows than the grants over it
/// hold) run forward from the row, 1 ms at first, doubling to about a second.
const MAX_DENSE_SPAN_MS: i64 = 1 << 10;
/// How many milliseconds a round counts rows at before it should end (the
/// caller starts a new one): about 40 MB of counts.
pub const MAX_COUNTED_MS: usize = 1 << 20;
/// The most spans one durable write of claims carries, the claim a row
/// asked for included ([`Round::ahead`]), and one more than the claims'
/// worth of time it carries ahead: bounds the work a claim does under the
/// level map's lock, the intervals it adds to the level map and how far one
/// write may raise the level past the rows it was made for.
pub const MAX_SPANS_PER_WRITE: usize = 64;

#[derive(Debug, Default)]
pub struct Round {
    grants: Vec<Grant>,
    /// Which grants lie over which milliseconds, for `grants` as they were
    /// when it was built.
    cover: Cover,
    /// Rows issued at each millisecond in this round.
    used: HashMap<i64, i64, BuildHasherDefault<TickHasher>>,
    /// Runs of milliseconds `[from, to)` at which the level map had
    /// nothing more, by their first.
    full: BTreeMap<i64, i64>,
    /// Where rows at a millisecond last spilled to: every millisecond
    /// between is full for good (levels never go down), so the next row
    /// starts there rather than walking them again.
    spilled: HashMap<i64, i64>,
    span: i64,
    dense_span: i64,
    /// Rows issued in this round's current statement: what earns a
    /// session longer claims is an import, not a long life.
    issued: i64,
    /// How long the last sparse claim asked for was.
    asked: i64,
    /// Sparse claims granted in the current statement: how much more time
    /// the next one may carry ([`Round::ahead`]).
    claims: usize,
    /// Claims granted in this round, each one durable write.
    writes: usize,
    /// The first and last millisecond of the rows of the current statement:
    /// where a claim may carry more ([`Round::ahead`]).
    low: i64,
    high: i64,
}

impl Round {
    pub fn new() -> Round {
        Round { span: FIRST_SPAN_MS, dense_span: 1, low: i64::MAX, high: i64::MIN, ..Round::default() }
    }

    /// A new statement of the session: its claims are the short ones again
    /// until it has issued many rows itself. A pooled connection that
    /// issued a thousand rows over days would otherwise claim spans of up to
    /// 50 days at its next row, raising the level of all of them by one.
    pub fn new_statement(&mut self) {
        self.issued = 0;
        self.claims = 0;
        (self.low, self.high) = (i64::MAX, i64::MIN);
    }

    /// Claims granted in this round: each was one durable write, whatever
    /// it carried ahead.
    pub fn writes(&self) -> usize {
        self.writes
    }

    /// How many milliseconds this round counts rows at.
    pub fn counted(&self) -> usize {
        self.used.len()
    }

    /// The ID for a row at millisecond `tick`, every millisecond at or past
    /// `limit` being out of reach; `sparse_width` is how many slots a claim
    /// for a millisecond this round never met asks for.
    pub fn next(&mut self, tick: i64, limit: i64, sparse_width: i64) -> Result<Next, RoundError> {
        (self.low, self.high) = (self.low.min(tick), self.high.max(tick));
        // Most imports never spill: no lookup then.
        let mut at = if self.spilled.is_empty() { tick } else { self.spilled.get(&tick).copied().unwrap_or(tick) };
        // Milliseconds passed over on the way: full for good, so they point
        // where this row landed (path compression; without it rows at each
        // next millisecond of a long spill walk it again, and a spill costs
        // its length squared).
        let mut passed: Vec<i64> = vec![];
        loop {
            if at >= limit {
                return Err(RoundError::NoRoom { tick, limit });
            }
            let n = self.used.get(&at).copied().unwrap_or(0);
            let mut k = n;
            if self.cover.grants != self.grants.len() {
                self.cover = Cover::of(&self.grants);
            }
            let over = self.cover.over(at);
            let covered = !over.is_empty();
            for g in over.iter().map(|&i| &self.grants[i]) {
                if k < g.width {
                    self.used.insert(at, n + 1);
                    self.issued += 1;
                    if at != tick {
                        self.spilled.insert(tick, at);
                        for p in passed {
                            self.spilled.insert(p, at);
                        }
                    }
                    return Ok(Next::Issued { tick: at, slot: g.base + k });
                }
                k -= g.width;
            }
            let full_run = if self.full.is_empty() { None } else { self.full.range(..=at).next_back() };
            if let Some((_, &to)) = full_run.filter(|(_, &to)| at < to) {
                // Spill: to the next millisecond with room in the map, or
                // any sooner one this round holds slots of, as a burst
                // borrows the next millisecond.
                let held = self.grants.iter().filter(|g| g.to > at + 1).map(|g| g.from.max(at + 1)).min();
                passed.push(at);
                at = held.map_or(to, |h| h.min(to));
                at = self.spilled.get(&at).copied().unwrap_or(at);
                continue;
            }
            if !covered {
                let (from, to) = self.gap_around(at, limit);
                self.asked = to - from;
                return Ok(Next::Claim { from, to, at, width: sparse_width, dense: false });
            }
            // As many again as this millisecond has had: the grants double.
            let to = at.saturating_add(self.dense_span).min(limit);
            return Ok(Next::Claim { from: at, to, at, width: n.max(1), dense: true });
        }
    }

    /// Up to `span` milliseconds around `at`, not into any grant of this
    /// round (a claim over its own grants would sit above them for nothing)
    /// nor before the epoch nor at or past `limit`.
    fn gap_around(&self, at: i64, limit: i64) -> (i64, i64) {
        let below = self.grants.iter().map(|g| g.to).filter(|&to| to <= at).max().unwrap_or(0);
        let above = self.grants.iter().map(|g| g.from).filter(|&from| from > at).min().unwrap_or(limit);
        let half = self.reach() / 2;
        let from = at.saturating_sub(half).max(below).max(0);
        let to = at.saturating_add(half).max(at + 1).min(above).min(limit);
        (from, to)
    }

    /// How long a sparse claim may be now.
    fn reach(&self) -> i64 {
        self.span.min(MAX_SPAN_MS.max(self.issued.saturating_mul(MS_PER_ISSUED_ROW)))
    }

    /// A claim the level map granted.
    pub fn granted(&mut self, grant: Grant) {
        let dense = self.grants.iter().any(|g| g.from <= grant.from && grant.from < g.to);
        self.writes += 1;
        if !dense {
            self.claims += 1;
        }
        if dense {
            self.dense_span = (self.dense_span * 2).min(MAX_DENSE_SPAN_MS);
        } else if grant.to - grant.from < self.asked {
            // The map had no room over the whole span (a millisecond in it
            // is full) and granted the row's millisecond alone. Half as long
            // next time: at full length every row within half a span of that
            // millisecond would claim its own millisecond, each claim
            // waiting for its fsyncs.
            self.span = (self.reach() / 2).max(FIRST_SPAN_MS);
        } else {
            self.span = (self.span * 2).min(MAX_BULK_SPAN_MS);
        }
        self.grants.push(grant);
    }

    /// The pieces of one piecewise claim ([`answer`]) for the row's own
    /// span, in time order: as [`Round::granted`] for the span they lie in.
    pub fn granted_pieces(&mut self, pieces: &[Grant], dense: bool) {
        let (Some(first), Some(last)) = (pieces.first(), pieces.last()) else { return };
        self.writes += 1;
        if dense {
            self.dense_span = (self.dense_span * 2).min(MAX_DENSE_SPAN_MS);
        } else {
            self.claims += 1;
            if last.to - first.from < self.asked {
                // Cut short (pieces past the most one claim may have).
                self.span = (self.reach() / 2).max(FIRST_SPAN_MS);
            } else {
                self.span = (self.span * 2).min(MAX_BULK_SPAN_MS);
            }
        }
        self.grants.extend_from_slice(pieces);
    }

    /// The level map has no slot left from millisecond `at` up to `until`
    /// (its [`LevelMap::first_not_full`], or the limit): rows there spill
    /// to `until`.
    ///
    /// [`LevelMap::first_not_full`]: crate::past_instants::LevelMap::first_not_full
    pub fn full_until(&mut self, at: i64, until: i64) {
        self.full.insert(at, until.max(at + 1));
    }
}

/// Which grants lie over which milliseconds. The ends of the grants, sorted,
/// cut time into runs over which the same grants lie; a row finds its run by
/// a binary search. Scanning every grant for every row cost a random-order
/// import (a thousand grants) more than everything else it does per row.
/// Rebuilt when a grant was added since (once per claim, a few hundred to a
/// thousand a round).
#[derive(Debug, Default)]
struct Cover {
    /// How many of the round's grants it was built from.
    grants: usize,
    /// Run `k` is `[points[k], points[k + 1])`.
    points: Vec<i64>,
    /// The grants over run `k` are `ids[starts[k]..starts[k + 1]]`, indexes
    /// into the round's grants in the order they were granted.
    starts: Vec<usize>,
    ids: Vec<usize>,
}

impl Cover {
    fn of(grants: &[Grant]) -> Cover {
        let mut points: Vec<i64> = grants.iter().flat_map(|g| [g.from, g.to]).collect();
        points.sort_unstable();
        points.dedup();
        let runs = points.len().saturating_sub(1);
        let run = |t: i64| points.partition_point(|&p| p < t);
        let mut starts = vec![0; runs + 1];
        for g in grants {
            for k in run(g.from)..run(g.to) {
                starts[k + 1] += 1;
            }
        }
        for k in 0..runs {
            starts[k + 1] += starts[k];
        }
        let mut ids = vec![0; starts[runs]];
        let mut next = starts.clone();
        for (i, g) in grants.iter().enumerate() {
            for k in run(g.from)..run(g.to) {
                ids[next[k]] = i;
                next[k] += 1;
            }
        }
        Cover { grants: grants.len(), points, starts, ids }
    }

    /// The grants over millisecond `at`, in the order they were granted.
    fn over(&self, at: i64) -> &[usize] {
        match self.points.partition_point(|&p| p <= at) {
            0 => &[],
            k if k >= self.points.len() => &[],
            k => &self.ids[self.starts[k - 1]..self.starts[k]],
        }
    }
}

/// Hashes the milliseconds a round counts rows at. The 16 milliseconds of
/// an aligned block land in neighbouring buckets, so rows in time order
/// touch one or two cache lines per 16 rows (SipHash, the default, put
/// every millisecond in a cache line of its own: the most a row in time
/// order cost); the blocks are spread by a full mix. Not keyed: the only
/// one who can choose the instants is the session that would wait for them.
#[derive(Debug, Default)]
struct TickHasher(u64);

impl Hasher for TickHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = mix(self.0 ^ u64::from(b));
        }
    }

    fn write_i64(&mut self, tick: i64) {
        let tick = tick as u64;
        let low = tick & 15;
        // The bucket comes from the low bits; hashbrown's tag from the top
        // seven, which differ within a block so that a probe compares keys
        // of its own millisecond only.
        self.0 = ((mix(tick >> 4) & !15) | low) ^ (low << 57);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// splitmix64's finalizer.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::ahead::{answer, merged, MAX_PIECES};
    use super::*;
    use crate::past_instants::LevelMap;
    use proptest::prelude::*;
    use std::collections::{HashMap, HashSet};

    /// The level map's most intervals in the extension.
    const MAX_INTERVALS: usize = 2048;

    /// Answers a round's claims from `map` the way the extension does.
    fn draw(
        round: &mut Round,
        map: &mut LevelMap,
        tick: i64,
        limit: i64,
        slots: i64,
    ) -> Result<(i64, i64), RoundError> {
        loop {
            match round.next(tick, limit, 1)? {
                Next::Issued { tick, slot } => return Ok((tick, slot)),
                Next::Claim { from, to, at, width, dense } => {
                    let ahead = round.ahead(from, to, at, limit);
                    let answer = answer(map, (from, to, at, width, dense), &ahead, slots, limit, MAX_INTERVALS);
                    match answer.own {
                        Ok(own) => {
                            assert!(own.iter().any(|g| g.from <= at && at < g.to), "{own:?} misses {at}");
                            round.granted_pieces(&own, dense);
                            answer.carried.into_iter().for_each(|g| round.granted_ahead(g));
                        }
                        Err(until) => round.full_until(at, until),
                    }
                    map.coarsen(MAX_INTERVALS);
                }
            }
        }
    }

    #[test]
    fn rows_at_one_instant_take_its_slots_in_order_then_spill() {
        let (mut map, mut round) = (LevelMap::new(), Round::new());
        let ids: Vec<_> = (0..20).map(|_| draw(&mut round, &mut map, 5000, 1 << 20, 16).unwrap()).collect();
        let at_5000: Vec<_> = ids.iter().filter(|i| i.0 == 5000).map(|i| i.1).collect();
        assert_eq!(at_5000, (0..16).collect::<Vec<_>>(), "{ids:?}");
        assert!(ids[16..].iter().all(|i| i.0 > 5000));
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "in the order rows came: {ids:?}");
    }

    #[test]
    fn a_million_rows_at_one_instant_make_few_claims() {
        let (mut map, mut round) = (LevelMap::new(), Round::new());
        for _ in 0..100_000 {
            draw(&mut round, &mut map, 1 << 30, 1 << 40, 256).unwrap();
        }
        assert!(round.writes() < 40, "{} claims", round.writes());
    }

    /// An import in time order over months claims ever longer spans as it
    /// goes: a few dozen claims, not one per 9 hours of its range.
    #[test]
    fn a_long_import_in_time_order_makes_few_claims() {
        let (mut map, mut round) = (LevelMap::new(), Round::new());
        let mut seen = HashSet::new();
        for g in 0..200_000i64 {
            let tick = 1_000_000 + g * 51_840;
            let (t, s) = draw(&mut round, &mut map, tick, 1 << 40, 256).unwrap();
            assert!(t == tick && seen.insert((t, s)), "row {g}: ({t}, {s})");
        }
        assert!(round.writes() < 40, "{} claims", round.writes());
    }

    /// A session of a thousand rows (a connection pool's, touching random
    /// instants) claims at most about 19 hours for a row, as before imports
    /// could claim more, and carries at most 63 such claims' worth ahead in
    /// one durable write.
    #[test]
    fn a_short_session_claims_at_most_19_hours_for_a_row() {
        let (mut map, mut round) = (LevelMap::new(), Round::new());
        for g in 1..=1000i64 {
            let tick = (g * 2_654_435_761) % 51_840_000_000;
            if let Ok(Next::Claim { from, to, at, .. }) = round.next(tick, 1 << 40, 2) {
                assert!(to - from <= MAX_SPAN_MS, "a claim of {} ms", to - from);
                let carried: i64 = round.ahead(from, to, at, 1 << 40).iter().map(|(a, b)| b - a).sum();
                assert!(carried <= 63 * MAX_SPAN_MS, "{carried} ms carried ahead");
            }
            draw(&mut round, &mut map, tick, 1 << 40, 256).unwrap();
        }
        let covered: i64 = merged(round.grants.iter().map(|g| (g.from, g.to))).iter().map(|(a, b)| b - a).sum();
        println!("1000 random rows: {} writes, {} days covered", round.writes(), covered / 86_400_000);
    }

    /// A session that issued many rows in earlier statements claims at most
    /// about 19 hours at once in a new one.
    #[test]
    fn a_new_statement_claims_short_spans_again() {
        let (mut map, mut round) = (LevelMap::new(), Round::new());
        for g in 0..5_000i64 {
            draw(&mut round, &mut map, 1_000_000 + g * 51_840, 1 << 40, 256).unwrap();
        }
        let long = round.grants.iter().map(|g| g.to - g.from).max().unwrap_or(0);
        assert!(long > MAX_SPAN_MS, "the import itself claimed at most {long} ms");
        round.new_statement();
        let before = round.grants.len();
        draw(&mut round, &mut map, 30_000_000_000, 1 << 40, 256).unwrap();
        let claimed = &round.grants[before..];
        assert!(!claimed.is_empty() && claimed.iter().all(|g| g.to - g.from <= MAX_SPAN_MS), "{claimed:?}");
    }

    /// A full millisecond in the middle of an import's range: the claims
    /// that meet it get the row's millisecond alone, and the round claims
    /// shorter spans around it rather than one millisecond per row.
    #[test]
    fn a_full_millisecond_costs_an_import_in_time_order_few_claims() {
        let (mut map, mut round) = (LevelMap::new(), Round::new());
        let full = 10_000 * 51_840 + 7;
        map.claim(full, full + 1, 256, 256).unwrap();
        for g in 0..20_000i64 {
            draw(&mut round, &mut map, 1 + g * 51_840, 1 << 40, 256).unwrap();
        }
        assert!(round.writes() < 100, "{} claims", round.writes());
    }

    /// The section 9 benchmark's random-order import, 200,000 rows over 600
    /// days: its claims (about a thousand) come in 24 durable writes
    /// (without carrying time ahead, 1,010).
    #[test]
    fn a_random_import_makes_few_durable_writes() {
        let (mut map, mut round) = (LevelMap::new(), Round::new());
        let mut seen = HashSet::new();
        for g in 1..=200_000i64 {
            let tick = (g * 2_654_435_761) % 51_840_000_000;
            let (t, s) = draw(&mut round, &mut map, tick, 1 << 40, 256).unwrap();
            assert!(t >= tick && seen.insert((t, s)), "row {g}: ({t}, {s})");
        }
        assert!(round.writes() <= 30, "{} durable writes for {} spans", round.writes(), round.grants.len());
    }

    /// A level map that once reached its 2,048 intervals stays there (a
    /// merge stops at 2,048): short pooled sessions scattering a few dozen
    /// rows each fill it. A random-order import on it makes no more durable
    /// writes than claims at one level (the rule before pieces) made, and
    /// no row late. Cutting the row's span to the one piece the full map
    /// had room for made 3,662 writes where claims at one level made 1,010.
    #[test]
    fn a_random_import_on_a_map_that_filled_once_makes_few_durable_writes() {
        let (slots, limit) = (256, 1i64 << 40);
        let (mut map, mut most) = (LevelMap::new(), 0);
        for s in 0..150i64 {
            let mut pooled = Round::new();
            for g in 1..=40i64 {
                let tick = ((s * 40 + g).wrapping_mul(7_046_029_254_386_353_131)).rem_euclid(51_840_000_000);
                draw(&mut pooled, &mut map, tick, limit, slots).unwrap();
                most = most.max(map.intervals().len());
            }
        }
        assert_eq!(most, MAX_INTERVALS, "the pooled sessions fill the map");
        let aged = map.intervals().len();
        let rows = |g: i64| (g * 2_654_435_761) % 51_840_000_000;
        // The rule before pieces: every claim at one level, nothing carried.
        let (mut one_level, mut before) = (map.clone(), Round::new());
        for g in 1..=200_000i64 {
            let tick = rows(g);
            while let Next::Claim { from, to, at, width, .. } = before.next(tick, limit, 1).unwrap() {
                let Some((a, b)) = one_level.room_around(at, from, to, slots) else {
                    before.full_until(at, one_level.first_not_full(at, slots).unwrap_or(limit));
                    continue;
                };
                let (base, width) = one_level.claim(a, b, width, slots).unwrap();
                before.granted(Grant { from: a, to: b, base, width });
                one_level.coarsen(MAX_INTERVALS);
            }
        }
        let mut import = Round::new();
        for g in 1..=200_000i64 {
            let tick = rows(g);
            assert_eq!(draw(&mut import, &mut map, tick, limit, slots).unwrap().0, tick, "row {g} late");
        }
        println!("{aged} intervals: {} durable writes, {} at one level", import.writes(), before.writes());
        assert!(
            import.writes() <= before.writes(),
            "{} durable writes on a map that filled once, {} claims at one level",
            import.writes(),
            before.writes()
        );
    }

    /// The case that made the first write-ahead be backed out: a busy
    /// instant (255 of 256 slots used by an earlier session) inside the
    /// span of a sparse import in random order over 600 days. A claim over
    /// the span at its highest level plus one made weeks around the busy
    /// instant full, and a later session's rows there spilled weeks late.
    /// Piecewise, the import raises the rest of its span by one and leaves
    /// the busy instant as it was: a later session's rows, a few at each
    /// instant, all get their own millisecond.
    #[test]
    fn a_busy_instant_inside_an_import_makes_no_row_late() {
        let slots = 256;
        let (mut map, limit) = (LevelMap::new(), 1i64 << 40);
        let busy = 300 * 86_400_000 + 12_345;
        // An earlier session's claim of 255 slots there (rows at one instant).
        map.claim(busy, busy + 1, slots - 1, slots).unwrap();
        assert_eq!(map.level_over(busy, busy + 1), slots - 1);
        let mut import = Round::new();
        for g in 1..=50_000i64 {
            let tick = (g * 2_654_435_761) % 51_840_000_000;
            assert_eq!(draw(&mut import, &mut map, tick, limit, slots).unwrap().0, tick, "row {g}");
        }
        assert!(import.writes() <= 40, "{} durable writes", import.writes());
        let mut later = Round::new();
        for g in 0..3_000i64 {
            // Two rows at each instant, some of them within hours of the busy one.
            let tick = if g % 3 == 0 { busy + (g - 1500) * 7_777 } else { (g * 2_654_435_761) % 51_840_000_000 };
            if tick == busy || tick < 0 {
                continue;
            }
            for _ in 0..2 {
                let (t, _) = draw(&mut later, &mut map, tick, limit, slots).unwrap();
                assert_eq!(t, tick, "a row at {tick} came out {} ms late", t - tick);
            }
        }
        // The busy instant's last slot is still there for a row at it.
        assert_eq!(draw(&mut later, &mut map, busy, limit, slots).unwrap().0, busy);
    }

    /// Statements of one row each (a pooled connection) claim one span per
    /// durable write, as before claims were carried together.
    #[test]
    fn single_row_statements_claim_one_span_at_a_time() {
        let (mut map, mut round) = (LevelMap::new(), Round::new());
        for g in 1..=300i64 {
            round.new_statement();
            let before = round.grants.len();
            draw(&mut round, &mut map, (g * 2_654_435_761) % 51_840_000_000, 1 << 40, 256).unwrap();
            assert!(round.grants.len() - before <= 1, "row {g} claimed {:?}", &round.grants[before..]);
        }
    }

    #[test]
    fn nothing_left_before_the_present_is_refused() {
        let (mut map, mut round) = (LevelMap::new(), Round::new());
        for _ in 0..4 {
            draw(&mut round, &mut map, 8, 10, 2).unwrap();
        }
        assert_eq!(draw(&mut round, &mut map, 8, 10, 2), Err(RoundError::NoRoom { tick: 8, limit: 10 }));
    }

    proptest! {
        /// The grants the index finds over a millisecond are those that lie
        /// over it, in the order they were granted.
        #[test]
        fn the_cover_finds_the_grants_over_a_millisecond(
            grants in prop::collection::vec((0i64..200, 1i64..60), 0..40),
        ) {
            let grants: Vec<Grant> =
                grants.into_iter().map(|(from, len)| Grant { from, to: from + len, base: 0, width: 1 }).collect();
            let cover = Cover::of(&grants);
            for at in -5..270 {
                let scan: Vec<usize> = (0..grants.len()).filter(|&i| grants[i].from <= at && at < grants[i].to).collect();
                prop_assert_eq!(cover.over(at), &scan[..], "at {}", at);
            }
        }

        /// What a claim carries with it lies in no grant of the round, nor in
        /// the claim, nor in another span it carries, before `limit` and not
        /// before tick 0, each no longer than a sparse claim may be.
        #[test]
        fn spans_carried_ahead_lie_in_free_time(
            rows in prop::collection::vec((0i64..3000, 0u8..6), 1..200),
        ) {
            let (slots, limit) = (64, 4000);
            let (mut map, mut round) = (LevelMap::new(), Round::new());
            for (tick, statement) in rows {
                if statement == 0 {
                    round.new_statement();
                }
                if let Ok(Next::Claim { from, to, at, .. }) = round.next(tick, limit, 1) {
                    let ahead = round.ahead(from, to, at, limit);
                    prop_assert!(ahead.len() < MAX_SPANS_PER_WRITE);
                    let carried: i64 = ahead.iter().map(|(a, b)| b - a).sum();
                    prop_assert!(carried <= round.reach().max(1) * (MAX_SPANS_PER_WRITE as i64 - 1));
                    let mut spans: Vec<(i64, i64)> = round.grants.iter().map(|g| (g.from, g.to)).collect();
                    let grants = spans.len();
                    spans.push((from, to));
                    for &(a, b) in &ahead {
                        prop_assert!(0 <= a && a < b && b <= limit, "{:?}", (a, b));
                        prop_assert!(spans[grants..].iter().all(|&(c, d)| b <= c || d <= a), "{:?} meets {:?}", (a, b), spans);
                        prop_assert!(spans[..grants].iter().all(|&(c, d)| b <= c || d <= a), "{:?} in a grant", (a, b));
                        spans.push((a, b));
                    }
                }
                let _ = draw(&mut round, &mut map, tick, limit, slots);
            }
        }

        /// Rounds with write-ahead over random level maps (full
        /// milliseconds and nearly full ones among them), rows in random
        /// order, new statements and new sessions: a claim's pieces and the
        /// pieces it carries raise no millisecond by more than one per round
        /// (dense claims, for rows past what a millisecond held, aside, and
        /// claims at one level, made only on a map short of room), make
        /// no millisecond full but the row's own (or a dense claim's), leave
        /// the map within half its size when they carry anything (and
        /// within its size, or two intervals past, when they do not); rounds
        /// never share an ID, and a row's ID is late only over milliseconds
        /// that were full when it was issued (the spill rule).
        #[test]
        fn carried_claims_keep_every_row_at_its_time(
            map_at in prop::collection::vec((0i64..1200, 1i64..80, 0i64..=8), 0..24),
            rows in prop::collection::vec((0usize..3, 0i64..1200, 0u8..12), 1..300),
            small in any::<bool>(),
        ) {
            let (slots, limit) = (8, 1300);
            let max_intervals = if small { 24 } else { 2048 };
            let mut map = LevelMap::new();
            for (from, len, level) in map_at {
                map.raise(from, from + len, level);
            }
            let levels = |map: &LevelMap| {
                let mut at = vec![map.floor(); limit as usize];
                for i in map.intervals() {
                    (i.from.max(0)..i.to.min(limit)).for_each(|t| at[t as usize] = i.level);
                }
                at
            };
            let mut rounds = [Round::new(), Round::new(), Round::new()];
            let mut raised: [HashMap<i64, i64>; 3] = Default::default();
            let mut seen = HashSet::new();
            for (r, tick, event) in rows {
                match event {
                    0 => (rounds[r], raised[r]) = (Round::new(), HashMap::new()),
                    1 => rounds[r].new_statement(),
                    _ => {}
                }
                let round = &mut rounds[r];
                let issued = loop {
                    match round.next(tick, limit, 1) {
                        Err(RoundError::NoRoom { .. }) => break None,
                        Ok(Next::Issued { tick, slot }) => break Some((tick, slot)),
                        Ok(Next::Claim { from, to, at, width, dense }) => {
                            let ahead = round.ahead(from, to, at, limit);
                            let (before, intervals) = (levels(&map), map.intervals().len());
                            let answer = answer(&mut map, (from, to, at, width, dense), &ahead, slots, limit, max_intervals);
                            let after = levels(&map);
                            prop_assert!(answer.carried.is_empty() || map.intervals().len() <= max_intervals / 2);
                            // No more merging than a claim at one level made (two intervals at most).
                            prop_assert!(map.intervals().len() <= max_intervals.max(intervals + 2));
                            for t in 0..limit {
                                let (b, a) = (before[t as usize], after[t as usize]);
                                let in_dense = dense && from <= t && t < to;
                                if a >= slots && b < slots {
                                    prop_assert!(in_dense || t == at, "ms {} made full ({} -> {}) by a claim for {}", t, b, a, at);
                                }
                                // A claim at one level (a map short of room) raises its span to its highest level.
                                let at_one_level = answer.at_one_level && from <= t && t < to;
                                if a > b && !in_dense && !at_one_level {
                                    let n = raised[r].entry(t).or_insert(0);
                                    *n += a - b;
                                    prop_assert!(*n <= 1, "ms {} raised by {} in one round", t, n);
                                }
                            }
                            match answer.own {
                                Ok(own) => {
                                    prop_assert!(own.iter().any(|g| g.from <= at && at < g.to));
                                    prop_assert!(!answer.at_one_level || (own.len() == 1 && intervals + 2 * MAX_PIECES > max_intervals));
                                    round.granted_pieces(&own, dense);
                                    answer.carried.into_iter().for_each(|g| round.granted_ahead(g));
                                }
                                Err(until) => round.full_until(at, until),
                            }
                            map.coarsen(max_intervals);
                        }
                    }
                };
                if let Some((t, s)) = issued {
                    prop_assert!(t >= tick && t < limit && (0..slots).contains(&s));
                    prop_assert!(seen.insert((t, s)), "({}, {}) twice", t, s);
                    for u in tick..t {
                        prop_assert!(map.level_over(u, u + 1) >= slots, "row at {} issued at {} over free {}", tick, t, u);
                    }
                }
            }
        }

        /// Rounds one after another (sessions, crashes) and interleaved over
        /// one level map: no two rows get one (millisecond, slot), no slot is
        /// past the last, and a row's millisecond is never before its own.
        #[test]
        fn rows_of_any_rounds_never_share_an_id(
            rows in prop::collection::vec((0usize..3, 0i64..3000, 0u8..8), 1..400),
        ) {
            let slots = 8;
            let limit = 4000;
            let mut map = LevelMap::new();
            let mut rounds = [Round::new(), Round::new(), Round::new()];
            let mut seen = HashSet::new();
            for (r, tick, restart) in rows {
                match restart {
                    0 => rounds[r] = Round::new(),
                    1 => rounds[r].new_statement(),
                    _ => {}
                }
                match draw(&mut rounds[r], &mut map, tick, limit, slots) {
                    Ok((t, s)) => {
                        prop_assert!(t >= tick && t < limit && (0..slots).contains(&s));
                        prop_assert!(seen.insert((t, s)), "({}, {}) twice", t, s);
                    }
                    Err(RoundError::NoRoom { .. }) => {}
                }
                map.coarsen(6);
            }
        }
    }
}
