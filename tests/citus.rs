//! Citus (distributed PostgreSQL) with the library on every node: a
//! coordinator and two workers, each a real server with
//! `shared_preload_libraries = 'citus,snowflake_id'`, talking over their Unix
//! sockets. Which node evaluates `DEFAULT snowflake_nextval()` depends on how
//! Citus runs the statement: the coordinator for routed inserts, multi-row
//! VALUES and COPY; the workers for `INSERT ... SELECT` between distributed
//! tables (both the repartition and the pull-to-coordinator methods),
//! delegated function calls and any statement sent to a worker. Every test
//! collects every ID it made and checks them distinct with every node on its
//! own worker id, by hand or leased from a registry in the coordinator's
//! database; and one shows what two nodes on the same worker id do today
//! (duplicates, silently). Citus 13.2 is built for Debian 12's PostgreSQL 15
//! (`../shared/citus`, installed by `scripts/setup.sh`): on other majors
//! each test prints SKIPPED and passes; on 15 without Citus each fails,
//! unless `SNOWFLAKE_SKIP` names it (tests/common/mod.rs). docs/citus.md
//! has what these tests show.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use common::{describe, ids, Cluster};
use postgres::Client;

/// Citus must be loaded first, or it refuses to start.
const PRELOAD: &str = "shared_preload_libraries = 'citus,snowflake_id'";

/// True when Citus can run here (PostgreSQL 15 with `citus.so` installed);
/// otherwise says the test is skipped and why: on another major by design,
/// on 15 without Citus only when the test command skips it by name.
fn citus_here() -> bool {
    if !common::only_on_major(15, "Citus 13.2 (../shared/citus) is built for Debian 12's PostgreSQL 15 only") {
        return false;
    }
    let out = common::check(
        "pg_config --pkglibdir",
        Command::new(common::tool("pg_config")).arg("--pkglibdir").output().expect("pg_config"),
    );
    let lib = Path::new(String::from_utf8_lossy(&out.stdout).trim()).join("citus.so");
    if !lib.exists() {
        common::cannot_run(&format!(
            "Citus is not installed ({} is missing; bash scripts/setup.sh installs it from ../shared/citus)",
            lib.display()
        ));
    }
    lib.exists()
}

/// The worker id bits of an ID in the default layout (10 worker, 12 sequence bits).
fn worker_of(id: i64) -> i64 {
    (id >> 12) & 1023
}

fn workers_of(ids: &[i64]) -> BTreeSet<i64> {
    ids.iter().map(|id| worker_of(*id)).collect()
}

/// How many IDs of `ids` are a repeat of one before them.
fn repeats(ids: &[i64]) -> usize {
    ids.len() - ids.iter().collect::<BTreeSet<_>>().len()
}

/// A coordinator and its workers, each a [`Cluster`] with Citus created;
/// the workers are registered with the coordinator by their socket
/// directory and port (Citus takes a socket directory for a host name).
struct Citus {
    coordinator: Cluster,
    workers: Vec<Cluster>,
}

/// A node not started yet: both libraries preloaded (Citus first), few
/// shards (quicker DDL, two per worker and table), `conf` on top.
fn citus_node_init(name: &str, conf: &[&str]) -> Cluster {
    let name_line = format!("snowflake_id.node_name = '{name}'");
    let mut lines = vec![PRELOAD, "max_connections = 100", "citus.shard_count = 4", name_line.as_str()];
    lines.extend_from_slice(conf);
    Cluster::init(&lines)
}

/// Starts `node` and creates Citus in its `postgres` database.
fn citus_node_start(node: &mut Cluster) {
    node.start();
    node.sql("CREATE EXTENSION citus");
}

/// The host name Citus knows `node` by: its socket directory.
fn host(node: &Cluster) -> String {
    node.socket_dir().display().to_string()
}

impl Citus {
    /// A Citus cluster of `coordinator` (made by [`citus_node_init`], not
    /// started) alone: started, Citus created, and told its own address.
    fn new(mut coordinator: Cluster) -> Citus {
        citus_node_start(&mut coordinator);
        coordinator.sql(&format!("SELECT citus_set_coordinator_host('{}', {})", host(&coordinator), coordinator.port));
        Citus { coordinator, workers: vec![] }
    }

    /// Every node on its own static worker id: `ids[0]` the coordinator's,
    /// then one worker per further entry; the extension created on the
    /// coordinator (and by Citus on every worker).
    fn with_worker_ids(ids: &[i64]) -> Citus {
        let line = |id: i64| format!("snowflake_id.worker_id = {id}");
        let mut citus = Citus::new(citus_node_init("coordinator", &[&line(ids[0])]));
        for id in &ids[1..] {
            citus.add_worker(&[&line(*id)]);
        }
        citus.coordinator.sql("CREATE EXTENSION snowflake_id");
        citus
    }

    /// A new worker with `conf`, started, with Citus created, added with
    /// `citus_add_node` (which creates on it the extensions the coordinator
    /// has); its index in `workers`.
    fn add_worker(&mut self, conf: &[&str]) -> usize {
        let i = self.workers.len();
        let mut worker = citus_node_init(&format!("worker{}", i + 1), conf);
        citus_node_start(&mut worker);
        self.coordinator.sql(&format!("SELECT citus_add_node('{}', {})", host(&worker), worker.port));
        self.workers.push(worker);
        i
    }

    fn connect(&self) -> Client {
        self.coordinator.connect()
    }

    /// Every node's worker id and layout as the coordinator sees it through
    /// Citus, by [`CLUSTER_CHECK`]: (host:port, success, result).
    fn cluster_check(&self) -> Vec<(String, bool, String)> {
        self.connect()
            .query(CLUSTER_CHECK, &[])
            .unwrap_or_else(|e| panic!("cluster check: {}", describe(&e)))
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect()
    }

    /// `snowflake_cluster_check()` on the coordinator: (host:port, problem)
    /// of each node with one.
    fn cluster_problems(&self) -> Vec<(String, String)> {
        self.cluster_problem_rows().into_iter().map(|r| (r.node, r.problem)).collect()
    }

    /// Every column of `snowflake_cluster_check()`'s rows.
    fn cluster_problem_rows(&self) -> Vec<ProblemRow> {
        self.connect()
            .query("SELECT node, worker_id, layout, problem FROM snowflake_cluster_check()", &[])
            .unwrap_or_else(|e| panic!("snowflake_cluster_check(): {}", describe(&e)))
            .iter()
            .map(|r| ProblemRow { node: r.get(0), worker_id: r.get(1), layout: r.get(2), problem: r.get(3) })
            .collect()
    }

    /// Checks every ID the test made, `all` (read back through the
    /// coordinator): `count` of them, no two equal, made under exactly
    /// `worker_ids`; and the cluster check finds nothing wrong. Prints what
    /// the test made and how long it took.
    fn assert_all_distinct(&self, all: &[i64], count: usize, worker_ids: &[i64], t0: Instant) {
        assert_eq!(all.len(), count);
        assert_eq!(repeats(all), 0, "duplicate IDs");
        assert_eq!(workers_of(all), worker_ids.iter().copied().collect(), "the worker ids of the IDs made");
        assert_eq!(self.cluster_problems(), Vec::<(String, String)>::new());
        eprintln!("{} IDs, worker ids {:?}, in {:.1} s", all.len(), workers_of(all), t0.elapsed().as_secs_f64());
    }

    /// host:port of a node, as the checks name it.
    fn name_of(node: &Cluster) -> String {
        format!("{}:{}", host(node), node.port)
    }

