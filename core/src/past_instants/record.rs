//! A claim of history slots as a WAL record: what a primary writes before
//! any ID under the claim is returned, and what redo (crash recovery, a
//! standby) applies to its own level map. It carries the level the claim
//! raised its interval to, not the width: replaying it is a `raise`, the
//! same whatever else a standby already had.

use crate::{Error, Layout, StoredLayout};

/// Fixed-size little-endian, like the mark's record; the first byte is a version.
const VERSION: u8 = 1;
pub const RECORD_LEN: usize = 48;

/// Every slot below `level` of every millisecond in `[from, to)` of this
/// layout and worker id may have been used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Claimed {
    pub layout: StoredLayout,
    pub from: i64,
    pub to: i64,
    pub level: i64,
}

impl Claimed {
    /// Version, bits, padding, epoch, worker id, from, to, level.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![0u8; RECORD_LEN];
        out[0] = VERSION;
        out[1] = self.layout.worker_bits;
        out[2] = self.layout.sequence_bits;
        for (at, word) in [(8, self.layout.epoch_ms), (16, self.layout.worker_id), (24, self.from), (32, self.to)] {
            out[at..at + 8].copy_from_slice(&word.to_le_bytes());
        }
        out[40..48].copy_from_slice(&self.level.to_le_bytes());
        out
    }

    pub fn decode(data: &[u8]) -> Result<Claimed, Error> {
        let corrupt = |detail: String| Error::StateCorrupt { detail: format!("history WAL record: {detail}") };
        if data.len() != RECORD_LEN || data[0] != VERSION {
            return Err(corrupt(format!("{} bytes of version {:?}", data.len(), data.first())));
        }
        let word = |at: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&data[at..at + 8]);
            i64::from_le_bytes(b)
        };
        let layout = Layout::new(data[1].into(), data[2].into(), word(8)).map_err(|e| corrupt(e.to_string()))?;
        let worker_id = layout.check_worker(Some(word(16))).map_err(|e| corrupt(e.to_string()))?;
        let (from, to, level) = (word(24), word(32), word(40));
        if from >= to || level < 0 {
            return Err(corrupt(format!("interval {from}..{to} at level {level}")));
        }
        Ok(Claimed {
            layout: StoredLayout {
                worker_bits: data[1],
                sequence_bits: data[2],
                epoch_ms: layout.epoch_ms(),
                worker_id,
            },
            from,
            to,
            level,
        })
    }

    /// The one-line description `pg_walinspect` shows.
    pub fn describe(&self) -> String {
        format!(
            "history slots below {} of ticks {} to {}; worker_id {}",
            self.level,
            self.from,
            self.to - 1,
            self.layout.worker_id
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_damage() {
        let c = Claimed {
            layout: StoredLayout { worker_bits: 10, sequence_bits: 12, epoch_ms: 1_735_689_600_000, worker_id: 7 },
            from: 100,
            to: 2_000,
            level: 12,
        };
        let data = c.encode();
        assert_eq!(Claimed::decode(&data), Ok(c));
        assert!(Claimed::decode(&data[..40]).is_err());
        let mut backwards = data.clone();
        backwards[32..40].copy_from_slice(&50i64.to_le_bytes());
        assert!(Claimed::decode(&backwards).is_err());
    }
}
