//! Runs: many IDs in one step of the state machine, for blocks of IDs
//! (`snowflake_nextval_block`). A block of a million IDs taken one `next` at
//! a time costs a million spinlock holds; a run is one hold, and its length
//! is arithmetic, so the hold stays a few instructions whatever its size.
//!
//! A run is exactly what repeated calls of [`GeneratorState::next`] at the
//! same clock reading would issue one after another, as long as each is the
//! previous counter plus one and no other step (a mark, a wait, a recheck, a
//! refusal) comes between: the same counters, the same state after. So every
//! rule of single IDs (the mark covers them, the lease ceiling and
//! `max_drift` bound them, history slots are skipped) holds for a run without
//! being restated here; the property test below checks the equivalence.

use super::{Decision, GeneratorState, Policy, Step};
use crate::{past_instants, Error, Layout};

/// What [`GeneratorState::next_run`] answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    /// The step [`GeneratorState::next`] takes; with `Step::Issued { counter }`
    /// the first counter of the run.
    pub decision: Decision,
    /// How many consecutive counters were issued from the first one (at
    /// least 1 when issued, 0 for any other step).
    pub count: i64,
}

impl GeneratorState {
    /// Up to `want` IDs in one step: the first as [`Self::next`] issues it,
    /// then as many of the counters right after it as `next` would issue at
    /// the same reading `now` without any other step between. The run ends
    /// at the mark, the lease ceiling, `max_drift`, the history slots of the
    /// tick (where counters stop being consecutive) and the layout's end;
    /// the caller takes the rest in further runs after doing what the step
    /// asks (a mark write, a wait) without the lock.
    pub fn next_run(
        &mut self,
        layout: &Layout,
        now: i64,
        policy: Policy,
        confirm: Option<i64>,
        want: i64,
    ) -> Result<Run, Error> {
        let decision = self.next(layout, now, policy, confirm)?;
        let Step::Issued { counter: first } = decision.step else {
            return Ok(Run { decision, count: 0 });
        };
        // A single ID (every `snowflake_nextval()`) skips the arithmetic.
        let more = if want > 1 { self.run_room(layout, now, policy).min(want - 1).max(0) } else { 0 };
        if more > 0 {
            let s = layout.sequence_bits();
            let last = first + more;
            // Each tick entered past the first is borrowed, as `next` counts
            // a counter past the wall clock at sequence 0.
            self.counters.borrowed_ms += ((last >> s) - (first >> s)) as u64;
            self.counters.issued += more as u64;
            self.last = last;
        }
        Ok(Run { decision, count: 1 + more })
    }

    /// One ID, when [`Self::next`] without a recheck answer would issue it
    /// at once: its counter, the state then exactly as `next` leaves it.
    /// Anything else (a recheck, a mark, a wait, a refusal) answers `None`
    /// and leaves the state untouched, as if not called: the caller takes
    /// the full path with `next`, which decides it again. For
    /// `snowflake_nextval()`, whose common case is this one step.
    #[inline(always)]
    pub fn try_issue(&mut self, layout: &Layout, now: i64, policy: Policy) -> Option<i64> {
        // All `next` changes before any other answer when there is no recheck
        // answer (the property test below checks the whole state), put back
        // then: four words rather than a copy of the state on every ID.
        let before = (self.skew, self.ref_high, self.wall_high, self.counters.waits);
        match self.next(layout, now, policy, None) {
            Ok(Decision { step: Step::Issued { counter }, stepped_back_ms: 0 }) => Some(counter),
            _ => {
                (self.skew, self.ref_high, self.wall_high, self.counters.waits) = before;
                None
            }
        }
    }

