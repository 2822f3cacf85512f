//! Two servers that may hold the same worker id, one after the other or at
//! once, played against the lease rule (`snowflake_id_core::lease`) and the
//! real generator, as the extension drives them: the node side follows
//! `src/service/` and `src/worker/registry_keeper.rs` (`next_id`, `start`,
//! `restore_own_lease`, `take_lease`, `close_lease`, `Keeper::turn`,
//! `acquire`, `renew`, `release`, the mark keeper's loop), the registry side
//! the core's model of `sql/install/registry_functions.sql` (`lease::registry`, the one
//! `tests/registry_model.rs` compares with the SQL on a real server), each
//! registry call one transaction.
//!
//! Events: real time passing; IDs drawn; mark keeper turns (registry and
//! mark); each server's clock stepping back or forward (by up to two days)
//! and being set right; the registry's clock stepping; a server frozen (a
//! VM pause) while the other runs; a server partitioned from the registry
//! (calls fail) or losing the answers (calls commit, the answer is lost);
//! crashes (`kill -9` of the postmaster: memory lost, the state file kept,
//! a new instance; or of a backend: shared memory reinitialised under the
//! same postmaster), clean stops (release) and the keeper alone restarted;
//! a running server's data directory copied onto the other and started as
//! a primary on the same timeline (a VM snapshot, a `pg_basebackup`
//! started as a primary); a server rebuilt as the
//! streaming standby of the other (same system identifier, its state file)
//! and promoted (a later timeline, its state file as replayed up to some
//! point) while the old primary goes on (split brain); the registry losing
//! its last transaction; `snowflake_id.registry_lease` reloaded.
//!
//! Checks, at every ID issued:
//! - invariant 8: for each worker id, the ticks issued under different
//!   grants are disjoint, and ordered as the grants were: every tick of an
//!   earlier grant is below every tick of a later one, whoever holds them;
//!   and no two IDs are equal, on any server;
//! - invariant 1 and 5: a server's IDs increase, across restarts, crashes
//!   and worker id switches, and a promoted standby (one that replayed all
//!   of its primary's marks, as a synchronous standby has) issues above
//!   every ID its old primary issued before the promotion;
//! - invariant 7: an ID's tick is at most `max_drift + lease` (plus a tick
//!   per restart and 250 ms per clock set right, as in `mark_lifecycle.rs`)
//!   past the server's *reference*: the highest of its clock readings and of
//!   the lease floors it entered, moved on with real time. A floor is the
//!   takeover's part; how far it may be ahead is checked at every grant: at
//!   most `horizon + 1` past the higher of the previous grant's floor and the
//!   highest position any holder of the worker id sent (capped a day past
//!   the registry's clock), where a position is checked, when sent, to be
//!   within the same allowance of the sender's reference.
//!   At the end, with every clock set right and time past every lease, a new
//!   ID is back within `max_drift + lease` of the clock.
//!
//! The registry loses only transactions whose answer never reached the node
//! (the node runs with `synchronous_commit = on`: an answer means a durable
//! commit); `a_registry_that_loses_an_acknowledged_commit_hands_a_range_out_twice`
//! shows what the rule's durability assumption buys.

use std::collections::{HashMap, HashSet};

use proptest::prelude::*;
use snowflake_id_core::generator::MAX_SKEWED_ADVANCE_MS;
use snowflake_id_core::lease::registry::{self, Acquire, Granted, Lease, LeaseName, Namespace, Refusal};
use snowflake_id_core::lease::{self, Claimant, Takeover};
use snowflake_id_core::state_file::{resume_clocks, resume_floor, RegistryLease, Stored};
use snowflake_id_core::{Clocks, Error, GeneratorState, Layout, Policy, Step, StoredLayout};

/// `nextval::MARK_REACH_MS`: how far a durable mark reaches past the position.
const MARK_REACH_MS: i64 = 1_000;
/// `nextval::KEEPER_ACTIVE_MS` and `KEEPER_RENEWS_WITHIN_MS`.
const KEEPER_ACTIVE_MS: i64 = 10_000;
const KEEPER_RENEWS_WITHIN_MS: i64 = MARK_REACH_MS / 2;
/// Real time at the start, in ticks.
const START_MS: i64 = 10_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Link {
    Up,
    /// Calls fail before they reach the registry.
    Down,
    /// Calls reach the registry and commit, but the answer is lost.
    AnswersLost,
}

#[derive(Debug, Clone)]
enum Ev {
    /// Real time passes.
    Pass(i64),
    /// A server is asked for `n` IDs in a row.
    Draw(usize, usize),
    /// One turn of a server's mark keeper: the registry, then the mark.
    Keeper(usize),
    /// A server's clock steps by this many ms (back when negative).
    Step(usize, i64),
    /// A server's clock is set right.
    SetRight(usize),
    /// The registry's clock steps.
    RegistryStep(i64),
    /// A server is frozen this long while the other runs.
    Pause(usize, i64),
    Link(usize, Link),
    /// `kill -9` and restart: memory lost, the state file kept; with
    /// `true` only shared memory is reinitialised (a backend crashed: the
    /// postmaster, and its instance, go on).
    Crash(usize, bool),
    /// The server's data directory is copied onto the other, which starts
    /// from it as a primary on the same timeline while this one runs on.
    Copy(usize),
    /// A clean stop (the lease released) and restart.
    Stop(usize),
    /// Only the mark keeper is terminated (it releases the lease) and restarted.
    KeeperRestart(usize),
    /// The server is rebuilt as a streaming standby of the other.
    Rebuild(usize),
    /// A standby is promoted, having replayed all but the last `lag` marks.
    Promote(usize, usize),
    /// The registry loses its last transaction (a crash).
    RegistryLoses,
    /// `snowflake_id.registry_lease` is reloaded.
    Reload(usize, i64),
}

fn node() -> impl Strategy<Value = usize> {
    0usize..2
}

fn ev() -> impl Strategy<Value = Ev> {
    prop_oneof![
        6 => prop_oneof![0i64..50, 0i64..3_000, 0i64..20_000].prop_map(Ev::Pass),
        8 => (node(), prop_oneof![Just(1usize), 1usize..40]).prop_map(|(n, k)| Ev::Draw(n, k)),
        10 => node().prop_map(Ev::Keeper),
        2 => (node(), prop_oneof![-5_000i64..5_000, -3_600_000i64..0, 0i64..2 * lease::DAY_MS])
            .prop_map(|(n, d)| Ev::Step(n, d)),
        1 => node().prop_map(Ev::SetRight),
        1 => prop_oneof![-5_000i64..5_000, -2 * lease::DAY_MS..2 * lease::DAY_MS].prop_map(Ev::RegistryStep),
        2 => (node(), 1_000i64..20_000).prop_map(|(n, ms)| Ev::Pause(n, ms)),
        3 => (node(), prop_oneof![Just(Link::Up), Just(Link::Down), Just(Link::AnswersLost)])
            .prop_map(|(n, l)| Ev::Link(n, l)),
        2 => (node(), prop_oneof![Just(false), Just(true)]).prop_map(|(n, reinit)| Ev::Crash(n, reinit)),
        2 => node().prop_map(Ev::Copy),
        2 => node().prop_map(Ev::Stop),
        1 => node().prop_map(Ev::KeeperRestart),
        1 => node().prop_map(Ev::Rebuild),
        2 => (node(), prop_oneof![Just(0usize), 0usize..4]).prop_map(|(n, lag)| Ev::Promote(n, lag)),
        2 => Just(Ev::RegistryLoses),
        1 => (node(), 1_000i64..5_000).prop_map(|(n, h)| Ev::Reload(n, h)),
    ]
}

#[derive(Debug, Clone, Copy)]
struct Config {
    /// Each server's `snowflake_id.worker_id`: a number, or `auto` (None).
    fixed: [Option<i64>; 2],
    /// Each server's `snowflake_id.registry_lease`.
    horizon: [i64; 2],
    /// The namespace's stale margin.
    margin: i64,
    max_drift: i64,
    /// The registry may lose a transaction whose answer reached the node
    /// (fsync off, a failover to an asynchronous standby): outside the
    /// rule's assumption.
    lossy_registry: bool,
}

