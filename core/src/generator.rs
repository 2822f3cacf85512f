//! The next-ID state machine and the one mark rule that bounds it.
//!
//! The state is a single counter `tick << sequence_bits | sequence` of the
//! last ID issued. The next counter is `max(last + 1, now << sequence_bits)`:
//! a fresh millisecond starts at sequence 0, and an exhausted millisecond
//! carries into the next tick on its own ("borrowing" it from the future), so
//! IDs keep flowing from a logical clock that may run ahead of the wall clock.
//!
//! Every ID is covered by a durable *mark* (the last tick a restarted
//! generator must stay above) before it is returned. How far a new mark
//! reaches is decided in one place, [`GeneratorState::mark_target`], for
//! queries that ran out of mark, for the mark keeper that renews ahead of
//! need and for `snowflake_advance_past`. Its rule: a reach of `mark_reach_ms`
//! past the generator's own position, where a position ahead of the
//! *reference clock* counts only as far as a burst explains it. That keeps
//! two promises at once:
//!
//! - safety: the mark covers the tick being issued, so a restart (which
//!   resumes above the mark) never repeats an ID;
//! - accuracy: a mark never reaches more than `max_drift` plus the mark's reach past the
//!   reference clock, so the floor a restart resumes at does not feed the
//!   next mark. 0.2.0 measured the reach from the wall clock plus the gap to
//!   the logical clock, so each restart doubled the gap it resumed with.
//!
//! The reference clock is the wall clock plus the backward steps not yet
//! caught up (and jumps made on purpose, `advance_past`). It never goes back,
//! is written with every mark and restored at start, so a clock stepped back
//! while the server was down is seen as such, and a jump survives restarts
//! without growing.
//!
//! It holds no lock and reads no clock: the caller holds the spinlock for the
//! few instructions of [`GeneratorState::next`] and does anything slow
//! (reading the clock again, fsync, sleeping) between calls.

use crate::{past_instants, Error, Layout};

// The mark rule: how far each durable mark reaches (more methods of
// `GeneratorState`, kept apart so that each file has one job).
mod mark_rule;
// Runs: many consecutive IDs in one step, for blocks of IDs.
pub mod run;

/// While the wall clock is behind the reference (a step back not caught up),
/// the reference advances by at most this much (ms) per reading. Callers
/// that sleep (a `max_drift` wait) sleep at most this long at a time, so a
/// lone waiter's progress is counted in full; a longer gap between readings
/// is taken as a clock set right (or idle time), not as time to add.
pub const MAX_SKEWED_ADVANCE_MS: i64 = 250;

/// Per-call knobs, read from settings that may change on reload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// How far (ms) a burst may run the logical clock ahead of the reference
    /// clock before callers wait; 0 means never wait. Neither a step back of
    /// the wall clock nor the floor a restart resumes at counts towards it.
    pub max_drift_ms: i64,
    /// How far (ms) a new mark reaches past the generator's position.
    pub mark_reach_ms: i64,
}

/// The generator's clocks as written with each mark and restored at start.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clocks {
    /// The reference clock (tick): never goes back, includes steps back not
    /// caught up and jumps made on purpose (`advance_past`).
    pub reference: i64,
    /// The highest wall-clock reading (tick): a restart that reads less saw
    /// the clock go back; one that reads more than this but less than the
    /// reference is merely behind a jump made on purpose.
    pub wall: i64,
}

/// Counters since the generator was started, for the status view.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    pub issued: u64,
    /// Milliseconds taken from the future because a millisecond's sequence ran out.
    pub borrowed_ms: u64,
    /// Times a caller had to wait for the wall clock because of `max_drift`.
    pub waits: u64,
    pub steps_back: u64,
    pub largest_step_back_ms: i64,
    /// Durable marks written (counted by the caller that wrote one).
    pub mark_writes: u64,
}

/// The generator's state; `Copy` and `repr(C)` so it can live in shared memory.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GeneratorState {
    /// Counter of the last ID issued (or one below the first allowed one).
    last: i64,
    /// Ticks up to this one are durably reserved: IDs up to it may be issued.
    mark: i64,
    /// Backward clock steps (and forward jumps on purpose) not yet caught up:
    /// the reference clock is `wall + skew`.
    skew: i64,
    /// Highest reading of the reference clock seen; persisted with the mark.
    ref_high: i64,
    /// Highest wall-clock reading seen (persisted with the mark).
    wall_high: i64,
    /// The tick a restart resumed at. Issuing it (or below) is never a
    /// burst: it is where the old mark forced the generator to start.
    floor: i64,
    /// The last tick the worker id's lease from a registry allows (the
    /// layout's last tick without a registry). Nothing is issued above it,
    /// whatever the clocks say, and no mark reaches past it: another holder
    /// of the worker id may issue from the next tick on.
    ceiling: i64,
    pub counters: Counters,
}

/// What the caller must do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Issue the ID for `counter`.
    Issued { counter: i64 },
    /// The reading is older than one already seen: read the clock again and
    /// call back with `confirm: Some(seen)` (`seen` is a wall-clock reading). A second reading that is still
    /// below `seen` proves the clock went back; one that is not was merely
    /// taken before another backend's and lost the race for the lock.
    Recheck { seen: i64 },
    /// The mark is used up: make ticks up to `target` durable (at least up to
    /// `through`, the tick to issue), then call again.
    NeedMark { through: i64, target: i64 },
    /// Wait until the wall clock reaches tick `until`, then call again.
    Wait { until: i64 },
}