    /// How many counters after the last one issued further calls of `next`
    /// at the reading `now` would issue one after another, each the previous
    /// plus one. Only valid right after `next` issued at that reading: the
    /// clocks are then settled (a second reading equal to the first moves
    /// neither the reference nor the skew), so the bounds are those `next`
    /// checks, with the reference it just computed.
    fn run_room(&self, layout: &Layout, now: i64, policy: Policy) -> i64 {
        // The reading was behind the reference's (a recheck answered with
        // no step): the next call would ask again.
        if self.ref_high - self.skew > now {
            return 0;
        }
        let s = layout.sequence_bits();
        let tick = self.last >> s;
        let mut last_tick = self.ceiling.min(self.mark);
        if policy.max_drift_ms > 0 {
            last_tick = last_tick.min(self.floor.max(self.ref_high.saturating_add(policy.max_drift_ms)));
        }
        if last_tick < tick {
            return 0;
        }
        let mut end = (last_tick << s) | layout.max_sequence();
        if past_instants::history_slots(layout) > 0 {
            // The tick's last live counter: the next one is in the next tick.
            end = end.min((tick << s) | (past_instants::live_sequences(layout) - 1));
        }
        end.min(layout.max_counter()).saturating_sub(self.last).max(0)
    }
}

#[cfg(test)]
mod tests {
    use super::super::Clocks;
    use super::*;
    use proptest::prelude::*;

    /// `try_issue` from `st` is `next`'s issue (same counter, same state
    /// after), or nothing at all (the state untouched): its answer, and the
    /// state after it.
    pub(super) fn try_issue_is_next_or_nothing(
        st: GeneratorState,
        layout: &Layout,
        now: i64,
        policy: Policy,
    ) -> Result<(Option<i64>, GeneratorState), TestCaseError> {
        let (mut fast, mut single) = (st, st);
        let got = fast.try_issue(layout, now, policy);
        match single.next(layout, now, policy, None) {
            Ok(Decision { step: Step::Issued { counter }, stepped_back_ms: 0 }) => {
                prop_assert_eq!(got, Some(counter));
                prop_assert_eq!(fast, single);
            }
            _ => {
                prop_assert_eq!(got, None);
                prop_assert_eq!(fast, st);
            }
        }
        Ok((got, fast))
    }

    /// The reference a run must equal: `next` once, then `next` at the same
    /// reading as long as it issues the previous counter plus one and
    /// nothing else happens (a call that does anything else is undone).
    fn by_single_calls(
        st: &mut GeneratorState,
        layout: &Layout,
        now: i64,
        policy: Policy,
        confirm: Option<i64>,
        want: i64,
    ) -> Result<(Decision, Vec<i64>), Error> {
        let decision = st.next(layout, now, policy, confirm)?;
        let Step::Issued { counter } = decision.step else {
            return Ok((decision, vec![]));
        };
        let mut counters = vec![counter];
        while (counters.len() as i64) < want {
            let mut trial = *st;
            match trial.next(layout, now, policy, None) {
                Ok(Decision { step: Step::Issued { counter }, stepped_back_ms: 0 })
                    if Some(&(counter - 1)) == counters.last() =>
                {
                    *st = trial;
                    counters.push(counter);
                }
                _ => break,
            }
        }
        Ok((decision, counters))
    }

    #[test]
    fn a_run_stops_before_the_history_slots_and_the_next_starts_the_next_tick() {
        let layout = Layout::new(10, 12, 0).unwrap();
        let policy = Policy { max_drift_ms: 0, mark_reach_ms: 1000 };
        let mut st = GeneratorState::resume(&layout, 0, None, 0);
        st.extend_mark(10_000);
        let run = st.next_run(&layout, 100, policy, None, 1_000_000).unwrap();
        assert_eq!(run.decision.step, Step::Issued { counter: 100 << 12 });
        assert_eq!(run.count, past_instants::live_sequences(&layout));
        let run = st.next_run(&layout, 100, policy, None, 10).unwrap();
        assert_eq!((run.decision.step, run.count), (Step::Issued { counter: 101 << 12 }, 10));
        assert_eq!(st.counters.issued as i64, past_instants::live_sequences(&layout) + 10);
        assert_eq!(st.counters.borrowed_ms, 1);
    }