fn config() -> impl Strategy<Value = Config> {
    let worker = prop_oneof![Just(Some(0i64)), Just(Some(1i64)), Just(None)];
    (
        (worker.clone(), worker),
        // Short leases (renewals, staleness and takeovers within a history),
        // and long ones, where a restart's silence comes before staleness.
        (
            prop_oneof![3 => 1_000i64..5_000, 1 => 20_000i64..60_000],
            prop_oneof![3 => 1_000i64..5_000, 1 => 20_000i64..60_000],
        ),
        prop_oneof![Just(0i64), 0i64..3_000],
        prop_oneof![Just(1_000i64), 1i64..3_000],
    )
        .prop_map(|((w0, w1), (h0, h1), margin, max_drift)| Config {
            fixed: [w0, w1],
            horizon: [h0, h1],
            margin,
            max_drift,
            lossy_registry: false,
        })
}

// ---------------------------------------------------------------------------
// The registry: the core's model of sql/install/registry_functions.sql (lease::registry), the
// one tests/registry_model.rs compares with the SQL on a real server
// ---------------------------------------------------------------------------

/// The one namespace both servers lease their worker ids in.
const NAMESPACE: &str = "fleet";

#[derive(Debug)]
enum Failure {
    Unreachable,
    Refused(&'static str),
}

struct Registry {
    tables: registry::Registry,
    /// Committed transactions, oldest first: the tables before each, and
    /// whether its answer reached the node.
    log: Vec<(registry::Registry, bool)>,
    /// Its clock reads real time plus this.
    offset: i64,
    /// The "random" token of the next grant: drawn for every call, so
    /// that tokens increase in the order grants were made.
    next_token: i64,
    /// Why each grant was made (for the coverage test).
    kinds: Vec<Takeover>,
}

fn lease_name(worker_id: i64, epoch: i64, token: i64) -> LeaseName {
    LeaseName { namespace: Some(NAMESPACE.into()), worker_id: Some(worker_id), epoch: Some(epoch), token: Some(token) }
}

impl Registry {
    fn new(layout: &Layout, margin: i64) -> Registry {
        let namespace = Namespace {
            worker_bits: i64::from(layout.worker_bits()),
            sequence_bits: i64::from(layout.sequence_bits()),
            epoch_ms: 0,
            stale_margin_ms: margin,
        };
        Registry {
            tables: registry::Registry::with_namespace(NAMESPACE, namespace),
            log: vec![],
            offset: 0,
            next_token: 0,
            kinds: vec![],
        }
    }

    /// `snowflake_registry_acquire`, as server `n` calls it.
    #[allow(clippy::too_many_arguments)]
    fn acquire(
        &mut self,
        now: i64,
        layout: &Layout,
        n: usize,
        wanted: Option<i64>,
        claimant: Claimant,
        node_tick: i64,
        horizon_ms: i64,
    ) -> Result<Granted, &'static str> {
        let call = Acquire {
            namespace: Some(NAMESPACE.into()),
            worker_bits: Some(i64::from(layout.worker_bits())),
            sequence_bits: Some(i64::from(layout.sequence_bits())),
            epoch_ms: Some(0),
            wanted,
            system_identifier: Some(claimant.system_identifier),
            timeline: Some(claimant.timeline),
            node_name: Some(format!("server {n}")),
            node_tick: Some(node_tick),
            horizon_ms: Some(horizon_ms),
            resume_epoch: claimant.resume.map(|(epoch, _)| epoch),
            resume_token: claimant.resume.map(|(_, token)| token),
        };
        self.next_token += 1;
        let granted = self.tables.acquire(now, &call, claimant.instance, self.next_token).map_err(Refusal::sqlstate)?;
        self.kinds.push(granted.kind);
        Ok(granted)
    }

    /// `snowflake_registry_renew`.
    fn renew(
        &mut self,
        now: i64,
        worker_id: i64,
        held: RegistryLease,
        instance: i64,
        node_tick: i64,
        horizon_ms: i64,
    ) -> Result<i64, &'static str> {
        let name = lease_name(worker_id, held.epoch, held.token);
        self.tables.renew(now, &name, Some(node_tick), Some(horizon_ms), Some(instance)).map_err(Refusal::sqlstate)
    }

    /// `snowflake_registry_release`.
    fn release(
        &mut self,
        now: i64,
        worker_id: i64,
        (epoch, token): (i64, i64),
        instance: i64,
        last_tick: i64,
    ) -> Result<bool, &'static str> {
        Ok(self.tables.release(now, &lease_name(worker_id, epoch, token), Some(last_tick), Some(instance)))
    }
}

// ---------------------------------------------------------------------------
// The servers (src/service/, src/worker/registry_keeper.rs)
// ---------------------------------------------------------------------------

/// `registry::State`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    None,
    Acquiring,
    Held,
    Lost,
}

/// What a server keeps in shared memory and in its keeper process: lost at
/// a restart.
#[derive(Debug, Clone, Copy)]
struct Memory {
    generator: Option<GeneratorState>,
    written: i64,
    state: State,
    worker_id: i64,
    lease: Option<RegistryLease>,
    /// `Keeper::answered_at`, by a monotonic clock (real time here).
    answered_at: i64,
    /// When the keeper began (real time): a start waits this long for the
    /// registry's answer on the lease on disk (`resumes_unconfirmed`).
    started_at: i64,
    /// Whether the registry answered anything since the keeper began: a
    /// start it answered once (refused, say) never goes on unconfirmed.
    heard: bool,
    /// The lease in force was restored from disk without the registry's answer.
    unconfirmed: bool,
    forget_stored: bool,
    /// The model's name of the grant the lease in force belongs to (its token
    /// as granted; a closed lease keeps the name of the grant it closed).
    grant: Option<i64>,
}

impl Memory {
    fn new(real: i64) -> Memory {
        Memory {
            generator: None,
            written: -1,
            state: State::None,
            worker_id: -1,
            lease: None,
            answered_at: real,
            started_at: real,
            heard: false,
            unconfirmed: false,
            forget_stored: false,
            grant: None,
        }
    }
}

#[derive(Debug, Clone)]
struct Server {
    fixed: Option<i64>,
    horizon: i64,
    system: u64,
    timeline: i64,
    /// The postmaster's random identity, drawn at each start.
    instance: i64,
    /// As a streaming standby: of which server, its base backup's state file
    /// and the marks replayed since.
    standby_of: Option<usize>,
    base: Option<Stored>,
    replayed: Vec<Stored>,
    /// Its clock reads real time plus this.
    offset: i64,
    link: Link,
    /// The state file.
    disk: Option<Stored>,
    mem: Memory,
    /// The model's reference for invariant 7: the highest clock reading or
    /// lease floor entered, at real time `.1`, moved on with real time.
    reference: (i64, i64),
    /// The last ID of this server (invariants 1 and 5), if any must be exceeded.
    last_id: Option<i64>,
    /// A copy that has not taken a grant of its own since it was made: what
    /// it issues under the copied lease on disk, gone on with unconfirmed
    /// (`Memory::unconfirmed`), is the documented window
    /// (`a_copy_started_while_the_registry_is_unreachable_issues_until_its_first_contact`),
    /// not checked for uniqueness.
    copied: bool,
}

#[derive(Debug, Clone, Copy)]
struct GrantInfo {
    worker_id: i64,
    /// Order of grants of the worker id: the registry's token counter.
    seq: i64,
    /// The highest tick issued under each earlier/later grant is checked against it.
    lo: i64,
    hi: i64,
}

