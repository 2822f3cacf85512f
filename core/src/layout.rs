//! The bit layout of an ID and the arithmetic on it.
//!
//! `id = tick << (worker_bits + sequence_bits) | worker << sequence_bits | sequence`
//! where `tick` is milliseconds since the layout's epoch. The sign bit is
//! always 0, so IDs sort the same as `bigint` and as unsigned numbers.

use crate::Error;

/// worker_bits + sequence_bits may not exceed this: 41 timestamp bits are
/// about 69.7 years, the least we accept for a primary key.
pub const MAX_NODE_BITS: i64 = 22;

/// How an ID is cut into fields, and when its timestamp 0 is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    worker_bits: u8,
    sequence_bits: u8,
    epoch_ms: i64,
}

/// The fields of a decoded ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parts {
    /// Unix milliseconds.
    pub unix_ms: i64,
    pub worker_id: i64,
    pub sequence: i64,
}

impl Layout {
    /// Validates the bit split. The epoch is checked against the clock
    /// separately ([`Layout::check_clock`]) because decoding foreign IDs must
    /// accept any epoch.
    pub fn new(worker_bits: i64, sequence_bits: i64, epoch_ms: i64) -> Result<Layout, Error> {
        let in_range = |b: i64| (0..=MAX_NODE_BITS).contains(&b);
        if !in_range(worker_bits) || !in_range(sequence_bits) || worker_bits + sequence_bits > MAX_NODE_BITS {
            return Err(Error::LayoutTooWide { worker_bits, sequence_bits });
        }
        Ok(Layout { worker_bits: worker_bits as u8, sequence_bits: sequence_bits as u8, epoch_ms })
    }

    pub fn worker_bits(&self) -> u8 {
        self.worker_bits
    }
    pub fn sequence_bits(&self) -> u8 {
        self.sequence_bits
    }
    pub fn epoch_ms(&self) -> i64 {
        self.epoch_ms
    }
    pub fn timestamp_bits(&self) -> u8 {
        63 - self.worker_bits - self.sequence_bits
    }
    pub fn max_worker_id(&self) -> i64 {
        (1i64 << self.worker_bits) - 1
    }
    pub fn max_sequence(&self) -> i64 {
        (1i64 << self.sequence_bits) - 1
    }
    /// The last tick (ms after the epoch) the timestamp field can hold.
    pub fn max_tick(&self) -> i64 {
        i64::MAX >> (self.worker_bits + self.sequence_bits)
    }
    /// The last instant, in Unix ms, that this layout can encode.
    pub fn last_unix_ms(&self) -> i64 {
        self.epoch_ms.saturating_add(self.max_tick())
    }

    pub fn check_worker(&self, worker_id: Option<i64>) -> Result<i64, Error> {
        match worker_id {
            None => Err(Error::WorkerIdUnset),
            Some(w) if !(0..=self.max_worker_id()).contains(&w) => {
                Err(Error::WorkerIdOutOfRange { worker_id: w, max: self.max_worker_id() })
            }
            Some(w) => Ok(w),
        }
    }

    /// A generator may run only if the epoch is not ahead of the clock and
    /// the timestamp field still has room after now.
    pub fn check_clock(&self, now_ms: i64) -> Result<(), Error> {
        if self.epoch_ms > now_ms {
            return Err(Error::EpochInFuture { epoch_ms: self.epoch_ms, now_ms });
        }
        if self.last_unix_ms() <= now_ms {
            return Err(Error::EpochUnreachable { epoch_ms: self.epoch_ms, last_ms: self.last_unix_ms(), now_ms });
        }
        Ok(())
    }

    /// Builds the ID for a generator counter (`tick << sequence_bits | sequence`).
    /// Callers keep `counter` within `0 ..= max_counter()`.
    pub fn id_from_counter(&self, counter: i64, worker_id: i64) -> i64 {
        let s = self.sequence_bits;
        ((counter >> s) << (self.worker_bits + s)) | (worker_id << s) | (counter & self.max_sequence())
    }

    /// The largest counter value: the last sequence number of the last tick.
    pub fn max_counter(&self) -> i64 {
        (self.max_tick() << self.sequence_bits) | self.max_sequence()
    }

    pub fn encode(&self, tick: i64, worker_id: i64, sequence: i64) -> Result<i64, Error> {
        if !(0..=self.max_tick()).contains(&tick) {
            return Err(Error::TimestampOutOfRange {
                unix_ms: self.epoch_ms.saturating_add(tick),
                last_ms: self.last_unix_ms(),
            });
        }
        let worker_id = self.check_worker(Some(worker_id))?;
        debug_assert!((0..=self.max_sequence()).contains(&sequence));
        Ok(self.id_from_counter((tick << self.sequence_bits) | (sequence & self.max_sequence()), worker_id))
    }