    /// The port of the node holding the shard of `table` for `value`.
    fn port_of_shard(&self, client: &mut Client, table: &str, value: i32) -> i32 {
        client
            .query_one(
                "SELECT nodeport FROM citus_shards WHERE shardid = get_shard_id_for_distribution_column($1::text::regclass, $2::int)",
                &[&table, &value],
            )
            .unwrap_or_else(|e| panic!("shard placement: {}", describe(&e)))
            .get(0)
    }

    /// Every WARNING about snowflake_id in any node's server log, without
    /// the time and process id that start each line.
    fn snowflake_warnings(&self) -> Vec<String> {
        std::iter::once(&self.coordinator)
            .chain(&self.workers)
            .flat_map(|n| n.log().lines().map(String::from).collect::<Vec<_>>())
            .filter_map(|l| l.find("WARNING:").map(|at| l[at..].to_string()))
            .filter(|l| l.contains("snowflake_id"))
            .collect()
    }

    /// The cluster watch's WARNINGs in the coordinator's log, as above.
    fn watch_warnings(&self) -> Vec<String> {
        let log = self.coordinator.log();
        log.lines().filter_map(|l| l.find("WARNING:  snowflake_id: node ").map(|at| l[at..].to_string())).collect()
    }
}

/// docs/citus.md's check of the whole cluster from the coordinator: every
/// node's worker id and layout (or its problem), by host and port.
const CLUSTER_CHECK: &str = "SELECT n.nodename || ':' || n.nodeport AS node, r.success, r.result
  FROM run_command_on_all_nodes($$SELECT concat_ws(' ', worker_id, worker_bits, sequence_bits, epoch, problem)
                                  FROM snowflake_id_status$$) r
  JOIN pg_dist_node n USING (nodeid)
 ORDER BY n.nodeid";

/// The README's check.
const README_CHECK: &str = "SELECT * FROM snowflake_cluster_check();";

/// docs/citus.md's scheduled check (the body pg_cron runs): a WARNING for
/// each node with a problem.
const SCHEDULED_CHECK: &str = "DO $check$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT * FROM snowflake_cluster_check() LOOP
        RAISE WARNING 'snowflake_id: node %: %', r.node, r.problem;
    END LOOP;
END
$check$;";

/// A row of `snowflake_cluster_check()`: a node with a problem.
#[derive(Debug)]
struct ProblemRow {
    node: String,
    worker_id: Option<i64>,
    layout: Option<String>,
    problem: String,
}

/// The default layout as `snowflake_cluster_check()` shows it.
const DEFAULT_LAYOUT: &str = "10/12/2025-01-01 00:00:00.000+00";

/// The worker id each row of a [`Citus::cluster_check`] starts with ("" when unset).
fn checked_worker_ids(check: &[(String, bool, String)]) -> Vec<String> {
    check.iter().map(|r| r.2.split(' ').next().unwrap_or_default().to_string()).collect()
}

/// The tables the tests write: `src` (rows to copy), `events` (distributed
/// by tenant, its key a snowflake ID) and `by_id` (distributed by the
/// snowflake ID itself, which Citus must know before it can route the row).
const TABLES: &str = "
    CREATE TABLE src (tenant int, payload text);
    SELECT create_distributed_table('src', 'tenant');
    CREATE TABLE events (tenant int NOT NULL, id bigint NOT NULL DEFAULT snowflake_nextval(), payload text,
                         PRIMARY KEY (tenant, id));
    SELECT create_distributed_table('events', 'tenant');
    CREATE TABLE by_id (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), tenant int, payload text);
    SELECT create_distributed_table('by_id', 'id');";

/// `rows` rows of `src`, tenants 0..50 (on every worker).
fn fill_src(client: &mut Client, rows: i64) {
    client
        .execute("INSERT INTO src SELECT g % 50, 'src ' || g FROM generate_series(1, $1::bigint) g", &[&rows])
        .unwrap_or_else(|e| panic!("fill src: {}", describe(&e)));
}

/// EXPLAIN's text of `sql`, one line per plan row.
fn explain(client: &mut Client, sql: &str) -> String {
    let plan = texts(client, &format!("EXPLAIN (VERBOSE, COSTS OFF) {sql}"));
    plan.join("\n")
}

fn texts(client: &mut Client, sql: &str) -> Vec<String> {
    client.query(sql, &[]).unwrap_or_else(|e| panic!("{sql}: {}", describe(&e))).iter().map(|r| r.get(0)).collect()
}

/// The IDs a statement's rows got, by `RETURNING id`.
fn insert_returning(client: &mut Client, sql: &str) -> Vec<i64> {
    ids(client, &format!("{sql} RETURNING id"))
}

/// Every ID of `events` and `by_id`, through the coordinator.
fn all_ids(client: &mut Client) -> Vec<i64> {
    ids(client, "SELECT id FROM events UNION ALL SELECT id FROM by_id")
}

/// How many rows of `table` each worker's shards hold, by port.
fn rows_by_port(client: &mut Client, table: &str) -> BTreeMap<i32, i64> {
    let placement: BTreeMap<i64, i32> = client
        .query("SELECT shardid, nodeport FROM citus_shards WHERE table_name = $1::text::regclass", &[&table])
        .expect("citus_shards")
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let mut by_port = BTreeMap::new();
    let sql = format!(
        "SELECT get_shard_id_for_distribution_column('{table}', {key}), count(*) FROM {table} GROUP BY 1",
        key = if table == "by_id" { "id" } else { "tenant" }
    );
    for r in client.query(&sql, &[]).unwrap_or_else(|e| panic!("{sql}: {}", describe(&e))) {
        *by_port.entry(placement[&r.get::<_, i64>(0)]).or_insert(0) += r.get::<_, i64>(1);
    }
    by_port
}

/// `COPY table (tenant, payload) FROM STDIN` of `rows` rows.
fn copy_rows(client: &mut Client, table: &str, rows: i64) {
    let mut w = client
        .copy_in(&format!("COPY {table} (tenant, payload) FROM STDIN"))
        .unwrap_or_else(|e| panic!("COPY {table}: {}", describe(&e)));
    for i in 0..rows {
        writeln!(w, "{}\tcopied {i}", i % 50).expect("COPY row");
    }
    w.finish().unwrap_or_else(|e| panic!("COPY {table}: {}", describe(&e)));
}

