//! The mark rule: how far a durable mark reaches, for a query that ran out
//! of mark, for the mark keeper renewing ahead of need, and for
//! `snowflake_advance_past`. Every mark covers the tick being issued (so a
//! restart, which resumes above the mark, never repeats an ID) and reaches
//! no more than `max_drift` plus one reach past the clock (invariant 7).

use super::{Clocks, GeneratorState, Policy};
use crate::{Error, Layout};

impl GeneratorState {
    /// The mark rule: how far a new mark reaches when tick `tick` is to be
    /// covered and the wall clock reads `now`. At least `tick`; otherwise
    /// `mark_reach_ms` past the generator's position (the later of `tick` and the
    /// clock), where the position counts only up to the reference clock plus
    /// the part of `tick` that a burst explains (at most `max_drift`).
    ///
    /// What is left out is the floor a restart resumed at: a floor ahead of
    /// the reference clock is the previous mark, and a reach measured from
    /// it would push the next restart's floor a reach further at every
    /// restart, for ever (a first fix that measured from the floor once the
    /// tick passed it did exactly that with a burst after each start). Past
    /// the floor, the mark reaches at most as far again as the tick has moved
    /// past it, capped at one reach, so a restart adds no more to the next floor
    /// than the IDs actually used.
    /// Hence, whatever the sequence of restarts and renewals, with
    /// `max_drift` set: `mark <= max(tick, position) + reach` and
    /// `mark <= max(tick, reference + max_drift + reach)`. Without it (never
    /// wait), the reach also grows by the burst, so that a burst that runs
    /// the logical clock far ahead renews a few times a second.
    /// Never past the layout's last tick.
    pub fn mark_target(&self, layout: &Layout, tick: i64, now: i64, policy: Policy) -> i64 {
        let reference = self.reference_at(now);
        let position = tick.max(now);
        let burst = tick.saturating_sub(reference.max(self.floor)).max(0);
        let reach = if policy.max_drift_ms > 0 {
            position.min(reference.saturating_add(burst.min(policy.max_drift_ms))).saturating_add(policy.mark_reach_ms)
        } else {
            // Unbounded bursts (max_drift = 0) may run the logical clock many
            // times faster than the wall clock; a reach that grows with the
            // burst keeps marks at a few writes a second instead of one per
            // logical second. Still never measured from a restart's floor.
            position.min(reference.saturating_add(burst)).saturating_add(policy.mark_reach_ms).saturating_add(burst)
        };
        // Past a floor far ahead of the reference, the reach above is the
        // tick itself until the reference catches up: a write per new tick.
        // Headroom as large as the distance already moved past the floor (at
        // most a reach) doubles each time instead, and adds no more ticks to
        // the next floor than the generator used.
        let past_floor = tick.saturating_sub(self.floor).clamp(0, policy.mark_reach_ms);
        let reach = reach.max(tick.saturating_add(past_floor));
        tick.max(reach).min(layout.max_tick()).min(self.ceiling.max(tick))
    }

    /// The mark keeper's question: the mark to write now, ahead of need, or
    /// `None`. Due while IDs flow (one was issued since start, within the
    /// last `active_ms`) and the mark is within `within_ms` of the position,
    /// so that a caller rarely finds it used up; an idle server writes nothing.
    ///
    /// With the target come the clocks to write with it, read at `now` like
    /// the target: the generator's own are as old as its last ID, up to
    /// `active_ms`, and a restart that resumed from such stale clocks would
    /// see its floor that much further ahead of its reference, and make
    /// bursts wait for it.
    pub fn renewal(
        &self,
        layout: &Layout,
        now: i64,
        policy: Policy,
        active_ms: i64,
        within_ms: i64,
    ) -> Option<(i64, Clocks)> {
        let tick = self.last >> layout.sequence_bits();
        if self.counters.issued == 0 || tick <= now - active_ms || self.mark - tick.max(now) >= within_ms {
            return None;
        }
        let target = self.mark_target(layout, tick, now, policy);
        let clocks = Clocks { reference: self.reference_at(now), wall: self.wall_high.max(now) };
        (target > self.mark).then_some((target, clocks))
    }

    /// The mark that moving past tick `tick` needs: one reach past it, as
    /// any mark (not the distance to the clock twice).
    pub fn advance_target(layout: &Layout, tick: i64, policy: Policy) -> Result<i64, Error> {
        if tick >= layout.max_tick() {
            return Err(Error::Exhausted { last_ms: layout.last_unix_ms() });
        }
        Ok(tick.saturating_add(policy.mark_reach_ms.max(1)).min(layout.max_tick()))
    }

    /// The clocks to write with the mark of a move past `tick`: the jump is
    /// part of the reference, so that a restart right after the move does
    /// not see a floor far ahead of its reference (and make bursts wait for
    /// the clock to catch up with IDs that were not drawn in a burst).
    pub fn clocks_after_advance(&self, tick: i64) -> Clocks {
        Clocks { reference: self.ref_high.max(tick.saturating_add(1)), ..self.clocks() }
    }
}
