//! Logical replication with the library on every node: servers
//! that all take writes and exchange rows (active-active), and a subscriber
//! that takes over the writes (blue/green). Every node is a real server
//! with `wal_level = logical`, subscribing to the others over their Unix
//! sockets, inserting through `DEFAULT snowflake_nextval()`.
//!
//! - Active-active: native subscriptions both ways with `origin = none`
//!   (PostgreSQL 16+), and pglogical 2.4 both ways (Debian's
//!   postgresql-15-pglogical, so 15 only); also with worker ids leased from
//!   a registry. Every node converges to the same rows, no apply worker
//!   logs an ERROR, every ID is distinct.
//! - The guard (sql/install/logical.sql, src/service/logical_guard.rs), on every major
//!   through a native one-way subscription: a successor with the same worker
//!   id and its clock behind issues above every ID it received (also after
//!   a kill -9 in the middle of a burst); two peers issuing with one worker
//!   id are named within seconds while the apply keeps running; IDs that
//!   cannot be ours are left alone.
//!
//! A piece that cannot run on the major under test is skipped through
//! tests/common (`not_on_this_major`, `only_on_major`, `cannot_run`), which
//! records the skip for scripts/test.sh.
//! `SNOWFLAKE_LOGICAL_NO_GUARD=1` disables the guard's trigger on every
//! table these tests make: the guard's tests must then fail (that is how
//! each was seen to test its guard). Their names start with `guard_`,
//! which is how scripts/test.sh finds them (`pglogical` in the name: on 15
//! only); a test that passes without the guard must not be named so.

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use common::waits::wait_until;
use common::{conninfo, describe, Cluster, FakeClock, LOGICAL};

/// The table every test replicates: the key from the generator.
const TABLE: &str = "CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), node text NOT NULL, n int)";

fn no_guard() -> bool {
    std::env::var("SNOWFLAKE_LOGICAL_NO_GUARD").is_ok_and(|v| v == "1")
}

/// Creates [`TABLE`] (or `ddl`) on `node`: the event trigger puts the guard
/// on it; with `SNOWFLAKE_LOGICAL_NO_GUARD=1` the guard is disabled again.
fn create_table(node: &Cluster, ddl: &str) {
    node.sql(ddl);
    if no_guard() {
        node.sql("ALTER TABLE t DISABLE TRIGGER snowflake_id_received");
        assert_eq!(
            node.query_text("SELECT tgenabled::text FROM pg_trigger WHERE tgname = 'snowflake_id_received'"),
            "D"
        );
    }
}

/// The worker id bits of an ID in the default layout.
fn worker_of(id: i64) -> i64 {
    (id >> 12) & 1023
}

/// `snowflake_cluster_check()`'s rows on `node`, as (node, problem).
fn cluster_problems(node: &Cluster) -> Vec<(String, String)> {
    node.connect()
        .query("SELECT node, problem FROM snowflake_cluster_check()", &[])
        .unwrap_or_else(|e| panic!("snowflake_cluster_check(): {}", describe(&e)))
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect()
}

/// A preloaded logical node with `conf`, started, the extension created.
fn node(conf: &[&str]) -> Cluster {
    let mut lines = LOGICAL.to_vec();
    lines.extend_from_slice(conf);
    Cluster::preloaded(&lines)
}

/// `subscriber` subscribes natively to `publisher`'s publication `p`, with
/// no initial copy; `origin = none` (16+) makes two-way replication stop at
/// one hop.
fn subscribe(subscriber: &Cluster, publisher: &Cluster, name: &str, origin_none: bool) {
    let origin = if origin_none { ", origin = none" } else { "" };
    subscriber.sql(&format!(
        "CREATE SUBSCRIPTION {name} CONNECTION '{}' PUBLICATION p WITH (copy_data = false{origin})",
        conninfo(publisher)
    ));
    wait_until(&format!("subscription {name} running"), Duration::from_secs(30), || {
        subscriber.query_i64(&format!(
            "SELECT count(*) FROM pg_stat_subscription WHERE subname = '{name}' AND pid IS NOT NULL"
        )) > 0
    });
}

/// Every ID of `t` on `node`, in order.
fn ids_of(node: &Cluster) -> Vec<i64> {
    common::ids(&mut node.connect(), "SELECT id FROM t ORDER BY id")
}

/// Lines of `node`'s log that say ERROR or FATAL (an apply worker that
/// failed logs one before it restarts).
fn errors_in_log(node: &Cluster) -> Vec<String> {
    node.log().lines().filter(|l| l.contains("ERROR:") || l.contains("FATAL:")).map(String::from).collect()
}