/// Routed inserts, multi-row VALUES, COPY and a table distributed by `id`:
/// Citus evaluates the DEFAULT on the coordinator (it routes by the row's
/// values, so it needs them first, and it sends the workers constants).
#[test]
fn the_coordinator_evaluates_the_default_of_routed_inserts_values_and_copy() {
    if !citus_here() {
        return;
    }
    let t0 = Instant::now();
    let citus = Citus::with_worker_ids(&[1, 2, 3]);
    let mut client = citus.connect();
    client.batch_execute(TABLES).unwrap_or_else(|e| panic!("tables: {}", describe(&e)));

    let mut made = vec![];
    for table in ["events", "by_id"] {
        // One row a statement, each routed to one shard.
        for t in 0..20 {
            made.extend(insert_returning(
                &mut client,
                &format!("INSERT INTO {table} (tenant, payload) VALUES ({t}, 'routed')"),
            ));
        }
        // Multi-row VALUES, rows for every shard.
        let values: Vec<String> = (0..500).map(|i| format!("({}, 'values')", i % 50)).collect();
        made.extend(insert_returning(
            &mut client,
            &format!("INSERT INTO {table} (tenant, payload) VALUES {}", values.join(", ")),
        ));
        // INSERT ... SELECT from no distributed table: planned on the coordinator.
        let sql =
            format!("INSERT INTO {table} (tenant, payload) SELECT g % 50, 'series' FROM generate_series(1, 500) g");
        let plan = explain(&mut client, &sql);
        assert!(plan.contains("INSERT/SELECT method: pull to coordinator"), "{plan}");
        made.extend(insert_returning(&mut client, &sql));
        copy_rows(&mut client, table, 5_000);
    }
    // A reference table: the coordinator makes the row (and its ID) once,
    // and every node's replica has the same.
    client
        .batch_execute(
            "CREATE TABLE kinds (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), name text);
             SELECT create_reference_table('kinds');
             INSERT INTO kinds (name) SELECT 'kind ' || g FROM generate_series(1, 100) g;",
        )
        .unwrap_or_else(|e| panic!("reference table: {}", describe(&e)));
    let kinds = ids(&mut client, "SELECT id FROM kinds ORDER BY id");
    assert_eq!(workers_of(&kinds), BTreeSet::from([1]));
    for w in &citus.workers {
        assert_eq!(ids(&mut w.connect(), "SELECT id FROM kinds ORDER BY id"), kinds);
    }
    // The task a routed insert sends a worker carries the ID as a constant.
    let plan = explain(&mut client, "INSERT INTO events (tenant, payload) VALUES (7, 'explained')");
    assert!(plan.contains("VALUES (7, '") && plan.contains("'::bigint, 'explained'::text)"), "{plan}");
    let plan = explain(&mut client, "INSERT INTO by_id (tenant, payload) VALUES (7, 'explained')");
    assert!(plan.contains("VALUES ('") && !plan.contains("snowflake_nextval"), "{plan}");

    assert_eq!(made.len(), 2 * (20 + 500 + 500));
    assert_eq!(workers_of(&made), BTreeSet::from([1]));
    // by_id's rows went to the shards of their IDs, on both workers: the
    // coordinator routed each by the ID it made.
    let ports = rows_by_port(&mut client, "by_id");
    assert_eq!(ports.len(), 2, "by_id's rows on both workers: {ports:?}");
    // Only the coordinator's worker id.
    let all = [all_ids(&mut client), kinds].concat();
    citus.assert_all_distinct(&all, 2 * (20 + 500 + 500 + 5_000) + 100, &[1], t0);
}

/// `INSERT ... SELECT` between distributed tables, a statement sent to a
/// worker and a delegated function call: Citus evaluates the DEFAULT on the
/// workers, each with its own worker id.
#[test]
fn the_workers_evaluate_the_default_of_insert_select_worker_queries_and_delegated_calls() {
    if !citus_here() {
        return;
    }
    let t0 = Instant::now();
    let citus = Citus::with_worker_ids(&[1, 2, 3]);
    let mut client = citus.connect();
    client.batch_execute(TABLES).unwrap_or_else(|e| panic!("tables: {}", describe(&e)));
    fill_src(&mut client, 20_000);
    let worker_id_of_port: BTreeMap<i32, i64> =
        citus.workers.iter().zip([2, 3]).map(|(w, id)| (i32::from(w.port), id)).collect();

    // Repartition: each worker runs the SELECT on its shards of src with the
    // DEFAULT added, and sends the rows to the shards they belong to. The
    // DEFAULT being volatile, even co-located tables take this path: with the
    // ID given, the same statement runs on each shard pair where it is.
    let plan = explain(&mut client, "INSERT INTO events (tenant, id, payload) SELECT tenant, 0, payload FROM src");
    assert!(!plan.contains("INSERT/SELECT method") && plan.contains("INSERT INTO public.events_"), "{plan}");
    for table in ["events", "by_id"] {
        let sql = format!("INSERT INTO {table} (tenant, payload) SELECT tenant, payload FROM src");
        let plan = explain(&mut client, &sql);
        assert!(plan.contains("INSERT/SELECT method: repartition"), "{plan}");
        let made = insert_returning(&mut client, &sql);
        assert_eq!(made.len(), 20_000);
        assert_eq!(workers_of(&made), BTreeSet::from([2, 3]), "{table}: repartition");
    }
    // Pull to coordinator (a LIMIT needs the rows in one place): the DEFAULT
    // goes into the SELECT each worker runs on its shards; the coordinator
    // collects the rows with their IDs and sends them on.
    let sql = "INSERT INTO events (tenant, payload) SELECT tenant, payload FROM src ORDER BY payload LIMIT 5000";
    let plan = explain(&mut client, sql);
    assert!(plan.contains("INSERT/SELECT method: pull to coordinator"), "{plan}");
    assert!(plan.contains("public.snowflake_nextval() AS id") && plan.contains("FROM public.src_"), "{plan}");
    let made = insert_returning(&mut client, sql);
    assert_eq!(made.len(), 5_000);
    assert_eq!(workers_of(&made), BTreeSet::from([2, 3]), "pull to coordinator");

    // A statement sent to a worker: with Citus's metadata on every worker,
    // any node can take writes, and evaluates the DEFAULT itself.
    let mut on_worker = citus.workers[0].connect();
    let mut made = insert_returning(&mut on_worker, "INSERT INTO events (tenant, payload) VALUES (1, 'w'), (2, 'w')");
    made.extend(insert_returning(
        &mut on_worker,
        "INSERT INTO by_id (tenant, payload) SELECT g, 'w' FROM generate_series(1, 1000) g",
    ));
    copy_rows(&mut on_worker, "events", 1_000);
    made.extend(ids(&mut on_worker, "SELECT id FROM events WHERE payload LIKE 'copied %'"));
    assert_eq!(made.len(), 2_002);
    assert_eq!(workers_of(&made), BTreeSet::from([2]), "statements sent to worker 1");

    // A distributed function, delegated to the worker of its argument's shard.
    client
        .batch_execute(
            "CREATE FUNCTION add_event(t int) RETURNS bigint LANGUAGE sql
                 AS $$ INSERT INTO events (tenant, payload) VALUES (t, 'delegated') RETURNING id $$;
             SELECT create_distributed_function('add_event(int)', 't', colocate_with := 'events');",
        )
        .unwrap_or_else(|e| panic!("distributed function: {}", describe(&e)));
    let mut delegated = vec![];
    for t in 0..20 {
        let id: i64 = client.query_one("SELECT add_event($1)", &[&t]).expect("delegated call").get(0);
        let port = citus.port_of_shard(&mut client, "events", t);
        assert_eq!(worker_of(id), worker_id_of_port[&port], "tenant {t}: made on the worker of its shard");
        delegated.push(id);
    }
    assert_eq!(workers_of(&delegated), BTreeSet::from([2, 3]));
    // Two calls in one statement are not delegated: the coordinator runs them.
    let row = client.query_one("SELECT add_event(1), add_event(2)", &[]).expect("two calls");
    assert_eq!(workers_of(&[row.get(0), row.get(1)]), BTreeSet::from([1]));

    citus.assert_all_distinct(&all_ids(&mut client), 2 * 20_000 + 5_000 + 2_002 + 20 + 2, &[1, 2, 3], t0);
}

/// The error of `sql` as (SQLSTATE, message).
fn refusal(client: &mut Client, sql: &str) -> (String, String) {
    let e = common::sql_error(client, sql);
    (e.code, e.message)
}