struct World {
    layout: Layout,
    config: Config,
    policy: Policy,
    real: i64,
    registry: Registry,
    servers: [Server; 2],
    /// Per token: the grant's worker id and the ticks issued under it.
    grants: HashMap<i64, GrantInfo>,
    ids: HashSet<i64>,
    /// Restarts and clocks set right, any server (see `allowance`).
    restarts: i64,
    set_rights: i64,
    next_instance: i64,
    /// Per worker id: the previous grant's floor, the highest (capped)
    /// position bound any holder sent, the largest horizon.
    reach: HashMap<i64, (i64, i64, i64)>,
    issued: u64,
    log: Vec<String>,
    stats: Stats,
}

/// What a history went through, for the coverage test.
#[derive(Debug, Default, Clone, Copy)]
struct Stats {
    ids: u64,
    /// IDs issued under a grant after a later grant of the worker id was made
    /// (a paused, partitioned or split-brain holder issuing on to its ceiling).
    superseded: u64,
    /// Grants whose floor a worker id switch raised.
    switched: u64,
    /// Transactions the registry lost.
    lost: u64,
    /// Promotions while the old primary ran on.
    promotions: u64,
    /// Copies started while the original ran, and starts the registry
    /// refused as another instance of a running lease.
    copies: u64,
    refused_starts: u64,
    /// IDs a copy issued before its first contact with the registry.
    window: u64,
}

type Check = Result<(), TestCaseError>;

impl World {
    fn new(config: Config) -> World {
        let layout = Layout::new(1, 2, 0).unwrap(); // two worker ids, 4 IDs per ms: bursts borrow
        let server = |i: usize| Server {
            fixed: config.fixed[i],
            horizon: config.horizon[i],
            system: 7_000 + i as u64,
            timeline: 1,
            instance: 100 + i as i64,
            standby_of: None,
            base: None,
            replayed: vec![],
            offset: 0,
            link: Link::Up,
            disk: None,
            mem: Memory::new(START_MS),
            reference: (START_MS, START_MS),
            last_id: None,
            copied: false,
        };
        World {
            layout,
            config,
            policy: Policy { max_drift_ms: config.max_drift, mark_reach_ms: MARK_REACH_MS },
            real: START_MS,
            registry: Registry::new(&layout, config.margin),
            servers: [server(0), server(1)],
            grants: HashMap::new(),
            ids: HashSet::new(),
            restarts: 0,
            set_rights: 0,
            next_instance: 1_000,
            reach: HashMap::new(),
            issued: 0,
            log: vec![],
            stats: Stats::default(),
        }
    }

    /// How far past its reference a server may issue: `max_drift + lease`,
    /// plus a tick per restart that took no clock time and 250 ms per clock
    /// set right while behind (as in `mark_lifecycle.rs`).
    fn allowance(&self) -> i64 {
        self.config.max_drift + MARK_REACH_MS + self.restarts + self.set_rights * MAX_SKEWED_ADVANCE_MS
    }

    fn reference(&self, n: usize) -> i64 {
        let (value, at) = self.servers[n].reference;
        value + (self.real - at)
    }

    fn raise_reference(&mut self, n: usize, tick: i64) {
        let value = self.reference(n).max(tick);
        self.servers[n].reference = (value, self.real);
    }

    /// Server `n` reads its clock (a tick).
    fn clock(&mut self, n: usize) -> i64 {
        let now = self.real + self.servers[n].offset;
        self.raise_reference(n, now);
        now
    }

    fn primary(&self, n: usize) -> bool {
        self.servers[n].standby_of.is_none()
    }

    fn stored_layout(&self, worker_id: i64) -> StoredLayout {
        StoredLayout {
            worker_bits: self.layout.worker_bits(),
            sequence_bits: self.layout.sequence_bits(),
            epoch_ms: 0,
            worker_id,
        }
    }

    /// Writes server `n`'s state file; a WAL-logged write reaches its standbys.
    fn write(&mut self, n: usize, stored: Stored, wal_logged: bool) {
        self.servers[n].disk = Some(stored);
        if wal_logged {
            for s in self.servers.iter_mut().filter(|s| s.standby_of == Some(n)) {
                s.replayed.push(stored);
            }
        }
    }

    fn pass(&mut self, ms: i64) {
        self.real += ms;
    }

    /// One call to the registry, one transaction.
    fn call<T>(
        &mut self,
        n: usize,
        f: impl FnOnce(&mut Registry, i64) -> Result<T, &'static str>,
    ) -> Result<T, Failure> {
        let link = self.servers[n].link;
        if link == Link::Down {
            return Err(Failure::Unreachable);
        }
        let before = self.registry.tables.clone();
        let now = self.real + self.registry.offset;
        let result = f(&mut self.registry, now);
        if self.registry.tables != before {
            self.registry.log.push((before, link == Link::Up));
        } else if result.is_ok() {
            // A read that answered (a lease going on, `Continued`) saw the
            // last commit: PostgreSQL makes a commit visible only once it is
            // durable (flushed, and on the synchronous standbys), so a crash
            // can no longer take it back.
            if let Some(last) = self.registry.log.last_mut() {
                last.1 = true;
            }
        }
        match (link, result) {
            (Link::AnswersLost, _) => Err(Failure::Unreachable),
            (_, result) => result.map_err(Failure::Refused),
        }
    }

    // ----- service/ -----

    /// `stored_lease`: the registry lease on disk, with its worker id.
    fn stored_lease(&self, n: usize) -> Option<(i64, RegistryLease)> {
        let stored = self.servers[n].disk?;
        stored.registry.map(|lease| (stored.layout.worker_id, lease))
    }

    /// `own_stored_lease`.
    fn own_stored_lease(&self, n: usize) -> Option<(i64, RegistryLease)> {
        self.stored_lease(n).filter(|(_, lease)| lease::resumes_own(lease, self.servers[n].timeline))
    }

    /// `resumed`: the generator a start would resume from the state file.
    fn resumed(&self, n: usize, worker_id: i64, now: i64) -> GeneratorState {
        let stored = self.servers[n].disk;
        let floor = resume_floor(stored.as_ref(), &self.layout, worker_id, now, false).expect("one layout");
        GeneratorState::resume(&self.layout, floor, resume_clocks(stored.as_ref(), &self.layout), now)
    }

    /// `start`: the lease in force, if the keeper put one in force; a lease
    /// on disk waits for the registry's answer (`Keeper::acquire`).
    fn start(&mut self, n: usize, worker_id: i64) {
        if self.servers[n].mem.generator.is_some() {
            return;
        }
        let now = self.clock(n);
        let generator = self.resumed(n, worker_id, now);
        let mem = &mut self.servers[n].mem;
        mem.generator = Some(generator);
        let lease = mem.lease;
        let g = mem.generator.as_mut().expect("just set");
        g.enter_lease(&self.layout, lease.map_or(0, |l| l.floor), lease.map_or(-1, |l| l.ceiling), now);
        mem.written = generator.mark();
        if let Some(l) = lease {
            self.raise_reference(n, l.floor);
        }
    }

    /// `reserve`: makes ticks up to `target` durable unless `through` is.
    fn reserve(&mut self, n: usize, worker_id: i64, through: i64, target: i64, clocks: Option<Clocks>) {
        let mem = self.servers[n].mem;
        let Some(g) = mem.generator else { return };
        if g.mark() >= through {
            return;
        }
        let mark = if mem.written >= through {
            mem.written
        } else {
            let stored = Stored {
                layout: self.stored_layout(worker_id),
                mark: target.max(mem.written),
                clocks: Some(clocks.unwrap_or(g.clocks())),
                registry: mem.lease,
            };
            self.write(n, stored, true);
            self.servers[n].mem.written = stored.mark;
            stored.mark
        };
        if let Some(g) = self.servers[n].mem.generator.as_mut() {
            g.extend_mark(mark);
        }
    }