/// A [`Step`] and the size of a clock step back noticed on the way (0: none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    pub step: Step,
    pub stepped_back_ms: i64,
}

impl GeneratorState {
    /// A generator that issues nothing below tick `floor` (the durable mark
    /// plus one), restoring the clocks written with that mark.
    ///
    /// A reference ahead of the wall clock `now` becomes skew, so that IDs
    /// continue from the logical clock without a `max_drift` wait. Only a wall
    /// clock behind the highest reading written counts as a step back (the
    /// clock went back while the server was down, or this is a promoted
    /// standby whose clock is behind its old primary's); a reference ahead
    /// because of `advance_past` is not the clock's fault. A mark written
    /// without its clocks (by 0.2.0) is taken as its own reference, which is
    /// safe and uncounted.
    ///
    /// A floor past the layout's last tick leaves the generator exhausted
    /// (every call errs) rather than wrapping.
    pub fn resume(layout: &Layout, floor: i64, clocks: Option<Clocks>, now: i64) -> GeneratorState {
        let floor = floor.clamp(0, layout.max_tick().saturating_add(1));
        let restored = clocks.unwrap_or(Clocks { reference: floor - 1, wall: now });
        let skew = restored.reference.saturating_sub(now).max(0);
        let behind = restored.wall.saturating_sub(now).max(0);
        let mut counters = Counters::default();
        if behind > 0 {
            counters.steps_back = 1;
            counters.largest_step_back_ms = behind;
        }
        GeneratorState {
            last: counter_before(layout, floor),
            mark: floor - 1,
            skew,
            ref_high: now.saturating_add(skew),
            wall_high: restored.wall.max(now),
            floor,
            ceiling: layout.max_tick(),
            counters,
        }
    }

    /// One transition; see [`Step`] for what each answer asks of the caller.
    /// `now` is the wall clock in ticks (ms since the layout's epoch).
    // Always inlined: on `snowflake_nextval()`'s path (`try_issue`) its
    // call, arguments and answer cost a tenth of the instructions per ID.
    // A field this function changes on a path that does not issue must be
    // put back by `try_issue` too (generator/run.rs lists the four).
    #[inline(always)]
    pub fn next(&mut self, layout: &Layout, now: i64, policy: Policy, confirm: Option<i64>) -> Result<Decision, Error> {
        let s = layout.sequence_bits();
        let mut stepped_back_ms = 0;

        if self.skew > 0 && now > (self.last >> s) {
            // The wall clock has caught up with the logical one: steps back are paid off.
            self.skew = 0;
            self.ref_high = now;
        }
        // `seen` is the wall-clock reading behind the reference. Recheck
        // answers are wall-clock readings too, not reference ones: the skew
        // may be paid off between the question and the confirming answer,
        // and a skew-free reading must not be compared with a skewed one.
        let seen = self.ref_high - self.skew;
        let reference = if now >= seen {
            let reference = self.reference_at(now);
            self.skew = reference - now;
            reference
        } else {
            match confirm {
                None => return Ok(Decision { step: Step::Recheck { seen }, stepped_back_ms }),
                Some(seen) if now < seen => {
                    stepped_back_ms = seen - now;
                    self.counters.steps_back += 1;
                    self.counters.largest_step_back_ms = self.counters.largest_step_back_ms.max(stepped_back_ms);
                    self.skew = self.ref_high - now;
                }
                // Merely taken before another caller's reading, which won the lock.
                Some(_) => {}
            }
            self.ref_high
        };
        self.ref_high = reference;
        self.wall_high = self.wall_high.max(now);

        // Made only when returned: an error value built on every call and
        // dropped costs a call per ID.
        let exhausted = || Error::Exhausted { last_ms: layout.last_unix_ms() };
        if now > layout.max_tick() || self.last >= layout.max_counter() {
            return Err(exhausted());
        }
        let from_wall = now.max(0) << s;
        // The top sequence numbers of every millisecond are past-instant
        // IDs' (invariant 9): a live ID never takes one.
        let Some(candidate) = past_instants::skip_history(layout, (self.last + 1).max(from_wall)) else {
            return Err(exhausted());
        };
        let tick = candidate >> s;
        if tick > self.ceiling {
            return Err(Error::CeilingReached { ceiling: self.ceiling });
        }

        // A tick may be issued without waiting if the restart floor forces
        // it, or if it is within max_drift of the reference clock.
        if policy.max_drift_ms > 0 && tick > self.floor && tick - reference > policy.max_drift_ms {
            self.counters.waits += 1;
            let until = tick - policy.max_drift_ms - self.skew;
            return Ok(Decision { step: Step::Wait { until }, stepped_back_ms });
        }
        if tick > self.mark {
            let target = self.mark_target(layout, tick, now, policy);
            return Ok(Decision { step: Step::NeedMark { through: tick, target }, stepped_back_ms });
        }

        if candidate > from_wall && candidate & layout.max_sequence() == 0 {
            self.counters.borrowed_ms += 1;
        }
        self.counters.issued += 1;
        self.last = candidate;
        Ok(Decision { step: Step::Issued { counter: candidate }, stepped_back_ms })
    }

