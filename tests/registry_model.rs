//! The registry's lease rule exists twice: in Rust (`snowflake_id_core::lease`,
//! composed into a model of the whole registry in `lease::registry`, which
//! `core/tests/two_holders.rs` runs two servers against) and in SQL
//! (`sql/install/registry_functions.sql`, what servers actually call). This test keeps the two
//! from drifting apart: random histories of acquires (a fixed worker id or
//! `auto`, several clusters and timelines, postmaster instances, leases on
//! disk presented as they are, forged or half NULL), renewals, releases,
//! claims of history slots and reads of them (`record_history`,
//! `history_of`: overlapping, covering, repeated, empty, under leases held,
//! lost or never granted) and moves of the registry's clock are applied both
//! to a real registry server and to the core's model, and after every step
//! they must agree: the answer (worker id, epoch, floor, ceiling, the token
//! of a lease that goes on, the claims read; or the refusal's SQLSTATE) and
//! the registry's three tables. Along the way, two grants of one worker id
//! must never overlap in ID time (invariant 8), counting each lease up to
//! the highest ceiling its holder was answered (or, once released, the
//! ceiling its release left), and a holder must read every claim accepted
//! on its worker id, or one covering it (invariant 9).
//!
//! The registry's clock is frozen (libfaketime, an absolute time to the
//! millisecond that the test rewrites), so the SQL's `clock_timestamp()` is
//! exactly the model's clock, and the histories move it to a millisecond
//! before, at and after where a lease goes stale or its holder's silence
//! ends. A failure prints the shrunk history, cut down to the steps it
//! needs, and step by step what each side answered.
//! `SNOWFLAKE_MODEL_CASES` sets the number of histories (600 by default).

mod common;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt::Write as _;

use common::{Cluster, FakeClock, DEFAULT_EPOCH_MS};
use postgres::types::ToSql;
use postgres::{Client, Statement};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, TestCaseError, TestError, TestRunner};
use snowflake_id_core::lease::registry::{self, Acquire, LeaseName, Namespace, Refusal};
use snowflake_id_core::lease::{self, Takeover, DAY_MS};

/// The registry's frozen clock at the start of every history (2030-01-01,
/// ahead of the machine's, so that the server sees its clock move forward).
const START_S: i64 = 1_893_456_000;

/// The namespace the test creates itself, with a margin each history picks,
/// and the one the first grant creates, with the layout of its call and the
/// margin `sql/install/registry_functions.sql` gives by default.
const PRESET: &str = "preset";
const FRESH: &str = "fresh";

/// Layouts a node may call with: the preset one (two worker bits, so that
/// `auto` runs out of worker ids), fewer worker bits, another epoch.
const LAYOUTS: [(i32, i32, i64); 3] =
    [(2, 12, DEFAULT_EPOCH_MS), (1, 12, DEFAULT_EPOCH_MS), (2, 12, DEFAULT_EPOCH_MS + 1_000)];

/// The nodes that call: two clusters, each on more than one timeline (a
/// promoted standby, a point-in-time restore), and a second name for one
/// of them (a copy of its data directory started elsewhere).
const NODES: [(u64, i32, &str); 5] = [
    (7_000_000_000_000_000_001, 1, "a"),
    (7_000_000_000_000_000_001, 2, "a-promoted"),
    (7_000_000_000_000_000_001, 1, "a-copy"),
    (18_000_000_000_000_000_002, 1, "b"),
    (18_000_000_000_000_000_002, 3, "b-restored"),
];

// ---------------------------------------------------------------------------
// Histories
// ---------------------------------------------------------------------------

/// A node's tick: relative to the registry's tick in the call's layout
/// (the usual case: a clock near the registry's), or as it is.
#[derive(Debug, Clone, Copy)]
enum Tick {
    Rel(i64),
    Abs(i64),
}

/// The lease a node presents from its disk to an acquire.
#[derive(Debug, Clone, Copy)]
enum Resume {
    None,
    /// A lease answered earlier in the history (its own, or a copy's).
    Lease(Index),
    /// Its epoch with another token (a lease the registry lost and granted again).
    Forged(Index),
    /// Half NULL: SQL compares with NULL, the rule sees no lease.
    EpochOnly(Index),
    TokenOnly(Index),
    /// A restart's own lease (see [`Step::Restart`]).
    Exact(i64, i64),
}

/// The lease a renewal or release names.
#[derive(Debug, Clone, Copy)]
enum LeaseRef {
    Granted(Index),
    OtherToken(Index),
    NextEpoch(Index),
    /// A worker id never granted in the history, unless by chance.
    Never,
}

/// The last tick a release reports.
#[derive(Debug, Clone, Copy)]
enum LastTick {
    /// Relative to the highest ceiling the lease was answered.
    FromTop(i64),
    Abs(i64),
    Null,
}

#[derive(Debug, Clone)]
enum Step {
    Acquire {
        fresh: bool,
        layout: usize,
        wanted: Option<i32>,
        node: usize,
        tick: Tick,
        horizon_ms: i64,
        resume: Resume,
        instance: Option<i64>,
        /// Which argument that may not be NULL is sent as NULL (22004).
        null_arg: Option<usize>,
    },
    Renew {
        lease: LeaseRef,
        tick: Tick,
        horizon_ms: i64,
        instance: Option<i64>,
        null_arg: Option<usize>,
    },
    Release {
        lease: LeaseRef,
        last_tick: LastTick,
        instance: Option<i64>,
    },
    /// A claim of history slots (past-instant IDs) under a lease: the slots
    /// below `level` of every millisecond in `[from, from + len)`, or, with
    /// `near`, of the previous claim's interval with each bound moved by at
    /// most one (the edges of what a claim covers). Small ticks, so that
    /// claims of one worker id overlap, cover each other and repeat; an
    /// empty interval or level is refused by the table (23514).
    Record {
        lease: LeaseRef,
        from: i64,
        len: i64,
        near: Option<(i64, i64)>,
        level: i32,
        null_arg: Option<usize>,
    },
    /// The claims recorded on a worker id, asked by (what it takes for) its holder.
    HistoryOf {
        lease: LeaseRef,
    },
    /// The registry's clock moves by this many ms (back when negative).
    Clock(i64),
    /// The registry's clock moves to `off` ms from where a lease (of the
    /// model's table) goes stale, or from where its holder's silence ends.
    Boundary {
        lease: Index,
        silence: bool,
        off: i64,
    },
    /// The node a lease was granted to starts again and presents it: the
    /// same postmaster (its keeper restarted), another one (a crash
    /// restart, or a copy of its data directory), or one of a node older
    /// than 0.4.0 (no instance), asking for the lease's worker id or `auto`.
    Restart {
        lease: Index,
        auto: bool,
        tick: Tick,
        horizon_ms: i64,
        instance: Option<i64>,
    },
}