/// Decoding runs on the shards (it is pushed down, like any function of a
/// row), and `RETURNING` of a distributed insert takes only IMMUTABLE
/// functions: the four-argument decoders, which name the layout.
#[test]
fn decoding_is_pushed_down_and_returning_takes_the_immutable_forms() {
    if !citus_here() {
        return;
    }
    let t0 = Instant::now();
    let citus = Citus::with_worker_ids(&[1, 2, 3]);
    let mut client = citus.connect();
    client.batch_execute(TABLES).unwrap_or_else(|e| panic!("tables: {}", describe(&e)));
    fill_src(&mut client, 10_000);
    let from = client.query_one("SELECT clock_timestamp()", &[]).unwrap().get::<_, std::time::SystemTime>(0);
    // Rows made by the coordinator (multi-row VALUES) and by both workers (repartition).
    let values: Vec<String> = (0..3000).map(|i| format!("({}, 'c')", i % 50)).collect();
    client.batch_execute(&format!("INSERT INTO events (tenant, payload) VALUES {}", values.join(", "))).unwrap();
    client.batch_execute("INSERT INTO events (tenant, payload) SELECT tenant, payload FROM src").unwrap();
    let all = all_ids(&mut client);

    // GROUP BY snowflake_worker_id(id): each shard groups its own rows.
    let sql = "SELECT snowflake_worker_id(id), count(*) FROM events GROUP BY 1 ORDER BY 1";
    let plan = explain(&mut client, sql);
    assert!(plan.contains("GROUP BY (public.snowflake_worker_id(id))"), "not pushed down:\n{plan}");
    let grouped: Vec<(i64, i64)> =
        client.query(sql, &[]).unwrap().iter().map(|r| (i64::from(r.get::<_, i32>(0)), r.get(1))).collect();
    let mut expected: BTreeMap<i64, i64> = BTreeMap::new();
    for id in &all {
        *expected.entry(worker_of(*id)).or_insert(0) += 1;
    }
    assert_eq!(grouped, expected.into_iter().collect::<Vec<_>>());
    assert_eq!(grouped.iter().map(|g| g.0).collect::<Vec<_>>(), vec![1, 2, 3]);

    // A range of time as a range of IDs, evaluated on each shard (so every
    // node must have the same layout), and against the client's decoding.
    let sql = "SELECT count(*) FROM events
                WHERE id >= snowflake_from_timestamp($1) AND id < snowflake_from_timestamp(now() + interval '1 hour')";
    let plan = explain(
        &mut client,
        "SELECT count(*) FROM events WHERE id >= snowflake_from_timestamp(now() - interval '1 hour')",
    );
    assert!(plan.contains("WHERE (id OPERATOR(pg_catalog.>=) public.snowflake_from_timestamp("), "{plan}");
    let in_range: i64 = client.query_one(sql, &[&from]).unwrap().get(0);
    let from_ms = from.duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    assert_eq!(in_range, all.iter().filter(|id| common::id_unix_ms(**id) >= from_ms).count() as i64);
    assert_eq!(in_range, 13_000);

    // RETURNING: the one-argument decoders are STABLE (they read this
    // server's layout settings) and Citus refuses them in the RETURNING of
    // a routed insert, multi-row or not, an UPDATE or a DELETE.
    let refused = ("0A000".to_string(), "non-IMMUTABLE functions are not allowed in the RETURNING clause".to_string());
    for sql in [
        "INSERT INTO events (tenant, payload) VALUES (1, 'r') RETURNING id, snowflake_timestamp(id)",
        "INSERT INTO events (tenant, payload) VALUES (1, 'r'), (2, 'r') RETURNING snowflake_worker_id(id)",
        "INSERT INTO events (tenant, payload) VALUES (1, 'r') RETURNING snowflake_decode(id)",
        "INSERT INTO by_id (tenant, payload) VALUES (1, 'r') RETURNING id, snowflake_timestamp(id)",
        "UPDATE events SET payload = 'u' WHERE tenant = 1 RETURNING snowflake_timestamp(id)",
        "DELETE FROM events WHERE tenant = 1 AND payload = 'none' RETURNING snowflake_timestamp(id)",
    ] {
        assert_eq!(refusal(&mut client, sql), refused, "{sql}");
    }
    // The four-argument forms are IMMUTABLE and work everywhere.
    let layout = "'2025-01-01 00:00:00+00', 10, 12";
    let mut returned = vec![];
    for sql in [
        format!(
            "INSERT INTO events (tenant, payload) VALUES (1, 'r'), (2, 'r')
             RETURNING id, snowflake_timestamp(id, {layout}), snowflake_worker_id(id, {layout}),
                       (snowflake_decode(id, {layout})).sequence"
        ),
        format!(
            "INSERT INTO by_id (tenant, payload) VALUES (1, 'r')
             RETURNING id, snowflake_timestamp(id, {layout}), snowflake_worker_id(id, {layout}),
                       snowflake_sequence(id, {layout})"
        ),
    ] {
        for r in client.query(&sql, &[]).unwrap_or_else(|e| panic!("{sql}: {}", describe(&e))) {
            let (id, at, worker, seq): (i64, std::time::SystemTime, i32, i32) =
                (r.get(0), r.get(1), r.get(2), r.get(3));
            let at_ms = at.duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
            assert_eq!(at_ms, common::id_unix_ms(id));
            assert_eq!(i64::from(worker), worker_of(id));
            assert_eq!(i64::from(seq), id & 4095);
            returned.push(id);
        }
    }
    assert_eq!(workers_of(&returned), BTreeSet::from([1]));
    // An INSERT ... SELECT may return the STABLE forms (its RETURNING runs
    // where the rows are inserted), and so may a query over a CTE that
    // inserts (it runs on the coordinator).
    let sql = "INSERT INTO events (tenant, payload) SELECT tenant, payload FROM src LIMIT 10
               RETURNING id, snowflake_worker_id(id)";
    assert!(explain(&mut client, sql).contains("INSERT/SELECT method: pull to coordinator"));
    for r in client.query(sql, &[]).unwrap_or_else(|e| panic!("{sql}: {}", describe(&e))) {
        assert_eq!(worker_of(r.get(0)), i64::from(r.get::<_, i32>(1)));
    }
    let sql = "INSERT INTO events (tenant, payload) SELECT tenant, payload FROM src WHERE tenant < 5
               RETURNING id, snowflake_worker_id(id)";
    assert!(explain(&mut client, sql).contains("INSERT/SELECT method: repartition"));
    for r in client.query(sql, &[]).unwrap_or_else(|e| panic!("{sql}: {}", describe(&e))) {
        assert_eq!(worker_of(r.get(0)), i64::from(r.get::<_, i32>(1)));
    }
    let sql = "WITH ins AS (INSERT INTO events (tenant, payload) VALUES (1, 'cte') RETURNING id)
               SELECT id, snowflake_worker_id(id) FROM ins";
    let r = client.query_one(sql, &[]).unwrap_or_else(|e| panic!("{sql}: {}", describe(&e)));
    assert_eq!(worker_of(r.get(0)), i64::from(r.get::<_, i32>(1)));

    // However many the statements above made: the count is not the point here.
    let all = all_ids(&mut client);
    citus.assert_all_distinct(&all, all.len(), &[1, 2, 3], t0);
}

/// The SQLSTATE, message and CONTEXT of the error of `sql`.
fn refusal_with_context(client: &mut Client, sql: &str) -> (String, String, String) {
    match client.batch_execute(sql) {
        Ok(()) => panic!("expected an error from {sql}"),
        Err(e) => {
            let db = e.as_db_error().unwrap_or_else(|| panic!("{sql}: not a database error: {e}"));
            (db.code().code().to_string(), db.message().to_string(), db.where_().unwrap_or_default().to_string())
        }
    }
}

