//! The durable mark as a WAL record: what a primary writes before IDs under
//! a new mark are returned, and what redo (crash recovery, a standby)
//! reads back.
//!
//! The record carries the absolute mark with its layout and worker id, not
//! a delta: a standby that joins late or replays after a restartpoint needs
//! only the newest record to know how far the primary may have gone. It is
//! fixed-size little-endian so that a server of another build reads it the
//! same way; a version byte leaves room to change it.

use std::ffi::CStr;

use crate::state_file::{RegistryLease, Stored};
use crate::{epoch, Clocks, Error, Layout, StoredLayout};

/// Record kinds, in the high four bits of `xl_info` (the low four are PostgreSQL's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The generator extended its mark ahead of the IDs it issues.
    Mark,
    /// A superuser moved the mark past given IDs (`snowflake_advance_past`).
    Advance,
    /// A claim of history slots for past-instant IDs (`past_instants::Claimed`);
    /// named `HISTORY` in `pg_walinspect` and pg_waldump, as since 0.4.0.
    PastInstants,
}

impl Kind {
    pub fn info(self) -> u8 {
        match self {
            Kind::Mark => 0x10,
            Kind::Advance => 0x20,
            Kind::PastInstants => 0x30,
        }
    }

    /// `info` as PostgreSQL passes it to redo, low bits included.
    pub fn from_info(info: u8) -> Option<Kind> {
        match info & 0xF0 {
            0x10 => Some(Kind::Mark),
            0x20 => Some(Kind::Advance),
            0x30 => Some(Kind::PastInstants),
            _ => None,
        }
    }

    /// The record type's name in `pg_walinspect` (a C string: PostgreSQL
    /// keeps the pointer).
    pub fn name(self) -> &'static CStr {
        match self {
            Kind::Mark => c"MARK",
            Kind::Advance => c"ADVANCE",
            Kind::PastInstants => c"HISTORY",
        }
    }
}

/// Version 2 (48 bytes) appends the reference and wall clocks, version 3
/// (88 bytes) a registry lease (epoch, floor, ceiling, timeline, token); 0.2.0 wrote version
/// 1 (32 bytes), which redo still reads after an upgrade. A mark without a
/// registry lease is still written as version 2.
const VERSION: u8 = 3;
const V1_LEN: usize = 32;
const V2_LEN: usize = 48;
pub const RECORD_LEN: usize = 88;

/// Serialises a mark: version, bits, padding, epoch, worker id, mark,
/// reference, wall, and with a registry lease its epoch, floor, ceiling. A
/// mark without clocks (only read from 0.2.0) is written with the mark as its
/// reference, the value a restart would assume for it.
pub fn encode(stored: &Stored) -> Vec<u8> {
    let mut out = vec![0u8; if stored.registry.is_some() { RECORD_LEN } else { V2_LEN }];
    out[0] = if stored.registry.is_some() { VERSION } else { 2 };
    out[1] = stored.layout.worker_bits;
    out[2] = stored.layout.sequence_bits;
    out[8..16].copy_from_slice(&stored.layout.epoch_ms.to_le_bytes());
    out[16..24].copy_from_slice(&stored.layout.worker_id.to_le_bytes());
    out[24..32].copy_from_slice(&stored.mark.to_le_bytes());
    let clocks = stored.clocks.unwrap_or(Clocks { reference: stored.mark, wall: i64::MIN });
    out[32..40].copy_from_slice(&clocks.reference.to_le_bytes());
    out[40..48].copy_from_slice(&clocks.wall.to_le_bytes());
    if let Some(r) = stored.registry {
        out[48..56].copy_from_slice(&r.epoch.to_le_bytes());
        out[56..64].copy_from_slice(&r.floor.to_le_bytes());
        out[64..72].copy_from_slice(&r.ceiling.to_le_bytes());
        out[72..80].copy_from_slice(&r.timeline.to_le_bytes());
        out[80..88].copy_from_slice(&r.token.to_le_bytes());
    }
    out
}