/// Every node inserts `txs` transactions of `rows` rows from two sessions at
/// once; returns every ID each node made.
fn insert_everywhere(nodes: &[&Cluster], txs: usize, rows: usize) -> Vec<Vec<i64>> {
    thread::scope(|s| {
        let handles: Vec<_> = nodes
            .iter()
            .enumerate()
            .flat_map(|(i, node)| {
                (0..2).map(move |session| {
                    s.spawn(move || {
                        let mut c = node.connect();
                        let mut made = vec![];
                        for _ in 0..txs {
                            let sql = format!(
                                "INSERT INTO t (node, n) SELECT 'node{i}.{session}', g FROM generate_series(1, {rows}) g \
                                 RETURNING id"
                            );
                            made.extend(common::ids(&mut c, &sql));
                        }
                        made
                    })
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("inserting thread")).collect()
    })
}

/// Waits until every node holds `total` rows, then checks they hold the
/// same IDs, all distinct, and that no node logged an ERROR.
fn assert_converged(nodes: &[&Cluster], made: &[Vec<i64>]) {
    let total: usize = made.iter().map(Vec::len).sum();
    assert_eq!(common::assert_no_duplicates(made), total, "IDs issued by the nodes repeat");
    for node in nodes {
        wait_until(&format!("{total} rows on port {}", node.port), Duration::from_secs(60), || {
            node.query_i64("SELECT count(*) FROM t") as usize >= total
        });
    }
    let expected: BTreeSet<i64> = made.iter().flatten().copied().collect();
    for node in nodes {
        let held = ids_of(node);
        assert_eq!(held.len(), total, "port {}: rows repeat or are missing", node.port);
        assert!(held.iter().copied().eq(expected.iter().copied()), "port {} holds other rows", node.port);
        assert_eq!(errors_in_log(node), Vec::<String>::new(), "port {} logged errors", node.port);
    }
}

/// Two nodes (of `conf_a`, `conf_b`), each publishing `t` and subscribing
/// natively to the other with `origin = none`.
fn native_pair(conf_a: &[&str], conf_b: &[&str]) -> (Cluster, Cluster) {
    let (a, b) = (node(conf_a), node(conf_b));
    for n in [&a, &b] {
        create_table(n, TABLE);
        n.sql("CREATE PUBLICATION p FOR TABLE t");
    }
    subscribe(&a, &b, "a_from_b", true);
    subscribe(&b, &a, "b_from_a", true);
    (a, b)
}

#[test]
fn native_active_active_with_origin_none_converges() {
    if common::pg_major() < 16 {
        return common::not_on_this_major("origin = none needs 16 or newer");
    }
    let (a, b) = native_pair(&["snowflake_id.worker_id = 1"], &["snowflake_id.worker_id = 2"]);
    let made = insert_everywhere(&[&a, &b], 15, 400);
    assert_converged(&[&a, &b], &made);
    for (node, worker) in [(&a, 1), (&b, 2)] {
        let problem: Option<String> =
            node.connect().query_one("SELECT problem FROM snowflake_id_status", &[]).unwrap().get(0);
        assert_eq!(problem, None, "worker {worker}: distinct worker ids are no problem");
    }
}

/// True when pglogical can run here (PostgreSQL 15 with pglogical.so);
/// otherwise says the test is skipped and why, through tests/common: on
/// another major by design, on 15 without pglogical only when the test
/// command skips it by name.
fn pglogical_here() -> bool {
    if !common::only_on_major(15, "pglogical is packaged for Debian 12's PostgreSQL 15 only") {
        return false;
    }
    let out = common::check(
        "pg_config --pkglibdir",
        Command::new(common::tool("pg_config")).arg("--pkglibdir").output().expect("pg_config"),
    );
    let lib = Path::new(String::from_utf8_lossy(&out.stdout).trim()).join("pglogical.so");
    if !lib.exists() {
        common::cannot_run(&format!(
            "pglogical is not installed ({} is missing; bash scripts/setup.sh installs postgresql-15-pglogical)",
            lib.display()
        ));
    }
    lib.exists()
}

/// A pglogical node: pglogical first in the preload, commit timestamps, and
/// pglogical's output plugin allowed (Debian's 15 lists the allowed ones).
fn pglogical_node(name: &str, conf: &[&str]) -> Cluster {
    let mut c = Cluster::init(&pglogical_lines(conf));
    c.start();
    pglogical_prepare(&c, name);
    c
}

fn pglogical_lines<'a>(conf: &[&'a str]) -> Vec<&'a str> {
    let mut lines = LOGICAL.to_vec();
    lines.extend_from_slice(&[
        "shared_preload_libraries = 'pglogical,snowflake_id'",
        "track_commit_timestamp = on",
        "max_worker_processes = 16",
        "output_plugin_libraries = 'pgoutput, test_decoding, pglogical_output'",
    ]);
    lines.extend_from_slice(conf);
    lines
}

/// On a started pglogical node: both extensions, the pglogical node `name`,
/// [`TABLE`] in the default replication set.
fn pglogical_prepare(c: &Cluster, name: &str) {
    c.sql("CREATE EXTENSION snowflake_id");
    c.sql("CREATE EXTENSION pglogical");
    c.sql(&format!("SELECT pglogical.create_node(node_name := '{name}', dsn := '{}')", conninfo(c)));
    create_table(c, TABLE);
    c.sql("SELECT pglogical.replication_set_add_table('default', 't')");
}

/// `subscriber` subscribes with pglogical to `provider`, no initial copy,
/// forwarding no other origin (two-way without loops).
fn pglogical_subscribe(subscriber: &Cluster, provider: &Cluster, name: &str) {
    subscriber.sql(&format!(
        "SELECT pglogical.create_subscription(subscription_name := '{name}', provider_dsn := '{}', \
         synchronize_structure := false, synchronize_data := false, forward_origins := '{{}}')",
        conninfo(provider)
    ));
    wait_until(&format!("pglogical subscription {name} replicating"), Duration::from_secs(60), || {
        subscriber.query_text(&format!("SELECT status FROM pglogical.show_subscription_status('{name}')"))
            == "replicating"
    });
}

#[test]
fn pglogical_active_active_converges() {
    if !pglogical_here() {
        return;
    }
    let a = pglogical_node("a", &["snowflake_id.worker_id = 1"]);
    let b = pglogical_node("b", &["snowflake_id.worker_id = 2"]);
    pglogical_subscribe(&a, &b, "a_from_b");
    pglogical_subscribe(&b, &a, "b_from_a");
    let made = insert_everywhere(&[&a, &b], 15, 400);
    assert_converged(&[&a, &b], &made);
}

#[test]
fn active_active_with_worker_ids_from_a_registry() {
    let registry = Cluster::registry();
    let line = registry.registry_line();
    let leased = |name: &str| -> Cluster {
        let name_line = format!("snowflake_id.node_name = '{name}'");
        if common::pg_major() == 15 {
            pglogical_node(name, &[&line, &name_line])
        } else {
            let n = node(&[&line, &name_line]);
            create_table(&n, TABLE);
            n.sql("CREATE PUBLICATION p FOR TABLE t");
            n
        }
    };
    if common::pg_major() == 15 && !pglogical_here() {
        return;
    }
    let (a, b) = (leased("a"), leased("b"));
    for n in [&a, &b] {
        wait_until("a lease", Duration::from_secs(30), || {
            n.query_text("SELECT lease_state FROM snowflake_id_status") == "held"
        });
    }
    if common::pg_major() == 15 {
        pglogical_subscribe(&a, &b, "a_from_b");
        pglogical_subscribe(&b, &a, "b_from_a");
    } else {
        subscribe(&a, &b, "a_from_b", true);
        subscribe(&b, &a, "b_from_a", true);
    }
    let made = insert_everywhere(&[&a, &b], 10, 400);
    let workers: BTreeSet<i64> = made.iter().flatten().map(|id| worker_of(*id)).collect();
    assert_eq!(workers.len(), 2, "each node its own leased worker id: {workers:?}");
    assert_converged(&[&a, &b], &made);
}

/// Blue (worker 7) takes writes in bursts (its logical clock borrows ahead),
/// green (worker 7 too, its clock `behind`) subscribes; returns the IDs
/// green received, once it holds them all.
fn blue_writes_green_receives(blue: &Cluster, green: &Cluster) -> Vec<i64> {
    let made = insert_everywhere(&[blue], 10, 2_000);
    let total: usize = made.iter().map(Vec::len).sum();
    wait_until("green caught up", Duration::from_secs(60), || {
        green.query_i64("SELECT count(*) FROM t") as usize >= total
    });
    ids_of(green)
}

