//! The next-ID state machine: given the shared state and one clock reading,
//! decide the next ID, or what the caller must do first.
//!
//! The state is a single counter `tick << sequence_bits | sequence` of the
//! last ID issued. The next counter is `max(last + 1, now << sequence_bits)`:
//! a fresh millisecond starts at sequence 0, and an exhausted millisecond
//! carries into the next tick on its own ("borrowing" it from the future), so
//! IDs keep flowing from a logical clock that may run ahead of the wall clock.
//!
//! It holds no lock and reads no clock: the caller holds the spinlock for the
//! few instructions of [`GeneratorState::next`] and does anything slow
//! (reading the clock again, fsync, sleeping) between calls.

use crate::{Error, Layout};

/// Per-call knobs, read from settings that may change on reload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// How far (ms) the logical clock may run ahead of the wall clock before
    /// callers wait; 0 means never wait. A step back of the wall clock does
    /// not count towards it (see [`GeneratorState::next`]).
    pub max_drift_ms: i64,
    /// How far (ms) past the tick being issued a durable reservation reaches.
    pub lease_ms: i64,
    /// A caller is asked to renew the reservation once the tick it issues
    /// is this close (ms) to the reserved mark, before anyone must wait.
    pub renew_within_ms: i64,
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
    /// Durable reservations written (counted by the caller that wrote one:
    /// several callers may be granted the same one).
    pub leases: u64,
}

/// The generator's state; `Copy` and `repr(C)` so it can live in shared memory.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GeneratorState {
    /// Counter of the last ID issued (or one below the first allowed one).
    last: i64,
    /// Ticks up to this one are durably reserved: the next start begins after it.
    lease_until: i64,
    /// Total size of backward clock steps not yet caught up. The reference
    /// clock `wall + skew` never goes back, so drift is measured against it
    /// and a step back never looks like a burst that must be waited out.
    skew: i64,
    /// Highest reading of the reference clock seen.
    ref_high: i64,
    /// One caller has been asked to renew the lease ahead of need.
    renewing: bool,
    pub counters: Counters,
}