/// A worker added later gets the extension from Citus, but not a worker
/// id: statements whose DEFAULT runs there fail until it has its own.
#[test]
fn a_worker_added_later_gets_the_extension_and_needs_its_own_worker_id() {
    if !citus_here() {
        return;
    }
    let t0 = Instant::now();
    let mut citus = Citus::with_worker_ids(&[1, 2, 3]);
    let mut client = citus.connect();
    client.batch_execute(TABLES).unwrap_or_else(|e| panic!("tables: {}", describe(&e)));
    fill_src(&mut client, 1_000);
    client.batch_execute("INSERT INTO events (tenant, payload) SELECT tenant, payload FROM src").unwrap();

    // A copied postgresql.conf without the worker id line: citus_add_node
    // creates the extension there (the coordinator's version).
    let late = citus.add_worker(&[]);
    let version = citus.coordinator.query_text("SELECT extversion FROM pg_extension WHERE extname = 'snowflake_id'");
    let late_version =
        citus.workers[late].query_text("SELECT extversion FROM pg_extension WHERE extname = 'snowflake_id'");
    assert_eq!(late_version, version);
    // A table made now has shards on the new worker too.
    client
        .batch_execute(
            "CREATE TABLE spread (tenant int, payload text);
             SELECT create_distributed_table('spread', 'tenant', colocate_with := 'none');
             INSERT INTO spread SELECT g % 50, 'spread ' || g FROM generate_series(1, 3000) g;",
        )
        .unwrap_or_else(|e| panic!("spread: {}", describe(&e)));
    let on_late = rows_by_port(&mut client, "spread").get(&i32::from(citus.workers[late].port)).copied();
    assert!(on_late.unwrap_or(0) > 0, "no rows of spread on the new worker");
    let insert = "INSERT INTO events (tenant, payload) SELECT tenant, payload FROM spread";
    let (code, message, context) = refusal_with_context(&mut client, insert);
    assert_eq!(code, "55000");
    assert_eq!(message, "invalid snowflake_id.worker_id = '': the worker id is not set");
    // The worker's own CONTEXT line names it (its snowflake_id.node_name),
    // relayed by Citus with its own line, host and port.
    let late_node = Citus::name_of(&citus.workers[late]);
    assert_eq!(context, format!("snowflake_id on node \"worker3\"\nwhile executing command on {late_node}"));
    // docs/citus.md's check from the coordinator names it.
    let check = citus.cluster_check();
    let late_row = check.iter().find(|r| r.0 == late_node).expect("the new worker in the check");
    assert!(late_row.1 && late_row.2.contains("55000: invalid snowflake_id.worker_id = ''"), "{check:?}");
    assert_eq!(checked_worker_ids(&check)[..3], ["1", "2", "3"], "{check:?}");
    let rows = citus.cluster_problem_rows();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!((rows[0].node.as_str(), rows[0].worker_id), (late_node.as_str(), None));
    assert_eq!(rows[0].layout.as_deref(), Some(DEFAULT_LAYOUT));
    assert_eq!(
        rows[0].problem, "no worker id; 55000: invalid snowflake_id.worker_id = '': the worker id is not set",
        "{rows:?}"
    );

    // Its own worker id, and a restart: the statement runs on all three workers.
    citus.workers[late].sql("ALTER SYSTEM SET snowflake_id.worker_id = 4");
    citus.workers[late].restart();
    let mut client = citus.connect();
    let made = insert_returning(&mut client, insert);
    assert_eq!(made.len(), 3_000);
    assert_eq!(workers_of(&made), BTreeSet::from([2, 3, 4]));
    let direct = insert_returning(
        &mut citus.workers[late].connect(),
        "INSERT INTO events (tenant, payload) VALUES (1, 'late'), (2, 'late')",
    );
    assert_eq!(workers_of(&direct), BTreeSet::from([4]));

    citus.assert_all_distinct(&all_ids(&mut client), 1_000 + 3_000 + 2, &[2, 3, 4], t0);
    // Another worker with another layout (worker_bits = 8) issues IDs of
    // that layout, silently; snowflake_cluster_check() names it.
    let other = citus.add_worker(&["snowflake_id.worker_id = 5", "snowflake_id.worker_bits = 8"]);
    let odd =
        insert_returning(&mut citus.workers[other].connect(), "INSERT INTO events (tenant, payload) VALUES (1, 'odd')");
    assert_eq!(odd.len(), 1);
    let rows = citus.cluster_problem_rows();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].node, Citus::name_of(&citus.workers[other]));
    assert_eq!(rows[0].worker_id, Some(5));
    assert_eq!(rows[0].layout.as_deref(), Some("8/12/2025-01-01 00:00:00.000+00"));
    assert_eq!(
        rows[0].problem,
        format!("layout 8/12/2025-01-01 00:00:00.000+00, not the coordinator's {DEFAULT_LAYOUT}")
    );
    // A node that does not answer (stopped) is named with Citus's error.
    citus.workers[other].stop();
    let rows = citus.cluster_problem_rows();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!((rows[0].node.as_str(), rows[0].worker_id), (Citus::name_of(&citus.workers[other]).as_str(), None));
    assert!(rows[0].problem.starts_with("no answer: "), "{rows:?}");
}

/// Draws `n` IDs on `node` itself as soon as it has a lease (within 60 s);
/// the IDs and how long it waited.
fn draw_when_leased(node: &Cluster, n: i64) -> (Vec<i64>, Duration) {
    let t0 = Instant::now();
    let mut client = node.connect();
    loop {
        match client.query("SELECT snowflake_nextval() FROM generate_series(1, $1::bigint)", &[&n]) {
            Ok(rows) => return (rows.iter().map(|r| r.get(0)).collect(), t0.elapsed()),
            Err(e) => {
                assert!(
                    t0.elapsed() < Duration::from_secs(60),
                    "no lease after 60 s: {}\n{}",
                    describe(&e),
                    node.log()
                );
                thread::sleep(Duration::from_millis(100));
            }
        }
    }
}