fn blue_and_green(green_behind: &str) -> (Cluster, Cluster, FakeClock) {
    let blue = node(&["snowflake_id.worker_id = 7"]);
    create_table(&blue, TABLE);
    blue.sql("CREATE PUBLICATION p FOR TABLE t");
    let mut lines = vec!["shared_preload_libraries = 'snowflake_id'", "snowflake_id.worker_id = 7"];
    lines.extend_from_slice(LOGICAL);
    let mut green = Cluster::init(&lines);
    let clock = green.start_with_fake_clock(green_behind);
    green.sql("CREATE EXTENSION snowflake_id");
    create_table(&green, TABLE);
    subscribe(&green, &blue, "green_from_blue", false);
    (blue, green, clock)
}

/// Green takes over: ten inserts of 1,000 rows; every ID above every ID it received.
fn green_takes_over(green: &Cluster, received: &[i64]) {
    let newest = *received.iter().max().expect("green received rows");
    let mut c = green.connect();
    let mut issued = vec![];
    for _ in 0..10 {
        let rows = c
            .query("INSERT INTO t (node, n) SELECT 'green', g FROM generate_series(1, 1000) g RETURNING id", &[])
            .unwrap_or_else(|e| panic!("green's insert after the switchover: {}", describe(&e)));
        issued.extend(rows.iter().map(|r| r.get::<_, i64>(0)));
    }
    let below = issued.iter().filter(|id| **id <= newest).count();
    assert_eq!(
        below,
        0,
        "green issued {below} of {} IDs at or below the newest ID it received ({newest})",
        issued.len()
    );
}

#[test]
fn guard_a_blue_green_successor_with_its_clock_behind_issues_above_every_received_id() {
    let (blue, green, _clock) = blue_and_green("-5s");
    let received = blue_writes_green_receives(&blue, &green);
    assert!(received.iter().all(|id| worker_of(*id) == 7));
    assert_eq!(errors_in_log(&green), Vec::<String>::new(), "the apply failed");
    // The switchover: blue stops taking writes, green drops its subscription.
    green.sql("DROP SUBSCRIPTION green_from_blue");
    green_takes_over(&green, &received);
}

/// Blue/green through pglogical (15): the same as natively. Before the
/// switchover, `snowflake_cluster_check()` on green names the pair sharing
/// worker id 7, read from pglogical's own catalog: expected while green
/// only receives, a problem once both take writes.
#[test]
fn guard_a_pglogical_blue_green_successor_with_its_clock_behind_issues_above_every_received_id() {
    if !pglogical_here() {
        return;
    }
    let blue = pglogical_node("blue", &["snowflake_id.worker_id = 7"]);
    let mut green = Cluster::init(&pglogical_lines(&["snowflake_id.worker_id = 7"]));
    let _clock = green.start_with_fake_clock("-5s");
    pglogical_prepare(&green, "green");
    pglogical_subscribe(&green, &blue, "green_from_blue");
    let problems: Vec<String> = cluster_problems(&green).into_iter().map(|(_, p)| p).collect();
    let named = "worker id 7 shared by publisher of pglogical subscription \"green_from_blue\", this node";
    assert!(problems.len() == 2 && problems.iter().all(|p| p == named), "{problems:#?}");
    let received = blue_writes_green_receives(&blue, &green);
    assert!(received.iter().all(|id| worker_of(*id) == 7));
    assert_eq!(errors_in_log(&green), Vec::<String>::new(), "the apply failed");
    green.sql("SELECT pglogical.drop_subscription('green_from_blue')");
    green_takes_over(&green, &received);
}

#[test]
fn guard_survives_a_subscriber_kill_9_in_the_middle_of_a_burst() {
    let (blue, mut green, clock) = blue_and_green("-60s");
    let bursting = thread::scope(|s| {
        let writer = s.spawn(|| insert_everywhere(&[&blue], 8, 5_000));
        wait_until("green applying", Duration::from_secs(60), || green.query_i64("SELECT count(*) FROM t") > 0);
        green.crash();
        writer.join().expect("blue's writer")
    });
    green.set_env(clock.env());
    green.start();
    green.wait_accepting();
    let total: usize = bursting.iter().map(Vec::len).sum();
    wait_until("green caught up after the crash", Duration::from_secs(90), || {
        green.query_i64("SELECT count(*) FROM t") as usize >= total
    });
    let received = ids_of(&green);
    assert_eq!(received.len(), total);
    green.sql("DROP SUBSCRIPTION green_from_blue");
    // And again after a clean restart: the move was durable, not only in memory.
    green.restart();
    green_takes_over(&green, &received);
}

/// No unique key: a repeated ID must not stop the apply, so any apply
/// failure would be the library's.
const NO_KEY: &str = "CREATE TABLE t (id bigint NOT NULL DEFAULT snowflake_nextval(), node text NOT NULL, n int)";

#[test]
fn guard_two_peers_issuing_with_one_worker_id_are_named_within_seconds_and_the_apply_keeps_running() {
    let a = node(&["snowflake_id.worker_id = 3", "snowflake_id.node_name = 'a'"]);
    let b = node(&["snowflake_id.worker_id = 3", "snowflake_id.node_name = 'b'"]);
    for n in [&a, &b] {
        create_table(n, NO_KEY);
        n.sql("CREATE PUBLICATION p FOR TABLE t");
    }
    subscribe(&a, &b, "a_from_b", false);
    a_names_the_shared_worker_id(&a, &b);
}

#[test]
fn guard_pglogical_peers_sharing_a_worker_id_are_named_too() {
    if !pglogical_here() {
        return;
    }
    let peer = |name: &str| {
        let mut lines = LOGICAL.to_vec();
        lines.extend_from_slice(&[
            "shared_preload_libraries = 'pglogical,snowflake_id'",
            "track_commit_timestamp = on",
            "output_plugin_libraries = 'pgoutput, test_decoding, pglogical_output'",
            "snowflake_id.worker_id = 3",
        ]);
        let mut c = Cluster::init(&lines);
        c.start();
        c.sql("CREATE EXTENSION snowflake_id");
        c.sql("CREATE EXTENSION pglogical");
        c.sql(&format!("SELECT pglogical.create_node(node_name := '{name}', dsn := '{}')", conninfo(&c)));
        create_table(&c, NO_KEY);
        c.sql("SELECT pglogical.replication_set_add_table('default_insert_only', 't')");
        c
    };
    let (a, b) = (peer("a"), peer("b"));
    a.sql(&format!(
        "SELECT pglogical.create_subscription(subscription_name := 'a_from_b', provider_dsn := '{}', \
         replication_sets := ARRAY['default_insert_only'], synchronize_structure := false, synchronize_data := false)",
        conninfo(&b)
    ));
    wait_until("pglogical subscription replicating", Duration::from_secs(60), || {
        a.query_text("SELECT status FROM pglogical.show_subscription_status('a_from_b')") == "replicating"
    });
    a_names_the_shared_worker_id(&a, &b);
}

