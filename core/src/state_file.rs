//! The durable high-water mark: what is written to the data directory before
//! IDs past the previous mark are issued, and the rule that turns it into the
//! first tick a restarted generator may use.
//!
//! The file is small text so a DBA can read it; it is replaced atomically
//! (write, fsync, rename, fsync directory) by the glue, never edited in place.

use crate::{epoch, Clocks, Error, Layout, StoredLayout};

/// The file's name in the data directory.
pub const FILE_NAME: &str = "snowflake_id.state";

const HEADER: &str = "# snowflake_id generator state; written by the server, do not edit";
/// Version 2 adds the reference clock, version 3 a registry lease; version
/// 1 (0.2.0) and 2 files are still read, and a mark without a registry lease
/// is still written as version 2 (without clocks, 1), which older builds read.
const VERSION: i64 = 3;

/// A worker id's lease from a registry, made durable with the mark: a
/// restart within it goes on without the registry, and a promoted standby
/// knows what its old primary held. The worker id is the layout's.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegistryLease {
    /// The registry's count of grants of this worker id (for humans and
    /// for a restart to name the lease it resumes).
    pub epoch: i64,
    /// The registry's fencing token for this grant: random, so that a
    /// registry that lost a grant (a crash without durable commits) cannot
    /// hand the same epoch to another node and let both renew it.
    pub token: i64,
    /// The first tick of the lease: above every ceiling granted before it.
    pub floor: i64,
    /// The last tick IDs may have: committed in the registry before it was
    /// written here, so never above what the registry records.
    pub ceiling: i64,
    /// The timeline of the server that holds it. A promoted standby (or a
    /// point-in-time restore) runs on a later timeline and must take the
    /// worker id over in the registry before issuing: its old primary may
    /// still be running under this very lease.
    pub timeline: i64,
}

/// The content of the state file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stored {
    pub layout: StoredLayout,
    /// Every ID issued so far has a tick at or below this one.
    pub mark: i64,
    /// The generator's clocks when the mark was written: a restart that
    /// reads a wall clock behind them knows the clock went back, and the
    /// mark rule measures new marks from the reference rather than from the
    /// mark. `None` in a mark written by 0.2.0.
    pub clocks: Option<Clocks>,
    /// The worker id's lease when it comes from a registry.
    pub registry: Option<RegistryLease>,
}

impl Stored {
    /// The file's text. A mark without clocks (replayed from a 0.2.0 WAL
    /// record, say on a standby upgraded before its primary) is written as a
    /// version 1 file, which both 0.2.0 and this version read back as it was.
    pub fn render(&self) -> String {
        let l = &self.layout;
        let version = match (self.clocks, self.registry) {
            (_, Some(_)) => VERSION,
            (Some(_), None) => 2,
            (None, None) => 1,
        };
        // Version 3 requires clocks; a lease replayed with a clock-less mark
        // cannot happen (0.2.0 had no registry), but is written with the mark
        // as its reference rather than dropped.
        let clocks = match (self.clocks, self.registry) {
            (None, Some(_)) => Some(Clocks { reference: self.mark, wall: self.mark }),
            (clocks, _) => clocks,
        };
        format!(
            "{HEADER}\nversion={version}\nworker_bits={}\nsequence_bits={}\nepoch_ms={}\nworker_id={}\nlease_until_tick={}\n{}{}# lease until {}\n",
            l.worker_bits,
            l.sequence_bits,
            l.epoch_ms,
            l.worker_id,
            self.mark,
            clocks.map_or(String::new(), |c| format!("reference_tick={}\nwall_tick={}\n", c.reference, c.wall)),
            self.registry.map_or(String::new(), |r| format!(
                "registry_lease_epoch={}\nregistry_token={}\nregistry_floor_tick={}\nregistry_ceiling_tick={}\nregistry_timeline={}\n",
                r.epoch, r.token, r.floor, r.ceiling, r.timeline
            )),
            epoch::format_unix_ms(l.epoch_ms.saturating_add(self.mark)),
        )
    }