/// The recommended set-up: every node on `worker_id = auto` (or unset) with
/// the registry in the coordinator's database, one line the same on every
/// node. `CREATE EXTENSION snowflake_id` on the coordinator makes the
/// registry there and Citus creates the extension on each worker; each node
/// leases its own worker id, a worker added later too.
#[test]
fn a_registry_in_the_coordinators_database_leases_every_node_its_own_worker_id() {
    if !citus_here() {
        return;
    }
    let t0 = Instant::now();
    // The coordinator's registry line names the coordinator itself.
    let coordinator = citus_node_init("coordinator", &["snowflake_id.worker_id = 'auto'"]);
    coordinator.append_conf(&[&coordinator.registry_line()]);
    let mut citus = Citus::new(coordinator);
    let registry_line = citus.coordinator.registry_line();
    // One worker before the extension exists (CREATE EXTENSION reaches it),
    // one after (citus_add_node creates it there); one on `auto`, one unset.
    citus.add_worker(&[&registry_line, "snowflake_id.worker_id = 'auto'"]);
    citus.coordinator.sql("CREATE EXTENSION snowflake_id");
    // Until then their keepers were refused (no registry functions yet),
    // and retried.
    let (_, coordinator_wait) = draw_when_leased(&citus.coordinator, 1);
    let (_, worker_wait) = draw_when_leased(&citus.workers[0], 1);
    let refused = citus.coordinator.log().matches("ERROR:  function snowflake_registry_acquire(").count();
    eprintln!(
        "leased {:.1} s (coordinator) and {:.1} s (worker1) after CREATE EXTENSION; \
         {refused} refused calls in the coordinator's log before",
        coordinator_wait.as_secs_f64(),
        (coordinator_wait + worker_wait).as_secs_f64()
    );
    citus.add_worker(&[&registry_line]);
    draw_when_leased(&citus.workers[1], 1);

    let mut client = citus.connect();
    client.batch_execute(TABLES).unwrap_or_else(|e| panic!("tables: {}", describe(&e)));
    fill_src(&mut client, 20_000);
    let draw_everywhere = |citus: &Citus, client: &mut Client| {
        // The coordinator's (multi-row VALUES, COPY), the workers' (repartition), each worker's own.
        let values: Vec<String> = (0..2000).map(|i| format!("({}, 'c')", i % 50)).collect();
        let mut made =
            insert_returning(client, &format!("INSERT INTO events (tenant, payload) VALUES {}", values.join(", ")));
        made.extend(insert_returning(client, "INSERT INTO by_id (tenant, payload) SELECT tenant, payload FROM src"));
        for w in &citus.workers {
            made.extend(insert_returning(
                &mut w.connect(),
                "INSERT INTO events (tenant, payload) SELECT g % 50, 'w' FROM generate_series(1, 2000) g",
            ));
        }
        made
    };
    let made = draw_everywhere(&citus, &mut client);
    assert_eq!(made.len(), 2_000 + 20_000 + 2 * 2_000);

    // A worker added later, with the same line: its own lease.
    let late = citus.add_worker(&[&registry_line]);
    let (_, waited) = draw_when_leased(&citus.workers[late], 1);
    eprintln!("the worker added later leased in {:.1} s", waited.as_secs_f64());
    let spread = "CREATE TABLE spread (tenant int, payload text);
                  SELECT create_distributed_table('spread', 'tenant', colocate_with := 'none');
                  INSERT INTO spread SELECT g % 50, 'spread ' || g FROM generate_series(1, 20000) g;";
    client.batch_execute(spread).unwrap_or_else(|e| panic!("spread: {}", describe(&e)));
    let made_later = draw_everywhere(&citus, &mut client);
    let from_spread =
        insert_returning(&mut client, "INSERT INTO events (tenant, payload) SELECT tenant, payload FROM spread");
    assert_eq!(from_spread.len(), 20_000);

    // Four live leases, one per node, by node name; the status of each node
    // (through docs/citus.md's check) shows its leased worker id.
    let leases: BTreeMap<String, i64> = client
        .query("SELECT node_name, worker_id::bigint FROM snowflake_registry WHERE state = 'live'", &[])
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(
        leases.keys().map(String::as_str).collect::<Vec<_>>(),
        ["coordinator", "worker1", "worker2", "worker3"],
        "{leases:?}"
    );
    let leased: BTreeSet<i64> = leases.values().copied().collect();
    assert_eq!(leased.len(), 4, "{leases:?}");
    let check = citus.cluster_check();
    let checked: BTreeSet<i64> = checked_worker_ids(&check).iter().map(|w| w.parse().unwrap()).collect();
    assert_eq!(checked, leased, "{check:?}");
    // The workers have the registry's tables too (the extension is one
    // object), empty: the coordinator's are the registry.
    for w in &citus.workers {
        assert_eq!(w.query_i64("SELECT count(*) FROM snowflake_registry"), 0);
    }

    assert_eq!(workers_of(&from_spread).len(), 3, "the three workers' leases");
    let count = made.len() + made_later.len() + from_spread.len();
    citus.assert_all_distinct(&all_ids(&mut client), count, &leased.iter().copied().collect::<Vec<_>>(), t0);

    // A node given worker1's worker id by hand beside the registry (a
    // postgresql.conf copied from a node set up before the registry): the
    // registry refuses it, naming the holder, and it issues nothing; the
    // coordinator's check names it.
    let held = leases["worker1"];
    let clash = citus.add_worker(&[&registry_line, &format!("snowflake_id.worker_id = {held}")]);
    let node = &citus.workers[clash];
    let deadline = Instant::now() + Duration::from_secs(30);
    let registry_error = loop {
        let e = node.query_text("SELECT coalesce(registry_error, '') FROM snowflake_id_status");
        if !e.is_empty() {
            break e;
        }
        assert!(Instant::now() < deadline, "no registry answer in 30 s:\n{}", node.log());
        thread::sleep(Duration::from_millis(100));
    };
    assert!(registry_error.contains("SFL02"), "{registry_error}");
    assert!(
        registry_error.contains(&format!("worker id {held} of namespace \"default\" is held by node \"worker1\"")),
        "{registry_error}"
    );
    let refused = node.sql_error("SELECT snowflake_nextval()");
    assert_eq!(refused.code, "55000", "{refused:?}");
    // Its log says so, naming the node it happened on.
    let log = node.log();
    assert!(log.contains("WARNING:  snowflake_id: worker id registry:"), "{log}");
    assert!(log.contains("CONTEXT:  snowflake_id on node \"worker4\""), "{log}");
    let rows = citus.cluster_problem_rows();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!((rows[0].node.clone(), rows[0].worker_id), (Citus::name_of(node), None), "{rows:?}");
    assert!(rows[0].problem.starts_with("no worker id; "), "{rows:?}");
    // The holder is unaffected.
    let (still, _) = draw_when_leased(&citus.workers[0], 10);
    assert_eq!(workers_of(&still), BTreeSet::from([held]));
}

/// Draws IDs on `node` itself, a thousand at a time, for `how_long`: the
/// IDs, and the refusals met on the way.
fn draw_for(node: &Cluster, how_long: Duration) -> (Vec<i64>, Vec<String>) {
    let deadline = Instant::now() + how_long;
    let mut client = node.connect();
    let (mut made, mut refused) = (vec![], vec![]);
    while Instant::now() < deadline {
        match client.query("SELECT snowflake_nextval() FROM generate_series(1, 1000)", &[]) {
            Ok(rows) => made.extend(rows.iter().map(|r| r.get::<_, i64>(0))),
            Err(e) => refused.push(describe(&e)),
        }
        thread::sleep(Duration::from_millis(50));
    }
    (made, refused)
}