#[derive(Debug, Clone)]
struct History {
    /// The preset namespace's stale margin.
    margin_ms: i64,
    steps: Vec<Step>,
}

fn tick() -> impl Strategy<Value = Tick> {
    prop_oneof![
        12 => (-60_000i64..60_000).prop_map(Tick::Rel),
        1 => Just(Tick::Rel(-2 * DAY_MS)),
        // Around the cap, a day past the registry's clock.
        1 => (DAY_MS - 3..DAY_MS + 3).prop_map(Tick::Rel),
        1 => prop_oneof![Just(i64::MIN), Just(0i64), Just(i64::MAX)].prop_map(Tick::Abs),
    ]
}

/// Whole seconds, odd ones (their staleness and silence end in the middle
/// of a second), any, and refused ones.
fn horizon() -> impl Strategy<Value = i64> {
    prop_oneof![
        12 => prop::sample::select(vec![1i64, 7, 999, 1_000, 2_500, 4_000, 30_000, 30_001, 60_000]),
        3 => 1i64..60_000,
        1 => prop::sample::select(vec![0i64, -5, DAY_MS, DAY_MS + 1]),
    ]
}

fn instance() -> impl Strategy<Value = Option<i64>> {
    prop_oneof![1 => Just(None), 3 => (1i64..=3).prop_map(Some)]
}

fn lease_ref() -> impl Strategy<Value = LeaseRef> {
    prop_oneof![
        12 => any::<Index>().prop_map(LeaseRef::Granted),
        1 => any::<Index>().prop_map(LeaseRef::OtherToken),
        1 => any::<Index>().prop_map(LeaseRef::NextEpoch),
        1 => Just(LeaseRef::Never),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    let acquire =
        (
            (prop::bool::weighted(0.2), prop_oneof![8 => Just(0usize), 1 => 1usize..3]),
            prop_oneof![
                3 => Just(None),
                6 => (0i32..4).prop_map(Some),
                1 => prop_oneof![Just(-1i32), Just(4)].prop_map(Some),
            ],
            0..NODES.len(),
            tick(),
            horizon(),
            prop_oneof![
                3 => Just(Resume::None),
                5 => any::<Index>().prop_map(Resume::Lease),
                1 => any::<Index>().prop_map(Resume::Forged),
                1 => any::<Index>().prop_map(Resume::EpochOnly),
                1 => any::<Index>().prop_map(Resume::TokenOnly),
            ],
            instance(),
            prop_oneof![30 => Just(None), 1 => (0usize..9).prop_map(Some)],
        )
            .prop_map(|((fresh, layout), wanted, node, tick, horizon_ms, resume, instance, null_arg)| {
                Step::Acquire { fresh, layout, wanted, node, tick, horizon_ms, resume, instance, null_arg }
            });
    let renew =
        (lease_ref(), tick(), horizon(), instance(), prop_oneof![30 => Just(None), 1 => (0usize..6).prop_map(Some)])
            .prop_map(|(lease, tick, horizon_ms, instance, null_arg)| Step::Renew {
                lease,
                tick,
                horizon_ms,
                instance,
                null_arg,
            });
    let last_tick = prop_oneof![
        8 => (-3_000i64..=100).prop_map(LastTick::FromTop),
        1 => prop_oneof![Just(i64::MIN), Just(i64::MAX)].prop_map(LastTick::Abs),
        1 => Just(LastTick::Null),
    ];
    let release = (lease_ref(), last_tick, instance()).prop_map(|(lease, last_tick, instance)| Step::Release {
        lease,
        last_tick,
        instance,
    });
    let clock = prop_oneof![
        4 => prop::sample::select(vec![1i64, 2, 4, 5, 6, 7, 9, 10, 11, 14, 20, 31, 40, 41, 60]).prop_map(|s| s * 1_000),
        4 => 1i64..45_000,
        1 => prop::sample::select(vec![-1i64, -10, -3_600, 3_600, 86_400]).prop_map(|s| s * 1_000),
    ];
    let boundary = (any::<Index>(), any::<bool>(), -1i64..=1).prop_map(|(lease, silence, off)| Step::Boundary {
        lease,
        silence,
        off,
    });
    let restart = (any::<Index>(), any::<bool>(), tick(), horizon(), instance()).prop_map(
        |(lease, auto, tick, horizon_ms, instance)| Step::Restart { lease, auto, tick, horizon_ms, instance },
    );
    let record = (
        lease_ref(),
        (0i64..10, prop_oneof![12 => 1i64..5, 1 => -1i64..=0]),
        prop_oneof![1 => Just(None), 1 => (-1i64..=1, -1i64..=1).prop_map(Some)],
        prop_oneof![12 => 1i32..4, 1 => -1i32..=0],
        prop_oneof![8 => Just(None), 1 => (0usize..7).prop_map(Some)],
    )
        .prop_map(|(lease, (from, len), near, level, null_arg)| Step::Record {
            lease,
            from,
            len,
            near,
            level,
            null_arg,
        });
    prop_oneof![
        6 => acquire,
        2 => restart,
        4 => renew,
        1 => release,
        5 => record,
        1 => lease_ref().prop_map(|lease| Step::HistoryOf { lease }),
        2 => clock.prop_map(Step::Clock),
        2 => boundary,
    ]
}

fn history() -> impl Strategy<Value = History> {
    (prop::sample::select(vec![0i64, 1_500, 10_000]), prop::collection::vec(step(), 1..52))
        .prop_map(|(margin_ms, steps)| History { margin_ms, steps })
}

// ---------------------------------------------------------------------------
// Calls, as both sides take them (every argument may be NULL)
// ---------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct AcquireCall {
    namespace: Option<String>,
    worker_bits: Option<i32>,
    sequence_bits: Option<i32>,
    epoch_ms: Option<i64>,
    wanted: Option<i32>,
    system_identifier: Option<String>,
    timeline: Option<i32>,
    node_name: Option<String>,
    node_tick: Option<i64>,
    horizon_ms: Option<i64>,
    resume_epoch: Option<i64>,
    resume_token: Option<i64>,
}