    #[test]
    fn a_run_never_passes_the_mark_the_ceiling_or_max_drift() {
        // No history slots with 2 sequence bits: a run crosses ticks.
        let layout = Layout::new(0, 2, 0).unwrap();
        let policy = Policy { max_drift_ms: 0, mark_reach_ms: 1000 };
        let mut st = GeneratorState::resume(&layout, 0, None, 0);
        st.extend_mark(12);
        let run = st.next_run(&layout, 10, policy, None, 1_000).unwrap();
        assert_eq!((run.decision.step, run.count), (Step::Issued { counter: 40 }, 12), "ticks 10..=12");
        let run = st.next_run(&layout, 10, policy, None, 1_000).unwrap();
        assert!(matches!(run.decision.step, Step::NeedMark { through: 13, .. }) && run.count == 0);

        st.enter_lease(&layout, 0, 14, 10);
        st.extend_mark(1_000);
        let run = st.next_run(&layout, 10, policy, None, 1_000).unwrap();
        assert_eq!(run.count, 8, "ticks 13 and 14, the ceiling");
        assert_eq!(st.next_run(&layout, 10, policy, None, 1), Err(Error::CeilingReached { ceiling: 14 }));

        let policy = Policy { max_drift_ms: 3, mark_reach_ms: 1000 };
        let mut st = GeneratorState::resume(&layout, 0, None, 0);
        st.extend_mark(1_000);
        let run = st.next_run(&layout, 20, policy, None, 1_000).unwrap();
        assert_eq!(run.count, 16, "ticks 20..=23");
        let run = st.next_run(&layout, 20, policy, None, 1_000).unwrap();
        assert_eq!((run.decision.step, run.count), (Step::Wait { until: 21 }, 0));
    }