/// A worker fails over to its streaming standby, with the registry in the
/// coordinator's database (every node on `auto`): the promoted standby is
/// a later timeline of the same system, so it takes over its old primary's
/// lease at once, above the old ceiling, and once `citus_update_node` points
/// Citus at it the DEFAULT runs there. Both ways a DBA meets it: worker1's
/// old primary killed with `kill -9`, worker2's left running (a split
/// brain: it goes on issuing under the old lease until its ceiling, and,
/// being on `auto`, then under another free worker id once the registry
/// tells it the lease is lost). Every ID distinct, those the old primary
/// drew after the promotion included.
#[test]
fn a_worker_failing_over_to_its_promoted_standby_goes_on_issuing_under_the_registry() {
    if !citus_here() {
        return;
    }
    let t0 = Instant::now();
    // A short lease, so that the old primary left running stops soon.
    let short = "snowflake_id.registry_lease = '3s'";
    let coordinator = citus_node_init("coordinator", &[short]);
    coordinator.append_conf(&[&coordinator.registry_line()]);
    let mut citus = Citus::new(coordinator);
    let registry_line = citus.coordinator.registry_line();
    citus.add_worker(&[&registry_line, short]);
    citus.add_worker(&[&registry_line, short]);
    citus.coordinator.sql("CREATE EXTENSION snowflake_id");
    for node in std::iter::once(&citus.coordinator).chain(&citus.workers) {
        draw_when_leased(node, 1);
    }
    let mut client = citus.connect();
    client.batch_execute(TABLES).unwrap_or_else(|e| panic!("tables: {}", describe(&e)));
    fill_src(&mut client, 10_000);
    let insert_select = "INSERT INTO events (tenant, payload) SELECT tenant, payload FROM src";
    let mut made = insert_returning(&mut client, insert_select);
    let worker_ids: Vec<i64> =
        citus.workers.iter().map(|w| w.query_i64("SELECT worker_id FROM snowflake_id_status")).collect();
    assert_eq!(workers_of(&made), worker_ids.iter().copied().collect(), "the workers' leases");

    // A streaming standby of each worker, caught up.
    let mut standbys: Vec<Cluster> = citus
        .workers
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let name = format!("snowflake_id.node_name = 'worker{}-standby'", i + 1);
            // As many connections as its primary, or recovery refuses to start.
            let mut standby = Cluster::standby_of(w, &["max_connections = 100", &name]);
            standby.start();
            standby.wait_replayed(&w.query_text("SELECT pg_current_wal_lsn()::text"));
            standby
        })
        .collect();
    let fail_over = |citus: &Citus, client: &mut Client, i: usize, standby: &Cluster| {
        standby.promote();
        let (_, waited) = draw_when_leased(standby, 1);
        let old = &citus.workers[i];
        client
            .execute(
                "SELECT citus_update_node(nodeid, $1, $2) FROM pg_dist_node WHERE nodeport = $3",
                &[&host(standby), &i32::from(standby.port), &i32::from(old.port)],
            )
            .unwrap_or_else(|e| panic!("citus_update_node: {}", describe(&e)));
        waited
    };

    // worker1 dies (kill -9); its standby is promoted.
    citus.workers[0].crash();
    let waited = fail_over(&citus, &mut client, 0, &standbys[0]);
    eprintln!("worker1's promoted standby leased {:.1} s after its promotion", waited.as_secs_f64());
    let after_crash = insert_returning(&mut client, insert_select);
    assert_eq!(workers_of(&after_crash), worker_ids.iter().copied().collect(), "the same two worker ids");
    assert!(
        standbys[0].query_i64("SELECT worker_id FROM snowflake_id_status") == worker_ids[0],
        "the promoted standby took over worker1's lease"
    );
    made.extend(after_crash);

    // worker2's standby is promoted while worker2 runs on. The old worker2
    // draws at once, for three leases' time: its old lease lasts at most
    // one lease (3 s) past the promotion, and anything done first (a
    // distributed insert on a loaded machine) could outlast it.
    let waited = fail_over(&citus, &mut client, 1, &standbys[1]);
    eprintln!("worker2's promoted standby leased {:.1} s after its promotion", waited.as_secs_f64());
    let (old_drawn, refused) = draw_for(&citus.workers[1], Duration::from_secs(9));
    made.extend(insert_returning(&mut client, insert_select));
    // Drawn on the promoted node itself (Citus's metadata on the workers
    // follows citus_update_node in the background, so no distributed
    // statement there).
    let (promoted_drawn, _) = draw_when_leased(&standbys[1], 2_000);
    let old_now = citus.workers[1].query_text("SELECT coalesce(worker_id::text, 'none') FROM snowflake_id_status");
    eprintln!(
        "the old worker2 drew {} IDs in 9 s after the promotion, under worker ids {:?} (now {old_now}), {} refusals: {:?}",
        old_drawn.len(),
        workers_of(&old_drawn),
        refused.len(),
        refused.first()
    );
    assert!(old_drawn.iter().any(|id| worker_of(*id) == worker_ids[1]), "the old lease's IDs");
    let later: BTreeSet<i64> = workers_of(&old_drawn).into_iter().filter(|w| *w != worker_ids[1]).collect();
    assert!(later.iter().all(|w| !worker_ids.contains(w)), "the old worker2 went on under a held worker id");

    let rows = all_ids(&mut client);
    assert_eq!(rows.len(), made.len(), "every row inserted is on the promoted nodes");
    let all = [made, promoted_drawn, old_drawn].concat();
    let every_worker_id: Vec<i64> = worker_ids.iter().chain(&later).copied().collect();
    citus.assert_all_distinct(&all, all.len(), &every_worker_id, t0);
    for standby in &mut standbys {
        standby.stop();
    }
}

/// What came of [`insert_select_on_a_shared_worker_id`].
struct SharedWorkerIdOutcome {
    citus: Citus,
    /// Rows inserted, and how many of their IDs repeat one before them.
    rows: usize,
    duplicates: usize,
    /// The first error of an insert, if one failed.
    error: Option<String>,
    /// NOTICEs and WARNINGs the client got.
    notices: Vec<String>,
    /// What `snowflake_cluster_check()` said before the first insert.
    problems_before: Vec<(String, String)>,
    /// The cluster watch's WARNINGs in the coordinator's log before the
    /// first insert, and how long after `CREATE EXTENSION` they all were there.
    watch_warnings: Vec<String>,
    watch_took: Duration,
}

/// The easiest mistake in a cluster of identical nodes: two workers with
/// the same static `snowflake_id.worker_id` (a copied postgresql.conf),
/// the coordinator on its own; then `INSERT ... SELECT` (repartition), which
/// has both workers evaluate the DEFAULT at once, up to five rounds of
/// 100,000 rows until IDs repeat. Into `events`, distributed by tenant:
/// Citus allows a unique index only with the distribution column in it, so
/// `(tenant, id)` cannot catch an ID repeated under another tenant.
fn insert_select_on_a_shared_worker_id() -> SharedWorkerIdOutcome {
    let citus = Citus::with_worker_ids(&[1, 2, 2]);
    let created = Instant::now();
    let (mut client, notices) = citus.coordinator.connect_collecting_notices();
    client.batch_execute(TABLES).unwrap_or_else(|e| panic!("tables: {}", describe(&e)));
    fill_src(&mut client, 100_000);
    let problems_before = citus.cluster_problems();
    // The coordinator's cluster watch (snowflake_id.cluster_check_interval,
    // 10 s by default) warns of both workers on its own.
    let watch_warnings = loop {
        let lines = citus.watch_warnings();
        if lines.len() >= 2 || created.elapsed() > Duration::from_secs(30) {
            break lines;
        }
        thread::sleep(Duration::from_millis(200));
    };
    let watch_took = created.elapsed();
    let mut error = None;
    for _ in 0..5 {
        if let Err(e) = client.batch_execute("INSERT INTO events (tenant, payload) SELECT tenant, payload FROM src") {
            error = Some(describe(&e));
            break;
        }
        if citus.coordinator.query_i64("SELECT count(*) - count(DISTINCT id) FROM events") > 0 {
            break;
        }
    }
    let all = all_ids(&mut client);
    let notices = notices.lock().clone();
    SharedWorkerIdOutcome {
        rows: all.len(),
        duplicates: repeats(&all),
        error,
        notices,
        problems_before,
        watch_warnings,
        watch_took,
        citus,
    }
}