#[derive(Debug, Clone)]
struct LeaseCall {
    namespace: Option<String>,
    worker_id: Option<i32>,
    epoch: Option<i64>,
    token: Option<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Grant {
    worker_id: i32,
    epoch: i64,
    token: i64,
    floor: i64,
    ceiling: i64,
}

/// An answer: a grant, a renewal's ceiling, a release's result, or a
/// refusal's SQLSTATE.
type Answer<T> = Result<T, String>;

/// A lease row of the registry, as both sides keep it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct RowView {
    namespace: String,
    worker_id: i32,
    epoch: i64,
    token: i64,
    system_identifier: String,
    timeline: i32,
    node_name: String,
    floor: i64,
    ceiling: i64,
    horizon_ms: i64,
    granted_at_ms: i64,
    renewed_at_ms: i64,
    released_at_ms: Option<i64>,
    instance: Option<i64>,
}

/// A namespace row: layout, epoch, stale margin (ms).
type NamespaceView = (String, i32, i32, i64, i64);

/// A claim of history slots: `[from, to)`, below `level`.
#[derive(Debug, Clone)]
struct ClaimCall {
    from: Option<i64>,
    to: Option<i64>,
    level: Option<i32>,
}

/// A claim as `snowflake_registry_history_of` answers it: lease epoch, from, to, level.
type ClaimAnswer = (i64, i64, i64, i64);

/// A row of the history table: namespace, worker id, lease epoch, from, to, level.
type ClaimView = (String, i32, i64, i64, i64, i32);

// ---------------------------------------------------------------------------
// The SQL side: a real registry server
// ---------------------------------------------------------------------------

struct SqlRegistry {
    client: Client,
    clock: FakeClock,
    acquire: Statement,
    renew: Statement,
    release: Statement,
    instance: Statement,
    leases: Statement,
    namespaces: Statement,
    history_of: Statement,
    record_history: Statement,
    claims: Statement,
}

fn sqlstate(e: postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => db.code().code().to_string(),
        None => panic!("not a database error: {e}"),
    }
}

