//! What a DBA's monitoring sees, on real servers: the named wait events of
//! the three waits (synchronous standby, max_drift, the mark's fsync),
//! `sync_standby_wait_since` in the status, the mark keeper's row in
//! `pg_stat_activity`, and the postgres_exporter query file with the ready
//! "does a standby have the mark" query (monitoring/), run as written.

mod common;

use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use common::waits::{expected_event, wait_until_seen};
use common::{describe, draw_in_order, pg_major, sql_error, Cluster, SlowFsync};
use postgres::types::Type;
use yaml_rust2::{Yaml, YamlLoader};

/// On 17 and later the custom events are listed in `pg_wait_events` once a
/// process has registered them (at its first such wait).
fn assert_listed_in_pg_wait_events(client: &mut postgres::Client, name: &str) {
    if pg_major() >= 17 {
        let n: i64 = client
            .query_one("SELECT count(*) FROM pg_wait_events WHERE type = 'Extension' AND name = $1", &[&name])
            .unwrap()
            .get(0);
        assert_eq!(n, 1, "{name} is not in pg_wait_events");
    }
}

fn backend_pid(client: &mut postgres::Client) -> i32 {
    client.query_one("SELECT pg_backend_pid()", &[]).unwrap().get(0)
}

/// A primary whose IDs use up a mark quickly (4 per ms, never waiting on
/// max_drift) and a synchronous standby of it, streaming.
fn primary_with_sync_standby(worker_id: i64) -> (Cluster, Cluster) {
    let worker = format!("snowflake_id.worker_id = {worker_id}");
    let primary = Cluster::preloaded(&[&worker, "snowflake_id.sequence_bits = 2", "snowflake_id.max_drift = 0"]);
    let mut standby = Cluster::standby_of(&primary, &[]);
    standby.start();
    primary.make_synchronous(&standby);
    (primary, standby)
}

/// Needs about 12 s of timestamps at 4 IDs per ms: several new marks.
const NEEDS_NEW_MARKS: &str = "SELECT count(snowflake_nextval()) FROM generate_series(1, 50000)";

const STANDBY_WARNING: &str = "for the synchronous standbys to flush the durable mark";

#[test]
fn a_wait_for_the_synchronous_standby_is_named_dated_and_logged_once() {
    let (primary, mut standby) = primary_with_sync_standby(11);
    let mut monitor = primary.connect();
    draw_in_order(&mut monitor, 1_000);
    let nothing: bool =
        monitor.query_one("SELECT sync_standby_wait_since IS NULL FROM snowflake_id_status", &[]).unwrap().get(0);
    assert!(nothing, "sync_standby_wait_since is set while nothing waits");

    standby.stop();
    let cfg = primary.config();
    thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = s.spawn(move || {
            let mut c = cfg.connect(postgres::NoTls).expect("connect");
            tx.send(backend_pid(&mut c)).unwrap();
            c.batch_execute("SET statement_timeout = '60s'").unwrap();
            c.query_one(NEEDS_NEW_MARKS, &[]).map(|r| r.get::<_, i64>(0))
        });
        let pid = rx.recv().unwrap();
        let sync_standby = expected_event("SnowflakeIdSyncStandby", ("IPC", "SyncRep"));
        wait_until_seen(&mut monitor, pid, &sync_standby, "a backend waiting for the standby");

        let since: String = monitor
            .query_one(
                "SELECT sync_standby_wait_since::text FROM snowflake_id_status WHERE sync_standby_wait_since <= now()",
                &[],
            )
            .unwrap_or_else(|e| panic!("sync_standby_wait_since is not set while IDs wait: {}", describe(&e)))
            .get(0);

        // A second caller gives up (statement_timeout) after waiting more than
        // the 2 s after which the wait is logged: still one line in the log,
        // and the status still dates the wait from its start, not from the
        // second caller's.
        let mut impatient = primary.connect();
        impatient.batch_execute("SET statement_timeout = '3s'").unwrap();
        let e = sql_error(&mut impatient, NEEDS_NEW_MARKS);
        assert_eq!(e.code, "57014", "{e:?}");
        let still: String = monitor
            .query_one("SELECT coalesce(sync_standby_wait_since::text, 'NULL') FROM snowflake_id_status", &[])
            .unwrap()
            .get(0);
        assert_eq!(still, since, "the wait's start moved while the first caller still waited");
        assert_eq!(primary.log().matches(STANDBY_WARNING).count(), 1, "the standby wait is not logged exactly once");
        assert_listed_in_pg_wait_events(&mut monitor, "SnowflakeIdSyncStandby");

        standby.start();
        let got = waiter.join().expect("waiter").unwrap_or_else(|e| panic!("the waiting call: {}", describe(&e)));
        assert_eq!(got, 50_000);
    });
    // Once the standby has the marks nothing waits (a waiter that is gone
    // without saying so stops counting after a second).
    let deadline = Instant::now() + Duration::from_secs(10);
    while primary.query_text("SELECT coalesce(sync_standby_wait_since::text, 'NULL') FROM snowflake_id_status")
        != "NULL"
    {
        assert!(Instant::now() < deadline, "sync_standby_wait_since stays set after the standby came back");
        thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(primary.log().matches(STANDBY_WARNING).count(), 1, "the standby wait is logged more than once");
}

