//! The write-ahead of claims: what a sparse claim carries with it in the
//! same durable write, so that an import in random order does not make one
//! durable write per gap between its rows.

use super::{Cover, Grant, Round, MAX_SPANS_PER_WRITE, MAX_SPAN_MS};
use crate::past_instants::level_map::{Fill, LevelMap};

/// The most pieces ([`LevelMap::claim_pieces`]) one span of a claim is
/// granted in: bounds the records of one durable write and the intervals it
/// adds to the level map.
pub const MAX_PIECES: usize = 64;

/// What a round's claim gets from the level map (without a leased worker
/// id: with one, the registry records each claim before use, the row's
/// alone, and the extension claims as before write-ahead).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The pieces of the row's own span, in time order (one lies over the
    /// row's millisecond), or the first millisecond from the row's on with
    /// a slot left (at most the limit): its millisecond is full.
    pub own: Result<Vec<Grant>, i64>,
    /// The pieces of the spans carried ahead ([`Round::ahead`]).
    pub carried: Vec<Grant>,
    /// The row's own span was claimed at one level (one grant at the
    /// highest level over it, as before pieces): the map had no room for
    /// its pieces.
    pub at_one_level: bool,
}

/// Answers a round's claim `(from, to, at, width, dense)` and the spans it
/// carries `ahead` from `map`, the way the extension does under the level
/// map's lock before one durable write of them all. Every span is claimed piece
/// by piece at the level already there ([`LevelMap::claim_pieces`]): the
/// row's own span may take the last slot of the row's millisecond (or of
/// any, for a dense claim), spans carried ahead take one slot and never the
/// last of a millisecond, so time carried ahead never becomes full and no
/// row spills because of it. Carried spans are claimed only while the map
/// stays within half of `max_intervals` (each piece adds at most two
/// intervals): a write-ahead never makes the map merge neighbours (which
/// raises levels, up to full) where the claims of rows alone would not.
///
/// The row's own span comes in at most [`MAX_PIECES`] pieces (past that it
/// is cut short around the row) while the map has room for them (each adds
/// at most two intervals). Where it has not (a map that once reached
/// `max_intervals` stays there: a merge stops at it), the span is claimed
/// at one level as before pieces ([`at_one_level`]): one interval, which
/// makes the map merge no more than before. Cutting the span to the pieces
/// the map had room for (one on a full map) made a random-order import on
/// a full map claim ever shorter spans: 3,662 durable writes for 200,000
/// rows where claims at one level made 1,010.
pub fn answer(
    map: &mut LevelMap,
    (from, to, at, width, dense): (i64, i64, i64, i64, bool),
    ahead: &[(i64, i64)],
    slots: i64,
    limit: i64,
    max_intervals: usize,
) -> Answer {
    if map.level_over(at, at + 1) >= slots {
        let until = map.first_not_full(at, slots).unwrap_or(limit).min(limit);
        return Answer { own: Err(until), carried: vec![], at_one_level: false };
    }
    let fill = if dense { Fill::Any } else { Fill::Only(at) };
    let room = (max_intervals.saturating_sub(map.intervals().len()) / 2).min(MAX_PIECES);
    let pieces = map.pieces(from, to, width, slots, fill);
    let at_one_level = pieces.len() > room && room < MAX_PIECES;
    let own = if at_one_level {
        match self::at_one_level(map, (from, to, at, width, dense), slots) {
            Some(grant) => vec![grant],
            None => {
                let until = map.first_not_full(at, slots).unwrap_or(limit).min(limit);
                return Answer { own: Err(until), carried: vec![], at_one_level };
            }
        }
    } else {
        map.take_pieces(pieces, fill, MAX_PIECES)
    };
    let mut carried = vec![];
    for &(a, b) in ahead {
        let room = (max_intervals / 2).saturating_sub(map.intervals().len()) / 2;
        if room == 0 {
            break;
        }
        carried.extend(map.claim_pieces(a, b, 1, slots, Fill::None, room.min(MAX_PIECES)));
    }
    Answer { own: Ok(own), carried, at_one_level }
}

/// Claims the row's span `(from, to, at, width, dense)` at one level, the
/// highest over it, as before pieces, on a map whose millisecond `at` has a
/// slot left: the widest part of the span around `at` that the claim makes
/// full nowhere but at `at` (anywhere for a dense claim). A millisecond
/// with one slot left inside the span would otherwise make the whole span
/// full, and rows of later sessions there spill.
fn at_one_level(
    map: &mut LevelMap,
    (from, to, at, width, dense): (i64, i64, i64, i64, bool),
    slots: i64,
) -> Option<Grant> {
    let top = if dense { slots } else { slots - 1 };
    let ((a, b), top) = match map.room_around(at, from, to, top) {
        Some(around) => (around, top),
        None => ((at, at + 1), slots),
    };
    let (base, granted) = map.claim(a, b, width, top).ok()?;
    Some(Grant { from: a, to: b, base, width: granted })
}