    /// `next_id`: one `snowflake_nextval()`. Returns whether it issued.
    fn draw(&mut self, n: usize) -> Result<bool, TestCaseError> {
        if !self.primary(n) {
            return Ok(false);
        }
        // registry_worker_id: no lease in force, no ID (one on disk waits
        // for the keeper to hear from the registry).
        if self.servers[n].mem.lease.is_none() {
            return Ok(false);
        }
        let mut confirm = None;
        for _ in 0..100 {
            let now = self.clock(n);
            let worker_id = self.servers[n].mem.worker_id;
            let Some(g) = self.servers[n].mem.generator.as_mut() else {
                self.start(n, worker_id);
                continue;
            };
            let decision = match g.next(&self.layout, now, self.policy, confirm) {
                Ok(d) => d,
                Err(Error::CeilingReached { .. }) => return Ok(false),
                Err(e) => return Err(TestCaseError::fail(format!("server {n}: {e}"))),
            };
            confirm = None;
            match decision.step {
                Step::Issued { counter } => {
                    self.issued_id(n, worker_id, counter)?;
                    return Ok(true);
                }
                Step::Recheck { seen } => confirm = Some(seen),
                Step::NeedMark { through, target } => self.reserve(n, worker_id, through, target, None),
                // The caller waits out max_drift; here it gives up instead.
                Step::Wait { .. } => return Ok(false),
            }
        }
        Err(TestCaseError::fail(format!("server {n}: a draw never finished")))
    }

    /// `restore_own_lease`.
    fn restore_own_lease(&mut self, n: usize) {
        if self.servers[n].mem.lease.is_some() {
            return;
        }
        let Some((w, lease)) = self.own_stored_lease(n) else { return };
        let now = self.clock(n);
        let mem = &mut self.servers[n].mem;
        if mem.lease.is_none() && mem.state != State::Lost {
            mem.lease = Some(lease);
            mem.worker_id = w;
            mem.state = State::Held;
            mem.grant = Some(lease.token);
            if let Some(g) = mem.generator.as_mut() {
                g.enter_lease(&self.layout, lease.floor, lease.ceiling, now);
            }
            self.raise_reference(n, lease.floor);
        }
    }

    /// `take_lease`: a grant made durable, then used.
    fn take_lease(&mut self, n: usize, worker_id: i64, lease: RegistryLease) {
        self.servers[n].copied = false;
        self.servers[n].mem.unconfirmed = false;
        if self.servers[n].mem.generator.is_none() {
            let now = self.clock(n);
            let g = self.resumed(n, worker_id, now);
            let mem = &mut self.servers[n].mem;
            mem.generator = Some(g);
            mem.written = g.mark();
        }
        let now = self.clock(n);
        let mem = self.servers[n].mem;
        let g = mem.generator.expect("started above");
        // `issued_under`: the worker id of the lease in force or of the
        // one refused to this start (SFL05), whose IDs the generator has.
        let previous_worker = Some(mem.worker_id).filter(|w| *w >= 0);
        let last_tick = g.last_counter() >> self.layout.sequence_bits();
        let floor = lease::holder_floor(lease.floor, worker_id, previous_worker, last_tick);
        self.stats.switched += u64::from(floor > lease.floor);
        let stored = Stored {
            layout: self.stored_layout(worker_id),
            mark: lease::grant_mark(mem.written, floor),
            clocks: Some(g.clocks()),
            registry: Some(RegistryLease { floor, ..lease }),
        };
        self.write(n, stored, true);
        let mem = &mut self.servers[n].mem;
        mem.written = stored.mark;
        mem.lease = stored.registry;
        mem.worker_id = worker_id;
        mem.grant = Some(lease.token);
        let g = mem.generator.as_mut().expect("started above");
        g.enter_lease(&self.layout, floor, lease.ceiling, now);
        g.extend_mark(stored.mark);
        self.raise_reference(n, floor);
    }

    /// `close_lease`: a clean stop lowers the ceiling to the last tick issued.
    fn close_lease(&mut self, n: usize) -> Option<i64> {
        let mem = &mut self.servers[n].mem;
        let lease = mem.lease?;
        let g = mem.generator.as_mut()?;
        g.set_ceiling(&self.layout, -1);
        let last_tick = g.ceiling();
        let clocks = g.clocks();
        let closed = lease::closed(lease, last_tick);
        mem.lease = Some(closed);
        let (worker_id, written) = (mem.worker_id, mem.written);
        let stored = Stored {
            layout: self.stored_layout(worker_id),
            mark: written,
            clocks: Some(clocks),
            registry: Some(closed),
        };
        // Not WAL-logged: the server is stopping.
        self.write(n, stored, false);
        Some(last_tick)
    }

    /// `renew_if_due`: the mark keeper renews the mark ahead of need.
    fn renew_mark(&mut self, n: usize) {
        let now = self.clock(n);
        let mem = self.servers[n].mem;
        let Some(worker_id) = mem.lease.map(|_| mem.worker_id) else { return };
        let Some(g) = mem.generator else { return };
        if let Some((target, clocks)) =
            g.renewal(&self.layout, now, self.policy, KEEPER_ACTIVE_MS, KEEPER_RENEWS_WITHIN_MS)
        {
            self.reserve(n, worker_id, g.mark() + 1, target, Some(clocks));
        }
    }

    // ----- worker/registry_keeper.rs -----

    /// One loop of the mark keeper: `Keeper::turn`, then the mark.
    fn keeper(&mut self, n: usize) -> Check {
        if !self.primary(n) {
            return Ok(());
        }
        self.turn(n)?;
        self.renew_mark(n);
        Ok(())
    }

    /// `Keeper::turn`.
    fn turn(&mut self, n: usize) -> Check {
        let clock = self.clock(n);
        let mem = self.servers[n].mem;
        let last_tick = mem.generator.map(|g| g.last_counter() >> self.layout.sequence_bits()).filter(|t| *t >= 0);
        let horizon = self.servers[n].horizon;
        let now = lease::position(clock, last_tick, horizon);
        let at = clock.max(last_tick.unwrap_or(0));
        let outcome = match (mem.state, mem.lease) {
            (State::Lost, _) => {
                self.servers[n].mem.forget_stored = true;
                self.acquire(n, now)?
            }
            (State::Held, Some(l)) if !lease::renewal_due(l.ceiling, at, horizon, self.real - mem.answered_at) => {
                return Ok(())
            }
            (State::Held, Some(l)) => self.renew(n, l, now)?,
            _ => self.acquire(n, now)?,
        };
        self.servers[n].mem.heard |= !matches!(outcome, Err(Failure::Unreachable));
        match outcome {
            Ok(()) => self.servers[n].mem.answered_at = self.real,
            Err(Failure::Refused("SFL01")) if self.servers[n].mem.lease.is_some() => {
                self.servers[n].mem.state = State::Lost
            }
            // `stop_at_once`: another start of this very lease runs (this
            // one went on unconfirmed): not one more ID under it, not even
            // up to the ceiling, which the other one issues under too.
            Err(Failure::Refused("SFL05")) if self.servers[n].mem.lease.is_some() => {
                let layout = self.layout;
                let mem = &mut self.servers[n].mem;
                mem.state = State::Lost;
                mem.lease = None;
                if let Some(g) = mem.generator.as_mut() {
                    g.set_ceiling(&layout, -1);
                }
            }
            Err(_) => {}
        }
        Ok(())
    }

    /// The position a node sends: within its allowance of its reference.
    fn check_position(&mut self, n: usize, position: i64) -> Check {
        let bound = self.reference(n) + self.allowance();
        prop_assert!(position <= bound, "server {n} sent position {position}, past {bound}");
        Ok(())
    }

    /// Notes what a request may add to the worker id's ceilings.
    fn note_request(&mut self, worker_id: i64, horizon: i64, n: usize) {
        // The bound on what the registry takes as the tick: the position is
        // checked against the first part when sent, the second is the cap.
        let capped = (self.reference(n) + self.allowance()).min(self.real + self.registry.offset + lease::DAY_MS);
        let e = self.reach.entry(worker_id).or_insert((i64::MIN, i64::MIN, 0));
        e.1 = e.1.max(capped);
        e.2 = e.2.max(horizon);
    }