/// `a` subscribes to `b`, both issue with worker id 3 into `t` (no key).
fn a_names_the_shared_worker_id(a: &Cluster, b: &Cluster) {
    let started = Instant::now();
    let mut named = None;
    let (mut ca, mut cb) = (a.connect(), b.connect());
    let mut sent = 0;
    while started.elapsed() < Duration::from_secs(20) {
        ca.batch_execute("INSERT INTO t (node, n) SELECT 'a', g FROM generate_series(1, 200) g").unwrap();
        cb.batch_execute("INSERT INTO t (node, n) SELECT 'b', g FROM generate_series(1, 200) g").unwrap();
        sent += 200;
        let problem: Option<String> = ca.query_one("SELECT problem FROM snowflake_id_status", &[]).unwrap().get(0);
        if let Some(p) = problem {
            named = Some((p, started.elapsed()));
            break;
        }
        thread::sleep(Duration::from_millis(50));
    }
    let (problem, after) = named.expect("a's status never named the shared worker id");
    assert!(after < Duration::from_secs(10), "named only after {after:?}");
    assert!(problem.contains("worker id 3") && problem.contains("origin"), "{problem}");
    // The exporter's gauge: the query of monitoring/postgres_exporter.yaml.
    assert_eq!(a.query_i64("SELECT (problem IS NOT NULL)::int::int8 FROM snowflake_id_status"), 1);
    wait_until("a WARNING in a's log", Duration::from_secs(5), || {
        a.log().lines().any(|l| l.contains("WARNING:") && l.contains("worker id 3") && l.contains("origin"))
    });
    // B only sends: it receives nothing, and says nothing.
    let problem_b: Option<String> = cb.query_one("SELECT problem FROM snowflake_id_status", &[]).unwrap().get(0);
    assert_eq!(problem_b, None);
    // The apply kept running: every row of b arrived, no error anywhere.
    wait_until("b's rows on a", Duration::from_secs(30), || {
        a.query_i64("SELECT count(*) FROM t WHERE node = 'b'") >= sent
    });
    assert_eq!(errors_in_log(a), Vec::<String>::new());
}

#[test]
fn guard_received_ids_that_cannot_be_ours_are_left_alone() {
    let publisher = node(&["snowflake_id.worker_id = 1"]);
    create_table(&publisher, TABLE);
    publisher.sql("CREATE PUBLICATION p FOR TABLE t");
    let subscriber = node(&["snowflake_id.worker_id = 9"]);
    create_table(&subscriber, TABLE);
    subscribe(&subscriber, &publisher, "s", false);
    let now_id = subscriber.query_i64("SELECT snowflake_nextval()");
    let day = 86_400_000i64 << 22;
    // Negative; another worker id ten days ahead; ours ten days ahead (another
    // layout, or a clock far off); ours a minute behind (moved past: nothing to do).
    let odd = [-5, now_id + 10 * day - (9 << 12) + (4 << 12), now_id + 10 * day, now_id - (60_000 << 22)];
    for id in odd {
        publisher.sql(&format!("INSERT INTO t (id, node) VALUES ({id}, 'odd')"));
    }
    wait_until("the odd rows applied", Duration::from_secs(30), || {
        subscriber.query_i64("SELECT count(*) FROM t WHERE node = 'odd'") == odd.len() as i64
    });
    let next = subscriber.query_i64("SELECT snowflake_nextval()");
    assert!(next > now_id, "IDs still increase");
    assert!(common::id_unix_ms(next) - common::id_unix_ms(now_id) < 60_000, "the generator jumped ahead: {next}");
    assert_eq!(errors_in_log(&subscriber), Vec::<String>::new());
    assert!(
        subscriber.log().lines().any(|l| l.contains("WARNING:") && l.contains("not moved past")),
        "the implausible one is reported"
    );
}

#[test]
fn the_guard_is_on_every_table_with_a_snowflake_default_and_only_there() {
    let n = node(&["snowflake_id.worker_id = 4"]);
    n.sql(TABLE);
    n.sql("CREATE TABLE plain (id bigint PRIMARY KEY)");
    n.sql("CREATE TABLE later (id bigint PRIMARY KEY)");
    n.sql("ALTER TABLE later ALTER COLUMN id SET DEFAULT snowflake_nextval()");
    // A partitioned table given the default on its parent (the usual
    // migration), and a partition attached afterwards: the leaves are
    // guarded (the event trigger once saw the parent only).
    n.sql(
        "CREATE TABLE pp (id bigint NOT NULL, v int) PARTITION BY RANGE (v);
         CREATE TABLE pp1 PARTITION OF pp FOR VALUES FROM (0) TO (100);
         ALTER TABLE pp ALTER COLUMN id SET DEFAULT snowflake_nextval();
         CREATE TABLE pp2 (id bigint NOT NULL DEFAULT snowflake_nextval(), v int);
         ALTER TABLE pp ATTACH PARTITION pp2 FOR VALUES FROM (100) TO (200);",
    );
    let guarded = n.query_text(
        "SELECT string_agg(tgrelid::regclass::text || ':' || tgenabled::text, ',' ORDER BY tgrelid::regclass::text)
           FROM pg_trigger WHERE tgname = 'snowflake_id_received'",
    );
    assert_eq!(guarded, "later:R,pp1:R,pp2:R,t:R");
    // Made again by hand: nothing to do.
    assert_eq!(n.query_i64("SELECT count(*) FROM snowflake_logical_guard()"), 0);
    // A local insert never fires it (it is a REPLICA trigger): a row of this
    // server's worker id four minutes ahead, inserted by a local session,
    // leaves the next ID at the clock and raises no problem.
    n.sql(&format!("INSERT INTO t (id, node) VALUES ({}, 'local')", ahead_sql(4, 4)));
    let lead_ms = n.query_i64(
        "SELECT (extract(epoch FROM (snowflake_decode(snowflake_nextval())).ts - clock_timestamp()) * 1000)::bigint",
    );
    assert!(lead_ms < 60_000, "a local insert moved the generator {lead_ms} ms ahead");
    assert_eq!(n.query_text("SELECT coalesce(problem, '') FROM snowflake_id_status"), "");
}