    #[derive(Debug, Clone)]
    enum Op {
        /// The wall clock moves forward.
        Advance(i64),
        /// The wall clock steps back.
        StepBack(i64),
        /// A caller takes a run of up to `want` at the clock, its recheck
        /// answered with the same reading when `answer` (else with a reading
        /// one later, as after losing the lock), then does what the step asks.
        Run { want: i64, answer: bool },
        /// The mark keeper renews if due.
        Keeper,
        /// A registry lease moves the floor and the ceiling.
        Lease { floor_ahead: i64, length: i64 },
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => (0i64..6).prop_map(Op::Advance),
            1 => (1i64..200).prop_map(Op::StepBack),
            8 => (1i64..300, any::<bool>()).prop_map(|(want, answer)| Op::Run { want, answer }),
            1 => Just(Op::Keeper),
            1 => (-20i64..40, 0i64..300).prop_map(|(floor_ahead, length)| Op::Lease { floor_ahead, length }),
        ]
    }

    proptest! {
        /// Runs of any size, in any state a sequence of clock steps, marks,
        /// waits, leases and keeper renewals leaves the generator in: a run
        /// issues the same counters as calling `next` that many times and
        /// leaves the same state (counters included), or takes the same other
        /// step and leaves the same state.
        #[test]
        fn a_run_is_next_called_that_many_times(
            (w, s) in prop_oneof![Just((0i64, 0i64)), Just((1, 2)), Just((0, 4)), Just((3, 5)), Just((10, 12))],
            max_drift_ms in prop_oneof![Just(0i64), 1i64..8, Just(100)],
            mark_reach_ms in 1i64..60,
            floor_ahead in 0i64..40,
            ops in proptest::collection::vec(op(), 1..200),
        ) {
            let layout = Layout::new(w, s, 0).unwrap();
            let policy = Policy { max_drift_ms, mark_reach_ms };
            let mut clock = 1_000i64;
            // A restart whose floor (the old mark) may be ahead of the reference.
            let floor = 950 + floor_ahead;
            let mut st = GeneratorState::resume(&layout, floor, Some(Clocks { reference: 950, wall: 990 }), clock);
            let mut issued_before = -1i64;
            for op in ops {
                match op {
                    Op::Advance(d) => clock += d,
                    Op::StepBack(d) => clock -= d,
                    Op::Keeper => {
                        if let Some((target, _)) = st.renewal(&layout, clock, policy, 1_000, 25) {
                            st.extend_mark(target);
                        }
                    }
                    Op::Lease { floor_ahead, length } => {
                        let floor = (st.last_counter() >> s) + floor_ahead;
                        st.extend_mark(floor - 1);
                        st.enter_lease(&layout, floor, floor + length, clock);
                    }
                    Op::Run { want, answer } => {
                        // The single-ID shortcut: `next`'s issue, or nothing at all.
                        try_issue_is_next_or_nothing(st, &layout, clock, policy)?;
                        let mut confirm = None;
                        loop {
                            let mut single = st;
                            let expected = by_single_calls(&mut single, &layout, clock, policy, confirm, want);
                            let got = st.next_run(&layout, clock, policy, confirm, want);
                            let (decision, counters) = match expected {
                                Err(e) => {
                                    prop_assert_eq!(got, Err(e));
                                    prop_assert_eq!(st, single);
                                    break;
                                }
                                Ok(expected) => expected,
                            };
                            let run = got.unwrap();
                            prop_assert_eq!(run.decision, decision);
                            prop_assert_eq!(run.count, counters.len() as i64);
                            prop_assert_eq!(st, single, "state after a run of {}", run.count);
                            match decision.step {
                                Step::Issued { counter } => {
                                    prop_assert!(counter > issued_before);
                                    issued_before = counter + run.count - 1;
                                    break;
                                }
                                Step::Recheck { seen } if confirm.is_none() => {
                                    confirm = Some(seen);
                                    if !answer {
                                        clock = clock.max(seen);
                                    }
                                }
                                Step::Recheck { .. } => break,
                                Step::NeedMark { target, .. } => st.extend_mark(target),
                                Step::Wait { until } => clock = clock.max(until),
                            }
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod try_issue_from_any_state {
    //! `try_issue` over arbitrary states, not only those a sequence of
    //! operations reaches, near the layout's end too, checked against `next`
    //! and against each rule directly: a state no sequence reaches yet is one
    //! a later change of the operations may reach.
    use super::super::{Counters, GeneratorState, Policy};
    use super::tests::try_issue_is_next_or_nothing;
    use crate::{past_instants, Layout};
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(8_000))]
        #[test]
        fn try_issue_is_next_or_nothing_from_any_state(
            (w, s) in prop_oneof![Just((0i64, 0i64)), Just((1, 2)), Just((0, 4)), Just((3, 5)), Just((10, 12)), Just((0, 22)), Just((22, 0))],
            near_end in any::<bool>(),
            d in proptest::array::uniform8(-120i64..120),
            seq in any::<u32>(),
            skew in prop_oneof![Just(0i64), 0i64..300],
            max_drift_ms in prop_oneof![Just(0i64), 1i64..8, Just(100)],
            mark_reach_ms in 1i64..60,
            waits in 0u64..3,
        ) {
            let layout = Layout::new(w, s, 0).unwrap();
            // (w + s = 0: the last tick is i64::MAX, no clock gets near it)
            let base = if near_end && w + s > 0 { layout.max_tick() - 20 } else { 1_000 };
            let clamp = |t: i64| t.min(layout.max_tick());
            let last_tick = clamp(base + d[0]);
            let last = ((last_tick << s) | (i64::from(seq) & layout.max_sequence())).min(layout.max_counter());
            let st = GeneratorState {
                last,
                mark: last_tick + d[1].abs() / 8 - 3,
                skew,
                ref_high: base + d[2] + skew,
                wall_high: base + d[3],
                floor: base + d[4],
                ceiling: clamp(last_tick + d[5].abs() / 8 - 3),
                counters: Counters { waits, issued: 7, ..Counters::default() },
            };
            let now = last_tick + d[6] / 8 + d[7] % 2;
            let policy = Policy { max_drift_ms, mark_reach_ms };
            let (got, fast) = try_issue_is_next_or_nothing(st, &layout, now, policy)?;
            if let Some(c) = got {
                let tick = c >> s;
                prop_assert!(c > st.last, "above the last issued");
                prop_assert_eq!(past_instants::skip_history(&layout, c), Some(c), "not a history slot");
                prop_assert!(tick <= st.mark, "within the durable mark");
                prop_assert!(tick <= st.ceiling, "within the lease ceiling");
                prop_assert!(tick <= layout.max_tick() && now <= layout.max_tick(), "within the layout");
                // (a skew paid off by a wall clock past the last tick resets `seen`)
                let paid_off = st.skew > 0 && now > (st.last >> s);
                prop_assert!(paid_off || now >= st.ref_high - st.skew, "no reading behind one seen");
                prop_assert!(c >= now << s, "not behind the wall clock");
                prop_assert!(
                    max_drift_ms == 0 || tick <= st.floor || tick - fast.ref_high <= max_drift_ms,
                    "within max_drift of the reference"
                );
                prop_assert_eq!(fast.last, c);
                prop_assert_eq!(fast.counters.issued, st.counters.issued + 1);
            }
        }
    }
}