    pub fn parse(text: &str) -> Result<Stored, Error> {
        let corrupt = |detail: String| Error::StateCorrupt { detail };
        let optional = |name: &str| -> Result<Option<i64>, Error> {
            let mut found = text.lines().filter_map(|line| line.trim().strip_prefix(name)?.strip_prefix('='));
            match (found.next(), found.next()) {
                (Some(v), None) => {
                    v.trim().parse().map(Some).map_err(|_| corrupt(format!("{name} is not a number: \"{v}\"")))
                }
                (None, _) => Ok(None),
                (Some(_), Some(_)) => Err(corrupt(format!("{name} appears twice"))),
            }
        };
        let field = |name: &str| optional(name)?.ok_or_else(|| corrupt(format!("{name} is missing")));
        let version = field("version")?;
        if !(1..=VERSION).contains(&version) {
            return Err(corrupt(format!("version {version} is not one of 1..{VERSION}")));
        }
        let clocks = match (optional("reference_tick")?, optional("wall_tick")?) {
            (Some(reference), Some(wall)) => Some(Clocks { reference, wall }),
            _ if version >= 2 => return Err(corrupt("reference_tick or wall_tick is missing".into())),
            _ => None,
        };
        let registry = match (
            optional("registry_lease_epoch")?,
            optional("registry_token")?,
            optional("registry_floor_tick")?,
            optional("registry_ceiling_tick")?,
            optional("registry_timeline")?,
        ) {
            (Some(epoch), Some(token), Some(floor), Some(ceiling), Some(timeline)) if version >= 3 => {
                Some(RegistryLease { epoch, token, floor, ceiling, timeline })
            }
            (None, None, None, None, None) if version < 3 => None,
            _ => {
                return Err(corrupt(format!(
                    "the registry lease is incomplete or unexpected in a version {version} file"
                )))
            }
        };
        let (w, s) = (field("worker_bits")?, field("sequence_bits")?);
        let layout = Layout::new(w, s, field("epoch_ms")?).map_err(|e| corrupt(e.to_string()))?;
        let worker_id = field("worker_id")?;
        layout.check_worker(Some(worker_id)).map_err(|e| corrupt(e.to_string()))?;
        Ok(Stored {
            layout: StoredLayout {
                worker_bits: w as u8,
                sequence_bits: s as u8,
                epoch_ms: layout.epoch_ms(),
                worker_id,
            },
            mark: field("lease_until_tick")?,
            clocks,
            registry,
        })
    }
}

impl Stored {
    /// The largest ID this mark may have covered: its last tick's last
    /// sequence number under its own layout and worker id. Marks of
    /// different layouts compare by it.
    pub fn max_id(&self) -> i64 {
        let layout = self.layout.layout();
        let last = self.mark.clamp(-1, layout.max_tick());
        if last < 0 {
            return -1;
        }
        layout.id_from_counter((last << layout.sequence_bits()) | layout.max_sequence(), self.layout.worker_id)
    }

    /// The later of two marks (the one that may have covered more IDs).
    pub fn later(a: Option<Stored>, b: Option<Stored>) -> Option<Stored> {
        match (a, b) {
            (Some(a), Some(b)) => Some(if b.max_id() > a.max_id() { b } else { a }),
            (a, b) => a.or(b),
        }
    }
}

impl StoredLayout {
    pub fn layout(&self) -> Layout {
        // Only ever built from a validated Layout or a parsed file that was validated.
        Layout::new(self.worker_bits.into(), self.sequence_bits.into(), self.epoch_ms)
            .expect("stored layouts are validated when built")
    }
}

/// The first tick a generator with `layout` and `worker_id` may issue, given
/// what the state file says (if there is one) and the wall clock `now` (a
/// tick of `layout`).
///
/// Same layout: the tick after the stored mark, whatever the worker id or
/// the clock says. Another layout (bits or epoch) is refused unless
/// `allow_layout_change`: every stored ID would decode to another time or
/// worker. When allowed, the stored mark is
/// converted to the largest ID it may have covered; the new layout is
/// accepted only if the ID it would issue now is above that one, because
/// otherwise it would take a jump of the logical clock into the future (or
/// issue smaller IDs) to continue.
pub fn resume_floor(
    stored: Option<&Stored>,
    layout: &Layout,
    worker_id: i64,
    now: i64,
    allow_layout_change: bool,
) -> Result<i64, Error> {
    let Some(stored) = stored else { return Ok(0) };
    let old = stored.layout.layout();
    if old == *layout {
        return Ok(stored.mark.saturating_add(1).max(0));
    }
    if !allow_layout_change {
        return Err(Error::LayoutChanged { stored: stored.layout });
    }
    let stored_max_id = stored.max_id();
    let node_bits = layout.worker_bits() + layout.sequence_bits();
    let floor = (stored_max_id >> node_bits) + 1;
    if floor > now {
        let now_tick = now.clamp(0, layout.max_tick());
        return Err(Error::LayoutWouldGoBack {
            stored: stored.layout,
            stored_max_id,
            first_new_id: layout.id_from_counter(now_tick << layout.sequence_bits(), worker_id),
        });
    }
    Ok(floor.max(0))
}