impl SqlRegistry {
    fn new(cluster: &Cluster, clock: FakeClock) -> SqlRegistry {
        let mut client = cluster.connect();
        let acquire = client
            .prepare(
                "SELECT worker_id, lease_epoch, holder_token, floor_tick, ceiling_tick
                   FROM public.snowflake_registry_acquire($1::text, $2::integer, $3::integer, $4::bigint, $5::integer,
                        $6::text, $7::integer, $8::text, $9::bigint, $10::bigint, $11::bigint, $12::bigint)",
            )
            .unwrap();
        let renew = client
            .prepare(
                "SELECT public.snowflake_registry_renew($1::text, $2::integer, $3::bigint, $4::bigint, $5::bigint,
                        $6::bigint)",
            )
            .unwrap();
        let release = client
            .prepare(
                "SELECT public.snowflake_registry_release($1::text, $2::integer, $3::bigint, $4::bigint, $5::bigint)",
            )
            .unwrap();
        let instance =
            client.prepare("SELECT pg_catalog.set_config('snowflake_registry.instance', $1, false)").unwrap();
        let leases = client
            .prepare(
                "SELECT namespace, worker_id, lease_epoch, holder_token, system_identifier, timeline, node_name,
                        floor_tick, ceiling_tick, horizon_ms, (extract(epoch FROM granted_at) * 1000)::bigint,
                        (extract(epoch FROM renewed_at) * 1000)::bigint, (extract(epoch FROM released_at) * 1000)::bigint,
                        instance
                   FROM public.snowflake_registry_leases ORDER BY namespace, worker_id",
            )
            .unwrap();
        let namespaces = client
            .prepare(
                "SELECT namespace, worker_bits, sequence_bits, epoch_ms, (extract(epoch FROM stale_margin) * 1000)::bigint
                   FROM public.snowflake_registry_namespaces ORDER BY namespace",
            )
            .unwrap();
        let history_of = client
            .prepare(
                "SELECT claim_epoch, from_tick, to_tick, level
                   FROM public.snowflake_registry_history_of($1::text, $2::integer, $3::bigint, $4::bigint)",
            )
            .unwrap();
        let record_history = client
            .prepare(
                "SELECT public.snowflake_registry_record_history($1::text, $2::integer, $3::bigint, $4::bigint,
                        $5::bigint, $6::bigint, $7::integer)",
            )
            .unwrap();
        let claims = client
            .prepare(
                "SELECT namespace, worker_id, lease_epoch, from_tick, to_tick, level
                   FROM public.snowflake_registry_history ORDER BY namespace, worker_id, lease_epoch, from_tick, to_tick",
            )
            .unwrap();
        SqlRegistry {
            client,
            clock,
            acquire,
            renew,
            release,
            instance,
            leases,
            namespaces,
            history_of,
            record_history,
            claims,
        }
    }

    /// An empty registry with the preset namespace, its clock at `now_ms`.
    fn reset(&mut self, margin_ms: i64, now_ms: i64) {
        self.set_clock(now_ms);
        self.client
            .batch_execute(
                "DELETE FROM public.snowflake_registry_leases; DELETE FROM public.snowflake_registry_namespaces",
            )
            .unwrap();
        let (bits, seq, epoch) = LAYOUTS[0];
        self.client
            .execute(
                "INSERT INTO public.snowflake_registry_namespaces (namespace, worker_bits, sequence_bits, epoch_ms, stale_margin)
                 VALUES ($1, $2, $3, $4, $5::bigint * interval '1 millisecond')",
                &[&PRESET, &bits, &seq, &epoch, &margin_ms],
            )
            .unwrap();
    }

    /// Frozen at `now_ms`. libfaketime reads an absolute time (`%s` in
    /// `FAKETIME_FMT`) and its fraction as a double less its floor, then
    /// truncates to nanoseconds: ".002" after a 6 came out as 1,999,999 ns,
    /// a microsecond early for PostgreSQL. Half a microsecond more makes
    /// every millisecond exact.
    fn set_clock(&mut self, now_ms: i64) {
        self.clock.set(&format!("{}.{:03}0005", now_ms.div_euclid(1_000), now_ms.rem_euclid(1_000)));
    }

    fn set_instance(&mut self, instance: Option<i64>) {
        let text = instance.map_or(String::new(), |i| i.to_string());
        self.client.query_one(&self.instance, &[&text]).unwrap();
    }

    fn acquire(&mut self, c: &AcquireCall, instance: Option<i64>) -> Answer<Grant> {
        self.set_instance(instance);
        let args: [&(dyn ToSql + Sync); 12] = [
            &c.namespace,
            &c.worker_bits,
            &c.sequence_bits,
            &c.epoch_ms,
            &c.wanted,
            &c.system_identifier,
            &c.timeline,
            &c.node_name,
            &c.node_tick,
            &c.horizon_ms,
            &c.resume_epoch,
            &c.resume_token,
        ];
        self.client
            .query_one(&self.acquire, &args)
            .map(|r| Grant {
                worker_id: r.get(0),
                epoch: r.get(1),
                token: r.get(2),
                floor: r.get(3),
                ceiling: r.get(4),
            })
            .map_err(sqlstate)
    }

    fn renew(
        &mut self,
        l: &LeaseCall,
        node_tick: Option<i64>,
        horizon_ms: Option<i64>,
        instance: Option<i64>,
    ) -> Answer<i64> {
        self.set_instance(instance);
        let args: [&(dyn ToSql + Sync); 6] = [&l.namespace, &l.worker_id, &l.epoch, &l.token, &node_tick, &horizon_ms];
        self.client.query_one(&self.renew, &args).map(|r| r.get(0)).map_err(sqlstate)
    }

    fn release(&mut self, l: &LeaseCall, last_tick: Option<i64>, instance: Option<i64>) -> Answer<bool> {
        self.set_instance(instance);
        let args: [&(dyn ToSql + Sync); 5] = [&l.namespace, &l.worker_id, &l.epoch, &l.token, &last_tick];
        self.client.query_one(&self.release, &args).map(|r| r.get(0)).map_err(sqlstate)
    }

    fn rows(&mut self) -> Vec<RowView> {
        let rows = self.client.query(&self.leases, &[]).unwrap();
        rows.iter()
            .map(|r| RowView {
                namespace: r.get(0),
                worker_id: r.get(1),
                epoch: r.get(2),
                token: r.get(3),
                system_identifier: r.get(4),
                timeline: r.get(5),
                node_name: r.get(6),
                floor: r.get(7),
                ceiling: r.get(8),
                horizon_ms: r.get(9),
                granted_at_ms: r.get(10),
                renewed_at_ms: r.get(11),
                released_at_ms: r.get(12),
                instance: r.get(13),
            })
            .collect()
    }

    fn namespaces(&mut self) -> Vec<NamespaceView> {
        let rows = self.client.query(&self.namespaces, &[]).unwrap();
        rows.iter().map(|r| (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4))).collect()
    }

    /// The claims in the order SQL gives them, which must be by interval;
    /// then, where it leaves the order open, as the model gives them.
    fn history_of(&mut self, l: &LeaseCall) -> Answer<Vec<ClaimAnswer>> {
        let args: [&(dyn ToSql + Sync); 4] = [&l.namespace, &l.worker_id, &l.epoch, &l.token];
        let rows = self.client.query(&self.history_of, &args).map_err(sqlstate)?;
        let mut claims: Vec<ClaimAnswer> =
            rows.iter().map(|r| (r.get(0), r.get(1), r.get(2), i64::from(r.get::<_, i32>(3)))).collect();
        let by_interval = claims.windows(2).all(|w| (w[0].1, w[0].2) <= (w[1].1, w[1].2));
        assert!(by_interval, "snowflake_registry_history_of answered out of order: {claims:?}");
        claims.sort_by_key(|&(epoch, from, to, level)| (from, to, epoch, level));
        Ok(claims)
    }

    fn record_history(&mut self, l: &LeaseCall, c: &ClaimCall) -> Answer<()> {
        let args: [&(dyn ToSql + Sync); 7] = [&l.namespace, &l.worker_id, &l.epoch, &l.token, &c.from, &c.to, &c.level];
        self.client.query_one(&self.record_history, &args).map(|_| ()).map_err(sqlstate)
    }

    fn claims(&mut self) -> Vec<ClaimView> {
        let rows = self.client.query(&self.claims, &[]).unwrap();
        rows.iter().map(|r| (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4), r.get(5))).collect()
    }
}

// ---------------------------------------------------------------------------
// The Rust side: the core's model of the registry (lease::registry), which
// core/tests/two_holders.rs runs its servers against
// ---------------------------------------------------------------------------

struct Model {
    now_ms: i64,
    /// Why the last acquire that was not refused was granted.
    last_kind: Option<Takeover>,
    tables: registry::Registry,
}

fn state(r: Refusal) -> String {
    r.sqlstate().to_string()
}

fn lease_name(l: &LeaseCall) -> LeaseName {
    LeaseName { namespace: l.namespace.clone(), worker_id: l.worker_id.map(i64::from), epoch: l.epoch, token: l.token }
}