/// What the caller must do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Issue the ID for `counter`. If `renew`, this caller should extend the
    /// lease after releasing the lock, so that nobody ends up waiting for it.
    Issued { counter: i64, renew: bool },
    /// The reading is older than one already seen: read the clock again and
    /// call back with `confirm: Some(seen)` (`seen` is a wall-clock reading). A second reading that is still
    /// below `seen` proves the clock went back; one that is not was merely
    /// taken before another backend's and lost the race for the lock.
    Recheck { seen: i64 },
    /// Make ticks up to `through` durable, then call again.
    NeedLease { through: i64 },
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
    /// A generator that issues nothing below tick `floor` (what the durable
    /// state says was reserved, plus one), with ticks up to `lease_until`
    /// already reserved. If the wall clock is behind `floor` (it was stepped
    /// back while the server was down), the gap starts out as skew, so that
    /// `max_drift` does not stall inserts until the clock catches up.
    pub fn resume(layout: &Layout, floor: i64, lease_until: i64, now: i64) -> GeneratorState {
        let floor = floor.max(0);
        let skew = (floor - now).max(0);
        GeneratorState {
            last: (floor << layout.sequence_bits()) - 1,
            lease_until,
            skew,
            ref_high: now.saturating_add(skew),
            renewing: false,
            counters: Counters::default(),
        }
    }

    /// One transition; see [`Step`] for what each answer asks of the caller.
    /// `now` is the wall clock in ticks (ms since the layout's epoch).
    pub fn next(&mut self, layout: &Layout, now: i64, policy: Policy, confirm: Option<i64>) -> Result<Decision, Error> {
        let s = layout.sequence_bits();
        let mut stepped_back_ms = 0;

        if self.skew > 0 && now > (self.last >> s) {
            // The wall clock has caught up with the logical one: steps back are paid off.
            self.skew = 0;
            self.ref_high = now;
        }
        let mut reference = now.saturating_add(self.skew);
        if reference < self.ref_high {
            // `seen` is a wall-clock reading (the highest one, less the skew),
            // not a reference one: the skew may be paid off between the
            // question and the confirming answer, and a skew-free reading must
            // not be compared with a skewed one.
            match confirm {
                None => {
                    let seen = self.ref_high - self.skew;
                    return Ok(Decision { step: Step::Recheck { seen }, stepped_back_ms });
                }
                Some(seen) if now < seen => {
                    stepped_back_ms = seen - now;
                    self.counters.steps_back += 1;
                    self.counters.largest_step_back_ms = self.counters.largest_step_back_ms.max(stepped_back_ms);
                    self.skew += self.ref_high - reference;
                }
                Some(_) => {}
            }
            reference = self.ref_high;
        }
        self.ref_high = reference;

        if now > layout.max_tick() {
            return Err(Error::Exhausted { last_ms: layout.last_unix_ms() });
        }
        let from_wall = now.max(0) << s;
        let candidate = (self.last + 1).max(from_wall);
        if candidate > layout.max_counter() {
            return Err(Error::Exhausted { last_ms: layout.last_unix_ms() });
        }
        let tick = candidate >> s;

        if policy.max_drift_ms > 0 && tick - reference > policy.max_drift_ms {
            self.counters.waits += 1;
            let until = tick - policy.max_drift_ms - self.skew;
            return Ok(Decision { step: Step::Wait { until }, stepped_back_ms });
        }
        if tick > self.lease_until {
            return Ok(Decision { step: Step::NeedLease { through: tick }, stepped_back_ms });
        }

        let renew = !self.renewing && tick > self.lease_until - policy.renew_within_ms;
        self.renewing |= renew;
        if candidate > from_wall && candidate & layout.max_sequence() == 0 {
            self.counters.borrowed_ms += 1;
        }
        self.counters.issued += 1;
        self.last = candidate;
        Ok(Decision { step: Step::Issued { counter: candidate, renew }, stepped_back_ms })
    }

    /// Moves the logical clock past every ID of tick `tick` (IDs made
    /// elsewhere and restored here, say), so that the next ID is at tick
    /// `tick + 1` at least, whatever its worker id. The caller makes that
    /// tick durable first. A jump ahead of the wall clock counts as skew,
    /// like a clock step back: `max_drift` must not stall callers until the
    /// wall clock catches up with IDs that were not drawn in a burst.
    /// Returns whether the clock moved.
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

    /// Records that ticks up to `through` are now durable (and, with
    /// synchronous standbys, on them too): IDs up to it may be issued.
    pub fn extend_lease(&mut self, through: i64) {
        self.lease_until = self.lease_until.max(through);
        self.renewing = false;
    }

    /// Lets another caller try the ahead-of-need renewal after this one failed.
    pub fn abandon_renewal(&mut self) {
        self.renewing = false;
    }

    /// Whether the reservation should be extended now by someone with time
    /// to spare: an ID was issued within the last `active_ms`, and the later
    /// of the wall clock and the logical clock is within `within_ms` of the
    /// mark. Renewing a while after the last ID spares sporadic callers the
    /// fsync; stopping after that keeps an idle server from writing.
    pub fn renewal_due(&self, layout: &Layout, now: i64, active_ms: i64, within_ms: i64) -> bool {
        let last_tick = self.last >> layout.sequence_bits();
        self.last >= 0 && last_tick > now - active_ms && last_tick.max(now) > self.lease_until - within_ms
    }

    /// Counter of the last ID issued; negative before the first.
    pub fn last_counter(&self) -> i64 {
        self.last
    }
    pub fn lease_until(&self) -> i64 {
        self.lease_until
    }
    /// How far (ms) the logical clock is ahead of the wall clock reading `now`.
    pub fn drift(&self, layout: &Layout, now: i64) -> i64 {
        (self.last >> layout.sequence_bits()) - now
    }
}