    /// `Keeper::acquire`.
    fn acquire(&mut self, n: usize, now: i64) -> Result<Result<(), Failure>, TestCaseError> {
        self.check_position(n, now)?;
        if self.servers[n].mem.lease.is_none() {
            self.servers[n].mem.state = State::Acquiring;
        }
        let s = &self.servers[n];
        let (system, timeline, fixed, horizon) = (s.system, s.timeline, s.fixed, s.horizon);
        let resumable = self.stored_lease(n).filter(|_| fixed.is_some() || !s.mem.forget_stored);
        let own = resumable.filter(|(_, l)| lease::resumes_own(l, timeline) && s.mem.lease.is_none());
        let (since_start, heard) = (self.real - s.mem.started_at, s.mem.heard);
        let wanted = fixed.or(resumable.map(|(w, _)| w));
        let claimant = Claimant {
            system_identifier: system,
            timeline,
            resume: resumable.map(|(_, l)| (l.epoch, l.token)),
            instance: Some(s.instance),
        };
        // What the registry may add to ceilings is noted whether or not the answer arrives.
        let before = self.registry.tables.leases.clone();
        let layout = self.layout;
        let result = self.call(n, |r, at| r.acquire(at, &layout, n, wanted, claimant, now, horizon));
        if let Some(((_, w), row)) = self.registry.tables.leases.iter().find(|(k, row)| before.get(*k) != Some(row)) {
            let (w, row) = (*w, row.clone());
            self.granted(w, &row)?;
            self.note_request(w, horizon, n);
        }
        if matches!(&result, Err(Failure::Refused("SFL02" | "SFL05"))) && fixed.is_none() {
            self.servers[n].mem.forget_stored = true;
        }
        self.stats.refused_starts += u64::from(matches!(&result, Err(Failure::Refused("SFL05"))));
        let granted = match result {
            Ok(g) => g,
            // No answer for START_WAIT_MS: on under the lease on disk.
            Err(Failure::Unreachable) if own.is_some() && !heard && lease::resumes_unconfirmed(since_start) => {
                self.restore_own_lease(n);
                self.servers[n].mem.unconfirmed = true;
                return Ok(Err(Failure::Unreachable));
            }
            Err(e) => return Ok(Err(e)),
        };
        // The lease on disk goes on (the same instance): as it is.
        if own.is_some_and(|(w, l)| (w, l.epoch, l.token) == (granted.worker_id, granted.epoch, granted.token)) {
            self.restore_own_lease(n);
            let mem = &mut self.servers[n].mem;
            if let Some(g) = mem.generator.as_mut() {
                g.set_ceiling(&self.layout, lease::raised_ceiling(g.ceiling(), granted.range.ceiling));
            }
            if let Some(l) = mem.lease.as_mut() {
                l.ceiling = lease::raised_ceiling(l.ceiling, granted.range.ceiling);
            }
            return Ok(Ok(()));
        }
        let lease = RegistryLease {
            epoch: granted.epoch,
            token: granted.token,
            floor: granted.range.floor,
            ceiling: granted.range.ceiling,
            timeline,
        };
        self.log.push(format!("{}: server {n} granted {granted:?}", self.real));
        self.take_lease(n, granted.worker_id, lease);
        // As acquire() does: the lease in memory has the registry's floor.
        let mem = &mut self.servers[n].mem;
        mem.state = State::Held;
        mem.worker_id = granted.worker_id;
        mem.lease = Some(lease);
        Ok(Ok(()))
    }

    /// A grant committed: how far ahead its floor may be.
    fn granted(&mut self, worker_id: i64, row: &Lease) -> Check {
        let floor = row.range.floor;
        self.grants
            .insert(row.holder.token, GrantInfo { worker_id, seq: row.holder.token, lo: i64::MAX, hi: i64::MIN });
        if let Some(&(previous_floor, position, horizon)) = self.reach.get(&worker_id) {
            let bound = previous_floor.max(position).saturating_add(horizon + 1);
            prop_assert!(floor <= bound, "worker id {worker_id} granted from {floor}, past {bound}");
        }
        let e = self.reach.entry(worker_id).or_insert((i64::MIN, i64::MIN, 0));
        e.0 = floor;
        Ok(())
    }

    /// `Keeper::renew`.
    fn renew(&mut self, n: usize, lease: RegistryLease, now: i64) -> Result<Result<(), Failure>, TestCaseError> {
        self.check_position(n, now)?;
        let (worker_id, horizon) = (self.servers[n].mem.worker_id, self.servers[n].horizon);
        self.note_request(worker_id, horizon, n);
        let instance = self.servers[n].instance;
        let result = self.call(n, |r, at| r.renew(at, worker_id, lease, instance, now, horizon));
        let ceiling = match result {
            Ok(c) => c,
            Err(e) => return Ok(Err(e)),
        };
        // raise_ceiling
        let layout = self.layout;
        let mem = &mut self.servers[n].mem;
        if let Some(l) = mem.lease.as_mut() {
            l.ceiling = lease::raised_ceiling(l.ceiling, ceiling);
        }
        if let Some(g) = mem.generator.as_mut() {
            g.set_ceiling(&layout, lease::raised_ceiling(g.ceiling(), ceiling));
        }
        mem.state = State::Held;
        mem.lease = Some(RegistryLease { ceiling, ..lease });
        Ok(Ok(()))
    }

    /// `Keeper::release`: a clean stop (or the keeper alone stopped).
    fn release(&mut self, n: usize) {
        let mem = self.servers[n].mem;
        let (State::Held, Some(lease)) = (mem.state, mem.lease) else { return };
        let Some(last) = self.close_lease(n) else { return };
        let (worker_id, instance) = (mem.worker_id, self.servers[n].instance);
        if self.call(n, |r, at| r.release(at, worker_id, (lease.epoch, lease.token), instance, last)).is_ok() {
            self.servers[n].mem.state = State::Lost;
        }
    }

    // ----- what happens to servers -----

    /// The postmaster restarts: memory lost, a new instance.
    fn restart(&mut self, n: usize) {
        self.reinit(n);
        self.next_instance += 1;
        self.servers[n].instance = self.next_instance;
    }

    /// Shared memory and the keeper start anew under the same postmaster.
    fn reinit(&mut self, n: usize) {
        self.servers[n].mem = Memory::new(self.real);
        self.restarts += 1;
    }

    /// Server `n`'s data directory, copied while it runs, starts on the
    /// other as a primary on the same timeline: the other's own past is
    /// gone, the copy is a server of its own (its IDs need not exceed what
    /// it issued before, only never equal anyone's).
    fn copy(&mut self, n: usize) {
        let m = 1 - n;
        if !self.primary(n) {
            return;
        }
        let reference = self.reference(n);
        self.restart(m);
        let (system, timeline, disk) = (self.servers[n].system, self.servers[n].timeline, self.servers[n].disk);
        let s = &mut self.servers[m];
        s.standby_of = None;
        s.system = system;
        s.timeline = timeline;
        s.disk = disk;
        s.base = None;
        s.replayed.clear();
        s.last_id = None;
        s.copied = true;
        self.raise_reference(m, reference);
        self.stats.copies += u64::from(disk.is_some_and(|d| d.registry.is_some()));
        self.log.push(format!("{}: server {n} copied onto server {m}", self.real));
    }

    fn rebuild(&mut self, n: usize) {
        let m = 1 - n;
        if !self.primary(m) || !self.primary(n) {
            return;
        }
        self.restart(n);
        let (system, timeline, disk) = (self.servers[m].system, self.servers[m].timeline, self.servers[m].disk);
        let s = &mut self.servers[n];
        s.standby_of = Some(m);
        s.copied = false;
        s.system = system;
        s.timeline = timeline;
        s.base = disk;
        s.disk = disk;
        s.replayed.clear();
        s.last_id = None;
    }