/// Two nodes on one hand-set worker id: `snowflake_cluster_check()` names
/// both, each with the other, before any ID is drawn, and the coordinator's
/// cluster watch warns of both in its log within its interval, with nobody
/// asking. Without a registry nothing refuses the IDs they then repeat (the
/// reason for the check, and for the registry).
#[test]
fn two_workers_on_one_static_worker_id_are_named_by_the_cluster_check() {
    if !citus_here() {
        return;
    }
    let t0 = Instant::now();
    let outcome = insert_select_on_a_shared_worker_id();
    eprintln!(
        "{} duplicate IDs among {} rows, in {:.1} s",
        outcome.duplicates,
        outcome.rows,
        t0.elapsed().as_secs_f64()
    );
    assert_eq!(outcome.error, None);
    assert!(outcome.duplicates > 0, "no repeated ID in {} rows", outcome.rows);
    assert_eq!(outcome.notices, Vec::<String>::new());
    // Named before the first duplicate, and after.
    let mut named: Vec<String> = outcome.citus.workers.iter().map(Citus::name_of).collect();
    named.sort();
    let problem = format!("worker id 2 shared by {}, {}", named[0], named[1]);
    let shared: Vec<(String, String)> = named.iter().map(|n| (n.clone(), problem.clone())).collect();
    assert_eq!(outcome.problems_before, shared);
    // The watch's warnings, one per node, in the coordinator's log only,
    // before the first insert; each repeats only after ten minutes.
    eprintln!("the cluster watch warned {:.1} s after CREATE EXTENSION", outcome.watch_took.as_secs_f64());
    let expected: Vec<String> = named
        .iter()
        .map(|n| format!("WARNING:  snowflake_id: node {n} of the Citus cluster of database \"postgres\": {problem}"))
        .collect();
    assert_eq!(outcome.watch_warnings, expected);
    assert_eq!(outcome.citus.watch_warnings(), expected, "repeated within ten minutes");
    assert_eq!(outcome.citus.snowflake_warnings(), expected, "other warnings");
    let log = outcome.citus.coordinator.log();
    assert!(log.contains("HINT:  Give every node its own snowflake_id.worker_id"), "{log}");
    assert!(log.contains("CONTEXT:  snowflake_id on node \"coordinator\""), "{log}");
    let rows = outcome.citus.cluster_problem_rows();
    assert_eq!(rows.iter().map(|r| (r.node.clone(), r.problem.clone())).collect::<Vec<_>>(), shared);
    for row in &rows {
        assert_eq!((row.worker_id, row.layout.as_deref()), (Some(2), Some(DEFAULT_LAYOUT)), "{rows:?}");
    }
    // docs/citus.md's scheduled check warns of both.
    let (mut client, notices) = outcome.citus.coordinator.connect_collecting_notices();
    client.batch_execute(SCHEDULED_CHECK).unwrap_or_else(|e| panic!("scheduled check: {}", describe(&e)));
    let warned: Vec<String> = named.iter().map(|n| format!("WARNING: snowflake_id: node {n}: {problem}")).collect();
    assert_eq!(*notices.lock(), warned);
    // docs/citus.md's query shows worker id 2 on both workers, the README's names them.
    let check = outcome.citus.cluster_check();
    assert_eq!(checked_worker_ids(&check), ["1", "2", "2"], "{check:?}");
    let readme: Vec<String> =
        outcome.citus.connect().query(README_CHECK, &[]).unwrap().iter().map(|r| r.get("node")).collect();
    assert_eq!(readme, named);
}

/// PostgreSQL loads Citus by any spelling (`$libdir/citus`, `citus.so`, a
/// path); the cluster watch must start for each (once, with
/// `$libdir/citus` it was silently absent, and 14,169 repeated IDs of two
/// workers on one worker id went without a warning).
#[test]
fn the_cluster_watch_starts_whatever_the_spelling_of_citus_in_the_preload_list() {
    if !citus_here() {
        return;
    }
    for spelling in ["$libdir/citus", "citus.so"] {
        let line = format!("shared_preload_libraries = '{spelling},snowflake_id'");
        let mut node = citus_node_init("coordinator", &["snowflake_id.worker_id = 0", &line]);
        node.start();
        let deadline = Instant::now() + Duration::from_secs(10);
        let watching = || {
            node.query_text(
                "SELECT count(*)::text FROM pg_stat_activity WHERE backend_type = 'snowflake_id cluster check'",
            ) == "1"
        };
        while !watching() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(watching(), "no cluster watch with {line}");
        node.stop();
    }
}

/// A worker disabled with `citus_disable_node` keeps its metadata and goes on
/// evaluating the DEFAULT of what a client sends it (once it
/// shared worker id 1 with worker1 and repeated 39,796 of its IDs, while
/// `run_command_on_all_nodes`, which skips inactive nodes, left the check
/// empty). The check asks it; once it is down, it is not reported.
#[test]
fn a_disabled_worker_still_taking_writes_is_named_by_the_cluster_check() {
    if !citus_here() {
        return;
    }
    let mut citus = Citus::with_worker_ids(&[0, 1, 2]);
    citus.coordinator.sql("CREATE TABLE t (tenant int, id bigint DEFAULT snowflake_nextval())");
    citus.coordinator.sql("SELECT create_distributed_table('t', 'tenant')");
    // Added (it gets the table's metadata), then disabled before any check.
    let w3 = citus.add_worker(&["snowflake_id.worker_id = 1"]);
    let (h3, p3) = (host(&citus.workers[w3]), citus.workers[w3].port);
    citus.coordinator.sql(&format!("SELECT citus_disable_node('{h3}', {p3}, synchronous := true)"));
    // The disabled worker routes an insert to worker1's and worker2's shards,
    // under its own worker id.
    let ids = insert_returning(
        &mut citus.workers[w3].connect(),
        "INSERT INTO t (tenant) SELECT g FROM generate_series(1, 100) g",
    );
    assert_eq!(workers_of(&ids), BTreeSet::from([1]));
    let mut named = [Citus::name_of(&citus.workers[0]), Citus::name_of(&citus.workers[w3])];
    named.sort();
    let problem = format!("worker id 1 shared by {}, {}", named[0], named[1]);
    let shared: Vec<(String, String)> = named.iter().map(|n| (n.clone(), problem.clone())).collect();
    assert_eq!(citus.cluster_problems(), shared);
    // Down (as most disabled nodes are): not reported.
    citus.workers[w3].stop();
    assert_eq!(citus.cluster_problems(), Vec::<(String, String)>::new());
}

/// The queries these tests run are the ones the README and docs/citus.md give.
#[test]
fn the_docs_give_the_checks_these_tests_run() {
    let readme = include_str!("../README.md");
    let citus_md = include_str!("../docs/citus.md");
    assert!(readme.contains(README_CHECK), "README.md lacks:\n{README_CHECK}");
    assert!(citus_md.contains(CLUSTER_CHECK.trim()), "docs/citus.md lacks:\n{CLUSTER_CHECK}");
    assert!(citus_md.contains(SCHEDULED_CHECK), "docs/citus.md lacks:\n{SCHEDULED_CHECK}");
}

/// Without Citus (and without a subscription, whose publisher it would
/// check: tests/logical.rs), `snowflake_cluster_check()` refuses with 55000
/// and says what to use instead, rather than answering for one server as if
/// it were a cluster. On every major: it needs no Citus.
#[test]
fn the_cluster_check_without_citus_says_it_needs_citus() {
    let server = Cluster::preloaded(&["snowflake_id.worker_id = 1"]);
    let e = server.sql_error("SELECT * FROM snowflake_cluster_check()");
    assert_eq!(e.code, "55000", "{e:?}");
    assert_eq!(
        e.message,
        "snowflake_cluster_check() needs Citus or a subscription: extension \"citus\" is not created in database \
         \"postgres\" and it has no subscription"
    );
    assert!(e.hint.contains("snowflake_id_status"), "{e:?}");
    // An ordinary role may run it (it reads only what the status view shows).
    server.sql("CREATE ROLE watcher LOGIN");
    let mut watcher = server.config().user("watcher").connect(postgres::NoTls).expect("connect as watcher");
    assert_eq!(common::sql_error(&mut watcher, "SELECT * FROM snowflake_cluster_check()").code, "55000");
}
