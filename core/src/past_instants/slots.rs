//! The history slots of a millisecond: which sequence numbers past-instant
//! IDs take and the live generator skips (the reason is in the module above).

use crate::Layout;

/// How many sequence numbers of each millisecond are kept for past-instant
/// IDs: a sixteenth of them. None with fewer than 4 sequence bits: one slot
/// of 2 to 8 would cost live IDs an eighth to a half of their capacity.
pub fn history_slots(layout: &Layout) -> i64 {
    match layout.sequence_bits() {
        0..=3 => 0,
        bits => (1i64 << bits) / 16,
    }
}

/// How many sequence numbers of each millisecond the live generator issues.
pub fn live_sequences(layout: &Layout) -> i64 {
    (1i64 << layout.sequence_bits()) - history_slots(layout)
}

/// The first live counter (`tick << sequence_bits | sequence`) at or after
/// `counter`: a sequence number among the history slots carries into the
/// next tick, as an exhausted millisecond does. `None` past the layout's
/// last counter.
pub fn skip_history(layout: &Layout, counter: i64) -> Option<i64> {
    let bits = layout.sequence_bits();
    let sequence = counter & ((1i64 << bits) - 1);
    let live = if sequence < live_sequences(layout) {
        Some(counter)
    } else {
        ((counter >> bits) + 1).checked_mul(1i64 << bits)
    };
    live.filter(|&c| c <= layout.max_counter())
}

/// The sequence number of history slot `slot` (0-based).
pub fn history_sequence(layout: &Layout, slot: i64) -> i64 {
    live_sequences(layout) + slot
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn layout(worker_bits: i64, sequence_bits: i64) -> Layout {
        Layout::new(worker_bits, sequence_bits, 0).expect("layout")
    }

    #[test]
    fn the_default_layout_keeps_256_of_4096() {
        let l = layout(10, 12);
        assert_eq!((history_slots(&l), live_sequences(&l)), (256, 3840));
        assert_eq!(history_slots(&layout(6, 6)), 4);
        assert_eq!(history_slots(&layout(10, 4)), 1);
        assert_eq!(history_slots(&layout(10, 3)), 0);
        assert_eq!(history_slots(&layout(10, 0)), 0);
    }

    #[test]
    fn a_history_slot_carries_into_the_next_tick() {
        let l = layout(10, 12);
        assert_eq!(skip_history(&l, (5 << 12) | 3839), Some((5 << 12) | 3839));
        assert_eq!(skip_history(&l, (5 << 12) | 3840), Some(6 << 12));
        assert_eq!(skip_history(&l, (5 << 12) | 4095), Some(6 << 12));
        let widest = layout(0, 12);
        assert_eq!(skip_history(&widest, widest.max_counter()), None, "the end, never a wrap");
        assert_eq!(skip_history(&widest, widest.max_counter() - 256), Some(widest.max_counter() - 256));
    }

    proptest! {
        /// No live counter is ever a history slot, and skipping never goes back.
        #[test]
        fn live_counters_avoid_history_slots(bits in 0i64..=12, counter in 0i64..(1 << 40)) {
            let l = layout(10, bits);
            let live = skip_history(&l, counter).expect("far from the end");
            prop_assert!(live >= counter);
            prop_assert!((live & ((1i64 << bits) - 1)) < live_sequences(&l));
            prop_assert!(live - counter <= history_slots(&l));
        }
    }
}