    fn promote(&mut self, n: usize, lag: usize) {
        let Some(m) = self.servers[n].standby_of else { return };
        let s = &self.servers[n];
        let kept = s.replayed.len().saturating_sub(lag);
        let replayed = kept.checked_sub(1).map(|i| s.replayed[i]);
        let disk = Stored::later(s.base, replayed);
        let synchronous = kept == s.replayed.len();
        let old_primary_last = self.servers[m].last_id;
        let old_reference = self.reference(m);
        self.restart(n);
        let s = &mut self.servers[n];
        s.standby_of = None;
        s.timeline += 1;
        s.disk = disk;
        s.replayed.clear();
        s.base = None;
        // A synchronous standby has every mark its primary issued under.
        s.last_id = if synchronous { old_primary_last } else { None };
        self.raise_reference(n, old_reference);
        self.stats.promotions += u64::from(self.primary(m));
        self.log.push(format!("{}: server {n} promoted (lag {lag})", self.real));
    }

    fn registry_loses(&mut self) {
        let Some((before, answered)) = self.registry.log.last() else { return };
        if *answered && !self.config.lossy_registry {
            // A durable commit (synchronous_commit = on, fsync on) survives.
            return;
        }
        self.registry.tables = before.clone();
        self.registry.log.pop();
        self.stats.lost += 1;
        self.log.push(format!("{}: the registry lost its last transaction", self.real));
    }

    // ----- the checks -----

    fn issued_id(&mut self, n: usize, worker_id: i64, counter: i64) -> Check {
        self.issued += 1;
        let id = self.layout.id_from_counter(counter, worker_id);
        let tick = counter >> self.layout.sequence_bits();
        if self.servers[n].copied && self.servers[n].mem.unconfirmed {
            self.stats.window += 1;
            return Ok(());
        }
        prop_assert!(self.ids.insert(id), "server {n}: ID {id} (tick {tick}, worker {worker_id}) issued twice");
        if let Some(last) = self.servers[n].last_id {
            prop_assert!(id > last, "server {n}: ID {id} (tick {tick}) not above its last {last}");
        }
        self.servers[n].last_id = Some(id);
        // Invariant 7: within max_drift + lease of the reference (floors included).
        let bound = self.reference(n) + self.allowance();
        prop_assert!(tick <= bound, "server {n}: tick {tick} past {bound} (reference {})", self.reference(n));
        // Invariant 8: per worker id, the grants' ticks are disjoint and in grant order.
        let token = self.servers[n].mem.grant.expect("an ID under a grant");
        let g = *self.grants.get(&token).expect("a known grant");
        prop_assert_eq!(g.worker_id, worker_id, "an ID under grant {} of another worker id", token);
        self.stats.ids += 1;
        let later = self.grants.values().any(|o| o.worker_id == worker_id && o.seq > g.seq);
        self.stats.superseded += u64::from(later);
        for (t, other) in self.grants.iter().filter(|(t, o)| o.worker_id == worker_id && **t != token) {
            if other.seq < g.seq {
                prop_assert!(
                    tick > other.hi,
                    "worker {worker_id}: server {n} issued tick {tick} under grant {token}, not above {} issued under the earlier grant {t}",
                    other.hi
                );
            } else {
                prop_assert!(
                    tick < other.lo,
                    "worker {worker_id}: server {n} issued tick {tick} under grant {token}, not below {} issued under the later grant {t}",
                    other.lo
                );
            }
        }
        let g = self.grants.get_mut(&token).expect("a known grant");
        g.lo = g.lo.min(tick);
        g.hi = g.hi.max(tick);
        Ok(())
    }

    fn apply(&mut self, ev: &Ev) -> Check {
        match *ev {
            Ev::Pass(ms) => self.pass(ms),
            Ev::Draw(n, k) => {
                for _ in 0..k {
                    if !self.draw(n)? {
                        break;
                    }
                }
            }
            Ev::Keeper(n) => self.keeper(n)?,
            Ev::Step(n, d) => self.servers[n].offset += d,
            Ev::SetRight(n) => {
                self.set_rights += i64::from(self.servers[n].offset < 0);
                self.servers[n].offset = 0;
            }
            Ev::RegistryStep(d) => self.registry.offset += d,
            Ev::Pause(n, ms) => {
                let other = 1 - n;
                let mut left = ms;
                while left > 0 {
                    let step = left.min(250);
                    self.pass(step);
                    left -= step;
                    self.keeper(other)?;
                    self.draw(other)?;
                }
            }
            Ev::Link(n, link) => self.servers[n].link = link,
            Ev::Crash(n, false) => self.restart(n),
            Ev::Crash(n, true) => self.reinit(n),
            Ev::Copy(n) => self.copy(n),
            Ev::Stop(n) => {
                if self.primary(n) {
                    self.release(n);
                }
                self.restart(n);
            }
            Ev::KeeperRestart(n) => {
                if self.primary(n) {
                    self.release(n);
                    let mem = &mut self.servers[n].mem;
                    mem.answered_at = self.real;
                    mem.forget_stored = false;
                }
            }
            Ev::Rebuild(n) => self.rebuild(n),
            Ev::Promote(n, lag) => self.promote(n, lag),
            Ev::RegistryLoses => self.registry_loses(),
            Ev::Reload(n, h) => self.servers[n].horizon = h,
        }
        Ok(())
    }

    /// Every clock set right, links up, time past every lease: IDs follow
    /// the clock again. First the holders settle (a promoted standby and its
    /// old primary both running: the later timeline takes the worker id at
    /// once, a horizon ahead, once more), then time passes every floor while
    /// the keepers renew, then IDs are drawn.
    fn settle(&mut self) -> Check {
        for s in self.servers.iter_mut() {
            s.offset = 0;
            s.link = Link::Up;
        }
        self.registry.offset = 0;
        let highest =
            self.grants.values().map(|g| g.hi).chain(self.registry.tables.leases.values().map(|r| r.range.ceiling));
        let highest = highest.chain(self.servers.iter().filter_map(|s| s.disk.map(|d| d.mark)));
        // A registry clock set back after a renewal "in the future" waits for it.
        let highest = highest.chain(self.registry.tables.leases.values().map(|r| r.holder.renewed_at_ms)).max();
        self.real = self.real.max(highest.unwrap_or(0)) + 2 * lease::DAY_MS;
        let step = self.servers.iter().map(|s| s.horizon).min().unwrap_or(1_000) / 4;
        // Long enough for every keeper to renew twice (a heartbeat each), so
        // that a holder fenced by a promotion has heard of it.
        let longest = self.servers.iter().map(|s| lease::heartbeat_ms(s.horizon)).max().unwrap_or(0);
        let settle_until = self.real + (12 * step).max(2 * longest + step);
        while self.real < settle_until {
            self.keeper(0)?;
            self.keeper(1)?;
            self.pass(step);
        }
        let ahead_of = |w: &World| {
            w.servers
                .iter()
                .filter_map(|s| {
                    let g = s.mem.generator?;
                    let floor = s.mem.lease.map_or(0, |l| l.floor);
                    Some(floor.max(g.last_counter() >> w.layout.sequence_bits()))
                })
                .max()
                .unwrap_or(0)
        };
        let grants = self.grants.len();
        while self.real <= ahead_of(self) {
            self.keeper(0)?;
            self.keeper(1)?;
            self.pass(step);
        }
        prop_assert_eq!(grants, self.grants.len(), "a takeover once settled: {:?}", self.log);
        let mut drawn = false;
        for _ in 0..4 {
            for n in 0..2 {
                self.keeper(n)?;
                if self.draw(n)? {
                    drawn = true;
                    let shift = self.layout.worker_bits() + self.layout.sequence_bits();
                    let tick = self.servers[n].last_id.expect("just issued") >> shift;
                    let ahead = tick - self.real;
                    prop_assert!(
                        ahead <= self.config.max_drift + MARK_REACH_MS,
                        "server {n}: {ahead} ms ahead once every clock is right and past every floor"
                    );
                }
            }
            self.pass(step);
        }
        prop_assert!(drawn, "no server issued an ID once everything was healed");
        Ok(())
    }
}