    /// The reference clock for a wall-clock reading `now` not behind the
    /// last one: the wall clock itself, or while a step back is not caught up,
    /// the reference moved on by the wall clock's progress, but by at most
    /// [`MAX_SKEWED_ADVANCE_MS`] per reading. A clock set right again after a
    /// step back is a forward jump the size of the step; counted in full on
    /// top of the skew it would push the reference (and so bursts and marks)
    /// ahead by the whole step.
    fn reference_at(&self, now: i64) -> i64 {
        let seen = self.ref_high - self.skew;
        let advance = now.saturating_sub(seen).max(0);
        let advance = if self.skew > 0 { advance.min(MAX_SKEWED_ADVANCE_MS) } else { advance };
        // Never behind the wall clock itself: the skew only shrinks.
        self.ref_high.saturating_add(advance).max(now)
    }

    /// Moves the logical clock past every ID of tick `tick` (IDs made
    /// elsewhere and restored here, say), so that the next ID is at tick
    /// `tick + 1` at least, whatever its worker id. The caller makes
    /// [`Self::advance_target`] durable first. A jump ahead of the wall clock
    /// moves the reference clock with it (skew, like a clock step back):
    /// `max_drift` must not stall callers until the wall clock catches up
    /// with IDs that were not drawn in a burst. Returns whether it moved.
    pub fn advance_past(&mut self, layout: &Layout, tick: i64, now: i64) -> Result<bool, Error> {
        if tick >= layout.max_tick() {
            return Err(Error::Exhausted { last_ms: layout.last_unix_ms() });
        }
        let last = (tick << layout.sequence_bits()) | layout.max_sequence();
        if last <= self.last {
            return Ok(false);
        }
        self.last = last;
        self.skew = self.skew.max(tick + 1 - now);
        self.ref_high = self.ref_high.max(now.saturating_add(self.skew));
        Ok(true)
    }

    /// Takes a lease from a registry: IDs from tick `floor` up to tick
    /// `ceiling`. The logical clock jumps to `floor` at once when it is
    /// behind it (a new holder starts above every ceiling granted before for
    /// its worker id); the jump counts as skew, like `advance_past`, so
    /// callers do not wait out `max_drift` for IDs not drawn in a burst.
    /// The caller makes a mark of at least `floor - 1` durable first, so that
    /// a restart resumes above it too.
    pub fn enter_lease(&mut self, layout: &Layout, floor: i64, ceiling: i64, now: i64) {
        let floor = floor.clamp(0, layout.max_tick().saturating_add(1));
        let before = counter_before(layout, floor);
        if before > self.last {
            self.last = before;
            self.skew = self.skew.max(floor - now);
            self.ref_high = self.ref_high.max(now.saturating_add(self.skew));
        }
        self.floor = self.floor.max(floor);
        self.ceiling = ceiling.min(layout.max_tick());
    }

    /// Moves the lease's ceiling: up after a renewal committed in the
    /// registry, down to the last tick issued when the lease is released at
    /// a clean stop. Never below the last tick issued.
    pub fn set_ceiling(&mut self, layout: &Layout, ceiling: i64) {
        self.ceiling = ceiling.min(layout.max_tick()).max(self.last >> layout.sequence_bits());
    }

    /// The last tick the lease allows (the layout's last tick without one).
    pub fn ceiling(&self) -> i64 {
        self.ceiling
    }

    /// Records that ticks up to `through` are now durable (and, with
    /// synchronous standbys, on them too): IDs up to it may be issued.
    pub fn extend_mark(&mut self, through: i64) {
        self.mark = self.mark.max(through);
    }

    /// Counter of the last ID issued; negative before the first.
    /// The tick this start (or lease) began at: nothing below it is issued by this holder.
    pub fn floor(&self) -> i64 {
        self.floor
    }

    pub fn last_counter(&self) -> i64 {
        self.last
    }
    /// The last tick IDs may be issued at before a new mark is made durable.
    pub fn mark(&self) -> i64 {
        self.mark
    }
    /// The reference clock's highest reading.
    pub fn reference(&self) -> i64 {
        self.ref_high
    }
    /// What is written with each mark.
    pub fn clocks(&self) -> Clocks {
        Clocks { reference: self.ref_high, wall: self.wall_high }
    }
    /// How far (ms) the logical clock is ahead of the wall clock reading `now`.
    pub fn drift(&self, layout: &Layout, now: i64) -> i64 {
        (self.last >> layout.sequence_bits()) - now
    }
}