/// Reads a record back, validating it as strictly as the state file.
pub fn decode(data: &[u8]) -> Result<Stored, Error> {
    let corrupt = |detail: String| Error::StateCorrupt { detail: format!("WAL record: {detail}") };
    let expected = match data.first() {
        Some(1) => V1_LEN,
        Some(2) => V2_LEN,
        Some(&VERSION) => RECORD_LEN,
        Some(v) => return Err(corrupt(format!("version {v} is not one of 1..{VERSION}"))),
        None => return Err(corrupt("empty".into())),
    };
    if data.len() != expected {
        return Err(corrupt(format!("{} bytes, expected {expected} for version {}", data.len(), data[0])));
    }
    let word = |at: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&data[at..at + 8]);
        i64::from_le_bytes(b)
    };
    let (worker_bits, sequence_bits) = (data[1], data[2]);
    let layout = Layout::new(worker_bits.into(), sequence_bits.into(), word(8)).map_err(|e| corrupt(e.to_string()))?;
    let worker_id = layout.check_worker(Some(word(16))).map_err(|e| corrupt(e.to_string()))?;
    Ok(Stored {
        layout: StoredLayout { worker_bits, sequence_bits, epoch_ms: layout.epoch_ms(), worker_id },
        mark: word(24),
        clocks: (data[0] >= 2).then(|| Clocks { reference: word(32), wall: word(40) }),
        registry: (data[0] >= 3).then(|| RegistryLease {
            epoch: word(48),
            floor: word(56),
            ceiling: word(64),
            timeline: word(72),
            token: word(80),
        }),
    })
}

/// The one-line description `pg_walinspect` shows.
pub fn describe(stored: &Stored) -> String {
    let l = &stored.layout;
    format!(
        "mark {} (tick {}{}); worker_id {}, worker_bits {}, sequence_bits {}, epoch {}{}",
        epoch::format_unix_ms(l.epoch_ms.saturating_add(stored.mark)),
        stored.mark,
        stored.clocks.map_or(String::new(), |c| format!(", reference tick {}", c.reference)),
        l.worker_id,
        l.worker_bits,
        l.sequence_bits,
        epoch::format_unix_ms(l.epoch_ms),
        stored.registry.map_or(String::new(), |r| format!(
            "; registry lease epoch {}, ticks {} to {}",
            r.epoch, r.floor, r.ceiling
        )),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Stored {
        Stored {
            layout: StoredLayout {
                worker_bits: 10,
                sequence_bits: 12,
                epoch_ms: epoch::DEFAULT_EPOCH_MS,
                worker_id: 7,
            },
            mark: 60_000_123,
            clocks: Some(Clocks { reference: 60_000_000, wall: 59_999_000 }),
            registry: None,
        }
    }

    #[test]
    fn round_trip() {
        assert_eq!(encode(&sample()).len(), 48, "without a registry lease: version 2, as before");
        assert_eq!(decode(&encode(&sample())), Ok(sample()));
        let leased = Stored {
            registry: Some(RegistryLease { epoch: 3, token: 9, floor: 5, ceiling: 30_005, timeline: 1 }),
            ..sample()
        };
        let record = encode(&leased);
        assert_eq!((record[0], record.len()), (3, 88));
        assert_eq!(decode(&record), Ok(leased));
        assert!(matches!(decode(&record[..48]), Err(Error::StateCorrupt { .. })));
    }

    #[test]
    fn rejects_damage() {
        let good = encode(&sample());
        let mut bad_version = good.clone();
        bad_version[0] = 9;
        let mut bad_bits = good.clone();
        bad_bits[1] = 20;
        let mut bad_worker = good.clone();
        bad_worker[16..24].copy_from_slice(&5000i64.to_le_bytes());
        for data in [&good[..31], &good[..32], &bad_version[..], &bad_bits[..], &bad_worker[..], &[][..]] {
            assert!(matches!(decode(data), Err(Error::StateCorrupt { .. })), "{data:?}");
        }
    }

    #[test]
    fn a_version_1_record_is_read_without_a_reference() {
        let mut v1 = [0u8; 32];
        v1.copy_from_slice(&encode(&sample())[..32]);
        v1[0] = 1;
        assert_eq!(decode(&v1), Ok(Stored { clocks: None, ..sample() }));
    }

    #[test]
    fn kinds_use_the_high_bits_only() {
        for kind in [Kind::Mark, Kind::Advance, Kind::PastInstants] {
            assert_eq!(kind.info() & 0x0F, 0);
            assert_eq!(Kind::from_info(kind.info() | 0x03), Some(kind));
        }
        assert_eq!(Kind::from_info(0x40), None);
    }

    #[test]
    fn description_names_the_mark_and_layout() {
        let text = describe(&sample());
        assert!(
            text.starts_with("mark 2025-01-01T16:40:00.123Z (tick 60000123, reference tick 60000000); worker_id 7"),
            "{text}"
        );
    }
}