fn run(config: Config, events: &[Ev]) -> Result<World, TestCaseError> {
    let mut w = World::new(config);
    for ev in events {
        w.apply(ev).map_err(|e| TestCaseError::fail(format!("{e}\nafter {ev:?}\nlog: {:?}", w.log)))?;
    }
    w.settle()?;
    Ok(w)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 384, ..ProptestConfig::default() })]

    #[test]
    fn two_holders_of_one_worker_id_never_overlap_and_stay_near_their_clocks(
        config in config(),
        events in proptest::collection::vec(ev(), 1..150),
    ) {
        run(config, &events)?;
    }
}

/// The rule's one assumption, shown: a registry that loses a commit the
/// node acted on (fsync off, a failover to an asynchronous standby, a
/// keeper without `synchronous_commit = on`) hands a range out twice. The
/// fencing token stops the old holder's renewals, not the IDs it issues up
/// to the ceiling it was told.
#[test]
fn a_registry_that_loses_an_acknowledged_commit_hands_a_range_out_twice() {
    let config = Config {
        fixed: [Some(0), Some(0)],
        horizon: [1_000, 1_000],
        margin: 0,
        max_drift: 1_000,
        lossy_registry: true,
    };
    // A grant lost: the same epoch and range granted again, at once.
    let grant = [Ev::Keeper(0), Ev::RegistryLoses, Ev::Keeper(1), Ev::Draw(1, 1), Ev::Draw(0, 1)];
    // A renewal lost: the next holder starts below the ceiling the old one was told.
    let renewal = [
        Ev::Keeper(0),
        Ev::Pass(600),
        Ev::Keeper(0),
        Ev::RegistryLoses,
        Ev::Link(0, Link::Down),
        Ev::Pass(900),
        Ev::Keeper(1),
        Ev::Draw(1, 1),
        Ev::Draw(0, 1),
    ];
    for events in [&grant[..], &renewal[..]] {
        let failure = run(config, events).err().expect("two holders of one range").to_string();
        assert!(failure.contains("issued twice"), "{failure}");
        // The registry that keeps its commits keeps them apart.
        run(Config { lossy_registry: false, ..config }, events).unwrap();
    }
}

/// The histories above are not vacuous: over a fixed sample of them, every
/// kind of takeover happens, holders issue on under superseded grants (the
/// case invariant 8 is about), worker id switches raise floors, and the
/// registry loses transactions.
#[test]
fn the_random_histories_reach_every_case() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{Config as RunnerConfig, RngAlgorithm, TestRng, TestRunner};
    let mut runner =
        TestRunner::new_with_rng(RunnerConfig::default(), TestRng::deterministic_rng(RngAlgorithm::ChaCha));
    let (mut total, mut kinds) = (Stats::default(), HashMap::<String, u64>::new());
    for _ in 0..128 {
        let config = config().new_tree(&mut runner).unwrap().current();
        let events = proptest::collection::vec(ev(), 1..150).new_tree(&mut runner).unwrap().current();
        let w = run(config, &events).unwrap_or_else(|e| panic!("{e}"));
        total.ids += w.stats.ids;
        total.superseded += w.stats.superseded;
        total.switched += w.stats.switched;
        total.lost += w.stats.lost;
        total.promotions += w.stats.promotions;
        total.copies += w.stats.copies;
        total.refused_starts += w.stats.refused_starts;
        for kind in &w.registry.kinds {
            *kinds.entry(format!("{kind:?}")).or_default() += 1;
        }
    }
    eprintln!("{total:?} {kinds:?}");
    for kind in ["Unheld", "Released", "Stale", "Promoted", "Resumed", "Continued"] {
        assert!(kinds.get(kind).copied().unwrap_or(0) > 0, "no {kind} grant in {kinds:?}");
    }
    assert!(total.superseded > 0 && total.switched > 0 && total.lost > 0 && total.promotions > 0, "{total:?}");
    assert!(total.copies > 0 && total.refused_starts > 0, "{total:?}");
}

/// A copy of a running holder's data directory (same cluster, timeline,
/// lease on disk) issues nothing while the holder runs and renews: the
/// registry refuses its start (SFL05), and the holder keeps its grant. A
/// crash restart of the holder is granted anew once the old instance has
/// been silent; a crash that only reinitialised shared memory goes on at once.
#[test]
fn a_copy_is_refused_while_its_original_runs_and_a_crash_restart_waits_for_the_silence() {
    let config = Config {
        fixed: [Some(0), Some(0)],
        horizon: [3_000, 3_000],
        margin: 0,
        max_drift: 1_000,
        lossy_registry: false,
    };
    let mut w = World::new(config);
    let first = [Ev::Keeper(0), Ev::Draw(0, 5), Ev::Pass(100), Ev::Keeper(0)];
    for ev in first.iter().chain(&[Ev::Copy(0)]) {
        w.apply(ev).unwrap();
    }
    let grant = w.servers[0].mem.grant;
    for _ in 0..40 {
        for ev in [Ev::Keeper(1), Ev::Draw(1, 3), Ev::Pass(250), Ev::Keeper(0), Ev::Draw(0, 1)] {
            w.apply(&ev).unwrap();
        }
    }
    assert_eq!(w.servers[1].last_id, None, "the copy issued");
    assert!(w.stats.refused_starts >= 40, "{:?}", w.stats);
    assert_eq!(w.servers[0].mem.grant, grant, "the original lost its grant");
    assert!(w.servers[0].last_id.is_some());

    // A backend crash: the same postmaster, the lease goes on at once.
    let grants = w.grants.len();
    for ev in [Ev::Crash(0, true), Ev::Keeper(0), Ev::Draw(0, 1)] {
        w.apply(&ev).unwrap();
    }
    assert_eq!((w.grants.len(), w.servers[0].mem.grant), (grants, grant), "a reinit went on under its lease");
    // The postmaster crashes: refused until the old instance is silent, then a new grant.
    let issued = w.issued;
    for ev in [Ev::Crash(0, false), Ev::Keeper(0), Ev::Draw(0, 1)] {
        w.apply(&ev).unwrap();
    }
    assert_eq!(w.issued, issued, "a restart issued while its old instance could be running");
    for ev in [Ev::Pass(lease::silence_ms(3_000) + 1), Ev::Keeper(0), Ev::Draw(0, 1)] {
        w.apply(&ev).unwrap();
    }
    assert_eq!((w.grants.len(), w.issued), (grants + 1, issued + 1), "a new grant after the silence");
}

/// The window the rule leaves open, shown: a start that cannot reach the
/// registry for `START_WAIT_MS` goes on under the lease on disk (a restart
/// must not be stopped by a registry outage), so a copy of a running holder
/// started during an outage issues under the original's lease, repeating its
/// IDs, until its first renewal reaches the registry, which refuses it: then
/// it stops at its ceiling. With the registry reachable it issues nothing.
#[test]
fn a_copy_started_while_the_registry_is_unreachable_issues_until_its_first_contact() {
    let config = Config {
        fixed: [Some(0), Some(0)],
        horizon: [20_000, 20_000],
        margin: 0,
        max_drift: 1_000,
        lossy_registry: false,
    };
    let mut w = World::new(config);
    let mut events = vec![Ev::Keeper(0), Ev::Draw(0, 5), Ev::Copy(0), Ev::Link(1, Link::Down)];
    for _ in 0..30 {
        events.extend([Ev::Keeper(1), Ev::Draw(1, 2), Ev::Pass(200), Ev::Keeper(0), Ev::Draw(0, 2)]);
    }
    for ev in &events {
        w.apply(ev).unwrap();
    }
    assert!(w.stats.window > 0, "the copy issued nothing during the outage: {:?}", w.stats);
    let window = w.stats.window;
    for ev in [Ev::Link(1, Link::Up), Ev::Pass(3_000), Ev::Keeper(1)] {
        w.apply(&ev).unwrap();
    }
    assert_eq!(w.servers[1].mem.state, State::Lost, "its first renewal is refused");
    for _ in 0..20 {
        for ev in [Ev::Keeper(1), Ev::Draw(1, 2), Ev::Pass(200), Ev::Keeper(0), Ev::Draw(0, 2)] {
            w.apply(&ev).unwrap();
        }
    }
    assert_eq!(w.stats.window, window, "the copy went on issuing after the registry refused it");
}