#[test]
fn a_wait_out_of_max_drift_is_named() {
    // One ID per ms and 10 ms of drift: a bulk draw waits for the clock
    // nearly all the time.
    let primary = Cluster::preloaded(&[
        "snowflake_id.worker_id = 12",
        "snowflake_id.sequence_bits = 0",
        "snowflake_id.max_drift = '10ms'",
    ]);
    let mut monitor = primary.connect();
    let cfg = primary.config();
    let (tx, rx) = std::sync::mpsc::channel();
    let drawer = thread::spawn(move || {
        let mut c = cfg.connect(postgres::NoTls).expect("connect");
        tx.send(backend_pid(&mut c)).unwrap();
        c.batch_execute("SET statement_timeout = '60s'").unwrap();
        sql_error(&mut c, "SELECT count(snowflake_nextval()) FROM generate_series(1, 1000000)")
    });
    let pid = rx.recv().unwrap();
    let max_drift = expected_event("SnowflakeIdMaxDrift", ("Extension", "Extension"));
    wait_until_seen(&mut monitor, pid, &max_drift, "a backend waiting out max_drift");
    assert_listed_in_pg_wait_events(&mut monitor, "SnowflakeIdMaxDrift");
    let cancelled: bool = monitor.query_one("SELECT pg_cancel_backend($1)", &[&pid]).unwrap().get(0);
    assert!(cancelled);
    let e = drawer.join().expect("drawer");
    assert_eq!(e.code, "57014", "{e:?}");
}

#[test]
fn the_fsync_of_the_mark_is_named() {
    // The keeper renews the mark about twice a second while IDs flow; with
    // each of its fsyncs made 3 s long it is seen in the middle of one.
    let primary = Cluster::preloaded(&["snowflake_id.worker_id = 13"]);
    let mut monitor = primary.connect();
    draw_in_order(&mut monitor, 10);
    let keeper: i32 = monitor.query_one("SELECT keeper_pid FROM snowflake_id_status", &[]).unwrap().get(0);
    let slow = SlowFsync::attach(keeper, 3_000_000);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let drawer = {
        let (cfg, stop) = (primary.config(), stop.clone());
        thread::spawn(move || {
            let mut c = cfg.connect(postgres::NoTls).expect("connect");
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                draw_in_order(&mut c, 100);
                thread::sleep(Duration::from_millis(20));
            }
        })
    };
    let mark_sync = expected_event("SnowflakeIdMarkSync", ("IO", "DataFileSync"));
    wait_until_seen(&mut monitor, keeper, &mark_sync, "the keeper writing the mark");
    assert_listed_in_pg_wait_events(&mut monitor, "SnowflakeIdMarkSync");
    drop(slow);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    drawer.join().expect("drawer");
}