/// How far past the needed tick a new lease reaches: from the later of the
/// needed tick and the wall clock, `lease_ms` ahead, plus as far again as the
/// logical clock already runs ahead of the wall clock. A lease is meant to
/// last about `lease_ms` of *wall* time: in a burst that consumes logical
/// milliseconds k times faster than they pass, a fixed logical lease would be
/// renewed (an fsync and a WAL record) k times a second. Growing it with the
/// drift doubles its wall-clock life at each renewal of a burst, so renewals
/// fall back to about two a second; the price after a crash is a first ID up
/// to `lease_ms` plus the drift ahead, which `max_drift` bounds.
pub fn lease_target(through: i64, now: i64, lease_ms: i64) -> i64 {
    let ahead = through.saturating_sub(now).max(0);
    through.max(now).saturating_add(lease_ms).saturating_add(ahead)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const POLICY: Policy = Policy { max_drift_ms: 0, lease_ms: 1000, renew_within_ms: 500 };

    /// A single-threaded driver that plays the caller's part: it rechecks with
    /// the same reading, grants leases at once, and treats waits as an answer.
    struct Driver {
        layout: Layout,
        state: GeneratorState,
        policy: Policy,
        leases: Vec<i64>,
    }

    impl Driver {
        fn new(w: i64, s: i64) -> Driver {
            let layout = Layout::new(w, s, 0).unwrap();
            Driver { layout, state: GeneratorState::resume(&layout, 0, -1, 0), policy: POLICY, leases: vec![] }
        }

        /// Returns the counter, or the tick to wait for as an error.
        fn next(&mut self, now: i64) -> Result<i64, i64> {
            let mut confirm = None;
            loop {
                match self.state.next(&self.layout, now, self.policy, confirm).unwrap().step {
                    Step::Issued { counter, renew } => {
                        if renew {
                            let target = lease_target(counter >> self.layout.sequence_bits(), now, 1000);
                            self.state.extend_lease(target);
                        }
                        return Ok(counter);
                    }
                    Step::Recheck { seen } => confirm = Some(seen),
                    Step::NeedLease { through } => {
                        self.leases.push(through);
                        self.state.extend_lease(lease_target(through, now, self.policy.lease_ms));
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
        let mut st = GeneratorState::resume(&layout, 0, 1_000_000, 0);
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
    fn lease_is_needed_before_passing_the_mark() {
        let mut d = Driver::new(10, 12);
        d.next(100).unwrap();
        assert_eq!(d.leases, vec![100]);
        assert_eq!(d.state.lease_until(), 1100);
        d.next(700).unwrap(); // past half the lease: renewed ahead of need
        assert_eq!(d.leases, vec![100]);
        assert_eq!(d.state.lease_until(), 1700);
        d.next(1_000_000).unwrap();
        assert_eq!(d.leases, vec![100, 1_000_000]);
    }

    #[test]
    fn renewal_is_due_only_near_the_mark_and_while_ids_flow() {
        let layout = Layout::new(10, 12, 0).unwrap();
        let mut st = GeneratorState::resume(&layout, 0, 1000, 0);
        assert!(!st.renewal_due(&layout, 900, 1000, 500), "nothing issued yet");
        st.next(&layout, 100, POLICY, None).unwrap();
        assert!(!st.renewal_due(&layout, 400, 1000, 500));
        assert!(st.renewal_due(&layout, 600, 1000, 500));
        // Idle for longer than the activity window: no renewal, however close the mark.
        assert!(!st.renewal_due(&layout, 1200, 1000, 500));
        assert!(st.renewal_due(&layout, 1200, 5000, 500));
        // A burst that ran the logical clock ahead is due while the wall clock is not.
        for _ in 0..(700 * 4096) {
            st.next(&layout, 101, POLICY, None).unwrap();
        }
        assert!(st.renewal_due(&layout, 101, 1000, 500));
    }

    #[test]
    fn a_burst_renews_the_lease_a_handful_of_times_not_once_per_logical_second() {
        // 0 sequence bits: every ID borrows a millisecond, 1,000 IDs per wall ms.
        let layout = Layout::new(0, 0, 0).unwrap();
        let mut st = GeneratorState::resume(&layout, 0, -1, 0);
        let mut renewals = 0;
        for wall_ms in 0..1_000 {
            for _ in 0..1_000 {
                loop {
                    match st.next(&layout, wall_ms, POLICY, None).unwrap().step {
                        Step::Issued { .. } => break,
                        Step::NeedLease { through } => {
                            renewals += 1;
                            st.extend_lease(lease_target(through, wall_ms, 1_000));
                        }
                        other => panic!("{other:?}"),
                    }
                }
            }
        }
        // A million logical ms in one wall second: a fixed lease would be
        // renewed a thousand times; growing with the drift, about log2(1000).
        assert!(renewals <= 12, "{renewals} renewals in one second of burst");
    }

    #[test]
    fn need_lease_changes_nothing() {
        let layout = Layout::new(10, 12, 0).unwrap();
        let mut st = GeneratorState::resume(&layout, 0, 10, 0);
        let before = st;
        assert_eq!(st.next(&layout, 11, POLICY, None).unwrap().step, Step::NeedLease { through: 11 });
        assert_eq!(st.last_counter(), before.last_counter());
        assert_eq!(st.counters, before.counters);
    }

    #[test]
    fn only_one_caller_is_asked_to_renew_ahead() {
        let layout = Layout::new(10, 12, 0).unwrap();
        let mut st = GeneratorState::resume(&layout, 0, 1000, 0);
        let renews = |st: &mut GeneratorState, now| match st.next(&layout, now, POLICY, None).unwrap().step {
            Step::Issued { renew, .. } => renew,
            other => panic!("{other:?}"),
        };
        assert!(!renews(&mut st, 100));
        assert!(renews(&mut st, 600));
        assert!(!renews(&mut st, 601));
        st.abandon_renewal();
        assert!(renews(&mut st, 602));
    }

    #[test]
    fn resume_starts_above_the_floor_even_with_the_clock_behind() {
        let layout = Layout::new(10, 12, 0).unwrap();
        let mut st = GeneratorState::resume(&layout, 5_000, 4_999, 1_000);
        let policy = Policy { max_drift_ms: 10, ..POLICY };
        let d = st.next(&layout, 1_000, policy, None).unwrap();
        assert_eq!(d.step, Step::NeedLease { through: 5_000 });
        st.extend_lease(6_000);
        match st.next(&layout, 1_000, policy, None).unwrap().step {
            Step::Issued { counter, .. } => assert_eq!(counter, 5_000 << 12),
            other => panic!("{other:?}"),
        }
        assert_eq!(st.drift(&layout, 1_000), 4_000);
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
    fn advance_past_skips_the_whole_tick_without_stalling() {
        let mut d = Driver::new(10, 12);
        d.policy.max_drift_ms = 5;
        d.next(100).unwrap();
        // IDs restored from elsewhere reach tick 50_000, far ahead of the clock.
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
    }

    #[test]
    fn a_paid_off_skew_between_question_and_answer_is_not_a_step() {
        let layout = Layout::new(0, 2, 0).unwrap();
        let mut st = GeneratorState::resume(&layout, 0, 1_000_000, 0);
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
        /// the lock, late leases, keeper renewals and real steps back: IDs
        /// always increase; with no step back, none is ever counted; with
        /// steps, each is counted at most once per caller that confirmed it.
        /// One limit is inherent: a reading taken before a real step and used
        /// after it cannot be told from a later one and may add a count.
        #[test]
        fn interleaved_callers_never_repeat_or_invent_steps(ops in proptest::collection::vec(op(), 1..400)) {
            let layout = Layout::new(0, 2, 0).unwrap(); // 4 IDs per ms: bursts borrow
            let policy = Policy { max_drift_ms: 0, lease_ms: 50, renew_within_ms: 10 };
            let s = layout.sequence_bits();
            let mut st = GeneratorState::resume(&layout, 0, -1, 1_000);
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
                            Step::Issued { counter, renew } => {
                                issued.push(counter);
                                if renew {
                                    st.extend_lease(lease_target(counter >> s, now, policy.lease_ms));
                                }
                            }
                            Step::Recheck { seen } => callers[c] = Caller::Asked(seen),
                            Step::NeedLease { through } => st.extend_lease(lease_target(through, now, policy.lease_ms)),
                            Step::Wait { .. } => unreachable!("max_drift is 0"),
                        }
                    }
                    Op::Keeper => {
                        if st.renewal_due(&layout, clock, 1_000, 25) {
                            st.extend_lease(lease_target(st.last_counter() >> s, clock, policy.lease_ms));
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

    #[test]
    fn timestamp_overflow_is_an_error_not_a_wrap() {
        let layout = Layout::new(22, 0, 0).unwrap();
        let max = layout.max_tick();
        let mut st = GeneratorState::resume(&layout, max, i64::MAX, max);
        assert!(matches!(st.next(&layout, max, POLICY, None).unwrap().step, Step::Issued { .. }));
        assert!(matches!(st.next(&layout, max, POLICY, None), Err(Error::Exhausted { .. })));
        assert!(matches!(st.next(&layout, max + 1, POLICY, None), Err(Error::Exhausted { .. })));
    }

    #[test]
    fn wall_clock_before_the_epoch_still_issues() {
        let mut d = Driver::new(10, 12);
        let a = d.next(-50).unwrap();
        let b = d.next(-40).unwrap();
        assert!(a >= 0 && a < b);
    }
}
