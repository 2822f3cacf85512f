//! Past-instant IDs under a worker id leased from a registry.
//!
//! A leased worker id moves between servers, and the level map of its
//! history slots is on the server that claimed them. So the registry keeps
//! every claim made under a lease (its interval, level and lease epoch),
//! recorded, committed, before a slot of it is used; and before its first
//! claim after a start or a new lease a holder raises its map by all of
//! them ([`inherited`]), so it never owns a slot a holder (itself included,
//! with an older file) may have used. One number per worker id (the
//! highest level) would be simpler, but a dense import reaches the top
//! level and would leave every later holder no slot at any millisecond.

use super::level_map::Interval;

/// A claim as the registry keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordedClaim {
    pub lease_epoch: i64,
    pub interval: Interval,
}

/// The claims a holder's map must be raised by before its first claim
/// under a lease: every one recorded, its own lease's included.
///
/// Not only those of earlier leases, even when the map is this worker id's
/// own: a restart resumes the same lease without asking the registry, with
/// whatever history file it finds, and that file may be older than the
/// lease's claims (restored from a backup, a snapshot of the disk). Raising
/// an intact map by claims already in it changes nothing, so the rule costs
/// no slot.
pub fn inherited(recorded: &[RecordedClaim]) -> impl Iterator<Item = Interval> + '_ {
    recorded.iter().map(|c| c.interval)
}

#[cfg(test)]
mod tests {
    //! A model of servers sharing worker ids through a registry: leases
    //! granted and taken over, claims whose registry raise comes later (or
    //! after the lease was lost), crashes and lost files. No slot of any
    //! millisecond may be owned twice.
    use super::*;
    use crate::past_instants::Interval;
    use crate::past_instants::LevelMap;
    use proptest::prelude::*;
    use std::collections::HashMap;

    const SLOTS: i64 = 12;
    const WORKERS: i64 = 2;
    const SERVERS: usize = 2;

    #[derive(Debug, Clone)]
    enum Event {
        /// The server takes the worker id (a grant, or a takeover of a lease
        /// gone stale: the old holder still believes it holds it).
        Acquire(usize, i64),
        /// The server claims `width` slots of `[from, from + len)` locally
        /// (map, file), fetching the registry's levels first if its memory
        /// has not applied them under this lease.
        Claim { server: usize, from: i64, len: i64, width: i64 },
        /// The server tells the registry of its pending claim and uses it if
        /// the registry confirms.
        Raise(usize),
        /// A restart: shared memory is gone, the file and the lease stay.
        Crash(usize),
        /// A restart without the history file (a careless pg_upgrade).
        LoseFile(usize),
        /// A copy of the server's history file is put aside (a backup).
        Backup(usize),
        /// A restart with the file put aside, older than the lease's claims.
        RestoreBackup(usize),
    }

    fn event() -> impl Strategy<Value = Event> {
        let server = 0..SERVERS;
        prop_oneof![
            1 => (server.clone(), 0..WORKERS).prop_map(|(s, w)| Event::Acquire(s, w)),
            4 => (server.clone(), 0..20i64, 1..6i64, 1..4i64)
                .prop_map(|(server, from, len, width)| Event::Claim { server, from, len, width }),
            4 => server.clone().prop_map(Event::Raise),
            1 => server.clone().prop_map(Event::Crash),
            1 => server.clone().prop_map(Event::LoseFile),
            1 => server.clone().prop_map(Event::Backup),
            1 => server.prop_map(Event::RestoreBackup),
        ]
    }

    /// Ways to break the rule, to see the model catch them.
    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Rule {
        Kept,
        /// Never raise the map by the registry's claims.
        NoFloor,
        /// Only earlier leases' claims when the file is this worker id's
        /// (0e4f5bc's rule: a file restored from a backup repeats IDs).
        EarlierWhenOwn,
        /// Only earlier leases' claims, also without this worker id's file.
        EarlierOnly,
    }

    #[derive(Debug, Clone, Default)]
    struct Row {
        epoch: i64,
        claims: Vec<RecordedClaim>,
    }

    #[derive(Debug, Clone)]
    struct Memory {
        worker: i64,
        map: LevelMap,
        /// The lease (worker id, epoch) whose registry claims the map was
        /// raised by.
        applied: Option<(i64, i64)>,
    }

    #[derive(Debug, Clone)]
    struct Pending {
        lease: (i64, i64),
        from: i64,
        to: i64,
        base: i64,
        granted: i64,
    }

    #[derive(Debug, Clone, Default)]
    struct Server {
        /// The worker id and epoch this server believes it holds.
        lease: Option<(i64, i64)>,
        file: Option<(i64, LevelMap)>,
        memory: Option<Memory>,
        pending: Option<Pending>,
        backup: Option<(i64, LevelMap)>,
    }