#[test]
fn the_mark_keeper_is_in_pg_stat_activity_and_comes_back_when_terminated() {
    let primary = Cluster::preloaded(&["snowflake_id.worker_id = 14"]);
    let mut monitor = primary.connect();
    let keeper_row = "SELECT a.pid, a.backend_type, a.datname IS NULL
                        FROM pg_stat_activity a JOIN snowflake_id_status s ON a.pid = s.keeper_pid";
    let row = monitor
        .query_opt(keeper_row, &[])
        .unwrap()
        .unwrap_or_else(|| panic!("the mark keeper has no row in pg_stat_activity"));
    let (first, backend_type, no_database): (i32, String, bool) = (row.get(0), row.get(1), row.get(2));
    assert_eq!(backend_type, "snowflake_id mark keeper");
    assert!(no_database, "the keeper is connected to a database");

    // pg_terminate_backend reaches it (SIGTERM), and the postmaster starts
    // it again after its restart interval without restarting the server.
    let postmaster = primary.postmaster_pid();
    let terminated: bool = monitor.query_one("SELECT pg_terminate_backend($1)", &[&first]).unwrap().get(0);
    assert!(terminated);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(row) = monitor.query_opt(keeper_row, &[]).unwrap() {
            if row.get::<_, i32>(0) != first {
                assert_eq!(row.get::<_, String>(1), "snowflake_id mark keeper");
                break;
            }
        }
        assert!(Instant::now() < deadline, "the keeper did not come back");
        thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(primary.postmaster_pid(), postmaster);
    draw_in_order(&mut monitor, 1_000);
}

// ---------------------------------------------------------------------------
// monitoring/: the postgres_exporter queries and the ready standby query.

const EXPORTER_FILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/monitoring/postgres_exporter.yaml");
const STANDBY_QUERY_FILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/monitoring/standby_has_mark.sql");

/// One namespace of the exporter file: its query and its columns in order,
/// each with its usage (GAUGE, COUNTER, LABEL).
struct Namespace {
    name: String,
    query: String,
    columns: Vec<(String, String)>,
}

fn exporter_namespaces() -> Vec<Namespace> {
    let text = std::fs::read_to_string(EXPORTER_FILE).expect("read the exporter file");
    let docs = YamlLoader::load_from_str(&text).expect("the exporter file is not YAML");
    let top = docs.first().and_then(Yaml::as_hash).expect("the exporter file is not a mapping");
    top.iter()
        .map(|(name, ns)| {
            let name = name.as_str().expect("namespace name").to_string();
            let ns = ns.as_hash().unwrap_or_else(|| panic!("{name}: not a mapping"));
            let get = |key: &str| ns.get(&Yaml::String(key.into()));
            let query = get("query").and_then(Yaml::as_str).unwrap_or_else(|| panic!("{name}: no query")).to_string();
            assert_eq!(get("master").and_then(Yaml::as_bool), Some(true), "{name}: the status is per server");
            let columns = get("metrics")
                .and_then(Yaml::as_vec)
                .unwrap_or_else(|| panic!("{name}: no metrics"))
                .iter()
                .map(|m| {
                    let (column, spec) = m.as_hash().and_then(|h| h.iter().next()).expect("metric: one mapping");
                    let column = column.as_str().expect("column name").to_string();
                    let spec = spec.as_hash().expect("metric spec");
                    let field = |k: &str| spec.get(&Yaml::String(k.into())).and_then(Yaml::as_str).map(str::to_string);
                    let usage = field("usage").unwrap_or_else(|| panic!("{name}.{column}: no usage"));
                    assert!(field("description").is_some_and(|d| !d.is_empty()), "{name}.{column}: no description");
                    (column, usage)
                })
                .collect();
            Namespace { name, query, columns }
        })
        .collect()
}

/// Runs one namespace's query: exactly one row, exactly the declared
/// columns, numbers where a metric is declared (postgres_exporter makes a
/// float of each), text labels. Returns the row.
fn run_namespace(client: &mut postgres::Client, ns: &Namespace) -> postgres::Row {
    let stmt = client.prepare(&ns.query).unwrap_or_else(|e| panic!("{}: {}", ns.name, describe(&e)));
    let got: Vec<(String, Type)> = stmt.columns().iter().map(|c| (c.name().to_string(), c.type_().clone())).collect();
    let got_names: Vec<&str> = got.iter().map(|c| c.0.as_str()).collect();
    let declared: Vec<&str> = ns.columns.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(got_names, declared, "{}: the query's columns are not the ones declared", ns.name);
    for ((column, ty), (_, usage)) in got.iter().zip(&ns.columns) {
        let numeric = [Type::INT2, Type::INT4, Type::INT8, Type::FLOAT4, Type::FLOAT8, Type::NUMERIC].contains(ty);
        match usage.as_str() {
            "GAUGE" | "COUNTER" => assert!(numeric, "{}.{column} is a {usage} of type {ty}", ns.name),
            "LABEL" => assert_eq!(*ty, Type::TEXT, "{}.{column} is a label", ns.name),
            other => panic!("{}.{column}: usage {other} is not one this file uses", ns.name),
        }
    }
    let mut rows = client.query(&stmt, &[]).unwrap_or_else(|e| panic!("{}: {}", ns.name, describe(&e)));
    assert_eq!(rows.len(), 1, "{}: not exactly one row", ns.name);
    rows.remove(0)
}