impl Model {
    fn new(margin_ms: i64, now_ms: i64) -> Model {
        let (worker_bits, sequence_bits, epoch_ms) = LAYOUTS[0];
        let preset = Namespace {
            worker_bits: i64::from(worker_bits),
            sequence_bits: i64::from(sequence_bits),
            epoch_ms,
            stale_margin_ms: margin_ms,
        };
        Model { now_ms, last_kind: None, tables: registry::Registry::with_namespace(PRESET, preset) }
    }

    /// `snowflake_registry_acquire`; a new grant gets `token`, the SQL's
    /// random draw (the SQL side answers first).
    fn acquire(&mut self, c: &AcquireCall, instance: Option<i64>, token: i64) -> Answer<Grant> {
        let call = Acquire {
            namespace: c.namespace.clone(),
            worker_bits: c.worker_bits.map(i64::from),
            sequence_bits: c.sequence_bits.map(i64::from),
            epoch_ms: c.epoch_ms,
            wanted: c.wanted.map(i64::from),
            system_identifier: c
                .system_identifier
                .as_ref()
                .map(|s| s.parse().expect("the test sends u64 system identifiers")),
            timeline: c.timeline.map(i64::from),
            node_name: c.node_name.clone(),
            node_tick: c.node_tick,
            horizon_ms: c.horizon_ms,
            resume_epoch: c.resume_epoch,
            resume_token: c.resume_token,
        };
        match self.tables.acquire(self.now_ms, &call, instance, token) {
            Ok(g) => {
                self.last_kind = Some(g.kind);
                Ok(Grant {
                    worker_id: i32::try_from(g.worker_id).expect("a worker id below 2^worker_bits"),
                    epoch: g.epoch,
                    token: g.token,
                    floor: g.range.floor,
                    ceiling: g.range.ceiling,
                })
            }
            Err(r) => Err(state(r)),
        }
    }

    fn renew(
        &mut self,
        l: &LeaseCall,
        node_tick: Option<i64>,
        horizon_ms: Option<i64>,
        instance: Option<i64>,
    ) -> Answer<i64> {
        self.tables.renew(self.now_ms, &lease_name(l), node_tick, horizon_ms, instance).map_err(state)
    }

    fn release(&mut self, l: &LeaseCall, last_tick: Option<i64>, instance: Option<i64>) -> Answer<bool> {
        Ok(self.tables.release(self.now_ms, &lease_name(l), last_tick, instance))
    }

    fn history_of(&self, l: &LeaseCall) -> Answer<Vec<ClaimAnswer>> {
        let claims = self.tables.history_of(&lease_name(l)).map_err(state)?;
        Ok(claims.iter().map(|c| (c.lease_epoch, c.interval.from, c.interval.to, c.interval.level)).collect())
    }

    fn record_history(&mut self, l: &LeaseCall, claim: &ClaimCall) -> Answer<()> {
        let level = claim.level.map(i64::from);
        self.tables.record_history(&lease_name(l), claim.from, claim.to, level).map_err(state)
    }

    fn rows(&self) -> Vec<RowView> {
        self.tables
            .leases
            .iter()
            .map(|((namespace, worker_id), r)| RowView {
                namespace: namespace.clone(),
                worker_id: i32::try_from(*worker_id).expect("an integer worker id"),
                epoch: r.holder.epoch,
                token: r.holder.token,
                system_identifier: r.holder.system_identifier.to_string(),
                timeline: i32::try_from(r.holder.timeline).expect("an integer timeline"),
                node_name: r.node_name.clone(),
                floor: r.range.floor,
                ceiling: r.range.ceiling,
                horizon_ms: r.holder.horizon_ms,
                granted_at_ms: r.granted_at_ms,
                renewed_at_ms: r.holder.renewed_at_ms,
                released_at_ms: r.released_at_ms,
                instance: r.holder.instance,
            })
            .collect()
    }

    fn namespaces(&self) -> Vec<NamespaceView> {
        self.tables
            .namespaces
            .iter()
            .map(|(n, ns)| {
                let bits = |v: i64| i32::try_from(v).expect("integer bits");
                (n.clone(), bits(ns.worker_bits), bits(ns.sequence_bits), ns.epoch_ms, ns.stale_margin_ms)
            })
            .collect()
    }

    fn claims(&self) -> Vec<ClaimView> {
        self.tables
            .history
            .iter()
            .map(|((n, w, epoch, from, to), level)| {
                let w = i32::try_from(*w).expect("an integer worker id");
                (n.clone(), w, *epoch, *from, *to, i32::try_from(*level).expect("an integer level"))
            })
            .collect()
    }
}

// ---------------------------------------------------------------------------
// Invariant 8, on what the registry answered
// ---------------------------------------------------------------------------

/// A lease as its holder may use it: from its floor to the highest ceiling
/// it was answered, or, once it released, to the ceiling its release left.
#[derive(Debug, Clone)]
struct Used {
    /// Who it was granted to: a node and the layout it called with.
    node: usize,
    layout: usize,
    namespace: String,
    worker_id: i32,
    epoch: i64,
    token: i64,
    floor: i64,
    top: i64,
}

impl Used {
    fn named_by(&self, c: &LeaseCall) -> bool {
        Some(&self.namespace) == c.namespace.as_ref()
            && Some(self.worker_id) == c.worker_id
            && Some(self.epoch) == c.epoch
            && Some(self.token) == c.token
    }

    fn call(&self) -> LeaseCall {
        LeaseCall {
            namespace: Some(self.namespace.clone()),
            worker_id: Some(self.worker_id),
            epoch: Some(self.epoch),
            token: Some(self.token),
        }
    }
}

/// Every lease of a worker id starts above every tick an earlier one of it may use.
fn check_disjoint(used: &[Used]) -> Result<(), String> {
    for (i, later) in used.iter().enumerate() {
        for earlier in &used[..i] {
            let same = earlier.namespace == later.namespace && earlier.worker_id == later.worker_id;
            if same && earlier.top >= later.floor {
                return Err(format!("invariant 8: {later:?} starts at or below what {earlier:?} may issue"));
            }
        }
    }
    Ok(())
}

