//! The level map as a file in the data directory (`snowflake_id.history`),
//! beside the state file and replaced the same way (write, fsync, rename,
//! fsync the directory): it is written before the WAL record of a claim, so
//! a restart reads every claim any ID was issued under, and redo rewrites
//! it, so a checkpoint past a claim's record loses nothing.

use super::level_map::{Interval, LevelMap};
use super::slots::history_slots;
use crate::{Error, Layout, StoredLayout};

pub const FILE_NAME: &str = "snowflake_id.history";
const HEADER: &str = "# snowflake_id history slots (past-instant IDs); written by the server, do not edit";
const VERSION: i64 = 1;

/// The level map of one layout and worker id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredMap {
    pub layout: StoredLayout,
    pub map: LevelMap,
}

impl StoredMap {
    /// The map for `layout`: this one when it is of that layout.
    ///
    /// Another worker id of the same layout keeps the old map as it is: it
    /// says nothing about which slots of this worker id were used when it
    /// was last held here, but levels never go down, so a map carried
    /// through any chain of worker ids is at or above every earlier one at
    /// every millisecond (wasteful where the old one was used, never a
    /// reuse, and never everything full because one millisecond was).
    ///
    /// Another layout (epoch or bit split) numbers IDs differently, but the
    /// numbers meet: the same bits with an earlier epoch give the same
    /// bigint for an earlier instant. Every tick of the new layout whose
    /// smallest ID is not above the largest ID the old map may have handed
    /// out starts full.
    pub fn for_layout(stored: Option<&StoredMap>, layout: StoredLayout) -> LevelMap {
        let Some(s) = stored else { return LevelMap::new() };
        if same_bits(&s.layout, &layout) {
            return s.map.clone();
        }
        let (old, new) = (s.layout.layout(), layout.layout());
        // The last tick of the old map with a slot used; a floor above 0
        // (a worker id changed before) may stand for any tick up to the end.
        let last_tick = if s.map.floor() > 0 {
            old.max_tick()
        } else {
            match s.map.intervals().iter().filter(|i| i.level > 0).map(|i| i.to - 1).max() {
                Some(t) => t,
                None => return LevelMap::new(),
            }
        };
        let largest_old_id =
            old.id_from_counter((last_tick << old.sequence_bits()) | old.max_sequence(), old.max_worker_id());
        let shift = new.worker_bits() + new.sequence_bits();
        let first_clear_tick = (largest_old_id >> shift).saturating_add(1);
        let slots = history_slots(&new);
        LevelMap::from_parts(0, vec![Interval { from: 0, to: first_clear_tick, level: slots }])
    }

    pub fn render(&self) -> String {
        let l = &self.layout;
        let mut text = format!(
            "{HEADER}\nversion={VERSION}\nworker_bits={}\nsequence_bits={}\nepoch_ms={}\nworker_id={}\nfloor={}\n",
            l.worker_bits,
            l.sequence_bits,
            l.epoch_ms,
            l.worker_id,
            self.map.floor()
        );
        for i in self.map.intervals() {
            text.push_str(&format!("interval={},{},{}\n", i.from, i.to, i.level));
        }
        text
    }