/// What the ready query says, and the exporter's `snowflake_id_standby`
/// namespace with it (the two must agree).
#[derive(Debug, PartialEq)]
struct StandbyHasMark {
    has_mark: bool,
    standbys: i64,
    with_mark: i64,
    sync_with_mark: i64,
    bytes_behind: Option<f64>,
}

fn standby_has_mark(client: &mut postgres::Client) -> StandbyHasMark {
    // The two queries run one after the other while the mark and the
    // standbys move (the keeper renews twice a second): they are compared
    // again until they agree on one moment; a real difference between the
    // files persists.
    let mut last = None;
    for _ in 0..20 {
        let (file, exporter) = standby_has_mark_twice(client);
        if (exporter.0 == file.has_mark) && exporter.1 == file.standbys && exporter.2 == file.with_mark {
            return file;
        }
        last = Some((file, exporter));
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("the exporter and the ready query disagree: {last:?}");
}

/// The ready query's answer and the exporter's (has_mark, standbys, with_mark).
fn standby_has_mark_twice(client: &mut postgres::Client) -> (StandbyHasMark, (bool, i64, i64)) {
    let sql = std::fs::read_to_string(STANDBY_QUERY_FILE).expect("read the standby query");
    let stmt = client.prepare(sql.trim().trim_end_matches(';')).unwrap_or_else(|e| panic!("{}", describe(&e)));
    assert_eq!(stmt.columns()[0].type_(), &Type::BOOL, "the ready query's first column is its answer");
    let rows = client.query(&stmt, &[]).unwrap_or_else(|e| panic!("standby_has_mark.sql: {}", describe(&e)));
    assert_eq!(rows.len(), 1, "standby_has_mark.sql: not exactly one row");
    let r = &rows[0];
    let bytes: Option<String> = client
        .query_one(&format!("SELECT bytes_behind::text FROM ({}) q", sql.trim().trim_end_matches(';')), &[])
        .unwrap()
        .get(0);
    let file = StandbyHasMark {
        has_mark: r.get("standby_has_mark"),
        standbys: r.get("standbys"),
        with_mark: r.get("standbys_with_mark"),
        sync_with_mark: r.get("sync_standbys_with_mark"),
        bytes_behind: bytes.map(|b| b.parse().expect("bytes_behind")),
    };
    let namespaces = exporter_namespaces();
    let ns = namespaces.iter().find(|n| n.name == "snowflake_id_standby").expect("snowflake_id_standby namespace");
    let r = run_namespace(client, ns);
    let exporter =
        (r.get::<_, i32>("has_mark") == 1, r.get::<_, i64>("standbys"), r.get::<_, i64>("standbys_with_mark"));
    (file, exporter)
}

/// Polls the ready query until `ok` holds for its answer, for up to a minute.
fn wait_for_answer(client: &mut postgres::Client, what: &str, ok: impl Fn(&StandbyHasMark) -> bool) -> StandbyHasMark {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let answer = standby_has_mark(client);
        if ok(&answer) {
            return answer;
        }
        assert!(Instant::now() < deadline, "{what}: the standby query says {answer:?}");
        thread::sleep(Duration::from_millis(100));
    }
}

/// Until dropped, the process `pid` is stopped (SIGSTOP): a standby's WAL
/// receiver that neither receives nor flushes, while its connection stays.
struct Stopped(i32);

impl Stopped {
    fn new(pid: i32) -> Stopped {
        assert!(Command::new("kill").args(["-STOP", &pid.to_string()]).status().expect("kill").success());
        Stopped(pid)
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-CONT", &self.0.to_string()]).status();
    }
}