    pub fn decode(&self, id: i64) -> Result<Parts, Error> {
        if id < 0 {
            return Err(Error::NegativeId { id });
        }
        let node = self.worker_bits + self.sequence_bits;
        Ok(Parts {
            // Saturates only for foreign layouts whose epoch sits near i64::MAX.
            unix_ms: self.epoch_ms.saturating_add(id >> node),
            worker_id: (id >> self.sequence_bits) & self.max_worker_id(),
            sequence: id & self.max_sequence(),
        })
    }

    /// How many IDs of one worker's numbering `ms` milliseconds span: the
    /// distance between the smallest IDs of two instants `ms` apart. Partition
    /// bounds that are multiples of it fall on multiples of `ms` after the
    /// epoch (UTC midnights for `1 day` when the epoch is a UTC midnight).
    pub fn span(&self, ms: i64) -> Result<i64, Error> {
        if ms <= 0 || ms > self.max_tick() {
            return Err(Error::SpanOutOfRange { ms, max_ms: self.max_tick() });
        }
        Ok(ms << (self.worker_bits + self.sequence_bits))
    }

    /// The smallest ID that can be issued in the millisecond holding
    /// `unix_ms`: every ID made at or after that millisecond is `>=` it. An
    /// instant before the epoch gives 0, which is below every ID.
    pub fn smallest_id_at(&self, unix_ms: i64) -> Result<i64, Error> {
        let tick = unix_ms.saturating_sub(self.epoch_ms);
        if tick <= 0 {
            return Ok(0);
        }
        if tick > self.max_tick() {
            return Err(Error::TimestampOutOfRange { unix_ms, last_ms: self.last_unix_ms() });
        }
        Ok(tick << (self.worker_bits + self.sequence_bits))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::epoch::DEFAULT_EPOCH_MS;
    use proptest::prelude::*;

    fn default_layout() -> Layout {
        Layout::new(10, 12, DEFAULT_EPOCH_MS).unwrap()
    }

    #[test]
    fn default_layout_has_41_timestamp_bits() {
        let l = default_layout();
        assert_eq!((l.timestamp_bits(), l.max_worker_id(), l.max_sequence()), (41, 1023, 4095));
        // 2^41 ms after 2025-01-01 is in 2094.
        assert_eq!(crate::epoch::format_unix_ms(l.last_unix_ms()), "2094-09-07T15:47:35.551Z");
    }

    #[test]
    fn bit_split_limits() {
        assert!(Layout::new(0, 22, 0).is_ok());
        assert!(Layout::new(22, 0, 0).is_ok());
        assert!(Layout::new(0, 0, 0).is_ok());
        for (w, s) in [(11, 12), (23, 0), (-1, 12), (10, -1), (0, 23)] {
            assert_eq!(Layout::new(w, s, 0), Err(Error::LayoutTooWide { worker_bits: w, sequence_bits: s }));
        }
    }

    #[test]
    fn worker_id_checks() {
        let l = Layout::new(6, 6, 0).unwrap();
        assert_eq!(l.check_worker(None), Err(Error::WorkerIdUnset));
        assert_eq!(l.check_worker(Some(63)), Ok(63));
        assert_eq!(l.check_worker(Some(64)), Err(Error::WorkerIdOutOfRange { worker_id: 64, max: 63 }));
        assert_eq!(l.check_worker(Some(-1)), Err(Error::WorkerIdOutOfRange { worker_id: -1, max: 63 }));
        let single = Layout::new(0, 12, 0).unwrap();
        assert_eq!(single.check_worker(Some(0)), Ok(0));
        assert!(single.check_worker(Some(1)).is_err());
    }

    #[test]
    fn clock_checks() {
        let l = default_layout();
        assert!(l.check_clock(DEFAULT_EPOCH_MS).is_ok());
        assert!(matches!(l.check_clock(DEFAULT_EPOCH_MS - 1), Err(Error::EpochInFuture { .. })));
        assert!(matches!(l.check_clock(l.last_unix_ms()), Err(Error::EpochUnreachable { .. })));
        assert!(l.check_clock(l.last_unix_ms() - 1).is_ok());
    }

    #[test]
    fn encode_places_fields() {
        let l = default_layout();
        assert_eq!(l.encode(1, 0, 0), Ok(1 << 22));
        assert_eq!(l.encode(0, 1, 0), Ok(1 << 12));
        assert_eq!(l.encode(0, 0, 1), Ok(1));
        assert_eq!(l.encode(l.max_tick(), 1023, 4095), Ok(i64::MAX));
        assert!(matches!(l.encode(l.max_tick() + 1, 0, 0), Err(Error::TimestampOutOfRange { .. })));
        assert!(matches!(l.encode(-1, 0, 0), Err(Error::TimestampOutOfRange { .. })));
        assert!(matches!(l.encode(0, 1024, 0), Err(Error::WorkerIdOutOfRange { .. })));
    }

    #[test]
    fn decode_rejects_negative() {
        assert_eq!(default_layout().decode(-5), Err(Error::NegativeId { id: -5 }));
    }

    /// Discord's documented example: 175928847299117063 is
    /// 2016-04-30 11:18:25.796 UTC, worker 1, process 0, increment 7
    /// (https://discord.com/developers/docs/reference#snowflakes). Discord's
    /// 5-bit worker and 5-bit process ids make one 10-bit field: 1 << 5 | 0.
    #[test]
    fn decodes_discords_documented_id() {
        let discord = Layout::new(10, 12, 1_420_070_400_000).unwrap();
        let p = discord.decode(175_928_847_299_117_063).unwrap();
        assert_eq!(crate::epoch::format_unix_ms(p.unix_ms), "2016-04-30T11:18:25.796Z");
        assert_eq!((p.worker_id, p.sequence), (32, 7));
    }

    #[test]
    fn smallest_id_at_bounds() {
        let l = default_layout();
        assert_eq!(l.smallest_id_at(DEFAULT_EPOCH_MS - 10), Ok(0));
        assert_eq!(l.smallest_id_at(DEFAULT_EPOCH_MS), Ok(0));
        assert_eq!(l.smallest_id_at(DEFAULT_EPOCH_MS + 1), Ok(1 << 22));
        assert_eq!(l.smallest_id_at(i64::MIN), Ok(0));
        assert!(matches!(l.smallest_id_at(l.last_unix_ms() + 1), Err(Error::TimestampOutOfRange { .. })));
        let id = l.encode(12345, 1023, 4095).unwrap();
        assert!(l.smallest_id_at(DEFAULT_EPOCH_MS + 12345).unwrap() <= id);
        assert!(l.smallest_id_at(DEFAULT_EPOCH_MS + 12346).unwrap() > id);
    }

    fn layout_and_fields() -> impl Strategy<Value = (Layout, i64, i64, i64)> {
        (0..=MAX_NODE_BITS, -(1i64 << 50)..(1i64 << 50))
            .prop_flat_map(|(node, epoch)| (0..=node, Just(node), Just(epoch)))
            .prop_flat_map(|(w, node, epoch)| {
                let l = Layout::new(w, node - w, epoch).unwrap();
                (Just(l), 0..=l.max_tick(), 0..=l.max_worker_id(), 0..=l.max_sequence())
            })
    }

    #[test]
    fn span_of_a_day() {
        let l = default_layout();
        assert_eq!(l.span(86_400_000), Ok(86_400_000 << 22));
        assert!(matches!(l.span(0), Err(Error::SpanOutOfRange { .. })));
        assert!(matches!(l.span(-5), Err(Error::SpanOutOfRange { .. })));
        assert!(matches!(l.span(l.max_tick() + 1), Err(Error::SpanOutOfRange { .. })));
    }

    proptest! {
        /// The accessors' arithmetic: each field of an ID, and a span of time
        /// as the distance between the smallest IDs of its ends.
        #[test]
        fn spans_are_distances_between_instants((l, tick, worker, seq) in layout_and_fields(), d in 1i64..(1i64 << 40)) {
            prop_assume!(tick.checked_add(d).is_some_and(|t| t <= l.max_tick()) && tick > 0);
            let at = |t: i64| l.smallest_id_at(l.epoch_ms() + t).unwrap();
            prop_assert_eq!(at(tick + d) - at(tick), l.span(d).unwrap());
            let id = l.encode(tick, worker, seq).unwrap();
            prop_assert!(at(tick) <= id && id < at(tick) + l.span(1).unwrap());
        }

        #[test]
        fn decode_inverts_encode((l, tick, worker, seq) in layout_and_fields()) {
            let id = l.encode(tick, worker, seq).unwrap();
            prop_assert!(id >= 0);
            let p = l.decode(id).unwrap();
            prop_assert_eq!(p, Parts { unix_ms: l.epoch_ms().saturating_add(tick), worker_id: worker, sequence: seq });
        }

        #[test]
        fn order_follows_tick_then_worker_then_sequence(
            (l, tick, worker, seq) in layout_and_fields(), dt in 0i64..3, dw in 0i64..3, ds in 0i64..3)
        {
            let (t2, w2, s2) = (tick + dt, worker + dw, seq + ds);
            prop_assume!(t2 <= l.max_tick() && w2 <= l.max_worker_id() && s2 <= l.max_sequence());
            let a = l.encode(tick, worker, seq).unwrap();
            let b = l.encode(t2, w2, s2).unwrap();
            prop_assert_eq!(a.cmp(&b), (tick, worker, seq).cmp(&(t2, w2, s2)));
        }
    }
}