/// Invariant 9 under a leased worker id: a holder reads every claim ever
/// accepted on its worker id (by any lease, its own included), or one that
/// covers it (the same interval or a wider one, at a level at least its
/// own), so that it raises its level map past every slot a holder may have used.
fn inherits_every_claim(
    recorded: &[(LeaseCall, ClaimCall)],
    asker: &LeaseCall,
    answer: &[ClaimAnswer],
) -> Result<(), String> {
    let on_this_worker =
        recorded.iter().filter(|(l, _)| l.namespace == asker.namespace && l.worker_id == asker.worker_id);
    for (l, c) in on_this_worker {
        let (Some(from), Some(to), Some(level)) = (c.from, c.to, c.level.map(i64::from)) else { continue };
        if !answer.iter().any(|&(_, f, t, v)| f <= from && t >= to && v >= level) {
            return Err(format!(
                "invariant 9: the claim {c:?} under {l:?} is missing from what {asker:?} reads: {answer:?}"
            ));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// One history on both sides
// ---------------------------------------------------------------------------

fn resolve_tick(t: Tick, registry_tick: i64) -> i64 {
    match t {
        Tick::Rel(d) => registry_tick.saturating_add(d),
        Tick::Abs(v) => v,
    }
}

fn pick(used: &[Used], i: Index) -> Option<&Used> {
    (!used.is_empty()).then(|| &used[i.index(used.len())])
}

fn lease_call(used: &[Used], r: LeaseRef) -> LeaseCall {
    let never = LeaseCall { namespace: Some(PRESET.into()), worker_id: Some(3), epoch: Some(1), token: Some(1) };
    let (i, epoch_shift, token_shift) = match r {
        LeaseRef::Granted(i) => (i, 0, 0),
        LeaseRef::OtherToken(i) => (i, 0, 1),
        LeaseRef::NextEpoch(i) => (i, 1, 0),
        LeaseRef::Never => return never,
    };
    match pick(used, i) {
        None => never,
        Some(u) => LeaseCall { epoch: Some(u.epoch + epoch_shift), token: Some(u.token + token_shift), ..u.call() },
    }
}

fn null_out<T>(v: Option<T>, which: Option<usize>, me: usize) -> Option<T> {
    if which == Some(me) {
        None
    } else {
        v
    }
}

fn acquire_call(used: &[Used], now_ms: i64, step: &Step) -> AcquireCall {
    let Step::Acquire { fresh, layout, wanted, node, tick, horizon_ms, resume, null_arg, .. } = *step else {
        unreachable!()
    };
    let (bits, seq, epoch_ms) = LAYOUTS[layout];
    let (system, timeline, name) = NODES[node];
    let (resume_epoch, resume_token) = match resume {
        Resume::None => (None, None),
        Resume::Lease(i) => pick(used, i).map_or((None, None), |u| (Some(u.epoch), Some(u.token))),
        Resume::Forged(i) => pick(used, i).map_or((None, None), |u| (Some(u.epoch), Some(u.token ^ 1))),
        Resume::EpochOnly(i) => (pick(used, i).map(|u| u.epoch), None),
        Resume::TokenOnly(i) => (None, pick(used, i).map(|u| u.token)),
        Resume::Exact(epoch, token) => (Some(epoch), Some(token)),
    };
    AcquireCall {
        namespace: null_out(Some(if fresh { FRESH } else { PRESET }.to_string()), null_arg, 0),
        worker_bits: null_out(Some(bits), null_arg, 1),
        sequence_bits: null_out(Some(seq), null_arg, 2),
        epoch_ms: null_out(Some(epoch_ms), null_arg, 3),
        wanted,
        system_identifier: null_out(Some(system.to_string()), null_arg, 4),
        timeline: null_out(Some(timeline), null_arg, 5),
        node_name: null_out(Some(name.to_string()), null_arg, 6),
        node_tick: null_out(Some(resolve_tick(tick, now_ms - epoch_ms)), null_arg, 7),
        horizon_ms: null_out(Some(horizon_ms), null_arg, 8),
        resume_epoch,
        resume_token,
    }
}

/// proptest's shrinking of a vector stops removing steps once it has begun
/// to simplify them; this removes every step the failure does not need
/// (the failing step's successors first), and says how it fails then.
fn minimise(sql: &mut SqlRegistry, mut history: History) -> (History, String) {
    let mut fails = |h: &History| play(sql, h, &mut BTreeMap::new()).err();
    let mut why = fails(&history).expect("the shrunk history fails again");
    let mut removed = true;
    while removed {
        removed = false;
        for i in (0..history.steps.len()).rev() {
            let mut fewer = history.clone();
            fewer.steps.remove(i);
            if let Some(w) = fails(&fewer) {
                (history, why, removed) = (fewer, w, true);
            }
        }
    }
    (history, why)
}

/// A [`Step::Restart`] as the acquire it makes; other steps as they are.
fn as_acquire(used: &[Used], step: &Step) -> Step {
    let Step::Restart { lease, auto, tick, horizon_ms, instance } = *step else {
        return step.clone();
    };
    let restart = |u: Option<&Used>| Step::Acquire {
        fresh: u.is_some_and(|u| u.namespace == FRESH),
        layout: u.map_or(0, |u| u.layout),
        wanted: u.filter(|_| !auto).map(|u| u.worker_id),
        node: u.map_or(0, |u| u.node),
        tick,
        horizon_ms,
        resume: u.map_or(Resume::None, |u| Resume::Exact(u.epoch, u.token)),
        instance,
        null_arg: None,
    };
    restart(pick(used, lease))
}

/// An answer's kind, for the tally of what the histories reached.
fn outcome<T>(a: &Answer<T>) -> String {
    match a {
        Ok(_) => "answered".into(),
        Err(state) => state.clone(),
    }
}

/// Plays `history` on both sides; the trace of what each answered, or
/// where they parted (or two holders overlapped), with the trace so far.
fn play(sql: &mut SqlRegistry, history: &History, seen: &mut BTreeMap<String, usize>) -> Result<String, String> {
    let mut model = Model::new(history.margin_ms, START_S * 1_000);
    sql.reset(history.margin_ms, model.now_ms);
    let mut used: Vec<Used> = vec![];
    // Every claim the registry accepted, and under which lease.
    let mut recorded: Vec<(LeaseCall, ClaimCall)> = vec![];
    let mut last_claim: Option<(i64, i64)> = None;
    let mut trace = format!("preset namespace's stale margin: {} ms\n", history.margin_ms);
    for (n, step) in history.steps.iter().enumerate() {
        let what = if matches!(step, Step::Restart { .. }) { "restart: acquire" } else { "acquire" };
        let step = &as_acquire(&used, step);
        let registry_tick = model.now_ms - DEFAULT_EPOCH_MS;
        let (line, agree) = match step {
            Step::Clock(ms) => {
                model.now_ms += ms;
                sql.set_clock(model.now_ms);
                (format!("registry clock {ms:+} ms"), true)
            }
            Step::Boundary { lease, silence, off } => {
                let rows: Vec<_> = model.tables.leases.iter().collect();
                let line = match (!rows.is_empty()).then(|| rows[lease.index(rows.len())]) {
                    None => "registry clock stays (no lease yet)".to_string(),
                    Some(((namespace, worker_id), row)) => {
                        let (h, margin) = (row.holder.horizon_ms, model.tables.namespaces[namespace].stale_margin_ms);
                        let from = if *silence { lease::silence_ms(h) } else { h + margin };
                        model.now_ms = row.holder.renewed_at_ms + from + off;
                        sql.set_clock(model.now_ms);
                        let what = if *silence { "its silence ends" } else { "it goes stale" };
                        format!(
                            "registry clock to {off:+} ms from where {namespace} worker id {worker_id}'s lease {what}"
                        )
                    }
                };
                (line, true)
            }
            Step::Restart { .. } => unreachable!("made an acquire above"),
            Step::Acquire { instance, node, layout, .. } => {
                let call = acquire_call(&used, model.now_ms, step);
                let s = sql.acquire(&call, *instance);
                // A new grant's token is the SQL's random draw, handed to the
                // model; a lease that goes on keeps its own on both sides.
                let m = model.acquire(&call, *instance, s.as_ref().map_or(0, |g| g.token));
                let agree = s == m && !matches!(&s, Ok(g) if g.token < 1);
                if let (Ok(g), true) = (&s, agree) {
                    let namespace = call.namespace.clone().expect("granted in a namespace");
                    match used.iter_mut().find(|u| {
                        u.namespace == namespace
                            && u.worker_id == g.worker_id
                            && u.epoch == g.epoch
                            && u.token == g.token
                    }) {
                        Some(u) => u.top = u.top.max(g.ceiling),
                        None => used.push(Used {
                            node: *node,
                            layout: *layout,
                            namespace,
                            worker_id: g.worker_id,
                            epoch: g.epoch,
                            token: g.token,
                            floor: g.floor,
                            top: g.ceiling,
                        }),
                    }
                }
                let reached = match (&m, model.last_kind) {
                    (Ok(_), Some(kind)) => format!("acquire: {kind:?}"),
                    (m, _) => format!("acquire: {}", outcome(m)),
                };
                *seen.entry(reached).or_default() += 1;
                (format!("{what} {call:?} instance {instance:?}\n      sql {s:?}\n      rust {m:?}"), agree)
            }
            Step::Renew { lease, tick, horizon_ms, instance, null_arg } => {
                let mut call = lease_call(&used, *lease);
                call.namespace = null_out(call.namespace, *null_arg, 0);
                call.worker_id = null_out(call.worker_id, *null_arg, 1);
                call.epoch = null_out(call.epoch, *null_arg, 2);
                call.token = null_out(call.token, *null_arg, 3);
                let node_tick = null_out(Some(resolve_tick(*tick, registry_tick)), *null_arg, 4);
                let horizon = null_out(Some(*horizon_ms), *null_arg, 5);
                let s = sql.renew(&call, node_tick, horizon, *instance);
                let m = model.renew(&call, node_tick, horizon, *instance);
                *seen.entry(format!("renew: {}", outcome(&m))).or_default() += 1;
                if let Ok(c) = s {
                    if let Some(u) = used.iter_mut().find(|u| u.named_by(&call)) {
                        u.top = u.top.max(c);
                    }
                }
                (format!("renew {call:?} tick {node_tick:?} horizon {horizon:?} instance {instance:?}\n      sql {s:?}\n      rust {m:?}"), s == m)
            }
            Step::Record { lease, from, len, near, level, null_arg } => {
                let (from, to) = match (near, last_claim) {
                    (Some((df, dt)), Some((f, t))) => (f + df, t + dt),
                    _ => (*from, from + len),
                };
                last_claim = Some((from, to));
                let mut call = lease_call(&used, *lease);
                call.namespace = null_out(call.namespace, *null_arg, 0);
                call.worker_id = null_out(call.worker_id, *null_arg, 1);
                call.epoch = null_out(call.epoch, *null_arg, 2);
                call.token = null_out(call.token, *null_arg, 3);
                let claim = ClaimCall {
                    from: null_out(Some(from), *null_arg, 4),
                    to: null_out(Some(to), *null_arg, 5),
                    level: null_out(Some(*level), *null_arg, 6),
                };
                let s = sql.record_history(&call, &claim);
                let m = model.record_history(&call, &claim);
                *seen.entry(format!("record: {}", outcome(&m))).or_default() += 1;
                if s.is_ok() {
                    recorded.push((call.clone(), claim.clone()));
                }
                (format!("record history {call:?} {claim:?}\n      sql {s:?}\n      rust {m:?}"), s == m)
            }
            Step::HistoryOf { lease } => {
                let call = lease_call(&used, *lease);
                let s = sql.history_of(&call);
                let m = model.history_of(&call);
                *seen.entry(format!("history_of: {}", outcome(&m))).or_default() += 1;
                let line = format!("history of {call:?}\n      sql {s:?}\n      rust {m:?}");
                if let Ok(claims) = &s {
                    inherits_every_claim(&recorded, &call, claims).map_err(|e| format!("{trace}step {n}: {e}"))?;
                }
                (line, s == m)
            }
            Step::Release { lease, last_tick, instance } => {
                let call = lease_call(&used, *lease);
                let top = used
                    .iter()
                    .find(|u| {
                        Some(u.epoch) == call.epoch
                            && Some(u.worker_id) == call.worker_id
                            && Some(&u.namespace) == call.namespace.as_ref()
                    })
                    .map_or(0, |u| u.top);
                let last = match *last_tick {
                    LastTick::FromTop(d) => Some(top + d),
                    LastTick::Abs(v) => Some(v),
                    LastTick::Null => None,
                };
                let s = sql.release(&call, last, *instance);
                let m = model.release(&call, last, *instance);
                *seen.entry(format!("release: {m:?}")).or_default() += 1;
                if s == Ok(true) {
                    // The holder made its last tick its own ceiling first: it uses nothing past what the release left.
                    let left = sql
                        .rows()
                        .into_iter()
                        .find(|r| Some(&r.namespace) == call.namespace.as_ref() && Some(r.worker_id) == call.worker_id);
                    if let (Some(u), Some(left)) = (used.iter_mut().find(|u| u.named_by(&call)), left) {
                        u.top = left.ceiling;
                    }
                }
                (
                    format!(
                        "release {call:?} last tick {last:?} instance {instance:?}\n      sql {s:?}\n      rust {m:?}"
                    ),
                    s == m,
                )
            }
        };
        let _ = writeln!(trace, "  {n:2}. at {} ms: {line}", model.now_ms - START_S * 1_000);
        if !agree {
            return Err(format!("{trace}step {n}: the answers differ"));
        }
        let (sql_rows, model_rows) = (sql.rows(), model.rows());
        if sql_rows != model_rows {
            return Err(format!("{trace}step {n}: the tables differ\n  sql  {sql_rows:#?}\n  rust {model_rows:#?}"));
        }
        let (sql_ns, model_ns) = (sql.namespaces(), model.namespaces());
        if sql_ns != model_ns {
            return Err(format!("{trace}step {n}: the namespaces differ\n  sql  {sql_ns:?}\n  rust {model_ns:?}"));
        }
        let (sql_claims, model_claims) = (sql.claims(), model.claims());
        if sql_claims != model_claims {
            return Err(format!(
                "{trace}step {n}: the history claims differ\n  sql  {sql_claims:?}\n  rust {model_claims:?}"
            ));
        }
        check_disjoint(&used).map_err(|e| format!("{trace}step {n}: {e}"))?;
    }
    Ok(trace)
}

#[test]
fn the_sql_registry_answers_as_the_rust_rule() {
    let mut cluster = Cluster::init(&["autovacuum = off"]);
    // Started on the machine's clock, then frozen: a registry call reads
    // exactly the model's time.
    let clock = FakeClock::new(&cluster, "+0");
    let mut env = clock.env();
    env.push(("FAKETIME_FMT", "%s".to_string()));
    cluster.set_env(env);
    cluster.start();
    cluster.sql("CREATE EXTENSION snowflake_id");
    let mut sql = SqlRegistry::new(&cluster, clock);
    // Frozen, and on the very millisecond (to the microsecond): a clock
    // a microsecond off moves staleness across its boundary.
    for ms in (0..1_000).step_by(7).chain([6_002, 86_399_999]) {
        let at = START_S * 1_000 + ms;
        sql.set_clock(at);
        let read = || "SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint";
        let first: i64 = sql.client.query_one(read(), &[]).unwrap().get(0);
        std::thread::sleep(std::time::Duration::from_millis(2));
        let second: i64 = sql.client.query_one(read(), &[]).unwrap().get(0);
        assert_eq!((first, second), (at * 1_000, at * 1_000), "the registry's clock is not frozen at {at} ms");
    }

    let cases = std::env::var("SNOWFLAKE_MODEL_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(600);
    let config = Config {
        cases,
        failure_persistence: None,
        // A failure shrinks for at most a minute or so, then says what it has.
        max_shrink_iters: 2_000,
        max_shrink_time: 90_000,
        ..Config::default()
    };
    let sql = RefCell::new(sql);
    let seen = RefCell::new(BTreeMap::new());
    let mut runner = TestRunner::new(config);
    let result = runner.run(&history(), |h| {
        play(&mut sql.borrow_mut(), &h, &mut seen.borrow_mut()).map(|_| ()).map_err(TestCaseError::fail)
    });
    match result {
        Ok(()) => {}
        Err(TestError::Fail(_, history)) => {
            let (history, why) = minimise(&mut sql.borrow_mut(), history);
            panic!("the SQL registry and the Rust rule part ways\n{why}\nshrunk history: {history:#?}")
        }
        Err(TestError::Abort(why)) => panic!("aborted: {why}"),
    }
    // Every way the rule can answer was reached, so a change of the
    // generators cannot quietly leave a part of either copy untested.
    let seen = seen.into_inner();
    eprintln!("reached: {seen:?}");
    if cases >= 100 {
        let kinds =
            ["Unheld", "Released", "Stale", "Promoted", "Resumed", "Continued"].map(|k| format!("acquire: {k}"));
        let refusals = ["SFL02", "SFL03", "SFL04", "SFL05", "22004", "22023"].map(|k| format!("acquire: {k}"));
        let renewals = ["answered", "SFL01", "SFL05", "22004", "22023"].map(|k| format!("renew: {k}"));
        let releases = ["Ok(true)", "Ok(false)"].map(|k| format!("release: {k}"));
        let claims = ["answered", "SFL01", "23502", "23514"].map(|k| format!("record: {k}"));
        let reads = ["answered", "SFL01"].map(|k| format!("history_of: {k}"));
        for kind in kinds.iter().chain(&refusals).chain(&renewals).chain(&releases).chain(&claims).chain(&reads) {
            assert!(seen.contains_key(kind), "no history reached {kind}: {seen:?}");
        }
    }
}