#[test]
fn exporter_queries_return_what_the_file_declares_and_the_standby_alert_fails_when_it_should() {
    let primary = Cluster::preloaded(&[
        "snowflake_id.worker_id = 15",
        "snowflake_id.sequence_bits = 2",
        "snowflake_id.max_drift = 0",
    ]);
    let mut client = primary.connect();
    draw_in_order(&mut client, 1_000);
    let namespaces = exporter_namespaces();
    let names: Vec<&str> = namespaces.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["snowflake_id", "snowflake_id_problem", "snowflake_id_standby"]);
    for ns in &namespaces {
        run_namespace(&mut client, ns);
    }
    let status = run_namespace(&mut client, &namespaces[0]);
    assert_eq!(status.get::<_, String>("worker_id"), "15");
    assert!(status.get::<_, i64>("ids_issued") >= 1_000);
    assert_eq!(status.get::<_, i32>("keeper_running"), 1);
    // Nothing waits: 0, not a sentinel.
    assert_eq!(status.get::<_, f64>("sync_standby_wait_seconds"), 0.0);
    let problem = run_namespace(&mut client, &namespaces[1]);
    assert_eq!((problem.get::<_, String>("problem"), problem.get::<_, i32>("active")), (String::new(), 0));

    // No standby: false, one row.
    let alone = standby_has_mark(&mut client);
    assert_eq!((alone.has_mark, alone.standbys, alone.bytes_behind), (false, 0, None), "{alone:?}");

    // An asynchronous standby that has caught up: true.
    let mut standby = Cluster::standby_of(&primary, &[]);
    standby.start();
    let caught_up = wait_for_answer(&mut client, "a caught-up standby", |a| a.has_mark);
    assert_eq!((caught_up.standbys, caught_up.with_mark, caught_up.sync_with_mark), (1, 1, 0), "{caught_up:?}");
    assert_eq!(caught_up.bytes_behind, Some(0.0));

    // A role that may not see the standbys' positions gets false, not a
    // false sense of safety; pg_monitor sees them.
    primary.sql("CREATE ROLE watcher LOGIN");
    let mut cfg = primary.config();
    cfg.user("watcher");
    let mut watcher = cfg.connect(postgres::NoTls).expect("connect as watcher");
    assert!(!standby_has_mark(&mut watcher).has_mark, "a role without pg_monitor saw a standby with the mark");
    primary.sql("GRANT pg_monitor TO watcher");
    let mut watcher = cfg.connect(postgres::NoTls).expect("connect as watcher");
    assert!(standby_has_mark(&mut watcher).has_mark, "pg_monitor does not see the standby");

    // The standby connected but behind the newest mark: false.
    let receiver: i32 = standby.connect().query_one("SELECT pid FROM pg_stat_wal_receiver", &[]).unwrap().get(0);
    {
        let _frozen = Stopped::new(receiver);
        let before = primary.query_text("SELECT mark_lsn::text FROM snowflake_id_status");
        let deadline = Instant::now() + Duration::from_secs(60);
        while primary.query_text("SELECT mark_lsn::text FROM snowflake_id_status") == before {
            assert!(Instant::now() < deadline, "no new mark was written");
            draw_in_order(&mut client, 4_000);
        }
        let behind = standby_has_mark(&mut client);
        assert!(!behind.has_mark, "a standby behind the mark counts as having it: {behind:?}");
        assert_eq!((behind.standbys, behind.with_mark), (1, 0), "{behind:?}");
        assert!(behind.bytes_behind.is_some_and(|b| b > 0.0), "{behind:?}");
    }
    wait_for_answer(&mut client, "the standby caught up again", |a| a.has_mark);

    // Synchronous: the standby has every mark an ID was returned under.
    primary.make_synchronous(&standby);
    draw_in_order(&mut client, 10_000);
    let sync = standby_has_mark(&mut client);
    assert_eq!((sync.has_mark, sync.with_mark, sync.sync_with_mark), (true, 1, 1), "{sync:?}");

    // The synchronous standby stopped, and a new mark written (the caller
    // waits for the standby until statement_timeout): false, and the
    // exporter counts the wait's seconds while it lasts.
    standby.stop();
    let cfg = primary.config();
    let (e, waited) = thread::scope(|s| {
        let caller = s.spawn(move || {
            let mut impatient = cfg.connect(postgres::NoTls).expect("connect");
            impatient.batch_execute("SET statement_timeout = '10s'").unwrap();
            sql_error(&mut impatient, NEEDS_NEW_MARKS)
        });
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut waited = 0.0;
        while waited < 1.0 && !caller.is_finished() && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(100));
            waited = run_namespace(&mut client, &namespaces[0]).get::<_, f64>("sync_standby_wait_seconds");
        }
        (caller.join().expect("the waiting caller"), waited)
    });
    assert_eq!(e.code, "57014", "{e:?}");
    // Seconds, as long as the wait has lasted: at least 1 s before the caller's 10 s ran out.
    assert!((1.0..10.0).contains(&waited), "sync_standby_wait_seconds was {waited} while IDs waited");
    let gone = standby_has_mark(&mut client);
    assert_eq!((gone.has_mark, gone.standbys), (false, 0), "{gone:?}");
}