/// Server 0 crashes (`kill -9` of its postmaster) `restarts` times; after
/// each, its keeper turns and it draws `draw` IDs every 250 ms until it
/// issues again, and then `rounds` times more: how far ahead of the clock
/// its last ID is after each restart.
fn leads_after_crash_restarts(config: Config, restarts: usize, draw: usize, rounds: usize) -> Vec<i64> {
    let mut w = World::new(config);
    for ev in [Ev::Keeper(0), Ev::Draw(0, 5)] {
        w.apply(&ev).unwrap();
    }
    let shift = w.layout.worker_bits() + w.layout.sequence_bits();
    let turn = [Ev::Pass(250), Ev::Keeper(0), Ev::Draw(0, draw)];
    let mut leads = vec![];
    for _ in 0..restarts {
        w.apply(&Ev::Crash(0, false)).unwrap();
        let issued = w.issued;
        while w.issued == issued {
            turn.iter().for_each(|ev| w.apply(ev).unwrap());
        }
        for _ in 0..rounds {
            turn.iter().for_each(|ev| w.apply(ev).unwrap());
        }
        leads.push((w.servers[0].last_id.expect("issued") >> shift) - w.real);
    }
    leads
}

/// A node with a fixed worker id crashing again and again: each restart is
/// granted the worker id anew above the old ceiling (its old start could be
/// a paused original), but the leads do not add up: a floor ahead of the
/// clock reaches a quarter horizon, and IDs at it do not count as the
/// node's position, so each new floor is at most about a horizon past the
/// clock. (With 0.3.0's arithmetic each restart added a horizon less the
/// silence: 45 s each with a 60 s lease.)
#[test]
fn crash_restarts_in_a_row_do_not_push_ids_ever_further_ahead() {
    let horizon = 60_000;
    let config = Config {
        fixed: [Some(0), Some(1)],
        horizon: [horizon, horizon],
        margin: 0,
        max_drift: 1_000,
        lossy_registry: false,
    };
    // Renewals while it runs a while at its floor.
    let leads = leads_after_crash_restarts(config, 6, 1, 20);
    let bound = horizon + config.max_drift + MARK_REACH_MS;
    assert!(leads.iter().all(|l| *l <= bound), "leads {leads:?} past {bound}");
}

/// Whether server n holds a lease and is stuck at its ceiling (a draw would
/// be refused with CeilingReached), and how far ahead that ceiling is of the
/// server's clock.
fn at_ceiling(w: &World, n: usize) -> Option<i64> {
    let mem = w.servers[n].mem;
    let g = mem.generator?;
    mem.lease?;
    let last = g.last_counter() >> w.layout.sequence_bits();
    (mem.state == State::Held && last >= g.ceiling()).then(|| g.ceiling() - (w.real + w.servers[n].offset))
}

/// Drives server n with bursts for `ms` of real time, its keeper turning
/// every 100 ms; returns the ms during which it stood at its ceiling with
/// the registry reachable and its lease held.
fn bursts(w: &mut World, n: usize, ms: i64) -> (i64, Vec<String>) {
    let mut stalled = 0;
    let mut notes = vec![];
    let until = w.real + ms;
    while w.real < until {
        w.apply(&Ev::Keeper(n)).unwrap();
        w.apply(&Ev::Draw(n, 400)).unwrap();
        if let Some(ahead) = at_ceiling(w, n) {
            stalled += 100;
            if notes.len() < 3 || stalled % 5_000 == 0 {
                let l = w.servers[n].mem.lease.unwrap();
                notes.push(format!(
                    "t={} at ceiling {} (floor {}, {} ms past the clock)",
                    w.real, l.ceiling, l.floor, ahead
                ));
            }
        }
        w.apply(&Ev::Pass(100)).unwrap();
    }
    (stalled, notes)
}

fn config_of(h: i64, fixed: [Option<i64>; 2], max_drift: i64) -> Config {
    Config { fixed, horizon: [h, h], margin: 0, max_drift, lossy_registry: false }
}

/// Server 0 holds worker id 0 (a 4 s lease, `max_drift` 1 s) and issues;
/// server 1 is its streaming standby, 3 s of renewals and marks later.
fn a_primary_with_a_standby() -> World {
    let mut w = World::new(config_of(4_000, [Some(0), Some(0)], 1_000));
    for ev in [Ev::Keeper(0), Ev::Draw(0, 5), Ev::Rebuild(1)] {
        w.apply(&ev).unwrap();
    }
    for _ in 0..10 {
        for ev in [Ev::Pass(300), Ev::Keeper(0), Ev::Draw(0, 1)] {
            w.apply(&ev).unwrap();
        }
    }
    w
}

/// A promoted standby whose clock is 20 s behind its old primary's (the
/// mission's failover case) starts at a floor a horizon and 20 s ahead of
/// its clock, and bursts: its renewals keep a quarter horizon of room past
/// its IDs, so it never stands at its ceiling for longer than a renewal
/// takes (the first arithmetic of 0.4.0, which took
/// the clock as the position while IDs were near the floor, stood there
/// for 20 s of 40).
#[test]
fn a_promoted_standby_with_its_clock_behind_does_not_stand_at_its_ceiling() {
    let mut w = a_primary_with_a_standby();
    w.apply(&Ev::Step(1, -20_000)).unwrap();
    w.apply(&Ev::Promote(1, 0)).unwrap();
    let (stalled, notes) = bursts(&mut w, 1, 40_000);
    eprintln!("stalled {stalled} ms of 40 s: {notes:?}");
    assert!(stalled <= 2 * lease::heartbeat_ms(4_000) + 200, "stalled {stalled} ms: {notes:?}");
}

/// A clock step back of an hour right after a takeover: renewals follow the
/// IDs, not the clock, so the node does not stand at its ceiling for the
/// hour (the first arithmetic of 0.4.0 did: 59 s of 60).
#[test]
fn a_clock_step_back_right_after_a_takeover_does_not_stand_at_the_ceiling() {
    let mut w = a_primary_with_a_standby();
    w.apply(&Ev::Promote(1, 0)).unwrap();
    for ev in [Ev::Keeper(1), Ev::Draw(1, 1)] {
        w.apply(&ev).unwrap();
    }
    w.apply(&Ev::Step(1, -3_600_000)).unwrap();
    let (stalled, notes) = bursts(&mut w, 1, 60_000);
    eprintln!("stalled {stalled} ms of 60 s: {notes:?}");
    assert!(stalled <= 2 * lease::heartbeat_ms(4_000) + 200, "stalled {stalled} ms: {notes:?}");
}

/// Crash restarts in a row, each followed by bursts (IDs up to `max_drift`
/// past the floor-moved reference) for longer than a quarter horizon: the
/// leads stay within a horizon and `max_drift` of the clock (0.3.0's
/// arithmetic: 910 s after 20 restarts).
#[test]
fn crash_restarts_in_a_row_with_bursts_do_not_add_up() {
    let horizon = 60_000;
    let config = config_of(horizon, [Some(0), Some(1)], 1_000);
    let leads = leads_after_crash_restarts(config, 20, 4_000, 80);
    eprintln!("leads {leads:?}");
    let bound = horizon + config.max_drift + MARK_REACH_MS;
    assert!(leads.iter().all(|l| *l <= bound), "leads {leads:?} past {bound}");
}