    fn run(events: &[Event], rule: Rule) -> Result<(), String> {
        let mut rows: HashMap<i64, Row> = HashMap::new();
        let mut servers = vec![Server::default(); SERVERS];
        // (worker id, millisecond, slot) -> the event that owns it.
        let mut owned: HashMap<(i64, i64, i64), usize> = HashMap::new();
        for (n, e) in events.iter().enumerate() {
            match *e {
                Event::Acquire(s, w) => {
                    let row = rows.entry(w).or_default();
                    row.epoch += 1;
                    servers[s].lease = Some((w, row.epoch));
                }
                Event::Claim { server, from, len, width } => {
                    let s = &mut servers[server];
                    let (Some((w, epoch)), None) = (s.lease, &s.pending) else { continue };
                    let row = rows.entry(w).or_default();
                    if row.epoch != epoch {
                        continue; // the registry answers only the lease's holder
                    }
                    let mut memory = s.memory.take().unwrap_or_else(|| match &s.file {
                        Some((k, m)) => Memory { worker: *k, map: m.clone(), applied: None },
                        None => Memory { worker: w, map: LevelMap::new(), applied: None },
                    });
                    // Another worker id's map is kept as it is (levels never
                    // go down), as StoredMap::for_layout does.
                    let own = memory.worker == w && s.file.as_ref().is_some_and(|(k, _)| *k == w);
                    memory.worker = w;
                    if memory.applied != Some((w, epoch)) {
                        let earlier = row.claims.iter().filter(|c| c.lease_epoch < epoch).map(|c| c.interval);
                        let raise_by: Vec<Interval> = match rule {
                            Rule::Kept => inherited(&row.claims).collect(),
                            Rule::NoFloor => vec![],
                            Rule::EarlierWhenOwn if !own => inherited(&row.claims).collect(),
                            Rule::EarlierWhenOwn | Rule::EarlierOnly => earlier.collect(),
                        };
                        for i in raise_by {
                            memory.map.raise(i.from, i.to, i.level);
                        }
                        memory.applied = Some((w, epoch));
                    }
                    let claimed = memory.map.claim(from, from + len, width, SLOTS);
                    s.file = Some((w, memory.map.clone()));
                    s.memory = Some(memory);
                    if let Ok((base, granted)) = claimed {
                        s.pending = Some(Pending { lease: (w, epoch), from, to: from + len, base, granted });
                    }
                }
                Event::Raise(server) => {
                    let Some(p) = servers[server].pending.take() else { continue };
                    let (w, epoch) = p.lease;
                    let row = rows.entry(w).or_default();
                    if row.epoch != epoch {
                        continue; // lost: the claim is never used
                    }
                    let interval = Interval { from: p.from, to: p.to, level: p.base + p.granted };
                    row.claims.push(RecordedClaim { lease_epoch: epoch, interval });
                    for t in p.from..p.to {
                        for slot in p.base..p.base + p.granted {
                            if let Some(first) = owned.insert((w, t, slot), n) {
                                return Err(format!("worker {w} ms {t} slot {slot}: events {first} and {n}"));
                            }
                        }
                    }
                }
                Event::Crash(s) => {
                    servers[s].memory = None;
                    servers[s].pending = None;
                }
                Event::LoseFile(s) => {
                    servers[s] =
                        Server { lease: servers[s].lease, backup: servers[s].backup.clone(), ..Server::default() };
                }
                Event::Backup(s) => servers[s].backup = servers[s].file.clone(),
                Event::RestoreBackup(s) => {
                    let (lease, backup) = (servers[s].lease, servers[s].backup.clone());
                    servers[s] = Server { lease, file: backup.clone(), backup, ..Server::default() };
                }
            }
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]
        #[test]
        fn no_slot_is_owned_twice_through_any_chain_of_holders(events in proptest::collection::vec(event(), 1..60)) {
            prop_assert_eq!(run(&events, Rule::Kept), Ok(()));
        }
    }

    /// The model catches a rule that is wrong (each sequence breaks one).
    #[test]
    fn the_model_catches_a_broken_rule() {
        use Event::*;
        let claim = |server| Claim { server, from: 0, len: 2, width: 2 };
        // A takeover: the new holder must start above the old one's claims.
        let takeover = [Acquire(0, 0), claim(0), Raise(0), Acquire(1, 0), claim(1), Raise(1)];
        assert_eq!(run(&takeover, Rule::Kept), Ok(()));
        assert!(run(&takeover, Rule::NoFloor).is_err());
        // A server that lost its file does not know its own claims under
        // the lease it still holds: only the registry's level covers them.
        let lost_file = [Acquire(0, 0), claim(0), Raise(0), LoseFile(0), claim(0), Raise(0)];
        assert_eq!(run(&lost_file, Rule::Kept), Ok(()));
        assert!(run(&lost_file, Rule::EarlierOnly).is_err());
        // A file restored from a backup older than the lease's last claim
        // (it once gave a repeated ID): the file is this worker id's own,
        // but not all of the lease's claims are in it.
        let restored =
            [Acquire(0, 0), claim(0), Raise(0), Backup(0), claim(0), Raise(0), RestoreBackup(0), claim(0), Raise(0)];
        assert_eq!(run(&restored, Rule::Kept), Ok(()));
        assert!(run(&restored, Rule::EarlierWhenOwn).is_err());
    }
}