/// The counter just below the first ID of tick `tick` (>= 0); past the
/// layout's end, the last counter, so that the next call is refused.
fn counter_before(layout: &Layout, tick: i64) -> i64 {
    if tick > layout.max_tick() {
        layout.max_counter()
    } else {
        (tick << layout.sequence_bits()) - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const POLICY: Policy = Policy { max_drift_ms: 0, mark_reach_ms: 1000 };

    /// A single-threaded driver that plays the caller's part: it rechecks with
    /// the same reading, grants marks at once, and treats waits as an answer.
    struct Driver {
        layout: Layout,
        state: GeneratorState,
        policy: Policy,
        mark_writes: Vec<i64>,
    }

    impl Driver {
        fn new(w: i64, s: i64) -> Driver {
            let layout = Layout::new(w, s, 0).unwrap();
            Driver { layout, state: GeneratorState::resume(&layout, 0, None, 0), policy: POLICY, mark_writes: vec![] }
        }

        /// Returns the counter, or the tick to wait for as an error.
        fn next(&mut self, now: i64) -> Result<i64, i64> {
            let mut confirm = None;
            loop {
                match self.state.next(&self.layout, now, self.policy, confirm).unwrap().step {
                    Step::Issued { counter } => return Ok(counter),
                    Step::Recheck { seen } => confirm = Some(seen),
                    Step::NeedMark { through, target } => {
                        assert!(target >= through);
                        self.mark_writes.push(through);
                        self.state.extend_mark(target);
                    }
                    Step::Wait { until } => return Err(until),
                }
            }
        }

        fn split(&self, counter: i64) -> (i64, i64) {
            (counter >> self.layout.sequence_bits(), counter & self.layout.max_sequence())
        }

        fn next_split(&mut self, now: i64) -> (i64, i64) {
            let counter = self.next(now).unwrap();
            self.split(counter)
        }
    }

    /// A lease from a registry: nothing below its floor, nothing above its
    /// ceiling, whatever the clock reads, and no mark past the ceiling.
    #[test]
    fn a_registry_lease_bounds_ids_on_both_sides() {
        let mut d = Driver::new(10, 2);
        d.policy = Policy { max_drift_ms: 1000, mark_reach_ms: 1000 };
        assert_eq!(d.next_split(50), (50, 0));
        // A floor ahead of the clock: issued at once, no max_drift wait.
        d.state.enter_lease(&d.layout, 100, 120, 60);
        assert_eq!(d.next_split(60), (100, 0));
        let mut ticks = vec![];
        loop {
            match d.state.next(&d.layout, 61, d.policy, None) {
                Ok(Decision { step: Step::Issued { counter }, .. }) => ticks.push(d.split(counter).0),
                Ok(Decision { step: Step::NeedMark { through, target }, .. }) => {
                    assert!(target <= 120, "a mark past the ceiling: {target}");
                    d.state.extend_mark(target.max(through));
                }
                Ok(other) => panic!("{other:?}"),
                Err(e) => {
                    assert_eq!(e, Error::CeilingReached { ceiling: 120 });
                    break;
                }
            }
        }
        assert_eq!((ticks.first(), ticks.last(), ticks.len()), (Some(&100), Some(&120), 4 * 21 - 1));
        // The clock passing the ceiling changes nothing; a renewal does.
        assert!(d.state.next(&d.layout, 500, d.policy, None).is_err());
        d.state.set_ceiling(&d.layout, 600);
        assert_eq!(d.next_split(500), (500, 0));
        // A release lowers it, but never below the last tick issued.
        d.state.set_ceiling(&d.layout, 0);
        assert_eq!(d.state.ceiling(), 500);
        assert_eq!(d.next_split(500), (500, 1));
        assert!(d.state.next(&d.layout, 501, d.policy, None).is_err());
    }

    #[test]
    fn fresh_millisecond_starts_at_sequence_zero() {
        let mut d = Driver::new(10, 12);
        assert_eq!(d.next_split(5), (5, 0));
        assert_eq!(d.next_split(5), (5, 1));
        assert_eq!(d.next_split(9), (9, 0));
        assert_eq!(d.state.counters.issued, 3);
        assert_eq!(d.state.counters.borrowed_ms, 0);
    }

    #[test]
    fn exhausted_millisecond_borrows_the_next() {
        let mut d = Driver::new(0, 2); // 4 IDs per ms
        let got: Vec<_> = (0..10).map(|_| d.next_split(100)).collect();
        assert_eq!(got[3], (100, 3));
        assert_eq!(got[4], (101, 0));
        assert_eq!(got[9], (102, 1));
        assert_eq!(d.state.counters.borrowed_ms, 2);
        assert_eq!(d.state.drift(&d.layout, 100), 2);
        // The wall clock overtakes the borrowed ticks: back to wall time.
        assert_eq!(d.next_split(105), (105, 0));
    }

    #[test]
    fn zero_sequence_bits_borrow_every_id() {
        let mut d = Driver::new(5, 0);
        let got: Vec<_> = (0..3).map(|_| d.next(7).unwrap()).collect();
        assert_eq!(got, vec![7, 8, 9]);
        assert_eq!(d.state.counters.borrowed_ms, 2);
    }

    #[test]
    fn clock_step_back_keeps_increasing_and_is_counted_once() {
        let mut d = Driver::new(10, 12);
        let a = d.next(10_000).unwrap();
        let b = d.next(4_000).unwrap(); // stepped back 6 s
        let c = d.next(4_001).unwrap();
        assert!(a < b && b < c);
        assert_eq!(d.split(b), (10_000, 1));
        assert_eq!(d.state.counters.steps_back, 1);
        assert_eq!(d.state.counters.largest_step_back_ms, 6_000);
        // Once the wall clock passes the logical clock, IDs follow it again.
        let e = d.next(10_002).unwrap();
        assert_eq!(d.split(e), (10_002, 0));
        assert_eq!(d.state.counters.steps_back, 1);
    }

    #[test]
    fn a_late_reading_that_lost_the_lock_race_is_not_a_step() {
        let layout = Layout::new(10, 12, 0).unwrap();
        let mut st = GeneratorState::resume(&layout, 0, None, 0);
        st.extend_mark(1_000_000);
        st.next(&layout, 50, POLICY, None).unwrap();
        // Another backend read 49 before the 50 above, then got the lock.
        let d = st.next(&layout, 49, POLICY, None).unwrap();
        assert_eq!(d.step, Step::Recheck { seen: 50 });
        // Its second reading is 50: no step back.
        let d = st.next(&layout, 50, POLICY, Some(50)).unwrap();
        assert!(matches!(d.step, Step::Issued { .. }));
        assert_eq!((d.stepped_back_ms, st.counters.steps_back), (0, 0));
        // A second reading of 49 would have proven a step of 1 ms.
        let d = st.next(&layout, 49, POLICY, Some(50)).unwrap();
        assert_eq!((d.stepped_back_ms, st.counters.steps_back), (1, 1));
    }

    #[test]
    fn a_restart_after_advance_past_is_not_a_step_back() {
        let layout = Layout::new(10, 12, 0).unwrap();
        let mut st = GeneratorState::resume(&layout, 0, None, 1_000);
        let clocks = st.clocks_after_advance(3_600_000);
        assert_eq!(clocks, Clocks { reference: 3_600_001, wall: 1_000 });
        st.advance_past(&layout, 3_600_000, 1_000).unwrap();
        let st = GeneratorState::resume(&layout, 3_601_001, Some(clocks), 1_500);
        assert_eq!(st.counters.steps_back, 0);
        assert_eq!(st.reference(), 3_600_001);
        let st = GeneratorState::resume(&layout, 3_601_001, Some(clocks), 400);
        assert_eq!((st.counters.steps_back, st.counters.largest_step_back_ms), (1, 600));
    }

    #[test]
    fn a_query_renews_only_when_the_mark_is_used_up() {
        let mut d = Driver::new(10, 12);
        d.next(100).unwrap();
        assert_eq!(d.mark_writes, vec![100]);
        assert_eq!(d.state.mark(), 1100);
        // Close to the mark: still the keeper's job, not this query's.
        d.next(1_050).unwrap();
        assert_eq!(d.mark_writes, vec![100]);
        d.next(1_101).unwrap();
        assert_eq!(d.mark_writes, vec![100, 1_101]);
        assert_eq!(d.state.mark(), 2_101);
    }

    #[test]
    fn the_keeper_renews_near_the_mark_and_only_while_ids_flow() {
        let layout = Layout::new(10, 12, 0).unwrap();
        let policy = Policy { max_drift_ms: 1000, mark_reach_ms: 1000 };
        let mut st = GeneratorState::resume(&layout, 0, None, 0);
        st.extend_mark(1000);
        assert_eq!(st.renewal(&layout, 900, policy, 10_000, 500), None, "nothing issued yet");
        st.next(&layout, 100, policy, None).unwrap();
        assert_eq!(st.renewal(&layout, 400, policy, 10_000, 500), None);
        assert_eq!(st.renewal(&layout, 600, policy, 10_000, 500), Some((1600, Clocks { reference: 600, wall: 600 })));
        // Idle for longer than the activity window: no renewal, however close the mark.
        assert_eq!(st.renewal(&layout, 10_200, policy, 10_000, 500), None);
        // A burst that ran the logical clock ahead is due while the wall clock is not.
        for _ in 0..(700 * past_instants::live_sequences(&layout)) {
            st.next(&layout, 101, policy, None).unwrap();
        }
        assert_eq!(st.renewal(&layout, 101, policy, 10_000, 500).map(|r| r.0), Some(1_800));
    }

    #[test]
    fn a_burst_held_by_max_drift_renews_about_twice_a_second() {
        // 4 IDs per ms, asked for 20 per ms (five times the ceiling) for ten
        // seconds; the keeper looks every 100 ms.
        let layout = Layout::new(0, 2, 0).unwrap();
        let policy = Policy { max_drift_ms: 1000, mark_reach_ms: 1000 };
        let mut st = GeneratorState::resume(&layout, 0, None, 0);
        let mut writes = 0;
        for wall_ms in 0..10_000 {
            for _ in 0..20 {
                match st.next(&layout, wall_ms, policy, None).unwrap().step {
                    Step::Issued { .. } | Step::Wait { .. } => {}
                    Step::NeedMark { target, .. } => {
                        writes += 1;
                        st.extend_mark(target);
                    }
                    other => panic!("{other:?}"),
                }
            }
            if wall_ms % 100 == 0 {
                if let Some((target, _)) = st.renewal(&layout, wall_ms, policy, 10_000, 500) {
                    writes += 1;
                    st.extend_mark(target);
                }
            }
        }
        assert!(writes <= 30, "{writes} mark writes in ten seconds of burst");
        assert!(st.drift(&layout, 10_000) <= 1000);
    }

    #[test]
    fn an_unbounded_burst_renews_a_handful_of_times_not_once_per_logical_second() {
        // 0 sequence bits and max_drift 0: every ID borrows a millisecond,
        // 1,000 IDs per wall ms, a million logical ms in one wall second.
        let layout = Layout::new(0, 0, 0).unwrap();
        let mut st = GeneratorState::resume(&layout, 0, None, 0);
        let mut writes = 0;
        for wall_ms in 0..1_000 {
            for _ in 0..1_000 {
                loop {
                    match st.next(&layout, wall_ms, POLICY, None).unwrap().step {
                        Step::Issued { .. } => break,
                        Step::NeedMark { target, .. } => {
                            writes += 1;
                            st.extend_mark(target);
                        }
                        other => panic!("{other:?}"),
                    }
                }
            }
        }
        assert!(writes <= 12, "{writes} mark writes in one second of burst");
    }

    #[test]
    fn past_a_floor_far_ahead_a_burst_does_not_write_a_mark_per_millisecond() {
        // A restart after a run-ahead: the floor is 5 s past the reference.
        let layout = Layout::new(0, 0, 0).unwrap();
        for max_drift_ms in [0, 10_000] {
            let policy = Policy { max_drift_ms, mark_reach_ms: 1000 };
            let mut st = GeneratorState::resume(&layout, 6_000, Some(Clocks { reference: 1_000, wall: 1_000 }), 1_000);
            let mut writes = 0;
            // 4,000 ticks: past the floor, still within max_drift of the reference.
            for _ in 0..4_000 {
                loop {
                    match st.next(&layout, 1_000, policy, None).unwrap().step {
                        Step::Issued { .. } => break,
                        Step::NeedMark { target, .. } => {
                            writes += 1;
                            st.extend_mark(target);
                        }
                        other => panic!("{other:?}"),
                    }
                }
            }
            assert!(writes <= 20, "{writes} mark writes for 4,000 ticks past the floor (max_drift {max_drift_ms})");
        }
    }

    #[test]
    fn a_burst_after_every_start_does_not_ratchet_the_floor() {
        // Restart every 300 ms, 5,000 IDs at once after each
        // start (past the first millisecond), the keeper renewing 100 ms later.
        let layout = Layout::new(10, 12, 0).unwrap();
        for (max_drift_ms, per_start) in [(0, 5_000), (1_000, 5_000), (5_000, 50_000)] {
            let policy = Policy { max_drift_ms, mark_reach_ms: 1000 };
            let (mut now, mut mark, mut clocks) = (10_000, -1, None);
            let mut ahead = 0;
            for _ in 0..30 {
                let mut st = GeneratorState::resume(&layout, mark + 1, clocks, now);
                let mut drawn = 0;
                while drawn < per_start {
                    match st.next(&layout, now, policy, None).unwrap().step {
                        Step::Issued { counter } => {
                            drawn += 1;
                            ahead = (counter >> 12) - now;
                        }
                        Step::NeedMark { target, .. } => st.extend_mark(target),
                        Step::Wait { until } => now = until,
                        other => panic!("{other:?}"),
                    }
                }
                now += 100;
                if let Some((target, c)) = st.renewal(&layout, now, policy, 10_000, 500) {
                    st.extend_mark(target);
                    clocks = Some(c);
                } else {
                    clocks = Some(st.clocks());
                }
                mark = st.mark();
                now += 200;
            }
            assert!(ahead <= 1_100, "max_drift {max_drift_ms}: IDs {ahead} ms ahead after 30 restarts");
        }
    }

    #[test]
    fn need_mark_changes_nothing() {
        let layout = Layout::new(10, 12, 0).unwrap();
        let mut st = GeneratorState::resume(&layout, 0, None, 0);
        st.extend_mark(10);
        let before = st;
        assert_eq!(st.next(&layout, 11, POLICY, None).unwrap().step, Step::NeedMark { through: 11, target: 1011 });
        assert_eq!((st.last_counter(), st.mark(), st.counters), (before.last_counter(), 10, before.counters));
    }

    #[test]
    fn resume_starts_above_the_floor_without_waiting_and_marks_from_the_reference() {
        let layout = Layout::new(10, 12, 0).unwrap();
        let policy = Policy { max_drift_ms: 10, mark_reach_ms: 1000 };
        // The mark was 4_999, written when the clock read 4_000; it now
        // reads 1_000: it went back 3 s while the server was down.
        let mut st = GeneratorState::resume(&layout, 5_000, Some(Clocks { reference: 4_000, wall: 4_000 }), 1_000);
        assert_eq!((st.counters.steps_back, st.counters.largest_step_back_ms), (1, 3_000));
        let d = st.next(&layout, 1_000, policy, None).unwrap();
        assert_eq!(d.step, Step::NeedMark { through: 5_000, target: 5_000 });
        st.extend_mark(5_000);
        match st.next(&layout, 1_000, policy, None).unwrap().step {
            Step::Issued { counter } => assert_eq!(counter, 5_000 << 12),
            other => panic!("{other:?}"),
        }
        // Once the reference clock moves on, the mark follows it, a reach ahead.
        assert_eq!(st.mark_target(&layout, 5_000, 1_200, policy), 5_200);
        // A leap of the wall clock while behind (set right?) counts only in part.
        assert_eq!(st.mark_target(&layout, 5_000, 4_000, policy), 5_000 + MAX_SKEWED_ADVANCE_MS);
    }

    #[test]
    fn a_restart_loop_does_not_push_ids_ahead() {
        // Restart every 300 ms, one ID after each start: the floor is the
        // previous mark, and the mark is measured from the reference clock,
        // so the gap stays under a reach instead of doubling.
        let layout = Layout::new(10, 12, 0).unwrap();
        let policy = Policy { max_drift_ms: 1000, mark_reach_ms: 1000 };
        let (mut now, mut mark, mut clocks) = (10_000, -1, None);
        for _ in 0..50 {
            let mut st = GeneratorState::resume(&layout, mark + 1, clocks, now);
            let tick = loop {
                match st.next(&layout, now, policy, None).unwrap().step {
                    Step::Issued { counter } => break counter >> 12,
                    Step::NeedMark { target, .. } => st.extend_mark(target),
                    other => panic!("{other:?}"),
                }
            };
            assert!(tick - now <= 1000, "ID {} ms ahead", tick - now);
            assert!(st.mark() - now <= 1000, "mark {} ms ahead", st.mark() - now);
            assert_eq!(st.counters.steps_back, 0, "a restart is not a step back");
            (mark, clocks) = (st.mark(), Some(st.clocks()));
            now += 300;
        }
    }

    #[test]
    fn max_drift_makes_bursts_wait() {
        let mut d = Driver::new(0, 1); // 2 IDs per ms
        d.policy.max_drift_ms = 3;
        for _ in 0..8 {
            d.next(10).unwrap(); // ticks 10..=13
        }
        assert_eq!(d.next(10), Err(11)); // tick 14 is 4 ahead: wait until the wall reaches 11
        assert_eq!(d.state.counters.waits, 1);
        assert_eq!(d.next_split(11), (14, 0));
    }

    #[test]
    fn a_step_back_larger_than_max_drift_does_not_stall() {
        let mut d = Driver::new(0, 1);
        d.policy.max_drift_ms = 5;
        d.next(100_000).unwrap();
        // The clock goes back an hour; IDs keep coming from the logical clock.
        for i in 0..10 {
            assert!(d.next(100_000 - 3_600_000 / 100 + i / 2).is_ok());
        }
        assert_eq!(d.state.counters.waits, 0);
        // But a burst still may not run more than 5 ms ahead of real time.
        let now = 100_000 - 36_000 + 5;
        let waited = (0..30).map(|_| d.next(now)).find(Result::is_err);
        assert!(waited.is_some());
    }

    #[test]
    fn advance_past_skips_the_whole_tick_without_stalling_and_marks_one_reach_past_it() {
        let mut d = Driver::new(10, 12);
        d.policy.max_drift_ms = 5;
        d.next(100).unwrap();
        // IDs restored from elsewhere reach tick 50_000, far ahead of the clock.
        let target = GeneratorState::advance_target(&d.layout, 50_000, d.policy).unwrap();
        assert_eq!(target, 51_000);
        d.state.extend_mark(target);
        assert_eq!(d.state.advance_past(&d.layout, 50_000, 100), Ok(true));
        let (tick, seq) = d.next_split(101);
        assert_eq!((tick, seq), (50_001, 0));
        // Far ahead of the wall clock, but not a burst: nobody waits.
        for _ in 0..100 {
            assert!(d.next(102).is_ok());
        }
        // Going back is a no-op.
        assert_eq!(d.state.advance_past(&d.layout, 40_000, 103), Ok(false));
        assert!(d.state.advance_past(&d.layout, d.layout.max_tick(), 103).is_err());
        assert!(GeneratorState::advance_target(&d.layout, d.layout.max_tick(), d.policy).is_err());
    }

    #[test]
    fn a_paid_off_skew_between_question_and_answer_is_not_a_step() {
        let layout = Layout::new(0, 2, 0).unwrap();
        let mut st = GeneratorState::resume(&layout, 0, None, 0);
        st.extend_mark(1_000_000);
        let issue = |st: &mut GeneratorState, now, confirm| st.next(&layout, now, POLICY, confirm).unwrap();
        issue(&mut st, 1_000, None);
        // A real step back of 500 ms, confirmed: counted once, skew 500.
        assert_eq!(issue(&mut st, 500, None).step, Step::Recheck { seen: 1_000 });
        assert_eq!(issue(&mut st, 500, Some(1_000)).stepped_back_ms, 500);
        issue(&mut st, 600, None);
        // A late reading (it lost the race for the lock): asked to re-read.
        let question = issue(&mut st, 550, None).step;
        let Step::Recheck { seen } = question else { panic!("{question:?}") };
        // It re-reads 1,001; before it gets the lock back, another caller reads
        // 1,002, which passes the logical clock and pays the skew off.
        issue(&mut st, 1_002, None);
        // The answer is later than the question's reading: no step happened.
        let d = issue(&mut st, 1_001, Some(seen));
        assert_eq!((d.stepped_back_ms, st.counters.steps_back), (0, 1));
    }

    #[test]
    fn marks_never_pass_the_layouts_last_tick_and_a_floor_past_it_never_wraps() {
        for (w, s) in [(0, 0), (1, 0), (0, 12), (10, 12), (22, 0)] {
            let layout = Layout::new(w, s, 0).unwrap();
            let max = layout.max_tick();
            // A mark at the very end (0.2.0 could write one past it); with no
            // node bits at all the end is i64::MAX itself.
            if max < i64::MAX {
                let mut st = GeneratorState::resume(&layout, max + 1, None, 0);
                assert!(matches!(st.next(&layout, 0, POLICY, None), Err(Error::Exhausted { .. })), "{w}+{s}");
            }
            let mut st = GeneratorState::resume(&layout, max - 5, None, max - 10);
            assert!(st.mark_target(&layout, max - 5, max - 10, POLICY) <= max);
            let mut last = -1;
            loop {
                match st.next(&layout, max - 10, POLICY, None) {
                    Ok(Decision { step: Step::Issued { counter }, .. }) => {
                        assert!(counter > last);
                        last = counter;
                    }
                    Ok(Decision { step: Step::NeedMark { target, .. }, .. }) => {
                        assert!(target <= max);
                        st.extend_mark(target);
                    }
                    Ok(other) => panic!("{other:?}"),
                    Err(e) => {
                        assert!(matches!(e, Error::Exhausted { .. }));
                        break;
                    }
                }
            }
            // The last live ID: the last tick's top sequence numbers are history slots.
            assert_eq!(last, layout.max_counter() - past_instants::history_slots(&layout), "{w}+{s}");
        }
    }

    #[test]
    fn wall_clock_before_the_epoch_still_issues() {
        let mut d = Driver::new(10, 12);
        let a = d.next(-50).unwrap();
        let b = d.next(-40).unwrap();
        assert!(a >= 0 && a < b);
    }

    #[derive(Debug, Clone)]
    enum Op {
        /// The wall clock moves forward.
        Advance(i64),
        /// The wall clock steps back.
        StepBack(i64),
        /// Caller `c` reads the clock (for its call, or to answer a recheck).
        Read(usize),
        /// Caller `c` takes the lock with what it read.
        Call(usize),
        /// The mark keeper renews if due.
        Keeper,
    }

    /// A caller's progress; readings carry the number of steps back that had
    /// happened when they were taken.
    #[derive(Debug, Clone, Copy)]
    enum Caller {
        Idle,
        Read(i64, u64),
        Asked(i64),
        Answered(i64, i64, u64),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0i64..5).prop_map(Op::Advance),
            1 => (1i64..400).prop_map(Op::StepBack),
            6 => (0usize..3).prop_map(Op::Read),
            6 => (0usize..3).prop_map(Op::Call),
            1 => Just(Op::Keeper),
        ]
    }

    proptest! {
        /// Three callers whose clock readings go stale while the others take
        /// the lock, late marks, keeper renewals and real steps back: IDs
        /// always increase; with no step back, none is ever counted; with
        /// steps, each is counted at most once per caller that confirmed it.
        /// One limit is inherent: a reading taken before a real step and used
        /// after it cannot be told from a later one and may add a count.
        #[test]
        fn interleaved_callers_never_repeat_or_invent_steps(ops in proptest::collection::vec(op(), 1..400)) {
            let layout = Layout::new(0, 2, 0).unwrap(); // 4 IDs per ms: bursts borrow
            let policy = Policy { max_drift_ms: 0, mark_reach_ms: 50 };
            let mut st = GeneratorState::resume(&layout, 0, None, 1_000);
            let (mut clock, mut steps, mut crossings) = (1_000i64, 0u64, 0u64);
            let mut callers = [Caller::Idle; 3];
            let mut issued = Vec::new();
            for op in ops {
                match op {
                    Op::Advance(d) => clock += d,
                    Op::StepBack(d) => {
                        clock -= d;
                        steps += 1;
                    }
                    Op::Read(c) => {
                        callers[c] = match callers[c] {
                            Caller::Idle | Caller::Read(..) => Caller::Read(clock, steps),
                            Caller::Asked(seen) | Caller::Answered(seen, ..) => Caller::Answered(seen, clock, steps),
                        }
                    }
                    Op::Call(c) => {
                        let (now, confirm, read_at) = match callers[c] {
                            Caller::Read(now, at) => (now, None, at),
                            Caller::Answered(seen, now, at) => (now, Some(seen), at),
                            Caller::Idle | Caller::Asked(_) => continue,
                        };
                        crossings += steps - read_at;
                        callers[c] = Caller::Idle;
                        match st.next(&layout, now, policy, confirm).unwrap().step {
                            Step::Issued { counter } => issued.push(counter),
                            Step::Recheck { seen } => callers[c] = Caller::Asked(seen),
                            Step::NeedMark { target, .. } => st.extend_mark(target),
                            Step::Wait { .. } => unreachable!("max_drift is 0"),
                        }
                    }
                    Op::Keeper => {
                        if let Some((target, _)) = st.renewal(&layout, clock, policy, 1_000, 25) {
                            st.extend_mark(target);
                        }
                    }
                }
            }
            prop_assert!(issued.windows(2).all(|w| w[0] < w[1]), "IDs not increasing: {issued:?}");
            let counted = st.counters.steps_back;
            prop_assert!(steps > 0 || counted == 0, "{counted} steps counted, none happened");
            prop_assert!(
                counted <= steps * callers.len() as u64 + crossings,
                "{counted} steps counted, {steps} happened, {crossings} stale readings crossed one"
            );
        }
    }
}