/// The clocks a restarted generator continues from, in ticks of `layout`
/// (an epoch change moves every tick), if the mark recorded them.
pub fn resume_clocks(stored: Option<&Stored>, layout: &Layout) -> Option<Clocks> {
    let stored = stored?;
    let shift = stored.layout.epoch_ms.saturating_sub(layout.epoch_ms());
    stored.clocks.map(|c| Clocks { reference: c.reference.saturating_add(shift), wall: c.wall.saturating_add(shift) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::epoch::DEFAULT_EPOCH_MS;

    fn stored(w: u8, s: u8, epoch_ms: i64, worker_id: i64, mark: i64) -> Stored {
        Stored {
            layout: StoredLayout { worker_bits: w, sequence_bits: s, epoch_ms, worker_id },
            mark,
            clocks: Some(Clocks { reference: mark - 1000, wall: mark - 1001 }),
            registry: None,
        }
    }

    #[test]
    fn a_registry_lease_round_trips_as_a_version_3_file() {
        let st = Stored {
            registry: Some(RegistryLease { epoch: 4, token: -77, floor: 100, ceiling: 30_100, timeline: 2 }),
            ..stored(10, 12, DEFAULT_EPOCH_MS, 7, 1_000)
        };
        let text = st.render();
        assert!(text.contains("version=3\n") && text.contains("registry_ceiling_tick=30100\n"), "{text}");
        assert_eq!(Stored::parse(&text), Ok(st));
        // Without a lease, version 2 as before: 0.3.0 builds without a registry read it.
        assert!(stored(10, 12, 0, 7, 5).render().contains("version=2\n"));
        for damaged in [
            text.replace("registry_floor_tick=100\n", ""),
            text.replace("version=3", "version=2"),
            text.replace("registry_lease_epoch=4", "registry_lease_epoch=four"),
        ] {
            assert!(matches!(Stored::parse(&damaged), Err(Error::StateCorrupt { .. })), "{damaged}");
        }
    }

    #[test]
    fn render_parse_round_trip() {
        let st = stored(10, 12, DEFAULT_EPOCH_MS, 7, 123_456_789);
        let text = st.render();
        assert!(text.contains("lease_until_tick=123456789"));
        assert_eq!(Stored::parse(&text), Ok(st));
    }

    #[test]
    fn a_mark_without_clocks_round_trips_as_a_version_1_file() {
        let st = Stored { clocks: None, ..stored(10, 12, 0, 7, 5) };
        let text = st.render();
        assert!(text.contains("version=1\n"), "{text}");
        assert_eq!(Stored::parse(&text), Ok(st));
        // The path a standby takes: a 0.2.0 WAL record, replayed into the file.
        let v1_record = {
            let mut r = crate::mark_record::encode(&st);
            r[0] = 1;
            r[..32].to_vec()
        };
        let replayed = crate::mark_record::decode(&v1_record).unwrap();
        assert_eq!(Stored::parse(&replayed.render()), Ok(replayed));
    }

    #[test]
    fn a_version_1_file_is_read_without_a_reference() {
        let v1 = "version=1\nworker_bits=10\nsequence_bits=12\nepoch_ms=0\nworker_id=7\nlease_until_tick=5\n";
        let st = Stored::parse(v1).unwrap();
        assert_eq!((st.mark, st.clocks), (5, None));
    }

    #[test]
    fn the_reference_follows_an_epoch_change() {
        let st = stored(10, 12, 1_000, 1, 10_000);
        let moved = Clocks { reference: 10_000, wall: 9_999 };
        assert_eq!(resume_clocks(Some(&st), &Layout::new(10, 12, 0).unwrap()), Some(moved));
        assert_eq!(resume_clocks(None, &Layout::new(10, 12, 0).unwrap()), None);
    }

    #[test]
    fn parse_rejects_damage() {
        let good = stored(10, 12, 0, 7, 5).render();
        let cases = [
            good.replace("version=2", "version=4"),
            good.replace("reference_tick=-995", ""),
            good.replace("wall_tick=-996", ""),
            good.replace("reference_tick=-995", "reference_tick=x"),
            good.replace("worker_bits=10", ""),
            good.replace("worker_bits=10", "worker_bits=ten"),
            good.replace("worker_bits=10", "worker_bits=15"),
            good.replace("worker_id=7", "worker_id=7000"),
            format!("{good}lease_until_tick=9\n"),
            String::new(),
        ];
        for text in cases {
            assert!(matches!(Stored::parse(&text), Err(Error::StateCorrupt { .. })), "{text}");
        }
    }

    #[test]
    fn later_compares_marks_by_the_ids_they_cover() {
        let a = stored(10, 12, 0, 1, 10_000);
        let b = stored(10, 12, 0, 1, 10_001);
        assert_eq!(Stored::later(Some(a), Some(b)), Some(b));
        assert_eq!(Stored::later(Some(b), Some(a)), Some(b));
        assert_eq!(Stored::later(None, Some(a)), Some(a));
        assert_eq!(Stored::later(None, None), None);
        // The same tick under a layout with fewer node bits covers smaller IDs.
        let js_safe = stored(6, 6, 0, 1, 10_001);
        assert_eq!(Stored::later(Some(a), Some(js_safe)), Some(a));
        assert_eq!(stored(10, 12, 0, 1, -1).max_id(), -1);
    }

    #[test]
    fn any_layout_change_is_refused_unless_allowed() {
        let st = stored(10, 12, 1_000, 1, 10_000);
        for l in [Layout::new(10, 12, 0).unwrap(), Layout::new(11, 11, 1_000).unwrap()] {
            assert_eq!(resume_floor(Some(&st), &l, 1, 20_000, false), Err(Error::LayoutChanged { stored: st.layout }));
        }
        // A new worker id is not a layout change.
        let same = Layout::new(10, 12, 1_000).unwrap();
        assert_eq!(resume_floor(Some(&st), &same, 5, 20_000, false), Ok(10_001));
    }

    #[test]
    fn no_file_starts_from_zero() {
        let l = Layout::new(10, 12, 0).unwrap();
        assert_eq!(resume_floor(None, &l, 1, 500, true), Ok(0));
    }

    #[test]
    fn same_layout_resumes_after_the_mark_even_with_the_clock_behind() {
        let l = Layout::new(10, 12, 0).unwrap();
        let st = stored(10, 12, 0, 1, 10_000);
        assert_eq!(resume_floor(Some(&st), &l, 1, 2_000, true), Ok(10_001));
        // A new worker id on the same layout is fine: the tick alone orders IDs.
        assert_eq!(resume_floor(Some(&st), &l, 9, 2_000, true), Ok(10_001));
    }

    #[test]
    fn an_earlier_epoch_is_accepted_above_the_old_ids() {
        let l = Layout::new(10, 12, 0).unwrap();
        let st = stored(10, 12, 1_000, 1, 10_000);
        let floor = resume_floor(Some(&st), &l, 1, 20_000, true).unwrap();
        let old_max = st.layout.layout().encode(10_000, 1, 4095).unwrap();
        assert!(l.encode(floor, 0, 0).unwrap() > old_max);
        assert!(floor <= 20_000);
    }

    #[test]
    fn fewer_timestamp_shifts_would_go_back_and_are_refused() {
        // From 10+12 node bits to a JS-safe 6+6: IDs would shrink by 2^10.
        let l = Layout::new(6, 6, 0).unwrap();
        let st = stored(10, 12, 0, 1, 10_000);
        match resume_floor(Some(&st), &l, 1, 10_500, true) {
            Err(Error::LayoutWouldGoBack { stored_max_id, first_new_id, .. }) => {
                assert!(first_new_id < stored_max_id)
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_later_epoch_is_refused() {
        let l = Layout::new(10, 12, 5_000).unwrap();
        let st = stored(10, 12, 0, 1, 10_000);
        // Now is tick 5_500 of the new epoch = 10_500 of the old: below the old mark.
        assert!(matches!(resume_floor(Some(&st), &l, 1, 5_500, true), Err(Error::LayoutWouldGoBack { .. })));
        assert!(resume_floor(Some(&st), &l, 1, 5_002, true).is_err());
        // The same ID value means a time 5 s later under the new epoch, so the
        // clock must pass the old mark by the epoch's shift before it is safe.
        assert!(resume_floor(Some(&st), &l, 1, 10_000, true).is_err());
        assert_eq!(resume_floor(Some(&st), &l, 1, 10_001, true), Ok(10_001));
    }
}