/// After a clean restart (no ID drawn yet) `mark_lsn` stands at the latest
/// checkpoint's redo pointer, after every mark written before: NULL made
/// monitoring/standby_has_mark.sql count any standby as having the mark.
#[test]
fn mark_lsn_is_known_after_a_clean_restart() {
    let mut cluster = Cluster::preloaded(&["snowflake_id.worker_id = 1"]);
    common::draw_in_order(&mut cluster.connect(), 1000);
    let before: bool = cluster
        .connect()
        .query_one("SELECT mark_lsn IS NOT NULL FROM snowflake_id_status", &[])
        .expect("status")
        .get(0);
    assert!(before);
    cluster.restart();
    let after: bool = cluster
        .connect()
        .query_one("SELECT mark_lsn IS NOT NULL FROM snowflake_id_status", &[])
        .expect("status")
        .get(0);
    assert!(after, "mark_lsn NULL after a restart: the standby alert passes for any standby");
}

/// A `pg_receivewal --synchronous` (a WAL archiver, e.g. barman's
/// streaming) receives WAL but replays none: not a standby that has the mark.
#[test]
fn a_wal_archiver_is_not_a_standby_that_has_the_mark() {
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 1", "wal_level = replica"]);
    common::draw_in_order(&mut cluster.connect(), 1000);
    let dir = tempfile::Builder::new().prefix("receivewal.").tempdir().expect("tempdir");
    std::process::Command::new("chown").args(["postgres", dir.path().to_str().unwrap()]).status().expect("chown");
    let socket = cluster.socket_dir().display().to_string();
    let port = cluster.port.to_string();
    let mut receiver = std::process::Command::new("runuser")
        .args(["-u", "postgres", "--", "timeout", "120", &common::tool("pg_receivewal")])
        .args(["-h", &socket, "-p", &port, "-D", dir.path().to_str().unwrap(), "--synchronous", "--no-loop"])
        .spawn()
        .expect("pg_receivewal");
    let query = std::fs::read_to_string(STANDBY_QUERY_FILE).expect("the query file");
    let query = query.trim().trim_end_matches(';');
    // The case is reached only when the archiver streams and had flushed WAL
    // past the newest mark before the query ran (flush positions only grow,
    // and no new mark came meanwhile): by flush positions alone it has the mark.
    let mark_lsn = |c: &mut postgres::Client| -> String {
        c.query_one("SELECT mark_lsn::text FROM snowflake_id_status", &[]).expect("status").get(0)
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut client = cluster.connect();
    let has_mark = loop {
        if let Some(status) = receiver.try_wait().expect("pg_receivewal") {
            panic!("pg_receivewal ended ({status}) before the case was reached:\n{}", cluster.log());
        }
        assert!(Instant::now() < deadline, "pg_receivewal never streamed past the mark:\n{}", cluster.log());
        let mark = mark_lsn(&mut client);
        let flushed: bool = client
            .query_one(
                "SELECT count(*) = 1 FROM pg_stat_replication
                  WHERE application_name = 'pg_receivewal' AND state = 'streaming' AND flush_lsn >= $1::text::pg_lsn",
                &[&mark],
            )
            .expect("pg_stat_replication")
            .get(0);
        if !flushed {
            thread::sleep(Duration::from_millis(100));
            continue;
        }
        let has_mark: bool = client.query_one(query, &[]).expect("standby_has_mark.sql").get(0);
        if mark_lsn(&mut client) == mark {
            break has_mark;
        }
    };
    let still_running = receiver.try_wait().expect("pg_receivewal").is_none();
    let _ = receiver.kill();
    let _ = receiver.wait();
    assert!(still_running, "pg_receivewal ended while the query ran");
    assert!(!has_mark, "pg_receivewal counted as a standby that has the mark");
}