impl Round {
    /// The spans a sparse claim for `[from, to)` (the row at `at`) carries
    /// with it in the same durable write: a write-ahead of the claims this
    /// statement would make next. The free time (in no grant of the round)
    /// between the first and the last millisecond of the statement's rows so
    /// far, and a sixteenth of that more on each side, from the claim up,
    /// then from it down, in at most [`MAX_SPANS_PER_WRITE`] spans with the
    /// claim. How much doubles with the statement's claims: after k of them,
    /// 2^k - 1 times what a claim may span now, at most 63 times the longest
    /// span a session's claim may have (49 days). The section 9 import in
    /// random order over 600 days (a million rows) measured 137 claims, a
    /// durable write each, without this, and 24 writes with it (each two
    /// fsyncs and a WAL flush: 10 to 15 ms on this shared machine's disk at
    /// a busy hour); a statement of one row (a pooled connection) still
    /// claims one span at a time, and one in time order has no free time
    /// among its rows. Every span raises the level by one over it, each part
    /// from its own level (a busy millisecond inside stays as it was, and
    /// the rest is not raised to it): a statement that scatters a few dozen
    /// rows over months raises the level by one over the time among them,
    /// where it claimed only around its rows before.
    ///
    /// The caller claims them piece by piece ([`answer`]: never making a
    /// millisecond full, within the level map's room), makes them durable
    /// with the claim, then reports each piece with [`Round::granted_ahead`].
    pub fn ahead(&mut self, from: i64, to: i64, at: i64, limit: i64) -> Vec<(i64, i64)> {
        // After k claims, 2^k - 1 times what a claim may span now, at most
        // 63 claims of the longest span a session's claim may have.
        let worth = (1i64 << self.claims.min(32)) - 1;
        if worth == 0 || !self.cover_of(at).is_empty() {
            return vec![];
        }
        let most = MAX_SPAN_MS.saturating_mul(MAX_SPANS_PER_WRITE as i64 - 1);
        let mut left = self.reach().max(1).saturating_mul(worth).min(most);
        let runs = merged(self.grants.iter().map(|g| (g.from, g.to)).chain([(from, to)]));
        let mut spans = vec![];
        let room = |spans: &Vec<(i64, i64)>, left: i64| left > 0 && spans.len() < MAX_SPANS_PER_WRITE - 1;
        let mut t = to;
        // The statement's rows so far, and a sixteenth of their spread more
        // on each side: the rows of an import in random order that fall
        // outside those so far (fewer and nearer as it goes on) find their
        // time claimed, not a durable write each.
        let margin = self.high.saturating_sub(self.low) / 16;
        let (bottom, top) = (self.low.saturating_sub(margin), limit.min(self.high.saturating_add(1 + margin)));
        while room(&spans, left) {
            let Some((a, b)) = gap_above(&runs, t, top) else { break };
            let b = b.min(a.saturating_add(left));
            spans.push((a, b));
            left -= b - a;
            t = b;
        }
        let mut t = from;
        while room(&spans, left) {
            let Some((a, b)) = gap_below(&runs, t, bottom) else { break };
            let a = a.max(b.saturating_sub(left));
            spans.push((a, b));
            left -= b - a;
            t = a;
        }
        spans
    }

    /// The grants over millisecond `at`, the cover rebuilt first if grants
    /// were added since.
    fn cover_of(&mut self, at: i64) -> &[usize] {
        if self.cover.grants != self.grants.len() {
            self.cover = Cover::of(&self.grants);
        }
        self.cover.over(at)
    }

    /// A span of [`Round::ahead`] the level map granted: kept, without
    /// changing how long the next claims are.
    pub fn granted_ahead(&mut self, grant: Grant) {
        self.grants.push(grant);
    }
}

/// Intervals `[from, to)` as sorted, disjoint runs (grants of a round
/// overlap where a dense claim lies over a sparse one).
pub(super) fn merged(intervals: impl Iterator<Item = (i64, i64)>) -> Vec<(i64, i64)> {
    let mut all: Vec<(i64, i64)> = intervals.collect();
    all.sort_unstable();
    let mut runs: Vec<(i64, i64)> = Vec::with_capacity(all.len());
    for (from, to) in all {
        match runs.last_mut() {
            Some(last) if from <= last.1 => last.1 = last.1.max(to),
            _ => runs.push((from, to)),
        }
    }
    runs
}

/// The first free stretch at or after `t` and before `limit` between the
/// `runs` ([`merged`]).
fn gap_above(runs: &[(i64, i64)], t: i64, limit: i64) -> Option<(i64, i64)> {
    let k = runs.partition_point(|&(_, to)| to <= t);
    let a = match runs.get(k) {
        Some(&(from, to)) if from <= t => to,
        _ => t,
    };
    let b = runs.get(k..).and_then(|r| r.iter().find(|&&(from, _)| from > a)).map_or(limit, |&(from, _)| from);
    (a < limit).then_some((a, b.min(limit)))
}

/// The last free stretch before `t` and not before `bottom` (nor tick 0)
/// between the `runs` ([`merged`]).
fn gap_below(runs: &[(i64, i64)], t: i64, bottom: i64) -> Option<(i64, i64)> {
    let k = runs.partition_point(|&(from, _)| from < t);
    let b = match k.checked_sub(1).map(|i| runs[i]) {
        Some((from, to)) if to >= t => from,
        _ => t,
    };
    let a = runs[..k].iter().rev().find(|&&(_, to)| to < b).map_or(0, |&(_, to)| to).max(bottom).max(0);
    (a < b).then_some((a, b))
}