/// pg_dump carries the guard's triggers; the event trigger stays out of the
/// restore's way (a trigger it made first would fail the dump's CREATE TRIGGER).
#[test]
fn a_dump_restores_with_its_guard_and_without_an_error() {
    let n = node(&["snowflake_id.worker_id = 4"]);
    n.sql(TABLE);
    n.sql("INSERT INTO t (node) VALUES ('before the dump')");
    let dump = n.socket_dir().join("dump.sql");
    let socket = n.socket_dir().display().to_string();
    let port = n.port.to_string();
    common::check(
        "pg_dump",
        common::run_as_postgres(
            &[&n.tool("pg_dump"), "-h", &socket, "-p", &port, "-d", "postgres", "-f", dump.to_str().unwrap()],
            &[],
        ),
    );
    n.sql("CREATE DATABASE restored");
    let out = common::check(
        "psql -f dump.sql",
        common::run_as_postgres(
            &[
                &n.tool("psql"),
                "-h",
                &socket,
                "-p",
                &port,
                "-d",
                "restored",
                "-v",
                "ON_ERROR_STOP=1",
                "-f",
                dump.to_str().unwrap(),
            ],
            &[],
        ),
    );
    assert!(!String::from_utf8_lossy(&out.stderr).contains("ERROR"), "{}", String::from_utf8_lossy(&out.stderr));
    let mut cfg = n.config();
    cfg.dbname("restored");
    let mut c = cfg.connect(postgres::NoTls).expect("connect to the restored database");
    let enabled: String = c
        .query_one(
            "SELECT string_agg(tgenabled::text, ',') FROM pg_trigger WHERE tgname = 'snowflake_id_received'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(enabled, "R");
}

/// The benchmark of docs/benchmarks.md ("Logical apply"): not a test (run
/// it with `cargo test --test logical -- --ignored --nocapture`). A
/// subscriber applies transactions of `ROWS` rows into two identical tables,
/// one with the guard's trigger and one without, in alternation; the rows
/// carry the subscriber's own worker id (blue/green: the guard's work is
/// largest). The time is from the publisher's commit until the last row is
/// visible on the subscriber; the median of seven per table.
#[test]
#[ignore]
fn apply_throughput_with_and_without_the_guard() {
    const ROWS: i64 = 100_000;
    let publisher = node(&["snowflake_id.worker_id = 7"]);
    let subscriber = node(&["snowflake_id.worker_id = 7"]);
    for n in [&publisher, &subscriber] {
        n.sql("CREATE TABLE guarded (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), payload text, n int)");
        n.sql("CREATE TABLE plain (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), payload text, n int)");
    }
    publisher.sql("CREATE PUBLICATION p FOR TABLE guarded, plain");
    subscriber.sql("ALTER EVENT TRIGGER snowflake_id_logical_guard DISABLE");
    subscriber.sql("ALTER TABLE plain DISABLE TRIGGER snowflake_id_received");
    subscribe(&subscriber, &publisher, "s", false);
    let mut pc = publisher.connect();
    let mut sc = subscriber.connect();
    let mut times: [Vec<f64>; 2] = [vec![], vec![]];
    for round in 0..14 {
        let table = ["guarded", "plain"][round % 2];
        let last = pc
            .query_one(
                &format!(
                    "WITH i AS (INSERT INTO {table} (payload, n) SELECT 'row ' || g, g FROM generate_series(1, {ROWS}) g \
                     RETURNING id) SELECT max(id) FROM i"
                ),
                &[],
            )
            .unwrap()
            .get::<_, i64>(0);
        let committed = Instant::now();
        let probe = format!("SELECT EXISTS (SELECT FROM {table} WHERE id = {last})");
        while !sc.query_one(&probe, &[]).unwrap().get::<_, bool>(0) {
            thread::sleep(Duration::from_millis(5));
            assert!(committed.elapsed() < Duration::from_secs(120), "apply stalled");
        }
        times[round % 2].push(committed.elapsed().as_secs_f64());
        eprintln!("{table}: {:.3}", committed.elapsed().as_secs_f64());
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (with, without) = (median(&mut times[0]), median(&mut times[1]));
    let guarded = subscriber.query_i64("SELECT count(*) FROM guarded");
    assert_eq!(guarded, 7 * ROWS);
    println!(
        "PostgreSQL {}: apply of {ROWS} rows per transaction: with the guard {:.0} rows/s ({with:.3} s), \
         without {:.0} rows/s ({without:.3} s): {:.3}x",
        common::pg_major(),
        ROWS as f64 / with,
        ROWS as f64 / without,
        without / with
    );
    assert_eq!(errors_in_log(&subscriber), Vec::<String>::new());
}

/// `snowflake_cluster_check()` on a subscriber: the
/// publisher of each subscription is asked for its status. A publisher
/// issuing with this node's worker id is named, and so is this node; one
/// with a worker id of its own is not; one without the extension, or down,
/// is named with why. An ordinary role's call connects to nothing and says
/// so; no row ever shows a connection string. On every major: a one-way
/// subscription is enough (no `origin = none`).
#[test]
fn the_cluster_check_names_a_publisher_sharing_this_nodes_worker_id() {
    let shared = node(&["snowflake_id.worker_id = 3"]);
    let mut own = node(&["snowflake_id.worker_id = 4"]);
    for n in [&shared, &own] {
        create_table(n, TABLE);
        n.sql("CREATE PUBLICATION p FOR TABLE t");
    }
    let subscriber = node(&["snowflake_id.worker_id = 3"]);
    create_table(&subscriber, TABLE);
    let check = |who: &mut postgres::Client| -> Vec<(String, Option<i64>, String)> {
        who.query("SELECT node, worker_id, problem FROM snowflake_cluster_check()", &[])
            .unwrap_or_else(|e| panic!("snowflake_cluster_check(): {}", describe(&e)))
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect()
    };
    let secret = |rows: &[(String, Option<i64>, String)]| {
        let socket = shared.socket_dir().display().to_string();
        rows.iter().any(|(n, _, p)| n.contains(&socket) || p.contains(&socket) || p.contains("host="))
    };

    subscribe(&subscriber, &shared, "from_shared", false);
    let rows = check(&mut subscriber.connect());
    let named = "worker id 3 shared by publisher of subscription \"from_shared\", this node";
    assert_eq!(rows.len(), 2, "{rows:#?}");
    assert_eq!(rows[0].0, "publisher of subscription \"from_shared\"", "{rows:#?}");
    assert_eq!(rows[1].0, "this node", "{rows:#?}");
    assert!(rows.iter().all(|(_, w, p)| *w == Some(3) && p == named), "{rows:#?}");
    assert!(!secret(&rows), "{rows:#?}");

    // An ordinary role may run it, and learns only that it may not look.
    subscriber.sql("CREATE ROLE watcher LOGIN");
    let mut watcher = subscriber.config().user("watcher").connect(postgres::NoTls).expect("connect as watcher");
    let rows = check(&mut watcher);
    assert_eq!(rows.len(), 1, "{rows:#?}");
    assert!(rows[0].2.starts_with("not checked: only a superuser's call"), "{rows:#?}");
    assert!(!secret(&rows), "{rows:#?}");

    // Distinct worker ids: nothing to say.
    subscriber.sql("DROP SUBSCRIPTION from_shared");
    subscribe(&subscriber, &own, "from_own", false);
    assert_eq!(check(&mut subscriber.connect()), vec![]);

    // A publisher without the extension, then one that is down.
    own.sql("DROP EXTENSION snowflake_id CASCADE");
    let rows = check(&mut subscriber.connect());
    assert_eq!(rows.len(), 1, "{rows:#?}");
    assert!(rows[0].2.contains("snowflake_id is not created in the publisher's database"), "{rows:#?}");
    own.stop();
    let rows = check(&mut subscriber.connect());
    assert_eq!(rows.len(), 1, "{rows:#?}");
    assert!(rows[0].2.starts_with("no answer: could not connect"), "{rows:#?}");
    assert!(!secret(&rows), "{rows:#?}");
}

/// A subscriber table with a column the publisher does not send, defaulting
/// to `snowflake_nextval()`: the apply worker evaluates that default, so an
/// apply can meet the generator's `max_drift`.
const LOCAL_KEY: &str =
    "CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), node text NOT NULL, n int, \
                         local bigint NOT NULL DEFAULT snowflake_nextval())";

/// An ID of `worker` at `minutes` ahead of the server's clock, as SQL.
fn ahead_sql(worker: i64, minutes: i64) -> String {
    format!(
        "((((extract(epoch FROM clock_timestamp()) * 1000)::bigint - 1735689600000 + {}) << 22) | ({worker} << 12))",
        minutes * 60_000
    )
}

/// The guard never waits: a received ID of this server's worker id four
/// minutes ahead of its clock moves the generator past it as skew (like
/// `snowflake_advance_past`), so neither the apply worker's own calls of
/// `snowflake_nextval()` (a subscriber-only column's default) nor a local
/// session's wait out `max_drift` for the four minutes: no caller waited at
/// all, and every ID issued afterwards is above the received one.
#[test]
fn guard_an_apply_of_ids_minutes_ahead_never_waits_out_max_drift() {
    let publisher = node(&["snowflake_id.worker_id = 1"]);
    create_table(&publisher, TABLE);
    publisher.sql("CREATE PUBLICATION p FOR TABLE t");
    let subscriber = node(&["snowflake_id.worker_id = 5"]);
    create_table(&subscriber, LOCAL_KEY);
    subscribe(&subscriber, &publisher, "s", false);
    // One transaction: the row four minutes ahead first, then 1,000 more
    // whose `local` the apply worker draws after it.
    publisher.sql(&format!(
        "BEGIN;
         INSERT INTO t (id, node, n) VALUES ({}, 'ahead', 0);
         INSERT INTO t (node, n) SELECT 'after', g FROM generate_series(1, 1000) g;
         COMMIT;",
        ahead_sql(5, 4)
    ));
    let ahead = publisher.query_i64("SELECT id FROM t WHERE node = 'ahead'");
    // Four minutes of max_drift waits would be far past this.
    wait_until("the burst applied", Duration::from_secs(30), || subscriber.query_i64("SELECT count(*) FROM t") == 1001);
    let mut c = subscriber.connect();
    c.batch_execute("SET statement_timeout = '10s'").unwrap();
    let local: i64 =
        c.query_one("SELECT snowflake_nextval()", &[]).unwrap_or_else(|e| panic!("{}", describe(&e))).get(0);
    let drawn_after = subscriber.query_i64("SELECT min(local) FROM t WHERE node = 'after'");
    assert!(drawn_after > ahead, "the apply worker drew {drawn_after}, not above the received {ahead}");
    assert!(local > ahead, "a local session drew {local}, not above the received {ahead}");
    assert_eq!(subscriber.query_i64("SELECT waits FROM snowflake_id_status"), 0, "a caller waited out max_drift");
    assert_eq!(errors_in_log(&subscriber), Vec::<String>::new());
}

/// Where an apply does wait out `max_drift` (a burst past the layout's
/// ceiling: here one ID per millisecond, `sequence_bits = 0`, drawn by the
/// apply worker for a subscriber-only column), the wait is interruptible
/// like any other: disabling the subscription and terminating the apply
/// worker ends it at once, its transaction rolled back, instead of after
/// the burst's minutes of waits.
#[test]
fn an_apply_waiting_out_max_drift_is_interrupted_at_once() {
    let publisher = node(&["snowflake_id.worker_id = 1"]);
    publisher.sql("CREATE TABLE t (n int PRIMARY KEY)");
    publisher.sql("CREATE PUBLICATION p FOR TABLE t");
    let subscriber =
        node(&["snowflake_id.worker_id = 2", "snowflake_id.sequence_bits = 0", "snowflake_id.max_drift = '10ms'"]);
    create_table(&subscriber, "CREATE TABLE t (n int PRIMARY KEY, local bigint NOT NULL DEFAULT snowflake_nextval())");
    subscribe(&subscriber, &publisher, "s", false);
    // 300,000 rows at one ID per millisecond: five minutes of applying.
    publisher.sql("INSERT INTO t SELECT g FROM generate_series(1, 300000) g");
    let apply_pid =
        || subscriber.query_i64("SELECT coalesce(max(pid), 0)::int8 FROM pg_stat_subscription WHERE subname = 's'");
    wait_until("the apply worker waiting out max_drift", Duration::from_secs(60), || {
        subscriber.query_i64("SELECT waits FROM snowflake_id_status") > 100
    });
    let pid = apply_pid();
    assert!(pid > 0);
    subscriber.sql("ALTER SUBSCRIPTION s DISABLE");
    let asked = Instant::now();
    subscriber.sql(&format!("SELECT pg_terminate_backend({pid})"));
    wait_until("the apply worker gone", Duration::from_secs(10), || {
        subscriber.query_i64(&format!("SELECT count(*) FROM pg_stat_activity WHERE pid = {pid}")) == 0
    });
    let took = asked.elapsed();
    assert!(took < Duration::from_secs(5), "the apply worker took {took:?} to stop");
    assert_eq!(subscriber.query_i64("SELECT count(*) FROM t"), 0, "the interrupted transaction was not rolled back");
    assert_eq!(apply_pid(), 0, "the disabled subscription's worker came back");
}

/// In 0.6.0 as first written, the publishers behind this node's
/// subscriptions were compared row by row, so one publisher behind two subscriptions, or a
/// database of this very server behind a subscription, read as a "shared"
/// worker id. Neither shares anything: one generator issues each, and this
/// server's databases share its generator. The check must name nothing.
#[test]
fn one_publisher_behind_two_subscriptions_and_this_server_behind_a_third_share_no_worker_id() {
    let publisher = node(&["snowflake_id.worker_id = 1"]);
    create_table(&publisher, TABLE);
    publisher.sql("CREATE PUBLICATION p FOR TABLE t");
    let subscriber = node(&["snowflake_id.worker_id = 9"]);
    create_table(&subscriber, TABLE);
    subscribe(&subscriber, &publisher, "s1", false);
    subscriber.sql(&format!(
        "CREATE SUBSCRIPTION s2 CONNECTION '{}' PUBLICATION p WITH (connect = false)",
        conninfo(&publisher)
    ));
    // Another database of the subscriber's own server, as a publisher.
    subscriber.sql("CREATE DATABASE other");
    let mut config = subscriber.config();
    config.dbname("other");
    let mut other = config.connect(postgres::NoTls).unwrap_or_else(|e| panic!("database other: {}", describe(&e)));
    other
        .batch_execute(
            "CREATE EXTENSION snowflake_id; CREATE TABLE u (id bigint PRIMARY KEY); CREATE PUBLICATION q FOR TABLE u",
        )
        .unwrap_or_else(|e| panic!("database other: {}", describe(&e)));
    subscriber.sql(&format!(
        "CREATE SUBSCRIPTION s3 CONNECTION 'host={} port={} dbname=other user=postgres' PUBLICATION q \
         WITH (connect = false)",
        subscriber.socket_dir().display(),
        subscriber.port
    ));
    // A publisher that does share worker id 9: named alone, so the check
    // compared every publisher above and found nothing to say of them.
    let peer = node(&["snowflake_id.worker_id = 9"]);
    subscriber
        .sql(&format!("CREATE SUBSCRIPTION s4 CONNECTION '{}' PUBLICATION p WITH (connect = false)", conninfo(&peer)));
    let rows = cluster_problems(&subscriber);
    let named = "worker id 9 shared by publisher of subscription \"s4\", this node";
    assert_eq!(
        rows,
        vec![("publisher of subscription \"s4\"".to_string(), named.to_string()), ("this node".into(), named.into())],
        "false alarms, or the check compared nothing"
    );
}

/// Since 19 a subscription may connect through a foreign server (`CREATE
/// SUBSCRIPTION ... SERVER`), with no connection string of its own: the
/// check cannot ask that publisher (its connection string is built by the
/// wrapper's C code), and says so by the server's name rather than "no
/// connection string", which would be false.
#[test]
fn a_subscription_through_a_foreign_server_is_named_not_checked_with_its_server() {
    if common::pg_major() < 19 {
        return common::not_on_this_major("CREATE SUBSCRIPTION ... SERVER is new in 19");
    }
    let publisher = node(&["snowflake_id.worker_id = 7"]);
    create_table(&publisher, TABLE);
    publisher.sql("CREATE PUBLICATION p FOR TABLE t");
    let subscriber = node(&["snowflake_id.worker_id = 8"]);
    create_table(&subscriber, TABLE);
    subscriber.sql("CREATE EXTENSION postgres_fdw");
    subscriber.sql(&format!(
        "CREATE SERVER pubsrv FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '{}', port '{}', dbname 'postgres')",
        publisher.socket_dir().display(),
        publisher.port
    ));
    subscriber.sql("CREATE USER MAPPING FOR postgres SERVER pubsrv OPTIONS (user 'postgres')");
    subscriber.sql("CREATE SUBSCRIPTION through_server SERVER pubsrv PUBLICATION p WITH (copy_data = false)");
    // The subscription works: rows arrive through it.
    publisher.sql("INSERT INTO t (node, n) SELECT 'publisher', g FROM generate_series(1, 10) g");
    wait_until("rows through the foreign server", Duration::from_secs(30), || {
        subscriber.query_i64("SELECT count(*) FROM t") == 10
    });
    let rows = cluster_problems(&subscriber);
    assert_eq!(
        rows,
        vec![(
            "publisher of subscription \"through_server\"".to_string(),
            "not checked: connects through foreign server \"pubsrv\" (check that publisher's worker id by hand)"
                .to_string()
        )],
        "the subscription through a foreign server is not named with its server"
    );
}

/// Publishers that accept a connection and never answer (a Python-like
/// listener here) once took 10 s to connect, and 10 s per query, each, one
/// after another: six of them took a minute, the cluster watch's whole
/// allowance for the check. All publishers together now get a few seconds
/// (6 s), a disabled subscription's 1 s of it; the rest are named "not
/// checked: out of time". (The bound asserted is generous: it tells a shared budget
/// from ten seconds a publisher.)
#[test]
fn publishers_that_never_answer_cost_the_check_one_short_budget_in_all() {
    use std::net::TcpListener;
    let listener = TcpListener::bind("127.0.0.1:0").expect("listen");
    let port = listener.local_addr().expect("address").port();
    // Accepts every connection and keeps it open, silent, until the test ends.
    thread::spawn(move || {
        let mut held = vec![];
        for stream in listener.incoming() {
            held.push(stream);
        }
    });
    let subscriber = node(&["snowflake_id.worker_id = 9"]);
    for i in 0..8 {
        subscriber.sql(&format!(
            "CREATE SUBSCRIPTION silent{i} CONNECTION 'host=127.0.0.1 port={port} dbname=postgres user=postgres \
             connect_timeout=30' PUBLICATION p WITH (connect = false)"
        ));
    }
    let t0 = Instant::now();
    let rows = cluster_problems(&subscriber);
    let took = t0.elapsed();
    assert!(took < Duration::from_secs(25), "the check took {took:?}: {rows:?}");
    assert_eq!(rows.len(), 8, "{rows:?}");
    assert!(
        rows.iter().all(|(_, p)| p.starts_with("no answer") || p.starts_with("not checked: out of time")),
        "{rows:?}"
    );
    assert!(rows.iter().any(|(_, p)| p.starts_with("not checked: out of time")), "{rows:?}");
}

/// A subscription's name (from 16, any role with pg_create_subscription
/// chooses one) is shown in the check's rows, and the cluster watch logs
/// those rows as WARNING lines: a newline in it would forge a line of the
/// log. Control characters are escaped.
#[test]
fn a_subscription_name_with_a_newline_is_shown_escaped() {
    let subscriber = node(&["snowflake_id.worker_id = 9"]);
    subscriber.sql(
        "CREATE SUBSCRIPTION \"x\nWARNING:  forged\" CONNECTION 'host=127.0.0.1 port=1 dbname=postgres' \
         PUBLICATION p WITH (connect = false)",
    );
    let nodes: Vec<String> = cluster_problems(&subscriber).into_iter().map(|(n, _)| n).collect();
    assert_eq!(nodes, vec!["publisher of subscription \"x\\nWARNING:  forged\"".to_string()]);
}

/// A server that revokes EXECUTE on `pg_control_system()` from PUBLIC (a
/// hardened one) is still compared, and an ordinary role's own check still
/// answers there: the server identity in each answer once read it under a
/// CASE, which does not stop the function's EXECUTE being checked when the
/// query starts; the publisher answered "permission denied" and a real
/// shared worker id went unnamed. The identity is now
/// the postmaster's start and port, every role's to read.
#[test]
fn a_server_without_pg_control_system_for_the_role_is_still_compared() {
    let publisher = node(&["snowflake_id.worker_id = 9"]);
    create_table(&publisher, TABLE);
    publisher.sql(
        "CREATE PUBLICATION p FOR TABLE t; CREATE ROLE rep LOGIN REPLICATION; GRANT SELECT ON t TO rep;
         REVOKE EXECUTE ON FUNCTION pg_catalog.pg_control_system() FROM PUBLIC",
    );
    let subscriber = node(&["snowflake_id.worker_id = 9"]);
    create_table(&subscriber, TABLE);
    subscriber.sql(&format!(
        "CREATE SUBSCRIPTION s1 CONNECTION 'host={} port={} dbname=postgres user=rep' PUBLICATION p \
         WITH (connect = false)",
        publisher.socket_dir().display(),
        publisher.port
    ));
    let rows = cluster_problems(&subscriber);
    assert!(
        rows.iter().any(|(n, p)| n.contains("\"s1\"") && p.contains("worker id 9 shared")),
        "the publisher on worker id 9 was not compared: {rows:?}"
    );
    // An ordinary role's call on a server where it may not run it either.
    subscriber.sql("REVOKE EXECUTE ON FUNCTION pg_catalog.pg_control_system() FROM PUBLIC; CREATE ROLE app LOGIN");
    let mut app = subscriber.connect();
    app.batch_execute("SET ROLE app").unwrap();
    app.query("SELECT node, problem FROM snowflake_cluster_check()", &[])
        .unwrap_or_else(|e| panic!("snowflake_cluster_check() as an ordinary role: {}", describe(&e)));
}

/// Every writer of a replicated table is trusted with its
/// key column, within a bound (docs/security.md, "Writers of replicated
/// tables"). An ordinary writer on the publisher inserts a key carrying the
/// subscriber's worker id: three minutes ahead, the subscriber follows it
/// (its next ID is above the row, as a blue/green successor's must be);
/// seven minutes ahead, past the five-minute bound, it does not (the next
/// ID stays within five minutes of the clock, and a WARNING names the row);
/// and the second such row, after the subscriber issued IDs, is reported
/// as a peer sharing its worker id.
#[test]
fn guard_a_publishers_writer_moves_a_subscriber_at_most_five_minutes_ahead() {
    let publisher = node(&["snowflake_id.worker_id = 1"]);
    create_table(&publisher, TABLE);
    publisher.sql("CREATE PUBLICATION p FOR TABLE t; CREATE ROLE writer LOGIN; GRANT INSERT ON t TO writer;");
    let subscriber = node(&["snowflake_id.worker_id = 6"]);
    create_table(&subscriber, TABLE);
    subscribe(&subscriber, &publisher, "s", false);
    let lead_ms = || {
        subscriber.query_i64(
            "SELECT (extract(epoch FROM (snowflake_decode(snowflake_nextval())).ts - clock_timestamp()) * 1000)::bigint",
        )
    };
    assert!(lead_ms() < 60_000);
    let mut writer = publisher.config().user("writer").connect(postgres::NoTls).expect("connect as writer");
    let mut craft = |minutes: i64, node: &str| {
        writer
            .batch_execute(&format!("INSERT INTO t (id, node) VALUES ({}, '{node}')", ahead_sql(6, minutes)))
            .unwrap_or_else(|e| panic!("the writer's row: {}", describe(&e)));
        wait_until(&format!("{node} applied"), Duration::from_secs(30), || {
            subscriber.query_i64(&format!("SELECT count(*) FROM t WHERE node = '{node}'")) == 1
        });
    };
    craft(3, "three");
    let lead = lead_ms();
    assert!((170_000..300_000).contains(&lead), "three minutes ahead: the next ID leads the clock by {lead} ms");
    craft(7, "seven");
    let lead = lead_ms();
    assert!(lead < 300_000, "seven minutes ahead: the next ID leads the clock by {lead} ms");
    assert!(
        subscriber.log().lines().any(|l| l.contains("WARNING:") && l.contains("not moved past")),
        "the row past the bound is not named"
    );
    let problem = subscriber.query_text("SELECT coalesce(problem, '') FROM snowflake_id_status");
    assert!(problem.contains("worker id 6 is used by a logical replication peer too"), "{problem:?}");
    assert_eq!(errors_in_log(&subscriber), Vec::<String>::new());
}

/// A guard trigger that names a column the table no longer has lets the
/// row in and says so, rate-limited; its hint is the typed, schema-qualified
/// call that makes the trigger anew (an unqualified
/// `snowflake_logical_guard()` is another role's to make ambiguous), and
/// that call, run as the hint says, does.
#[test]
fn a_trigger_naming_a_missing_column_is_named_with_the_call_that_remakes_it() {
    let publisher = node(&["snowflake_id.worker_id = 1"]);
    create_table(&publisher, TABLE);
    publisher.sql("CREATE PUBLICATION p FOR TABLE t");
    let subscriber = node(&["snowflake_id.worker_id = 7"]);
    create_table(&subscriber, TABLE);
    // Made by hand with event triggers off (replica mode), so that the
    // event trigger does not remake it at once.
    subscriber.sql(
        "SET session_replication_role = replica;
         DROP TRIGGER snowflake_id_received ON t;
         CREATE TRIGGER snowflake_id_received BEFORE INSERT ON t FOR EACH ROW EXECUTE FUNCTION snowflake_id_received('gone');
         ALTER TABLE t ENABLE REPLICA TRIGGER snowflake_id_received;",
    );
    subscribe(&subscriber, &publisher, "s", false);
    publisher.sql("INSERT INTO t (node) VALUES ('p')");
    wait_until("the row applied", Duration::from_secs(30), || {
        subscriber.query_i64("SELECT count(*) FROM t WHERE node = 'p'") == 1
    });
    let call = "SELECT * FROM snowflake_id_internal.snowflake_logical_guard('public.t'::pg_catalog.regclass);";
    let log = subscriber.log();
    assert!(
        log.lines().any(|l| l.contains("WARNING:") && l.contains("names column \"gone\"") && l.contains(call)),
        "no WARNING with the call {call}:\n{log}"
    );
    let remade = subscriber
        .query_text(&format!("SELECT string_agg(table_name::text, ',') FROM ({}) g", call.trim_end_matches(';')));
    assert_eq!(remade, "t");
    assert_eq!(errors_in_log(&subscriber), Vec::<String>::new());
}