    pub fn parse(text: &str) -> Result<StoredMap, Error> {
        let corrupt = |detail: String| Error::StateCorrupt { detail: format!("{FILE_NAME}: {detail}") };
        let mut fields = std::collections::HashMap::new();
        let mut intervals = vec![];
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
            let (name, value) = line.split_once('=').ok_or_else(|| corrupt(format!("\"{line}\"")))?;
            if name == "interval" {
                let parts: Vec<i64> = value
                    .split(',')
                    .map(|p| p.trim().parse())
                    .collect::<Result<_, _>>()
                    .map_err(|_| corrupt(format!("\"{line}\"")))?;
                let [from, to, level] = parts[..] else { return Err(corrupt(format!("\"{line}\""))) };
                intervals.push(Interval { from, to, level });
            } else {
                let v: i64 = value.trim().parse().map_err(|_| corrupt(format!("{name} is not a number")))?;
                if fields.insert(name.to_string(), v).is_some() {
                    return Err(corrupt(format!("{name} appears twice")));
                }
            }
        }
        let field = |name: &str| fields.get(name).copied().ok_or_else(|| corrupt(format!("{name} is missing")));
        if field("version")? != VERSION {
            return Err(corrupt(format!("version {} is not {VERSION}", field("version")?)));
        }
        let (w, s) = (field("worker_bits")?, field("sequence_bits")?);
        let layout = Layout::new(w, s, field("epoch_ms")?).map_err(|e| corrupt(e.to_string()))?;
        let worker_id = layout.check_worker(Some(field("worker_id")?)).map_err(|e| corrupt(e.to_string()))?;
        let floor = field("floor")?;
        let ordered = intervals.windows(2).all(|w| w[0].to <= w[1].from);
        if floor < 0 || !ordered || intervals.iter().any(|i| i.from >= i.to || i.level < floor) {
            return Err(corrupt("intervals out of order, empty or below the floor".into()));
        }
        Ok(StoredMap {
            layout: StoredLayout {
                worker_bits: w as u8,
                sequence_bits: s as u8,
                epoch_ms: layout.epoch_ms(),
                worker_id,
            },
            map: LevelMap::from_parts(floor, intervals),
        })
    }
}

fn same_bits(a: &StoredLayout, b: &StoredLayout) -> bool {
    (a.worker_bits, a.sequence_bits, a.epoch_ms) == (b.worker_bits, b.sequence_bits, b.epoch_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(worker_id: i64) -> StoredLayout {
        StoredLayout { worker_bits: 10, sequence_bits: 12, epoch_ms: 1_735_689_600_000, worker_id }
    }

    #[test]
    fn round_trip_and_damage() {
        let mut map = LevelMap::new();
        map.claim(10, 20, 3, 256).unwrap();
        map.claim(15, 40, 3, 256).unwrap();
        let stored = StoredMap { layout: layout(7), map };
        assert_eq!(StoredMap::parse(&stored.render()), Ok(stored.clone()));
        let text = stored.render();
        for bad in [
            text.replace("interval=10,15,3", "interval=15,10,3"),
            text.replace("floor=0", "floor=-1"),
            text.replace("worker_id=7", "worker_id=7000"),
            text.replace("version=1", "version=2"),
            text.replace("interval=15,40,6", "interval=15,40"),
            text.replace("interval=10,15,3\n", "interval=10,15,3\ninterval=12,14,3\n"),
        ] {
            assert!(StoredMap::parse(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn another_worker_id_keeps_the_old_levels_and_no_more() {
        let mut map = LevelMap::new();
        map.claim(10, 20, 256, 256).unwrap();
        let stored = StoredMap { layout: layout(7), map: map.clone() };
        assert_eq!(StoredMap::for_layout(Some(&stored), layout(7)), map);
        let other = StoredMap::for_layout(Some(&stored), layout(8));
        assert_eq!((other.level_over(10, 20), other.level_over(0, 10), other.level_over(20, 1 << 40)), (256, 0, 0));
        assert_eq!(StoredMap::for_layout(None, layout(8)), LevelMap::new());
    }

    #[test]
    fn another_layout_starts_full_up_to_the_old_maps_largest_id() {
        let mut map = LevelMap::new();
        map.claim(1_000, 2_000, 1, 256).unwrap();
        let stored = StoredMap { layout: layout(7), map };
        // A day earlier epoch, same bits: new tick t is the same number as old tick t (a day
        // earlier in real time), so the new ticks up to the old map's last are full.
        let earlier = StoredLayout { epoch_ms: layout(7).epoch_ms - 86_400_000, ..layout(7) };
        let new = StoredMap::for_layout(Some(&stored), earlier);
        assert_eq!((new.level_over(1_999, 2_000), new.level_over(2_000, 2_001)), (256, 0));
        // One worker bit fewer: old tick t is about new tick 2t.
        let narrower = StoredLayout { worker_bits: 9, ..layout(7) };
        let new = StoredMap::for_layout(Some(&stored), narrower);
        assert_eq!((new.level_over(3_999, 4_000), new.level_over(4_000, 4_001)), (256, 0));
    }
}
