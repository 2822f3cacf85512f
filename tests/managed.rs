//! The managed edition (SQL and PL/pgSQL only, docs/managed.md) on a server
//! that does not load the native library: a copy of PostgreSQL without the
//! native files, with pg_tle built into it and preloaded
//! (`bash scripts/pg_tle_server.sh MAJOR` prints its bin directory, which
//! `SNOWFLAKE_MANAGED_PG_BIN` names). The extension is registered from
//! dist/snowflake_id_pg_tle.sql and created by `admin`, a role that is not a
//! superuser (CREATEDB, CREATEROLE, member of pgtle_admin: RDS's admin role).

mod common;

use std::collections::HashSet;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use common::{check, Cluster, FakeClock};
use postgres::{Client, NoTls};

/// How long a test waits for a count of events before calling it a hang.
/// Tests count events (IDs, raises, stops) until they have enough, however
/// slow a shared machine is; this only stops one that never gets there.
const HANG_GUARD: Duration = Duration::from_secs(600);

/// The bin directory of the pg_tle server. Unset is a failure, not a skip:
/// a run without it would pass having tested nothing (scripts/test.sh sets it
/// for every major it tests).
fn managed_bin() -> Option<String> {
    match std::env::var("SNOWFLAKE_MANAGED_PG_BIN") {
        Ok(dir) if !dir.is_empty() => Some(dir.trim_end_matches('/').to_string()),
        _ => panic!(
            "SNOWFLAKE_MANAGED_PG_BIN is not set: export SNOWFLAKE_MANAGED_PG_BIN=$(bash scripts/pg_tle_server.sh 15)"
        ),
    }
}

/// What the owner runs to let `role` draw IDs (docs/managed.md, "Drawing
/// roles"): no other role may name the counter's schema by default.
fn grant_draw(role: &str) -> String {
    format!(
        "GRANT USAGE ON SCHEMA snowflake_id_state TO {role};
         GRANT USAGE ON SEQUENCE snowflake_id_state.snowflake_managed_counter TO {role};
         GRANT SELECT ON SEQUENCE snowflake_id_state.snowflake_managed_generation,
             snowflake_id_state.snowflake_managed_offset TO {role};"
    )
}

fn repo_file(path: &str) -> String {
    format!("{}/{path}", env!("CARGO_MANIFEST_DIR"))
}

/// A server as a managed service runs it: pg_tle preloaded, snowflake_id not.
struct Managed {
    cluster: Cluster,
}

impl Managed {
    /// A new server with `admin`, database `app` owned by it, and pg_tle in
    /// `app`; snowflake_id is not registered yet.
    fn bare(bin: &str, conf: &[&str]) -> Managed {
        let mut lines = vec!["shared_preload_libraries = 'pg_tle'", "wal_level = replica", "max_wal_senders = 4"];
        lines.extend_from_slice(conf);
        let mut cluster = Cluster::init_with_bin(bin, &[], &lines);
        cluster.start();
        let m = Managed { cluster };
        m.prepare_database();
        m
    }

    /// The same with a fake clock the test steps.
    fn bare_with_fake_clock(bin: &str) -> (Managed, FakeClock) {
        let lines = ["shared_preload_libraries = 'pg_tle'"];
        let mut cluster = Cluster::init_with_bin(bin, &[], &lines);
        let clock = cluster.start_with_fake_clock("+0");
        let m = Managed { cluster };
        m.prepare_database();
        (m, clock)
    }

    fn prepare_database(&self) {
        self.cluster.sql(
            "CREATE EXTENSION pg_tle;
             CREATE ROLE admin LOGIN CREATEDB CREATEROLE;
             GRANT pgtle_admin TO admin;
             CREATE ROLE app LOGIN;",
        );
        self.cluster.sql("CREATE DATABASE app OWNER admin");
        self.as_user("postgres", "app").batch_execute("CREATE EXTENSION pg_tle").expect("pg_tle in app");
    }

    /// A server with the extension registered, created by `admin` and given
    /// worker id 5.
    fn installed(bin: &str, conf: &[&str]) -> Managed {
        let m = Managed::bare(bin, conf);
        m.register("app");
        let mut admin = m.admin();
        admin.batch_execute("CREATE EXTENSION snowflake_id; SELECT snowflake_set_worker_id(5);").expect("create");
        admin.batch_execute(&grant_draw("app")).expect("grant app the drawing");
        m
    }

    fn as_user(&self, user: &str, db: &str) -> Client {
        let mut cfg = self.cluster.config();
        cfg.user(user).dbname(db);
        cfg.connect(NoTls).unwrap_or_else(|e| panic!("connect as {user}: {e}\n{}", self.cluster.log()))
    }

    fn admin(&self) -> Client {
        self.as_user("admin", "app")
    }

    /// Runs a dist/ script with psql as `user` in `db`.
    fn psql_file(&self, user: &str, db: &str, file: &str, options: &str) {
        let out = self
            .cluster
            .psql(user, db)
            .args(["-f", &repo_file(file)])
            .env("PGOPTIONS", options)
            .output()
            .expect("psql");
        check(&format!("psql -f {file}"), out);
    }

    /// Registers the extension with pg_tle, as admin.
    fn register(&self, db: &str) {
        self.psql_file("admin", db, "dist/snowflake_id_pg_tle.sql", "");
    }
}

fn ids(client: &mut Client, sql: &str) -> Vec<i64> {
    client
        .query(sql, &[])
        .unwrap_or_else(|e| panic!("{sql}: {}", common::describe(&e)))
        .iter()
        .map(|r| r.get(0))
        .collect()
}

fn draw(client: &mut Client, n: i64) -> Vec<i64> {
    ids(client, &format!("SELECT snowflake_nextval() FROM generate_series(1, {n}) ORDER BY 1"))
}

fn one(client: &mut Client, sql: &str) -> i64 {
    client.query_one(sql, &[]).unwrap_or_else(|e| panic!("{sql}: {}", common::describe(&e))).get(0)
}

fn sqlstate_of(client: &mut Client, sql: &str) -> (String, String) {
    let e = common::sql_error(client, sql);
    (e.code.clone(), format!("{} / {}", e.message, e.hint))
}

/// The worker id and time of an ID of the default layout.
fn worker_of(id: i64) -> i64 {
    (id >> 12) & 1023
}

#[test]
fn dist_is_what_managed_sh_writes() {
    let out = Command::new("bash").arg(repo_file("scripts/managed.sh")).arg("--check").output().expect("bash");
    check("scripts/managed.sh --check", out);
}

#[test]
fn a_non_superuser_admin_registers_creates_configures_and_draws() {
    let Some(bin) = managed_bin() else { return };
    let m = Managed::bare(&bin, &[]);
    m.register("app");
    // Registering again changes nothing and does not fail.
    m.register("app");
    let mut admin = m.admin();
    let superuser: bool =
        admin.query_one("SELECT rolsuper FROM pg_roles WHERE rolname = current_user", &[]).unwrap().get(0);
    assert!(!superuser, "admin must not be a superuser");
    admin.batch_execute("CREATE EXTENSION snowflake_id").expect("CREATE EXTENSION as admin");
    // No worker id yet: 55000 with the fix in the hint, and no ID.
    let (code, text) = sqlstate_of(&mut admin, "SELECT snowflake_nextval()");
    assert_eq!(code, "55000", "{text}");
    assert!(text.contains("snowflake_set_worker_id"), "{text}");
    let (code, text) = sqlstate_of(&mut admin, "SELECT snowflake_nextval_array(3)");
    assert_eq!(code, "55000", "{text}");
    let problem: Option<String> = admin.query_one("SELECT problem FROM snowflake_id_status", &[]).unwrap().get(0);
    assert!(problem.unwrap_or_default().contains("no worker id"));
    admin.batch_execute("SELECT snowflake_set_worker_id(5)").unwrap();
    let got = draw(&mut admin, 1000);
    assert!(got.iter().all(|id| worker_of(*id) == 5), "worker bits");
    assert_eq!(got.iter().collect::<HashSet<_>>().len(), 1000);
    // The time part is the clock's (default epoch 2025-01-01).
    let now_ms = one(&mut admin, "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint");
    let ms = (got[999] >> 22) + 1_735_689_600_000;
    assert!((now_ms - ms).abs() < 5_000, "time part {ms} vs clock {now_ms}");
    // The fast path is inlined: no function call of ours in the plan.
    let plan = ids_plan(&mut admin);
    assert!(plan.contains("nextval('snowflake_id_state.snowflake_managed_counter'"), "not inlined: {plan}");
    // Blocks: ascending, all new, the same worker.
    let block = ids(&mut admin, "SELECT * FROM snowflake_nextval_block(500)");
    assert_eq!(block.len(), 500);
    assert!(block.windows(2).all(|w| w[0] < w[1]) && block[0] > got[999]);
    let array: Vec<i64> = admin.query_one("SELECT snowflake_nextval_array(300)", &[]).unwrap().get(0);
    assert!(array.windows(2).all(|w| w[0] < w[1]) && array[0] > block[499]);
    let (code, _) = sqlstate_of(&mut admin, "SELECT snowflake_nextval_array(1000001)");
    assert_eq!(code, "22023");
    // Status.
    let row =
        admin.query_one("SELECT worker_id, last_id, drift_ms, in_recovery FROM snowflake_id_status", &[]).unwrap();
    assert_eq!(row.get::<_, Option<i64>>(0), Some(5));
    assert!(row.get::<_, Option<i64>>(1).unwrap() >= array[299]);
    assert!(!row.get::<_, bool>(3));
}

fn ids_plan(client: &mut Client) -> String {
    client
        .query("EXPLAIN (VERBOSE, COSTS OFF) SELECT snowflake_nextval()", &[])
        .unwrap()
        .iter()
        .map(|r| r.get::<_, String>(0))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn only_the_owner_changes_worker_id_layout_or_the_counter() {
    let Some(bin) = managed_bin() else { return };
    let m = Managed::installed(&bin, &[]);
    let mut app = m.as_user("app", "app");
    // Positive control: app can draw (the attempts below reach the functions).
    let before = draw(&mut app, 3);
    for (sql, what) in [
        ("SELECT snowflake_set_worker_id(9)", "worker id"),
        ("SELECT snowflake_set_layout('2024-01-01', 8, 14)", "layout"),
        ("SELECT snowflake_advance_past(1)", "advance_past"),
        ("UPDATE snowflake_id_private.snowflake_managed_config SET worker_id = 9", "config table"),
        ("SELECT setval('snowflake_id_state.snowflake_managed_counter', 1)", "counter setval"),
        ("SELECT nextval('snowflake_id_state.snowflake_managed_generation')", "generation bump"),
        ("SELECT snowflake_id_internal.snowflake_managed_raise(1, 0, 10, 0)", "raise"),
        ("SELECT snowflake_id_internal.snowflake_managed_bake(true)", "bake"),
        ("CREATE OR REPLACE FUNCTION snowflake_nextval() RETURNS bigint LANGUAGE sql RETURN 1", "replace"),
        ("GRANT admin TO app", "role"),
        ("ALTER SEQUENCE snowflake_id_state.snowflake_managed_counter RESTART 1", "alter counter"),
        (
            "DO $$BEGIN LOCK TABLE snowflake_id_private.snowflake_managed_raise_lock IN EXCLUSIVE MODE; END$$",
            "hold the raise lock",
        ),
        ("SELECT * FROM snowflake_id_private.snowflake_managed_raise_lock", "read the raise lock"),
        // Parse analysis locks a relation before privileges are checked: a
        // PREPARE in an open transaction held the raise lock's table and
        // stopped every raise. The schema
        // grants nothing, so the name is not even found.
        (
            "PREPARE hold AS INSERT INTO snowflake_id_private.snowflake_managed_raise_lock VALUES (true)",
            "prepare an insert into the raise lock",
        ),
        (
            "PREPARE share AS SELECT 1 FROM snowflake_id_private.snowflake_managed_raise_lock FOR UPDATE",
            "prepare a locking read of the raise lock",
        ),
        ("CREATE FUNCTION snowflake_id_private.f() RETURNS int LANGUAGE sql RETURN 1", "create in the lock's schema"),
        ("CREATE FUNCTION snowflake_id_internal.f() RETURNS int LANGUAGE sql RETURN 1", "create internal"),
    ] {
        let (code, text) = sqlstate_of(&mut app, sql);
        assert_eq!(code, "42501", "{what}: {sql}: {text}");
    }
    // Even with EXECUTE granted by mistake, the function itself refuses.
    m.admin().batch_execute("GRANT EXECUTE ON FUNCTION snowflake_set_worker_id(integer) TO app").unwrap();
    let (code, text) = sqlstate_of(&mut app, "SELECT snowflake_set_worker_id(9)");
    assert_eq!(code, "42501", "{text}");
    let after = draw(&mut app, 3);
    assert!(after.iter().all(|id| worker_of(*id) == 5) && after[0] > before[2]);
    // The owner can; a superuser too.
    m.admin().batch_execute("SELECT snowflake_set_worker_id(6)").unwrap();
    assert_eq!(worker_of(draw(&mut app, 1)[0]), 6);
    m.as_user("postgres", "app").batch_execute("SELECT snowflake_set_worker_id(7)").unwrap();
    assert_eq!(worker_of(draw(&mut app, 1)[0]), 7);
    // The layout only before the first ID.
    let (code, text) = sqlstate_of(&mut m.admin(), "SELECT snowflake_set_layout('2024-01-01', 8, 14)");
    assert_eq!(code, "55000", "{text}");
}

#[test]
fn a_layout_set_before_the_first_id_is_baked_into_ids_and_decoders() {
    let Some(bin) = managed_bin() else { return };
    let m = Managed::bare(&bin, &[]);
    m.register("app");
    let mut admin = m.admin();
    admin.batch_execute("CREATE EXTENSION snowflake_id").unwrap();
    let (code, _) = sqlstate_of(&mut admin, "SELECT snowflake_set_layout('2024-01-01', 12, 11)");
    assert_eq!(code, "22023", "23 bits refused");
    let (code, _) = sqlstate_of(&mut admin, "SELECT snowflake_set_layout(now() + interval '1 day', 8, 14)");
    assert_eq!(code, "22023", "future epoch refused");
    admin
        .batch_execute(
            "SELECT snowflake_set_layout('2024-01-01 00:00:00+00', 8, 14); SELECT snowflake_set_worker_id(200)",
        )
        .unwrap();
    let (code, _) = sqlstate_of(&mut admin, "SELECT snowflake_set_worker_id(256)");
    assert_eq!(code, "22023", "worker id beyond 8 bits refused");
    let id = draw(&mut admin, 1)[0];
    assert_eq!((id >> 14) & 255, 200);
    let ms = (id >> 22) + 1_704_067_200_000;
    let now_ms = one(&mut admin, "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint");
    assert!((now_ms - ms).abs() < 5_000, "time part {ms} vs clock {now_ms}");
    let row = admin
        .query_one(
            "SELECT snowflake_managed_epoch(), snowflake_managed_worker_bits(), snowflake_managed_sequence_bits()",
            &[],
        )
        .unwrap();
    assert_eq!((row.get::<_, i32>(1), row.get::<_, i32>(2)), (8, 14));
}

/// Many sessions at once, at a low rate each so that the counter is behind
/// the clock at almost every draw and raises race with draws all the time,
/// and flat out: no ID twice, each session's IDs increasing.
#[test]
fn many_sessions_never_repeat_and_each_increases() {
    let Some(bin) = managed_bin() else { return };
    let m = Managed::installed(&bin, &["max_connections = 40"]);
    let sessions = 12;
    // Until 12,000 IDs are drawn in all, however long the machine takes (the
    // deadline only stops a hang).
    let target = 12_000;
    let drawn = Arc::new(AtomicUsize::new(0));
    let barrier = Arc::new(Barrier::new(sessions));
    let handles: Vec<_> = (0..sessions)
        .map(|i| {
            let mut client = m.admin();
            let (barrier, drawn) = (barrier.clone(), drawn.clone());
            thread::spawn(move || {
                barrier.wait();
                let mut got = Vec::new();
                let hang_guard = Instant::now() + HANG_GUARD;
                while drawn.load(Ordering::Relaxed) < target {
                    assert!(
                        Instant::now() < hang_guard,
                        "{} IDs drawn in {HANG_GUARD:?}",
                        drawn.load(Ordering::Relaxed)
                    );
                    // Single draws (one ms apart at most), and batches of them.
                    let before = got.len();
                    if i % 3 == 0 {
                        got.extend(ids(&mut client, "SELECT snowflake_nextval() FROM generate_series(1, 200)"));
                    } else {
                        got.push(one(&mut client, "SELECT snowflake_nextval()"));
                    }
                    drawn.fetch_add(got.len() - before, Ordering::Relaxed);
                }
                got
            })
        })
        .collect();
    let all: Vec<Vec<i64>> = handles.into_iter().map(|h| h.join().expect("session")).collect();
    let mut seen = HashSet::new();
    let mut total = 0;
    for (i, got) in all.iter().enumerate() {
        assert!(got.windows(2).all(|w| w[0] < w[1]), "session {i} not increasing");
        assert!(!got.is_empty(), "session {i} drew nothing: no race with it");
        for id in got {
            assert!(seen.insert(*id), "ID {id} twice");
        }
        total += got.len();
    }
    assert!(total >= target, "too few IDs to mean anything: {total}");
}

/// kill -9 while sessions insert, and the restart with the clock an hour
/// behind (so that the clock cannot cover for a counter that lost its
/// state): every new ID is above every ID of a committed row.
#[test]
fn kill_9_mid_draw_never_repeats_a_committed_id() {
    let Some(bin) = managed_bin() else { return };
    let (mut m, clock) = Managed::bare_with_fake_clock(&bin);
    m.register("app");
    m.admin()
        .batch_execute(
            "CREATE EXTENSION snowflake_id; SELECT snowflake_set_worker_id(5);
             CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), s int)",
        )
        .unwrap();
    let handles: Vec<_> = (0..4)
        .map(|s| {
            let mut client = m.admin();
            thread::spawn(move || {
                for _ in 0..100_000 {
                    if client.execute("INSERT INTO t (s) SELECT $1 FROM generate_series(1, 20)", &[&s]).is_err() {
                        break;
                    }
                }
            })
        })
        .collect();
    // Crash once rows are committed, however slow the machine.
    let mut watcher = m.admin();
    let hang_guard = Instant::now() + HANG_GUARD;
    while one(&mut watcher, "SELECT count(*) FROM t") <= 1000 {
        assert!(Instant::now() < hang_guard, "no rows inserted in {HANG_GUARD:?}");
        thread::sleep(Duration::from_millis(50));
    }
    drop(watcher);
    m.cluster.crash();
    for h in handles {
        h.join().unwrap();
    }
    clock.set("-1h");
    m.cluster.start();
    common::wait_for_clock_offset(&m.cluster, -3600.0);
    let mut admin = m.admin();
    let max = one(&mut admin, "SELECT max(id) FROM t");
    assert!(one(&mut admin, "SELECT count(*) FROM t") > 100, "the crash came before any insert");
    let new = draw(&mut admin, 2000);
    assert!(new[0] > max, "after kill -9: {} not above the committed {max}", new[0]);
}

/// The clock set back an hour while running, and while stopped: IDs go on
/// above every earlier one, without waiting out the hour.
#[test]
fn a_clock_set_back_never_repeats_or_goes_back() {
    let Some(bin) = managed_bin() else { return };
    let (mut m, clock) = Managed::bare_with_fake_clock(&bin);
    m.register("app");
    m.admin().batch_execute("CREATE EXTENSION snowflake_id; SELECT snowflake_set_worker_id(5)").unwrap();
    let mut admin = m.admin();
    // A draw that waits out the hour fails here rather than hang the test
    // (a loaded machine takes seconds for 3,000 draws, never minutes).
    admin.batch_execute("SET statement_timeout = '180s'").unwrap();
    let before = draw(&mut admin, 3000);
    clock.set("-1h");
    common::wait_for_clock_offset(&m.cluster, -3600.0);
    let started = Instant::now();
    let during = draw(&mut admin, 3000);
    assert!(started.elapsed() < Duration::from_secs(180), "the step back made draws wait");
    assert!(during[0] > before[2999], "after the step back: {} <= {}", during[0], before[2999]);
    m.cluster.restart();
    let mut admin = m.admin();
    admin.batch_execute("SET statement_timeout = '180s'").unwrap();
    let after_restart = draw(&mut admin, 3000);
    assert!(after_restart[0] > during[2999], "after a restart with the clock behind");
    let blocks = ids(&mut admin, "SELECT * FROM snowflake_nextval_block(1000)");
    assert!(blocks[0] > after_restart[2999]);
    clock.set("+0");
    common::wait_for_clock_offset(&m.cluster, 0.0);
    let back = draw(&mut admin, 100);
    assert!(back[0] > blocks[999]);
}

/// A hot standby refuses with the edition's own error; after promotion the
/// new primary issues above every ID its old primary committed.
#[test]
fn a_standby_refuses_and_a_promoted_one_continues_above() {
    let Some(bin) = managed_bin() else { return };
    let m = Managed::installed(&bin, &[]);
    let mut admin = m.admin();
    admin.batch_execute("CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_nextval())").unwrap();
    let mut standby = Cluster::standby_of(&m.cluster, &[]);
    standby.start();
    m.cluster.make_synchronous(&standby);
    admin.batch_execute("INSERT INTO t SELECT FROM generate_series(1, 5000)").unwrap();
    let max = one(&mut admin, "SELECT max(id) FROM t");
    let mut cfg = standby.config();
    cfg.user("admin").dbname("app");
    let mut on_standby = cfg.connect(NoTls).unwrap();
    for sql in ["SELECT snowflake_nextval()", "SELECT snowflake_nextval_array(2)"] {
        let (code, text) = sqlstate_of(&mut on_standby, sql);
        assert_eq!(code, "25006", "{sql}: {text}");
        assert!(text.contains("standby") && text.contains("primary"), "not the edition's own error: {text}");
    }
    let problem: Option<String> = on_standby.query_one("SELECT problem FROM snowflake_id_status", &[]).unwrap().get(0);
    assert!(problem.unwrap_or_default().contains("standby"));
    drop(on_standby);
    drop(admin);
    let mut primary = m;
    primary.cluster.crash();
    standby.promote();
    let mut on_new = cfg.connect(NoTls).unwrap();
    let got = draw(&mut on_new, 1000);
    assert!(got[0] > max, "after promotion {} <= {max}", got[0]);
}

/// pg_dump of a database, restored into a new database with the extension
/// registered there: same worker id and layout, new IDs above the old ones.
#[test]
fn pg_dump_and_restore_keep_the_configuration_and_continue_above() {
    let Some(bin) = managed_bin() else { return };
    let m = Managed::bare(&bin, &[]);
    m.register("app");
    let mut admin = m.admin();
    admin
        .batch_execute(
            "CREATE EXTENSION snowflake_id;
             SELECT snowflake_set_layout('2024-06-01 00:00:00+00', 9, 13);
             SELECT snowflake_set_worker_id(300);",
        )
        .unwrap();
    admin
        .batch_execute(
            "CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_nextval());
             INSERT INTO t SELECT FROM generate_series(1, 3000);",
        )
        .unwrap();
    // Push the counter ahead of the clock so that the clock alone would not
    // keep the restored database above its IDs.
    admin.batch_execute("SELECT snowflake_advance_past(max(id) + (1::bigint << 22) * 600000) FROM t").unwrap();
    let max = one(&mut admin, "SELECT snowflake_nextval()");
    let dump = m.cluster.socket_dir().join("app.dump");
    let out = Command::new(m.cluster.tool("pg_dump"))
        .args(["-Fc", "-h"])
        .arg(m.cluster.socket_dir())
        .args(["-p", &m.cluster.port.to_string(), "-U", "admin", "-d", "app", "-f"])
        .arg(&dump)
        .output()
        .unwrap();
    check("pg_dump", out);
    m.cluster.sql("CREATE DATABASE copy OWNER admin");
    // As on a managed service: the new database gets pg_tle from the
    // administrator; the dump brings snowflake_id's registration (pg_tle keeps
    // it in functions of its schema), the extension, its configuration and
    // its counter.
    m.as_user("postgres", "copy").batch_execute("CREATE EXTENSION pg_tle").unwrap();
    let out = Command::new(m.cluster.tool("pg_restore"))
        .args(["-h"])
        .arg(m.cluster.socket_dir())
        .args(["-p", &m.cluster.port.to_string(), "-U", "admin", "-d", "copy"])
        .arg(&dump)
        .output()
        .unwrap();
    // Only pg_tle's own schema and comment, already there, are refused.
    let err = String::from_utf8_lossy(&out.stderr);
    for line in err.lines().filter(|l| l.starts_with("Command was:")) {
        assert!(
            line == "Command was: CREATE SCHEMA pgtle;" || line.starts_with("Command was: COMMENT ON EXTENSION pg_tle"),
            "pg_restore: {err}"
        );
    }
    let mut copy = m.as_user("admin", "copy");
    let row = copy.query_one("SELECT worker_id, worker_bits, sequence_bits FROM snowflake_id_status", &[]).unwrap();
    assert_eq!((row.get::<_, Option<i64>>(0), row.get::<_, i32>(1), row.get::<_, i32>(2)), (Some(300), 9, 13));
    let got = draw(&mut copy, 100);
    assert!(got[0] > max, "restored: {} <= {max}", got[0]);
    assert!(got.iter().all(|id| (id >> 13) & 511 == 300));
    let (code, _) = sqlstate_of(&mut copy, "SELECT snowflake_set_layout('2024-01-01', 10, 12)");
    assert_eq!(code, "55000", "the restored database has issued IDs: its layout is fixed");
}

/// The plain script, on a server without pg_tle, into a schema of the
/// owner's choice.
#[test]
fn the_plain_script_installs_without_pg_tle() {
    let Some(bin) = managed_bin() else { return };
    let mut cluster = Cluster::init_with_bin(&bin, &[], &[]);
    cluster.start();
    cluster.sql("CREATE ROLE admin LOGIN CREATEDB CREATEROLE; CREATE ROLE app LOGIN;");
    cluster.sql("CREATE DATABASE app OWNER admin");
    let m = Managed { cluster };
    m.admin().batch_execute("CREATE SCHEMA ids").unwrap();
    m.psql_file("admin", "app", "dist/snowflake_id_plain.sql", "-c search_path=ids");
    let mut admin = m.admin();
    admin.batch_execute("SET search_path = ids; SELECT snowflake_set_worker_id(12)").unwrap();
    let got = draw(&mut admin, 500);
    assert!(got.iter().all(|id| worker_of(*id) == 12));
    let mut app = m.as_user("app", "app");
    let (code, _) = sqlstate_of(&mut app, "SELECT ids.snowflake_set_worker_id(3)");
    assert_eq!(code, "42501");
    admin.batch_execute("GRANT USAGE ON SCHEMA ids TO app").unwrap();
    // The drawing itself is the owner's to grant (docs/managed.md).
    let (code, _) = sqlstate_of(&mut app, "SELECT ids.snowflake_nextval()");
    assert_eq!(code, "42501");
    admin.batch_execute(&grant_draw("app")).unwrap();
    let more = ids(&mut app, "SELECT ids.snowflake_nextval() FROM generate_series(1, 10)");
    assert!(more[0] > got[499]);
}

/// The raise race: with 4 to 8 sequence bits (16 to 256 IDs per ms) a dozen
/// sessions drawing single IDs keep the counter a few values behind the
/// clock's floor at each millisecond boundary (which layout does depends on
/// the machine's speed: a faster one than its rate keeps the counter ahead
/// and hardly raises; all four run), so raises run every millisecond while the
/// other sessions' draws climb past the raise's target. Without the seqlock
/// (a raise reads the counter, then setval) a value drawn between the two is
/// issued again, or a session gets an ID below its last: within seconds.
#[test]
fn raises_racing_draws_at_the_clock_never_repeat() {
    let Some(bin) = managed_bin() else { return };
    let m = Managed::bare(&bin, &["max_connections = 40"]);
    let mut raises = 0;
    for bits in [4, 5, 6, 8] {
        let db = format!("race{bits}");
        m.cluster.sql(&format!("CREATE DATABASE {db} OWNER admin"));
        m.as_user("postgres", &db).batch_execute("CREATE EXTENSION pg_tle").unwrap();
        m.register(&db);
        let mut admin = m.as_user("admin", &db);
        admin
            .batch_execute(&format!(
                "CREATE EXTENSION snowflake_id;
                 SELECT snowflake_set_layout('2025-01-01 00:00:00+00', 10, {bits});
                 SELECT snowflake_set_worker_id(1);"
            ))
            .unwrap();
        let sessions = 14;
        let barrier = Arc::new(Barrier::new(sessions + 1));
        let stop = Arc::new(AtomicBool::new(false));
        let handles: Vec<_> = (0..sessions)
            .map(|_| {
                let mut client = m.as_user("admin", &db);
                let (barrier, stop) = (barrier.clone(), stop.clone());
                thread::spawn(move || {
                    let stmt = client.prepare("SELECT snowflake_nextval()").unwrap();
                    barrier.wait();
                    let mut got = Vec::new();
                    while !stop.load(Ordering::Relaxed) {
                        got.push(client.query_one(&stmt, &[]).expect("draw").get::<_, i64>(0));
                    }
                    got
                })
            })
            .collect();
        // On until this layout has raised 600 times, however long the
        // machine takes (the deadline only stops a hang).
        barrier.wait();
        let hang_guard = Instant::now() + HANG_GUARD;
        let generation = "SELECT pg_sequence_last_value('snowflake_id_state.snowflake_managed_generation') / 2";
        while one(&mut admin, generation) < 600 {
            assert!(Instant::now() < hang_guard, "{bits} sequence bits: fewer than 600 raises in {HANG_GUARD:?}");
            thread::sleep(Duration::from_millis(100));
        }
        stop.store(true, Ordering::Relaxed);
        let all: Vec<Vec<i64>> = handles.into_iter().map(|h| h.join().expect("session")).collect();
        let mut seen = HashSet::new();
        let (mut repeats, mut backwards) = (0, 0);
        for got in &all {
            backwards += got.windows(2).filter(|w| w[0] >= w[1]).count();
            repeats += got.iter().filter(|id| !seen.insert(**id)).count();
        }
        assert_eq!(
            (repeats, backwards),
            (0, 0),
            "{bits} sequence bits: IDs issued twice, IDs not above the session's last, among {}",
            seen.len()
        );
        raises +=
            one(&mut admin, "SELECT pg_sequence_last_value('snowflake_id_state.snowflake_managed_generation') / 2");
    }
    assert!(raises > 1000, "too few raises ({raises}) to race");
}

/// The functions applications call, as the catalog describes them on each
/// edition: the same names, argument names, types and defaults, results and
/// volatility (`SNOWFLAKE_PG_BIN` is a server with the native extension
/// installed). Parallel labels are compared too, but for the one difference
/// docs/managed.md gives: the managed snowflake_nextval() calls nextval() and
/// is PARALLEL UNSAFE.
#[test]
fn application_functions_match_the_native_catalog() {
    let Some(bin) = managed_bin() else { return };
    let mut native = Cluster::init(&[]);
    native.start();
    native.sql("CREATE EXTENSION snowflake_id");
    let managed = Managed::installed(&bin, &[]);
    let sql = "SELECT p.proname::text, pg_get_function_arguments(p.oid), pg_get_function_result(p.oid),
                      p.provolatile::text, p.proparallel::text, p.proretset
                 FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
                WHERE n.nspname = 'public' AND p.proname LIKE 'snowflake\\_%'";
    type Row = (String, String, String, String, String, bool);
    let catalog = |client: &mut Client| -> Vec<Row> {
        client
            .query(sql, &[])
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4), r.get(5)))
            .collect()
    };
    let native_rows = catalog(&mut native.connect());
    let managed_rows = catalog(&mut managed.admin());
    let mut required = vec![
        "snowflake_nextval",
        "snowflake_nextval_block",
        "snowflake_nextval_array",
        "snowflake_advance_past",
        "snowflake_id_status",
    ];
    // The decoders and text forms come from their own files (h41b's part).
    if std::path::Path::new(&repo_file("sql/managed/accessors.sql")).exists() {
        required.extend([
            "snowflake_timestamp",
            "snowflake_worker_id",
            "snowflake_sequence",
            "snowflake_decode",
            "snowflake_from_timestamp",
            "snowflake_id_span",
        ]);
    }
    if std::path::Path::new(&repo_file("sql/managed/text_forms.sql")).exists() {
        required.extend([
            "snowflake_to_base62",
            "snowflake_from_base62",
            "snowflake_to_base32",
            "snowflake_from_base32",
        ]);
    }
    let mut problems = Vec::new();
    for name in &required {
        let of = |rows: &[Row]| rows.iter().filter(|r| r.0 == *name).cloned().collect::<Vec<_>>();
        let (n, m) = (of(&native_rows), of(&managed_rows));
        if n.is_empty() {
            problems.push(format!("{name}: not in the native catalog"));
        }
        for nr in &n {
            let Some(mr) = m.iter().find(|mr| mr.1 == nr.1) else {
                problems.push(format!("{name}({}): missing in the managed edition", nr.1));
                continue;
            };
            let result_matches = if *name == "snowflake_id_status" {
                // Managed has the native columns that mean something here, in
                // native order with native types.
                let cols = |r: &str| {
                    r.trim_start_matches("TABLE(")
                        .trim_end_matches(')')
                        .split(", ")
                        .map(str::to_string)
                        .collect::<Vec<_>>()
                };
                let native_cols = cols(&nr.2);
                cols(&mr.2).iter().all(|c| native_cols.contains(c))
            } else {
                mr.2 == nr.2
            };
            if !result_matches || mr.3 != nr.3 || mr.5 != nr.5 {
                problems.push(format!("{name}: native {nr:?}, managed {mr:?}"));
            }
            let parallel_ok = mr.4 == nr.4 || (*name == "snowflake_nextval" && mr.4 == "u");
            if !parallel_ok {
                problems.push(format!("{name}: parallel label native {}, managed {}", nr.4, mr.4));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// More IDs per millisecond than the layout has (2 sequence bits: 4 per ms)
/// borrow the next milliseconds, up to max_drift (one second) ahead of the
/// clock; past that, callers wait, and statement_timeout ends a wait cleanly.
#[test]
fn a_burst_stays_within_max_drift_and_its_wait_can_be_cancelled() {
    let Some(bin) = managed_bin() else { return };
    let m = Managed::bare(&bin, &[]);
    m.register("app");
    let mut admin = m.admin();
    admin
        .batch_execute(
            "CREATE EXTENSION snowflake_id;
             SELECT snowflake_set_layout('2025-01-01 00:00:00+00', 10, 2);
             SELECT snowflake_set_worker_id(3);",
        )
        .unwrap();
    let started = Instant::now();
    let got = draw(&mut admin, 12_000);
    let elapsed = started.elapsed();
    assert_eq!(got.iter().collect::<HashSet<_>>().len(), 12_000);
    // 12,000 IDs are 3 s of this layout's numbering: at most 1 s of it may be
    // borrowed ahead, so the draw took about 2 s at least.
    assert!(elapsed > Duration::from_millis(1500), "no wait: 12,000 IDs in {elapsed:?}");
    let ahead_ms = one(
        &mut admin,
        "SELECT ((snowflake_nextval() >> 12) + 1735689600000) - (extract(epoch FROM clock_timestamp()) * 1000)::bigint",
    );
    assert!(ahead_ms <= 1_100, "{ahead_ms} ms ahead of the clock, max_drift is 1 s");
    let drift: i64 = admin.query_one("SELECT drift_ms FROM snowflake_id_status", &[]).unwrap().get(0);
    assert!(drift <= 1_100, "status drift_ms {drift}");
    admin.batch_execute("SET statement_timeout = '300ms'").unwrap();
    let (code, text) = sqlstate_of(&mut admin, "SELECT count(snowflake_nextval()) FROM generate_series(1, 100000)");
    assert_eq!(code, "57014", "{text}");
    admin.batch_execute("RESET statement_timeout").unwrap();
    let after = draw(&mut admin, 10);
    assert!(after[0] > got[11_999]);
}

/// An update of the edition from one version to the next, the way a release
/// ships it: scripts/managed.sh writes the next version's pg_tle script with
/// the update path from sql/managed/updates/, the admin runs it on a database
/// that uses the current version, then ALTER EXTENSION ... UPDATE. Here the
/// next version (the current one plus ".1") raises max_drift and bakes again:
/// afterwards the fast path has the new constant, the worker id, layout and
/// counter are kept, and IDs continue above.
#[test]
fn an_update_to_the_next_version_keeps_configuration_and_counter() {
    let Some(bin) = managed_bin() else { return };
    let m = Managed::installed(&bin, &[]);
    let mut admin = m.admin();
    let current: String =
        admin.query_one("SELECT extversion FROM pg_extension WHERE extname = 'snowflake_id'", &[]).unwrap().get(0);
    let next = format!("{current}.1");
    let before = draw(&mut admin, 100);
    let work = tempfile::tempdir().unwrap();
    let updates = work.path().join("updates");
    std::fs::create_dir(&updates).unwrap();
    std::fs::write(
        updates.join(format!("snowflake_id--{current}--{next}.sql")),
        "CREATE OR REPLACE FUNCTION snowflake_id_internal.snowflake_managed_max_drift_ms() RETURNS bigint\n    \
         LANGUAGE sql IMMUTABLE PARALLEL SAFE\n    RETURN 2000;\nSELECT snowflake_id_internal.snowflake_managed_bake(true);\n",
    )
    .unwrap();
    let out = work.path().join("dist");
    let made = Command::new("bash")
        .arg(repo_file("scripts/managed.sh"))
        .env("SNOWFLAKE_MANAGED_VERSION", &next)
        .env("SNOWFLAKE_MANAGED_UPDATES", &updates)
        .env("SNOWFLAKE_MANAGED_OUT", &out)
        .output()
        .unwrap();
    check("managed.sh for the next version", made);
    let script = out.join("snowflake_id_pg_tle.sql");
    std::fs::set_permissions(work.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let ran = m.cluster.psql("admin", "app").arg("-f").arg(&script).output().unwrap();
    check("the next version's pg_tle script", ran);
    let max_drift = |c: &mut Client| one(c, "SELECT max_drift_ms FROM snowflake_id_status");
    assert_eq!(max_drift(&mut admin), 1000);
    admin.batch_execute(&format!("ALTER EXTENSION snowflake_id UPDATE TO '{next}'")).unwrap();
    let mut admin = m.admin();
    let version: String =
        admin.query_one("SELECT extversion FROM pg_extension WHERE extname = 'snowflake_id'", &[]).unwrap().get(0);
    assert_eq!(version, next);
    assert_eq!(max_drift(&mut admin), 2000);
    // Baked again by the update: the inlined fast path holds the new limit.
    let plan = ids_plan(&mut admin);
    assert!(plan.contains(&(2000i64 << 12).to_string()), "fast path not baked again: {plan}");
    let after = draw(&mut admin, 100);
    assert!(after[0] > before[99] && after.iter().all(|id| worker_of(*id) == 5));
    // A new database gets the new version by default.
    m.cluster.sql("CREATE DATABASE fresh OWNER admin");
    m.as_user("postgres", "fresh").batch_execute("CREATE EXTENSION pg_tle").unwrap();
    let ran = m.cluster.psql("admin", "fresh").arg("-f").arg(&script).output().unwrap();
    check("the next version's pg_tle script in a new database", ran);
    let mut fresh = m.as_user("admin", "fresh");
    fresh.batch_execute("CREATE EXTENSION snowflake_id").unwrap();
    let version: String =
        fresh.query_one("SELECT extversion FROM pg_extension WHERE extname = 'snowflake_id'", &[]).unwrap().get(0);
    assert_eq!(version, next);
}

/// A hostile role that may create in public plants look-alikes of every
/// function and operator the edition's bodies call, each of which fails
/// loudly if called; the owner's session puts public before pg_catalog.
/// Installed from both scripts, the edition binds none of them: its bodies
/// name pg_catalog and exact types (SQL-standard bodies, bound at creation)
/// or pin search_path (PL/pgSQL).
#[test]
fn planted_look_alikes_in_public_are_never_called() {
    let Some(bin) = managed_bin() else { return };
    let m = Managed::bare(&bin, &[]);
    m.cluster.sql("CREATE DATABASE plain OWNER admin");
    let trap = |name: &str, args: &str, ret: &str| {
        format!(
            "CREATE FUNCTION public.{name}({args}) RETURNS {ret} LANGUAGE plpgsql AS \
             $$BEGIN RAISE EXCEPTION 'planted {name}({args}) called'; END$$;"
        )
    };
    let mut plants = String::new();
    for (name, args, ret) in [
        ("nextval", "regclass", "bigint"),
        ("currval", "regclass", "bigint"),
        ("setval", "regclass, bigint, boolean", "bigint"),
        ("pg_sequence_last_value", "regclass", "bigint"),
        ("clock_timestamp", "", "timestamptz"),
        ("pg_is_in_recovery", "", "boolean"),
        ("date_part", "text, timestamptz", "double precision"),
        ("floor", "double precision", "double precision"),
        ("pg_sleep", "double precision", "void"),
        ("unnest", "bigint[]", "SETOF bigint"),
        ("generate_series", "bigint, bigint", "SETOF bigint"),
        ("plus", "bigint, bigint", "bigint"),
        ("shr", "bigint, integer", "bigint"),
        ("div", "bigint, bigint", "bigint"),
    ] {
        plants.push_str(&trap(name, args, ret));
    }
    plants.push_str(
        "CREATE OPERATOR public.+ (FUNCTION = public.plus, LEFTARG = bigint, RIGHTARG = bigint);
         CREATE OPERATOR public.>> (FUNCTION = public.shr, LEFTARG = bigint, RIGHTARG = integer);
         CREATE OPERATOR public./ (FUNCTION = public.div, LEFTARG = bigint, RIGHTARG = bigint);",
    );
    for db in ["app", "plain"] {
        m.as_user("postgres", db).batch_execute("GRANT CREATE ON SCHEMA public TO app").unwrap();
        m.as_user("app", db).batch_execute(&plants).unwrap();
    }
    // Positive control: the traps fire when bound.
    let mut admin = m.admin();
    admin.batch_execute("SET search_path = public, pg_catalog").unwrap();
    let (_, text) = sqlstate_of(&mut admin, "SELECT nextval('pg_class'::regclass)");
    assert!(text.contains("planted nextval"), "{text}");
    // pg_tle.
    m.register("app");
    admin.batch_execute("CREATE EXTENSION snowflake_id; SELECT snowflake_set_worker_id(4)").unwrap();
    // The plain script, run with public before pg_catalog.
    m.psql_file("admin", "plain", "dist/snowflake_id_plain.sql", "-c search_path=public,pg_catalog");
    let mut plain = m.as_user("admin", "plain");
    plain.batch_execute("SET search_path = public, pg_catalog; SELECT snowflake_set_worker_id(4)").unwrap();
    for client in [&mut admin, &mut plain] {
        let got = draw(client, 2000);
        assert!(got.iter().all(|id| worker_of(*id) == 4));
        let block = ids(client, "SELECT * FROM snowflake_nextval_block(10)");
        assert!(block[0] > got[1999]);
        let array: Vec<i64> = client.query_one("SELECT snowflake_nextval_array(10)", &[]).unwrap().get(0);
        assert!(array[0] > block[9]);
        client.query_one("SELECT * FROM snowflake_id_status", &[]).unwrap();
        client.batch_execute("SELECT snowflake_advance_past(snowflake_nextval())").unwrap();
    }
}

/// A role that may create in the extension's schema (public before 15, and
/// on managed services) plants overloads of the internal functions the
/// PL/pgSQL bodies call, which resolve their calls when they run: one that
/// matches a call better (integer where bigint is declared: the plain raise
/// passes 0) and would run as the owner from the SECURITY DEFINER draw, and
/// one with an extra defaulted argument, which makes every call of the
/// floor ambiguous ("not unique"). The internals live in a schema only the
/// owner creates in, so neither is ever reached; both plants work when their
/// planter calls them (positive controls). Both installs: pg_tle and plain.
#[test]
fn overloads_planted_in_the_extension_schema_never_run_as_the_owner() {
    let Some(bin) = managed_bin() else { return };
    let m = Managed::bare(&bin, &[]);
    m.cluster.sql("CREATE DATABASE plain OWNER admin");
    for db in ["app", "plain"] {
        m.as_user("postgres", db).batch_execute("GRANT CREATE ON SCHEMA public TO app").unwrap();
    }
    m.register("app");
    m.admin()
        .batch_execute(
            "CREATE EXTENSION snowflake_id;
             SELECT snowflake_set_layout('2025-01-01 00:00:00+00', 10, 3); SELECT snowflake_set_worker_id(4)",
        )
        .unwrap();
    m.psql_file("admin", "plain", "dist/snowflake_id_plain.sql", "");
    m.as_user("admin", "plain")
        .batch_execute(
            "SELECT snowflake_set_layout('2025-01-01 00:00:00+00', 10, 3); SELECT snowflake_set_worker_id(4)",
        )
        .unwrap();
    for db in ["app", "plain"] {
        m.as_user("admin", db).batch_execute(&grant_draw("app")).unwrap();
    }
    let plants = "CREATE TABLE public.ran_as (who name);
         GRANT INSERT ON public.ran_as TO PUBLIC;
         CREATE FUNCTION public.snowflake_managed_raise(target bigint, take integer) RETURNS bigint
             LANGUAGE plpgsql AS $$BEGIN INSERT INTO public.ran_as VALUES (current_user);
                                        RAISE EXCEPTION 'planted raise called by %', current_user; END$$;
         CREATE FUNCTION public.snowflake_managed_floor(epoch timestamptz, sequence_bits integer, x integer DEFAULT 0)
             RETURNS bigint LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'planted floor called'; END$$;";
    for db in ["app", "plain"] {
        let mut eve = m.as_user("app", db);
        eve.batch_execute(plants).unwrap();
        // Positive controls: the plants are reachable and fail when called.
        let (_, text) = sqlstate_of(&mut eve, "SELECT public.snowflake_managed_raise(1::bigint, 0)");
        assert!(text.contains("planted raise called"), "{db}: {text}");
        let (_, text) = sqlstate_of(&mut eve, "SELECT public.snowflake_managed_floor(now(), 12, 1)");
        assert!(text.contains("planted floor called"), "{db}: {text}");
        let mut admin = m.as_user("admin", db);
        for client in [&mut eve, &mut admin] {
            // 3 sequence bits (8 IDs per ms): the slow path raises all the time.
            let got = draw(client, 3000);
            assert_eq!(got.iter().collect::<HashSet<_>>().len(), 3000, "{db}");
            let block = ids(client, "SELECT * FROM snowflake_nextval_block(100)");
            assert!(block[0] > got[2999], "{db}");
        }
        admin.batch_execute("SELECT snowflake_advance_past(snowflake_nextval())").unwrap();
        assert_eq!(one(&mut eve, "SELECT count(*) FROM public.ran_as"), 0, "{db}: a plant ran");
    }
}

/// The layout may change only while no worker id is set, since no draw can
/// succeed then: a first draw racing snowflake_set_layout could otherwise
/// have read the old layout and issue with it after the change. Values of
/// the counter burnt by another role before the configuration (it has USAGE
/// on it, for the inlined fast path) lock nothing. Also native's checks of a
/// layout: any worker_bits from 0 to 22 works; an epoch with a fraction of a
/// millisecond is refused.
#[test]
fn the_layout_changes_only_while_no_worker_id_is_set() {
    let Some(bin) = managed_bin() else { return };
    let m = Managed::bare(&bin, &[]);
    m.register("app");
    let mut admin = m.admin();
    admin.batch_execute("CREATE EXTENSION snowflake_id").unwrap();
    admin.batch_execute(&grant_draw("app")).unwrap();
    let mut eve = m.as_user("app", "app");
    one(&mut eve, "SELECT nextval('snowflake_id_state.snowflake_managed_counter')");
    let (code, text) = sqlstate_of(&mut admin, "SELECT snowflake_set_layout('2025-01-01 00:00:00.0005+00', 0, 22)");
    assert_eq!(code, "22023", "sub-millisecond epoch: {text}");
    admin.batch_execute("SELECT snowflake_set_layout('2025-01-01 00:00:00+00', 0, 22)").unwrap();
    admin.batch_execute("SELECT snowflake_set_worker_id(0)").unwrap();
    let (code, text) = sqlstate_of(&mut admin, "SELECT snowflake_set_layout('2025-01-01 00:00:00+00', 10, 12)");
    assert_eq!(code, "55000", "layout changed after the worker id, before any draw: {text}");
    let got = draw(&mut admin, 5000);
    assert!(got.windows(2).all(|w| w[0] < w[1]));
    let ms = (got[4999] >> 22) + 1_735_689_600_000;
    let now_ms = one(&mut admin, "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint");
    assert!((now_ms - ms).abs() < 5_000, "time part {ms} vs clock {now_ms}");
    let block = ids(&mut admin, "SELECT * FROM snowflake_nextval_block(10)");
    assert!(block[0] > got[4999]);
}

/// A worker id set while snowflake_set_layout runs (its transaction commits
/// after set_layout found no row to lock, before set_layout writes) wins:
/// the layout change is refused, never applied under a set worker id.
#[test]
fn a_worker_id_set_during_a_layout_change_refuses_the_change() {
    let Some(bin) = managed_bin() else { return };
    let m = Managed::bare(&bin, &[]);
    m.register("app");
    let mut setter = m.admin();
    setter.batch_execute("CREATE EXTENSION snowflake_id").unwrap();
    setter.batch_execute("BEGIN; SELECT snowflake_set_worker_id(5)").unwrap();
    let mut changer = m.admin();
    let change = thread::spawn(move || {
        changer
            .batch_execute("SELECT snowflake_set_layout('2024-01-01 00:00:00+00', 8, 14)")
            .map_err(|e| e.as_db_error().map(|d| d.code().code().to_string()))
    });
    thread::sleep(Duration::from_millis(500));
    setter.batch_execute("COMMIT").unwrap();
    let got = change.join().unwrap();
    assert_eq!(got, Err(Some("55000".to_string())), "the layout changed under a set worker id");
    let id = draw(&mut setter, 1)[0];
    assert_eq!(worker_of(id), 5, "the default layout is kept");
}

/// IDs drawn in a transaction that is rolled back were still returned: they
/// never come back. The counter is never altered after it is created (an
/// ALTER SEQUENCE is transactional, and its rollback took the counter back
/// under them); here a burst 250 ms ahead of the clock (4 sequence bits)
/// is rolled back, and the IDs drawn after are all above it. A first
/// configuration rolled back never came into force.
#[test]
fn ids_of_a_rolled_back_transaction_never_come_back() {
    let Some(bin) = managed_bin() else { return };
    let m = Managed::bare(&bin, &[]);
    m.register("app");
    let mut admin = m.admin();
    admin.batch_execute("CREATE EXTENSION snowflake_id").unwrap();
    let configure = "SELECT snowflake_set_layout('2025-01-01 00:00:00+00', 10, 4); SELECT snowflake_set_worker_id(1);";
    // A first configuration comes into force at its commit: none before.
    admin.batch_execute(&format!("BEGIN; {configure}")).unwrap();
    let (code, text) = sqlstate_of(&mut admin, "SELECT snowflake_nextval()");
    assert_eq!(code, "55000", "a draw before the configuration's commit: {text}");
    assert!(text.contains("comes into force when it commits"), "{text}");
    admin.batch_execute("ROLLBACK").unwrap();
    admin.batch_execute(configure).unwrap();
    admin.batch_execute("BEGIN").unwrap();
    let rolled_back = draw(&mut admin, 4000);
    admin.batch_execute("ROLLBACK").unwrap();
    let after = draw(&mut admin, 4000);
    assert!(after[0] > rolled_back[3999], "{} reissued", after.iter().filter(|id| **id <= rolled_back[3999]).count());
}

/// A raise locks the raisers' table in a subtransaction, which takes no
/// transaction id (a row lock did, one per raise: a bulk INSERT raising at
/// every millisecond overflowed the subtransaction cache). The transaction
/// ids used by a bulk INSERT stay a handful however many raises it made.
#[test]
fn a_bulk_insert_uses_no_transaction_id_per_raise() {
    let Some(bin) = managed_bin() else { return };
    let m = Managed::installed(&bin, &[]);
    let mut admin = m.admin();
    admin.batch_execute("CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), x int)").unwrap();
    let gen =
        |c: &mut Client| one(c, "SELECT pg_sequence_last_value('snowflake_id_state.snowflake_managed_generation')");
    let (xid0, gen0) = (one(&mut admin, "SELECT txid_current()"), gen(&mut admin));
    admin.batch_execute("INSERT INTO t (x) SELECT g FROM generate_series(1, 300000) g").unwrap();
    let (xid1, gen1) = (one(&mut admin, "SELECT txid_current()"), gen(&mut admin));
    let raises = (gen1 - gen0) / 2;
    assert!(raises >= 30, "only {raises} raises: the insert did not exercise them");
    assert!(xid1 - xid0 < 10, "{} transaction ids for one INSERT with {raises} raises", xid1 - xid0);
}

/// The end of the layout's timestamp field is the edition's own error
/// (54000, as native's), never a shifted-out time nor a core error of the
/// sequence: advance_past to the last millisecond, a block that would pass
/// it, and single draws up to the last ID.
#[test]
fn the_end_of_the_layout_is_the_editions_own_error() {
    let Some(bin) = managed_bin() else { return };
    let m = Managed::installed(&bin, &[]);
    let mut admin = m.admin();
    draw(&mut admin, 10);
    let last_tick: i64 = (1 << 41) - 1;
    let (code, text) = sqlstate_of(&mut admin, &format!("SELECT snowflake_advance_past({}, true)", last_tick << 22));
    assert_eq!(code, "54000", "{text}");
    one(&mut admin, &format!("SELECT snowflake_advance_past({}, true)", (last_tick - 1) << 22));
    let (code, text) = sqlstate_of(&mut admin, "SELECT snowflake_nextval_array(5000)");
    assert_eq!(code, "54000", "{text}");
    // Single draws up to the end (a value or two of the last millisecond may
    // be thrown away by draws that went to the slow path), then refusals.
    let (mut last_id, mut refusal) = (0, None);
    for _ in 0..5000 {
        match admin.query_one("SELECT snowflake_nextval()", &[]) {
            Ok(row) => last_id = row.get(0),
            Err(e) => {
                refusal = Some(e.as_db_error().map(|d| d.code().code().to_string()).unwrap_or_default());
                break;
            }
        }
    }
    assert_eq!((last_id >> 22, worker_of(last_id)), (last_tick, 5), "the last ID {last_id} is of the last millisecond");
    assert!(last_id & 4095 > 4000, "IDs of the last millisecond were left: {last_id}");
    let code = refusal.expect("draws past the end refused");
    assert!(code == "54000" || code == "22003", "{code}");
    admin.batch_execute("SELECT snowflake_id_internal.snowflake_managed_draw(false)").unwrap_err();
    let (code, text) = sqlstate_of(&mut admin, "SELECT snowflake_id_internal.snowflake_managed_draw(false)");
    assert_eq!(code, "54000", "the slow path: {text}");
}

/// Blocks from many sessions at once stay within max_drift of the clock:
/// each reserves, under the raisers' lock, only what keeps the lead below
/// it, and waits for the clock for the rest. (Checked before the lock, six
/// sessions all saw room, reserved 100,000 each, pushed the lead past twice
/// max_drift, where it reads as a clock step and nothing waits any more.)
/// status.problem names a lead over max_drift (here one made by
/// snowflake_advance_past).
#[test]
fn concurrent_blocks_stay_within_max_drift() {
    let Some(bin) = managed_bin() else { return };
    let m = Managed::bare(&bin, &[]);
    m.register("app");
    m.admin()
        .batch_execute(
            "CREATE EXTENSION snowflake_id;
             SELECT snowflake_set_layout('2025-01-01 00:00:00+00', 14, 8); SELECT snowflake_set_worker_id(3);",
        )
        .unwrap();
    let ahead_sql = "SELECT (max(i) >> 22) + 1735689600000 - (extract(epoch FROM clock_timestamp()) * 1000)::bigint \
                     FROM unnest(snowflake_nextval_array(100000)) i";
    let barrier = Arc::new(Barrier::new(6));
    let workers: Vec<_> = (0..6)
        .map(|_| {
            let mut c = m.admin();
            let barrier = barrier.clone();
            thread::spawn(move || {
                barrier.wait();
                (0..3).map(|_| one(&mut c, ahead_sql)).max().unwrap()
            })
        })
        .collect();
    let worst = workers.into_iter().map(|w| w.join().unwrap()).max().unwrap();
    assert!(worst <= 1_100, "a block's last ID was {worst} ms ahead of the clock; max_drift is 1000 ms");
    let mut admin = m.admin();
    let problem: Option<String> = admin.query_one("SELECT problem FROM snowflake_id_status", &[]).unwrap().get(0);
    assert_eq!(problem, None);
    admin
        .batch_execute(
            "SELECT snowflake_advance_past(snowflake_from_timestamp(clock_timestamp() + interval '1 minute'))",
        )
        .unwrap_or_else(|e| panic!("{}", common::describe(&e)));
    let problem: Option<String> = admin.query_one("SELECT problem FROM snowflake_id_status", &[]).unwrap().get(0);
    assert!(problem.as_deref().unwrap_or("").contains("ahead of the clock"), "{problem:?}");
}

/// A burst on top of a lead that no burst made (snowflake_advance_past ten
/// seconds ahead; a clock set back is the same) is bounded like any other:
/// max_drift above the advanced reference, then callers wait. (A rule on
/// the lead alone, "twice max_drift ahead is not a burst", let it run.)
#[test]
fn a_burst_after_an_advance_is_bounded_too() {
    let Some(bin) = managed_bin() else { return };
    let m = Managed::bare(&bin, &[]);
    m.register("app");
    let mut admin = m.admin();
    admin
        .batch_execute(
            "CREATE EXTENSION snowflake_id;
             SELECT snowflake_set_layout('2025-01-01 00:00:00+00', 10, 2);
             SELECT snowflake_set_worker_id(3);",
        )
        .unwrap();
    admin
        .batch_execute("SELECT snowflake_advance_past(snowflake_from_timestamp(clock_timestamp() + interval '10 s'));")
        .unwrap_or_else(|e| panic!("{}", common::describe(&e)));
    let started = Instant::now();
    let got = draw(&mut admin, 12_000);
    let elapsed = started.elapsed();
    // 12,000 IDs are 3 s of this layout's numbering, at most 1 s of it ahead.
    assert!(elapsed > Duration::from_millis(1500), "no wait: 12,000 IDs in {elapsed:?}");
    let ahead_ms = ((got[11_999] >> 12) + 1_735_689_600_000)
        - one(&mut admin, "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint");
    assert!(ahead_ms <= 11_100, "{ahead_ms} ms ahead: more than the advance and max_drift");
    let block = ids(&mut admin, "SELECT * FROM snowflake_nextval_block(2000)");
    assert!(block[0] > got[11_999]);
}

/// A schema named like the edition's internal one, made beforehand by
/// another role (who would then own the objects' namespace and could create
/// look-alikes in it), stops the install with 42P06 naming its owner; both
/// installs.
#[test]
fn a_foreign_internal_schema_stops_the_install() {
    let Some(bin) = managed_bin() else { return };
    let m = Managed::bare(&bin, &[]);
    m.cluster.sql("CREATE DATABASE plain OWNER admin");
    for db in ["app", "plain"] {
        m.as_user("postgres", db).batch_execute(&format!("GRANT CREATE ON DATABASE {db} TO app")).unwrap();
        m.as_user("app", db).batch_execute("CREATE SCHEMA snowflake_id_internal").unwrap();
    }
    m.register("app");
    let (code, text) = sqlstate_of(&mut m.admin(), "CREATE EXTENSION snowflake_id");
    assert_eq!(code, "42P06", "{text}");
    assert!(text.contains("owner app"), "{text}");
    let out =
        m.cluster.psql("admin", "plain").arg("-f").arg(repo_file("dist/snowflake_id_plain.sql")).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("exists already (owner app)"), "{stderr}");
    // The owner-only schema made first: refused the same way.
    m.as_user("app", "app")
        .batch_execute("DROP SCHEMA snowflake_id_internal; CREATE SCHEMA snowflake_id_private")
        .unwrap();
    let e = common::sql_error(&mut m.admin(), "CREATE EXTENSION snowflake_id");
    assert_eq!(e.code, "42P06", "{}", e.message);
    assert!(e.message.contains("schema snowflake_id_private exists already (owner app)"), "{}", e.message);
    assert!(e.hint.contains("Drop or rename schema snowflake_id_private"), "{}", e.hint);
    // Dropped, the install goes through.
    m.as_user("app", "app").batch_execute("DROP SCHEMA snowflake_id_private").unwrap();
    m.admin().batch_execute("CREATE EXTENSION snowflake_id; SELECT snowflake_set_worker_id(2)").unwrap();
    assert_eq!(worker_of(draw(&mut m.admin(), 1)[0]), 2);
    // The counter's schema made first by another role: refused, and the
    // hint does not send the DBA to install as the role that made it.
    m.as_user("app", "plain").batch_execute("DROP SCHEMA snowflake_id_internal").unwrap();
    m.as_user("app", "plain").batch_execute("CREATE SCHEMA snowflake_id_state").unwrap();
    let out = m
        .cluster
        .psql("admin", "plain")
        .args(["-v", "VERBOSITY=verbose"])
        .arg("-f")
        .arg(repo_file("dist/snowflake_id_plain.sql"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let hint = stderr.lines().find(|l| l.starts_with("HINT:")).unwrap_or_default();
    assert!(!out.status.success() && stderr.contains("belongs to role app"), "{stderr}");
    assert!(hint.contains("superuser or its owner drop") && !hint.contains("as role app"), "{hint}");
}

/// A floor read before a wait on the
/// reference's lock, compared with a reference other sessions advanced
/// meanwhile, looked like a clock set back and grew the offset by the wait,
/// again at every such wait, so bursts could lead the clock without bound.
/// The offset reads the floor again after the reference. Called here as the
/// owner with a floor three seconds old, as a session stalled that long
/// would pass it: no clock step is taken, the offset stays 0.
#[test]
fn a_floor_read_before_a_lock_wait_is_no_clock_step() {
    let Some(bin) = managed_bin() else { return };
    let m = Managed::installed(&bin, &[]);
    let mut admin = m.admin();
    // The slow path runs (a raise to the clock), and the reference follows.
    draw(&mut admin, 1000);
    let stale = "SELECT snowflake_id_internal.snowflake_managed_offset_now(
                     snowflake_id_internal.snowflake_managed_floor(c.epoch, c.sequence_bits) - (3000::bigint << c.sequence_bits),
                     coalesce(pg_sequence_last_value('snowflake_id_state.snowflake_managed_counter'), 0),
                     snowflake_id_internal.snowflake_managed_max_drift_ms() << c.sequence_bits, c.epoch, c.sequence_bits)
                 FROM snowflake_id_private.snowflake_managed_config c";
    assert_eq!(one(&mut admin, stale), 0, "a three-second-old floor was taken for a clock set back");
    let kept = "SELECT coalesce(pg_sequence_last_value('snowflake_id_state.snowflake_managed_offset'), 0)";
    assert_eq!(one(&mut admin, kept), 0);
}

/// The names the install creates in the extension's schema, as the guard at
/// the head of a dist script lists them (scripts/managed.sh reads them from
/// the install script).
fn guarded_names(dist: &str) -> (Vec<String>, Vec<String>) {
    let text = std::fs::read_to_string(repo_file(dist)).unwrap();
    let list = |var: &str| -> Vec<String> {
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{var} pg_catalog.name[] := ARRAY[")))
            .unwrap_or_else(|| panic!("no {var} list in {dist}"));
        let inner = &line[line.find("ARRAY[").unwrap() + 6..line.rfind("]::").unwrap()];
        inner.split(',').map(|s| s.trim().trim_matches('\'').to_string()).collect()
    };
    (list("functions"), list("relations"))
}

/// Every name the edition creates in the extension's schema is in the
/// guard's list (read from the install script, so a function added later is
/// guarded without anyone remembering to), on pg_tle and plain.
#[test]
fn the_guard_lists_every_name_the_install_creates() {
    let Some(bin) = managed_bin() else { return };
    let m = Managed::installed(&bin, &[]);
    for dist in ["dist/snowflake_id_pg_tle.sql", "dist/snowflake_id_plain.sql"] {
        let (functions, relations) = guarded_names(dist);
        let mut admin = m.admin();
        let created: Vec<(String, String)> = admin
            .query(
                "SELECT 'f', p.proname::text FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace
                 UNION SELECT 'r', c.relname::text FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace
                 UNION SELECT 'r', t.typname::text FROM pg_type t
                        WHERE t.typnamespace = 'public'::regnamespace AND t.typelem = 0 AND t.typrelid = 0",
                &[],
            )
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
        assert!(created.len() > 20, "{created:?}");
        for (kind, name) in created {
            let list = if kind == "f" { &functions } else { &relations };
            assert!(list.contains(&name), "{dist}: {name} is created but not guarded");
        }
    }
}

/// Plants of names the managed edition adds, put in public by a role with
/// CREATE there before the install: a better match for the owner's untyped
/// call (a literal prefers text), and an overload with one more defaulted
/// argument (the owner's call "not unique"); on the plain script, plants of
/// snowflake_advance_past(integer) and snowflake_timestamp(integer). Each is
/// reachable by the call it aims at (positive control: the owner's call runs
/// it while it is there); each install then refuses, naming it. After the
/// install, the same plants change nothing for the calls docs/managed.md
/// gives the owner (qualified with snowflake_id_internal).
#[test]
fn plants_of_the_managed_names_stop_both_installs() {
    let Some(bin) = managed_bin() else { return };
    let m = Managed::bare(&bin, &[]);
    m.cluster.sql("CREATE DATABASE plain OWNER admin");
    for db in ["app", "plain"] {
        m.as_user("postgres", db)
            .batch_execute(
                "GRANT CREATE ON SCHEMA public TO app;
                 CREATE TABLE public.ran_as (who name, what text); GRANT INSERT, SELECT, DELETE ON public.ran_as TO PUBLIC;",
            )
            .unwrap();
    }
    m.register("app");
    let plant = |name: &str, args: &str, ret: &str| {
        let give = if ret == "void" { "RETURN;" } else { "RETURN NULL;" };
        format!(
            "CREATE FUNCTION public.{name}({args}) RETURNS {ret} LANGUAGE plpgsql AS
             $$BEGIN INSERT INTO public.ran_as VALUES (current_user, '{name}'); {give} END$$"
        )
    };
    let plants = [
        (
            "snowflake_set_layout",
            "epoch text, worker_bits int, sequence_bits int",
            "void",
            "SELECT snowflake_set_layout('2025-01-01 00:00:00+00', 10, 12)",
        ),
        ("snowflake_set_worker_id", "worker_id int, why int DEFAULT 0", "void", "SELECT snowflake_set_worker_id(7)"),
        ("snowflake_advance_past", "id integer", "bigint", "SELECT snowflake_advance_past(1)"),
        ("snowflake_timestamp", "id integer", "timestamptz", "SELECT snowflake_timestamp(1)"),
        ("snowflake_managed_epoch", "x int DEFAULT 0", "timestamptz", "SELECT snowflake_managed_epoch()"),
    ];
    for (name, args, ret, call) in plants {
        for db in ["app", "plain"] {
            let mut eve = m.as_user("app", db);
            eve.batch_execute(&plant(name, args, ret)).unwrap();
            // Positive control: the owner's call reaches the plant.
            let mut admin = m.as_user("admin", db);
            admin.batch_execute(call).unwrap();
            assert_eq!(
                one(&mut admin, &format!("SELECT count(*) FROM public.ran_as WHERE who = 'admin' AND what = '{name}'")),
                1,
                "{db}: {call} did not reach the plant"
            );
            let e = if db == "app" {
                common::sql_error(&mut admin, "CREATE EXTENSION snowflake_id")
            } else {
                let out = m
                    .cluster
                    .psql("admin", db)
                    .arg("-f")
                    .arg(repo_file("dist/snowflake_id_plain.sql"))
                    .output()
                    .unwrap();
                assert!(!out.status.success(), "the plain script ran beside {name}({args})");
                let err = String::from_utf8_lossy(&out.stderr).lines().next().unwrap_or_default().to_string();
                common::DbError { code: "42710".into(), message: err, detail: String::new(), hint: String::new() }
            };
            assert_eq!(e.code, "42710", "{db}: {}", e.message);
            assert!(e.message.contains(&format!("public.{name}(")), "{db}: {}", e.message);
            let none = one(
                &mut admin,
                "SELECT count(*) FROM pg_namespace
                  WHERE nspname IN ('snowflake_id_internal', 'snowflake_id_private', 'snowflake_id_state')",
            );
            assert_eq!(none, 0, "{db}: a refused install left schemas behind");
            eve.batch_execute(&format!(
                "DROP FUNCTION public.{name}({}); DELETE FROM public.ran_as",
                args.replace(" DEFAULT 0", "")
            ))
            .unwrap();
        }
    }
    // Installed; the plants come after. The owner's documented calls never
    // reach them (and the unqualified ones do: the reason for the advice).
    m.admin().batch_execute("CREATE EXTENSION snowflake_id").unwrap();
    m.psql_file("admin", "plain", "dist/snowflake_id_plain.sql", "");
    for db in ["app", "plain"] {
        let mut eve = m.as_user("app", db);
        for (name, args, ret, _) in plants {
            eve.batch_execute(&plant(name, args, ret)).unwrap();
        }
        let mut admin = m.as_user("admin", db);
        admin
            .batch_execute(
                "SELECT snowflake_id_internal.snowflake_set_layout('2025-01-01 00:00:00+00'::timestamptz, 10, 12);
                 SELECT snowflake_id_internal.snowflake_set_worker_id(7);",
            )
            .unwrap();
        admin.batch_execute("SELECT snowflake_id_internal.snowflake_advance_past(snowflake_nextval())").unwrap();
        let got = draw(&mut admin, 100);
        assert!(got.iter().all(|id| worker_of(*id) == 7), "{db}");
        assert_eq!(one(&mut admin, "SELECT count(*) FROM public.ran_as"), 0, "{db}: a plant ran");
        let (code, text) = sqlstate_of(&mut admin, "SELECT snowflake_set_worker_id(8)");
        assert_eq!(code, "42725", "{db}: the unqualified call is ambiguous beside the plant: {text}");
        // docs/managed.md's look-alike query finds each, on both installs.
        let found = one(
            &mut admin,
            "SELECT count(*) FROM (
             SELECT p.oid::regprocedure AS look_alike, pg_get_userbyid(p.proowner) AS owner
               FROM pg_namespace i
               JOIN pg_proc q ON q.proname = 'snowflake_nextval' AND q.pronargs = 0 AND q.proowner = i.nspowner
               JOIN pg_proc p ON p.pronamespace = q.pronamespace
              WHERE i.nspname = 'snowflake_id_internal'
                AND p.proname LIKE 'snowflake%'
                AND p.proowner <> i.nspowner) l WHERE owner = 'app'",
        );
        assert_eq!(found, plants.len() as i64, "{db}: the look-alike query");
    }
}

/// Under pg_tle, any role with CREATE on the database could create the
/// registered extension first and own the worker id and the layout; the
/// edition refuses a role that is neither a pgtle_admin member nor the
/// database's owner.
#[test]
fn only_an_admin_or_the_database_owner_creates_the_extension() {
    let Some(bin) = managed_bin() else { return };
    let m = Managed::bare(&bin, &[]);
    m.register("app");
    m.as_user("postgres", "app")
        .batch_execute("GRANT CREATE ON DATABASE app TO app; GRANT CREATE ON SCHEMA public TO app")
        .unwrap();
    let mut eve = m.as_user("app", "app");
    // Positive control: it may create in the database and in public.
    eve.batch_execute("CREATE SCHEMA eve; CREATE TABLE public.eve_t (x int)").unwrap();
    let e = common::sql_error(&mut eve, "CREATE EXTENSION snowflake_id");
    assert_eq!(e.code, "42501", "{} / {}", e.message, e.hint);
    assert!(e.hint.contains("pgtle_admin"), "{}", e.hint);
    // The database's owner who is not a pgtle_admin member may.
    m.cluster.sql("CREATE ROLE dbo LOGIN");
    m.cluster.sql("CREATE DATABASE owned OWNER dbo");
    m.as_user("postgres", "owned").batch_execute("CREATE EXTENSION pg_tle").unwrap();
    m.register("owned");
    m.as_user("dbo", "owned").batch_execute("CREATE EXTENSION snowflake_id").unwrap();
    m.admin().batch_execute("CREATE EXTENSION snowflake_id").unwrap();
}

/// The issue's reproduction: the counter 4 s ahead of the clock
/// (snowflake_advance_past, the documented migration step), 1000 IDs stored,
/// the edition dropped and installed again, the worker id set again: the
/// first new ID is above every stored one (before: below, and 23505 seconds
/// later). pg_tle (DROP EXTENSION; CREATE EXTENSION) and plain (its
/// uninstall script, then the script again).
#[test]
fn a_reinstall_continues_above_every_id_issued_before() {
    let Some(bin) = managed_bin() else { return };
    let m = Managed::installed(&bin, &[]);
    m.cluster.sql("CREATE DATABASE plain OWNER admin");
    m.psql_file("admin", "plain", "dist/snowflake_id_plain.sql", "");
    m.as_user("admin", "plain").batch_execute("SELECT snowflake_id_internal.snowflake_set_worker_id(5)").unwrap();
    for db in ["app", "plain"] {
        let mut admin = m.as_user("admin", db);
        admin
            .batch_execute(
                "SELECT snowflake_advance_past(snowflake_from_timestamp(clock_timestamp() + interval '4 seconds'));
                 CREATE TABLE t (id bigint PRIMARY KEY);
                 INSERT INTO t SELECT snowflake_nextval() FROM generate_series(1, 1000);",
            )
            .unwrap();
        let max = one(&mut admin, "SELECT max(id) FROM t");
        if db == "app" {
            admin.batch_execute("DROP EXTENSION snowflake_id; CREATE EXTENSION snowflake_id").unwrap();
        } else {
            m.psql_file("admin", db, "dist/snowflake_id_plain_uninstall.sql", "");
            m.psql_file("admin", db, "dist/snowflake_id_plain.sql", "");
        }
        let mut admin = m.as_user("admin", db);
        admin.batch_execute("SELECT snowflake_id_internal.snowflake_set_worker_id(5)").unwrap();
        let first = one(&mut admin, "SELECT snowflake_nextval()");
        assert!(first > max, "{db}: first ID after the reinstall {first} <= stored {max}");
        admin.batch_execute("INSERT INTO t SELECT snowflake_nextval() FROM generate_series(1, 1000)").unwrap();
        // A layout other than the counter's is refused while it holds values,
        // by snowflake_set_layout itself.
        if db == "app" {
            admin.batch_execute("DROP EXTENSION snowflake_id; CREATE EXTENSION snowflake_id").unwrap();
            let (code, text) =
                sqlstate_of(&mut admin, "SELECT snowflake_id_internal.snowflake_set_layout('2024-01-01', 10, 12)");
            assert_eq!(code, "55000", "{text}");
        }
    }
}

/// The issue's reproduction: one INSERT ... SELECT of many IDs with the
/// worker id changed 3 -> 900 while it runs. Before: rows of both worker ids
/// interleaved and thousands of IDs below the one before them. Now every ID
/// is above the one before it, the rows after the change carry the new
/// worker id, and a statement started after the change (under REPEATABLE
/// READ, with a snapshot older than the change) draws with the new one only.
#[test]
fn a_worker_id_change_never_makes_an_id_smaller() {
    let Some(bin) = managed_bin() else { return };
    let m = Managed::bare(&bin, &[]);
    m.register("app");
    let mut admin = m.admin();
    admin
        .batch_execute(
            "CREATE EXTENSION snowflake_id; SELECT snowflake_id_internal.snowflake_set_worker_id(3);
             CREATE TABLE t (n bigint, id bigint); GRANT ALL ON t TO PUBLIC;",
        )
        .unwrap();
    // A snapshot taken before the change, used after it.
    let mut rr = m.admin();
    rr.batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT 1 FROM pg_class LIMIT 1").unwrap();
    let mut mixed = false;
    for attempt in 0..4 {
        admin.batch_execute("TRUNCATE t; SELECT snowflake_id_internal.snowflake_set_worker_id(3)").unwrap();
        let mut loader = m.admin();
        // Rows drawn after the change by the statement planned before it take
        // the slow path (tens of microseconds each): a size that keeps that
        // to seconds.
        let n = 150_000;
        let insert = thread::spawn(move || {
            loader
                .batch_execute(&format!("INSERT INTO t SELECT g, snowflake_nextval() FROM generate_series(1, {n}) g"))
                .expect("insert");
        });
        // Change once the insert has run for a while (its rows are not
        // visible yet: wait on pg_stat_activity).
        let started = Instant::now();
        while one(
            &mut admin,
            "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE 'INSERT INTO t SELECT g%'",
        ) == 0
        {
            assert!(started.elapsed() < HANG_GUARD, "the insert never started");
            thread::sleep(Duration::from_millis(5));
        }
        thread::sleep(Duration::from_millis(100));
        admin.batch_execute("SELECT snowflake_id_internal.snowflake_set_worker_id(900)").unwrap();
        insert.join().unwrap();
        let workers = ids(&mut admin, "SELECT DISTINCT (id >> 12) & 1023 FROM t ORDER BY 1");
        let decreases =
            one(&mut admin, "SELECT count(*) FROM (SELECT id < lag(id) OVER (ORDER BY n) AS down FROM t) s WHERE down");
        assert_eq!(decreases, 0, "attempt {attempt}: IDs below the one before them in one statement");
        // Once the new worker id appears, the old one never comes back.
        let back = one(
            &mut admin,
            "SELECT count(*) FROM t a WHERE (a.id >> 12) & 1023 = 3
                AND a.n > (SELECT min(n) FROM t WHERE (id >> 12) & 1023 = 900)",
        );
        assert_eq!(back, 0, "attempt {attempt}: worker 3 after worker 900 in one statement");
        if workers == vec![3, 900] {
            mixed = true;
            break;
        }
        // The insert ended before the change: run it again.
    }
    assert!(mixed, "the change never landed while the insert ran");
    let before = one(&mut admin, "SELECT max(id) FROM t");
    admin.batch_execute("SELECT snowflake_id_internal.snowflake_set_worker_id(17)").unwrap();
    let got = ids(&mut rr, "SELECT snowflake_nextval() FROM generate_series(1, 200000)");
    assert!(got.iter().all(|id| worker_of(*id) == 17), "REPEATABLE READ mixed worker ids");
    assert!(got.windows(2).all(|w| w[0] < w[1]) && got[0] > before, "REPEATABLE READ went down");
    rr.batch_execute("COMMIT").unwrap();
    // A lower worker id while the counter runs ahead of the clock (an
    // advance, a burst, a clock set back): the next ID is still above the
    // last one, in a later millisecond, not beside it with smaller bits.
    admin
        .batch_execute(
            "SELECT snowflake_id_internal.snowflake_advance_past(
                 snowflake_from_timestamp(clock_timestamp() + interval '3 seconds'))",
        )
        .unwrap();
    let last = one(&mut admin, "SELECT snowflake_nextval()");
    admin.batch_execute("SELECT snowflake_id_internal.snowflake_set_worker_id(2)").unwrap();
    let next = one(&mut admin, "SELECT snowflake_nextval()");
    assert!(next > last && worker_of(next) == 2, "after a change to a lower worker id: {next} <= {last}");
    // A transaction whose snapshot predates the first worker id draws with it.
    admin.batch_execute("CREATE DATABASE fresh OWNER admin").unwrap();
    m.as_user("postgres", "fresh").batch_execute("CREATE EXTENSION pg_tle").unwrap();
    m.register("fresh");
    let mut fresh = m.as_user("admin", "fresh");
    fresh.batch_execute("CREATE EXTENSION snowflake_id").unwrap();
    let mut early = m.as_user("admin", "fresh");
    early.batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT 1 FROM pg_class LIMIT 1").unwrap();
    fresh.batch_execute("SELECT snowflake_id_internal.snowflake_set_worker_id(4)").unwrap();
    let got = ids(&mut early, "SELECT snowflake_nextval() FROM generate_series(1, 1000)");
    assert!(got.iter().all(|id| worker_of(*id) == 4));
}

/// A role that never draws IDs cannot name, and so cannot queue a lock on,
/// what only the owner's functions read (the configuration, the worker id,
/// the reference: an owner-only schema), nor what the inlined fast path
/// reads (the counter's schema), which only the roles the owner grants may
/// use (docs/managed.md, "Drawing roles"); nor burn the counter by its OID.
/// When PUBLIC had USAGE there it could: parse analysis locks a relation
/// before privileges are checked, and a queued lock request behind it
/// stalled every draw.
#[test]
fn a_role_that_never_draws_cannot_lock_what_draws_read() {
    let Some(bin) = managed_bin() else { return };
    // `app` is granted the drawing (Managed::installed); eve is not.
    let m = Managed::installed(&bin, &[]);
    m.cluster.sql("CREATE ROLE eve LOGIN");
    let mut admin = m.admin();
    let internal_relations =
        one(&mut admin, "SELECT count(*) FROM pg_class WHERE relnamespace = 'snowflake_id_internal'::regnamespace");
    assert_eq!(internal_relations, 0, "a relation in the schema every role may use");
    let mut eve = m.as_user("eve", "app");
    let fast = [
        "snowflake_id_state.snowflake_managed_counter",
        "snowflake_id_state.snowflake_managed_generation",
        "snowflake_id_state.snowflake_managed_offset",
    ];
    // By default no role but the owner may name what the fast path reads,
    // so none can queue a lock on it (a PREPARE held open, then a CREATE
    // RULE queued behind it, once stalled every draw).
    for rel in fast.iter().copied().chain([
        "snowflake_id_private.snowflake_managed_config",
        "snowflake_id_private.snowflake_managed_worker",
        "snowflake_id_private.snowflake_managed_reference",
        "snowflake_id_private.snowflake_managed_raise_lock",
        "snowflake_id_state.snowflake_managed_layout",
    ]) {
        let (code, text) = sqlstate_of(&mut eve, &format!("PREPARE p AS SELECT 1 FROM {rel}"));
        assert_eq!(code, "42501", "{rel}: {text}");
    }
    let (code, text) = sqlstate_of(
        &mut eve,
        "CREATE RULE r AS ON INSERT TO snowflake_id_state.snowflake_managed_counter DO INSTEAD NOTHING",
    );
    assert_eq!(code, "42501", "{text}");
    // Nor burn the counter by its OID, which skips the schema's check.
    let counter = one(&mut admin, "SELECT 'snowflake_id_state.snowflake_managed_counter'::regclass::oid::bigint");
    let burn = format!("SELECT nextval({counter}::oid::regclass)");
    let (code, text) = sqlstate_of(&mut eve, &burn);
    assert_eq!(code, "42501", "{text}");
    // A role the owner has not granted the drawing is refused by the fast
    // path; the granted one draws.
    let (code, text) = sqlstate_of(&mut eve, "SELECT snowflake_nextval()");
    assert_eq!(code, "42501", "{text}");
    let mut app = m.as_user("app", "app");
    let got = draw(&mut app, 1000);
    assert!(got.windows(2).all(|w| w[0] < w[1]) && got.iter().all(|id| worker_of(*id) == 5));
    let block = ids(&mut app, "SELECT * FROM snowflake_nextval_block(10)");
    assert!(block[0] > got[999]);
    // The owner's grant (docs/managed.md) lets eve draw, and nothing more:
    // the counter stays out of reach of setval().
    admin.batch_execute(&grant_draw("eve")).unwrap();
    let mut eve = m.as_user("eve", "app");
    let more = draw(&mut eve, 10);
    assert!(more[0] > block[9]);
    let (code, text) = sqlstate_of(&mut eve, "SELECT setval('snowflake_id_state.snowflake_managed_counter', 1)");
    assert_eq!(code, "42501", "{text}");
}

/// The seqlock, found every time: one session raises the counter a few
/// values above where it is, over and over (the raise an owner's slow path
/// makes at each millisecond), and the test stops that backend with SIGSTOP
/// for a few milliseconds at a time, so that many stops land between the
/// raise's read of the counter and its setval(); meanwhile sessions draw
/// flat out. With the generation odd for the whole raise, draws during a
/// stop go to the slow path and wait for the raisers' lock; without the odd
/// bump they go on drawing past the value the raise read, and its setval()
/// then takes the counter back under IDs already returned. A race left to
/// the scheduler found a broken seqlock 0 times of 1 on an idle machine.
#[test]
fn a_raise_stopped_mid_way_never_lets_an_id_repeat() {
    let Some(bin) = managed_bin() else { return };
    let m = Managed::installed(&bin, &["max_connections = 40"]);
    let mut raiser = m.admin();
    // The counter a minute ahead of the clock (as after an advance): draws
    // then keep to the fast path, without the raisers' lock, while the
    // raiser is stopped, as draws do in a burst.
    raiser
        .batch_execute(
            "SELECT snowflake_id_internal.snowflake_advance_past(
                 snowflake_from_timestamp(clock_timestamp() + interval '60 seconds'))",
        )
        .unwrap();
    let pid = one(&mut raiser, "SELECT pg_backend_pid()::bigint");
    let stop = Arc::new(AtomicBool::new(false));
    let raising = {
        let stop = stop.clone();
        thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                raiser
                    .batch_execute(
                        "DO $$BEGIN FOR i IN 1..200 LOOP
                             PERFORM snowflake_id_internal.snowflake_managed_raise(
                                 pg_sequence_last_value('snowflake_id_state.snowflake_managed_counter') + 8,
                                 0, snowflake_id_internal.snowflake_managed_last(10), 0);
                         END LOOP; END$$",
                    )
                    .expect("raise");
            }
        })
    };
    let drawn = Arc::new(AtomicUsize::new(0));
    let drawers: Vec<_> = (0..6)
        .map(|_| {
            let mut client = m.admin();
            let (stop, drawn) = (stop.clone(), drawn.clone());
            thread::spawn(move || {
                let mut got = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    got.extend(ids(&mut client, "SELECT snowflake_nextval() FROM generate_series(1, 50)"));
                    drawn.fetch_add(50, Ordering::Relaxed);
                }
                got
            })
        })
        .collect();
    let signal = |sig: &str| {
        let out = Command::new("kill").args([sig, &pid.to_string()]).output().expect("kill");
        assert!(out.status.success(), "kill {sig} {pid}");
    };
    // On until 400 stops and 10,000 IDs, however long the machine takes
    // (the deadline only stops a hang).
    let hang_guard = Instant::now() + HANG_GUARD;
    let mut stops = 0;
    while stops < 400 || drawn.load(Ordering::Relaxed) < 10_000 {
        assert!(Instant::now() < hang_guard, "{stops} stops, {} IDs in {HANG_GUARD:?}", drawn.load(Ordering::Relaxed));
        thread::sleep(Duration::from_micros(1500));
        signal("-STOP");
        thread::sleep(Duration::from_millis(4));
        signal("-CONT");
        stops += 1;
    }
    stop.store(true, Ordering::Relaxed);
    raising.join().expect("raiser");
    let all: Vec<Vec<i64>> = drawers.into_iter().map(|h| h.join().expect("drawer")).collect();
    let mut seen = HashSet::new();
    let (mut repeats, mut backwards, mut total) = (0, 0, 0);
    for got in &all {
        backwards += got.windows(2).filter(|w| w[0] >= w[1]).count();
        repeats += got.iter().filter(|id| !seen.insert(**id)).count();
        total += got.len();
    }
    assert_eq!((repeats, backwards), (0, 0), "IDs issued twice, IDs below the session's last, among {total}");
    assert!(stops >= 400 && total >= 10_000, "too little raced: {stops} stops, {total} IDs");
}

/// The day-2 steps docs/managed.md gives for pg_tle, as a script with
/// `set -e` runs them: an update to a newer version, the older release's
/// script run again afterwards (it must not move the default version back:
/// before, it did, and ALTER EXTENSION UPDATE then failed and a restore
/// recreated the older version), and a dump restored with the list that
/// leaves out pg_tle's own two entries, which otherwise make pg_restore
/// exit 1 (positive control: without the list it does).
#[test]
fn a_set_e_script_updates_and_restores_under_pg_tle() {
    let Some(bin) = managed_bin() else { return };
    let m = Managed::installed(&bin, &[]);
    let mut admin = m.admin();
    let current: String =
        admin.query_one("SELECT extversion FROM pg_extension WHERE extname = 'snowflake_id'", &[]).unwrap().get(0);
    let next = format!("{current}.1");
    let work = tempfile::tempdir().unwrap();
    std::fs::set_permissions(work.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let updates = work.path().join("updates");
    std::fs::create_dir(&updates).unwrap();
    std::fs::write(updates.join(format!("snowflake_id--{current}--{next}.sql")), "SELECT 1;\n").unwrap();
    let out = work.path().join("dist");
    check(
        "managed.sh for the next version",
        Command::new("bash")
            .arg(repo_file("scripts/managed.sh"))
            .env("SNOWFLAKE_MANAGED_VERSION", &next)
            .env("SNOWFLAKE_MANAGED_UPDATES", &updates)
            .env("SNOWFLAKE_MANAGED_OUT", &out)
            .output()
            .unwrap(),
    );
    admin.batch_execute("CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_nextval()); INSERT INTO t SELECT FROM generate_series(1, 500)").unwrap();
    let max = one(&mut admin, "SELECT max(id) FROM t");
    let psql = format!(
        "{} -X -q -v ON_ERROR_STOP=1 -h {} -p {} -U admin",
        m.cluster.tool("psql"),
        m.cluster.socket_dir().display(),
        m.cluster.port
    );
    let conn = format!("-h {} -p {} -U admin", m.cluster.socket_dir().display(), m.cluster.port);
    let dump = work.path().join("app.dump");
    let script = format!(
        "set -e
         {psql} -d app -f {new}
         {psql} -d app -c 'ALTER EXTENSION snowflake_id UPDATE'
         {psql} -d app -f {old}
         {dump_tool} -Fc {conn} -d app -f {dump}
         {restore} -l {dump} | grep -v -e ' SCHEMA - pgtle ' -e ' COMMENT - EXTENSION pg_tle' > {dump}.list
         {restore} --exit-on-error {conn} -L {dump}.list -d copy {dump}",
        new = out.join("snowflake_id_pg_tle.sql").display(),
        old = repo_file("dist/snowflake_id_pg_tle.sql"),
        dump_tool = m.cluster.tool("pg_dump"),
        restore = m.cluster.tool("pg_restore"),
        dump = dump.display(),
    );
    m.cluster.sql("CREATE DATABASE copy OWNER admin");
    m.as_user("postgres", "copy").batch_execute("CREATE EXTENSION pg_tle").unwrap();
    check("the day-2 script", Command::new("bash").args(["-c", &script]).output().unwrap());
    let default: String = admin
        .query_one("SELECT default_version FROM pgtle.available_extensions() WHERE name = 'snowflake_id'", &[])
        .unwrap()
        .get(0);
    assert_eq!(default, next, "the older script moved the default version back");
    let mut copy = m.as_user("admin", "copy");
    let version: String =
        copy.query_one("SELECT extversion FROM pg_extension WHERE extname = 'snowflake_id'", &[]).unwrap().get(0);
    assert_eq!(version, next);
    let first = one(&mut copy, "SELECT snowflake_nextval()");
    assert!(first > max, "restored: {first} <= {max}");
    // Positive control: the whole dump, under --exit-on-error, stops on
    // pg_tle's own entries.
    m.cluster.sql("CREATE DATABASE copy2 OWNER admin");
    m.as_user("postgres", "copy2").batch_execute("CREATE EXTENSION pg_tle").unwrap();
    let whole = Command::new(m.cluster.tool("pg_restore"))
        .args(["--exit-on-error", "-h"])
        .arg(m.cluster.socket_dir())
        .args(["-p", &m.cluster.port.to_string(), "-U", "admin", "-d", "copy2"])
        .arg(&dump)
        .output()
        .unwrap();
    assert!(!whole.status.success(), "pg_restore of the whole dump exited 0");
}

/// The plain script over the plain install of 0.7.0 (its shipped script,
/// from the repository's history) updates it in place: the counter (moved
/// 60 s ahead, so that the clock alone would not keep new IDs above the
/// stored ones), the worker id and the layout stay, a column default and a
/// view that use the functions stay, and the script names the version it
/// moved from.
#[test]
fn the_plain_script_updates_a_0_7_0_install_in_place() {
    let Some(bin) = managed_bin() else { return };
    let m = Managed::bare(&bin, &[]);
    m.cluster.sql("CREATE DATABASE plain OWNER admin");
    let old = Command::new("git")
        .args(["-C", env!("CARGO_MANIFEST_DIR"), "show", "dbddaf6:dist/snowflake_id_plain.sql"])
        .output()
        .expect("git");
    assert!(old.status.success(), "0.7.0's plain script from git: {}", String::from_utf8_lossy(&old.stderr));
    let work = tempfile::tempdir().unwrap();
    std::fs::set_permissions(work.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let old_script = work.path().join("plain-0.7.0.sql");
    std::fs::write(&old_script, &old.stdout).unwrap();
    let psql = |file: &std::path::Path| {
        let out = Command::new(m.cluster.tool("psql"))
            .args(["-X", "-v", "ON_ERROR_STOP=1", "-h"])
            .arg(m.cluster.socket_dir())
            .args(["-p", &m.cluster.port.to_string(), "-U", "admin", "-d", "plain", "-f"])
            .arg(file)
            .output()
            .unwrap();
        check(&format!("psql -f {}", file.display()), out)
    };
    psql(&old_script);
    let mut admin = m.as_user("admin", "plain");
    admin
        .batch_execute(
            "SELECT snowflake_set_layout('2025-01-01 00:00:00+00', 10, 11); SELECT snowflake_set_worker_id(12);
             CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), x int);
             CREATE VIEW v AS SELECT id, snowflake_timestamp(id) AS ts FROM t;
             SELECT snowflake_advance_past(snowflake_from_timestamp(clock_timestamp() + interval '60 seconds'));
             INSERT INTO t (x) SELECT g FROM generate_series(1, 1000) g;",
        )
        .unwrap();
    let max = one(&mut admin, "SELECT max(id) FROM t");
    // A role with CREATE on the database made, first, schemas under the
    // names an update once renamed the earlier internals to: the update
    // does not stop on them (nor touch them).
    m.cluster.sql("CREATE ROLE squatter LOGIN; GRANT CREATE ON DATABASE plain TO squatter");
    m.as_user("squatter", "plain")
        .batch_execute("CREATE SCHEMA snowflake_id_internal_previous; CREATE SCHEMA snowflake_id_private_previous")
        .unwrap();
    let out = psql(std::path::Path::new(&repo_file("dist/snowflake_id_plain.sql")));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("is updated from 0.7.0 to"), "{said}");
    let mut admin = m.as_user("admin", "plain");
    let row = admin.query_one("SELECT worker_id, worker_bits, sequence_bits FROM snowflake_id_status", &[]).unwrap();
    assert_eq!((row.get::<_, Option<i64>>(0), row.get::<_, i32>(1), row.get::<_, i32>(2)), (Some(12), 10, 11));
    let id = one(&mut admin, "INSERT INTO t (x) VALUES (-1) RETURNING id");
    assert!(id > max && (id >> 11) & 1023 == 12, "after the update: {id} <= {max}");
    assert_eq!(one(&mut admin, "SELECT count(*) FROM v"), 1001);
    let plan = ids_plan(&mut admin);
    assert!(plan.contains("snowflake_id_state.snowflake_managed_counter"), "not baked again: {plan}");
    let left = one(
        &mut admin,
        "SELECT count(*) FROM pg_namespace WHERE nspname LIKE '%previous%' AND nspowner <> 'squatter'::regrole",
    );
    assert_eq!(left, 0);
    let kept = one(&mut admin, "SELECT count(*) FROM pg_namespace WHERE nspowner = 'squatter'::regrole");
    assert_eq!(kept, 2, "the squatter's schemas");
    // And again: the update over this version is a no-op for the IDs.
    let out = psql(std::path::Path::new(&repo_file("dist/snowflake_id_plain.sql")));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is updated from"));
    let next = one(&mut admin, "INSERT INTO t (x) VALUES (-2) RETURNING id");
    assert!(next > id && (next >> 11) & 1023 == 12);
}

/// The queries of monitoring/postgres_exporter.yaml, run unchanged on the
/// managed edition (before, the main one failed: no keeper_pid): every
/// column of the native status view is there, NULL where it means nothing
/// here. And a database restored from a dump of another names itself a
/// copy in `problem` until the owner sets (or confirms) its worker id.
#[test]
fn the_exporter_queries_run_and_a_copy_is_named() {
    let Some(bin) = managed_bin() else { return };
    let m = Managed::installed(&bin, &[]);
    let mut admin = m.admin();
    draw(&mut admin, 100);
    let text = std::fs::read_to_string(repo_file("monitoring/postgres_exporter.yaml")).unwrap();
    let mut queries = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if let Some(q) = current.as_mut() {
            if line.starts_with("    ") {
                q.push_str(line);
                q.push('\n');
                continue;
            }
            queries.push(current.take().unwrap());
        }
        if line.trim() == "query: |" {
            current = Some(String::new());
        }
    }
    queries.extend(current);
    assert_eq!(queries.len(), 3, "{queries:?}");
    for q in &queries {
        admin.query(q.as_str(), &[]).unwrap_or_else(|e| panic!("{q}: {}", common::describe(&e)));
    }
    let row = admin.query_one(queries[0].as_str(), &[]).unwrap();
    assert_eq!(row.get::<_, String>("worker_id"), "5");
    assert_eq!(row.get::<_, i32>("keeper_running"), 0);
    assert_eq!(row.get::<_, Option<i64>>("ids_issued"), None);
    let problem: Option<String> = admin.query_one("SELECT problem FROM snowflake_id_status", &[]).unwrap().get(0);
    assert_eq!(problem, None);
    // A copy: pg_dump, restored into a new database.
    let dump = m.cluster.socket_dir().join("app.dump");
    check(
        "pg_dump",
        Command::new(m.cluster.tool("pg_dump"))
            .args(["-Fc", "-h"])
            .arg(m.cluster.socket_dir())
            .args(["-p", &m.cluster.port.to_string(), "-U", "admin", "-d", "app", "-f"])
            .arg(&dump)
            .output()
            .unwrap(),
    );
    m.cluster.sql("CREATE DATABASE copy OWNER admin");
    m.as_user("postgres", "copy").batch_execute("CREATE EXTENSION pg_tle").unwrap();
    Command::new(m.cluster.tool("pg_restore"))
        .arg("-h")
        .arg(m.cluster.socket_dir())
        .args(["-p", &m.cluster.port.to_string(), "-U", "admin", "-d", "copy"])
        .arg(&dump)
        .output()
        .unwrap();
    let mut copy = m.as_user("admin", "copy");
    let problem: Option<String> = copy.query_one("SELECT problem FROM snowflake_id_status", &[]).unwrap().get(0);
    assert!(problem.unwrap_or_default().contains("set in another database"), "the copy is not named");
    copy.batch_execute("SELECT snowflake_id_internal.snowflake_set_worker_id(6)").unwrap();
    let problem: Option<String> = copy.query_one("SELECT problem FROM snowflake_id_status", &[]).unwrap().get(0);
    assert_eq!(problem, None);
}

/// The conversion recipe docs/managed.md gives (the managed edition has no
/// snowflake_convert), run as written: a serial key with an integer foreign
/// key to it becomes a bigint key drawing snowflake IDs, the referencing
/// column is widened, new IDs are above the stored ones, and the old
/// sequence is gone.
#[test]
fn a_serial_table_converts_by_the_recipe() {
    let Some(bin) = managed_bin() else { return };
    let m = Managed::installed(&bin, &[]);
    let doc = std::fs::read_to_string(repo_file("docs/managed.md")).unwrap();
    let section = &doc[doc.find("## Converting a bigserial or identity table").expect("the recipe's section")..];
    let start = section.find("```sql\n").unwrap() + 7;
    let recipe = &section[start..start + section[start..].find("```").unwrap()];
    let mut admin = m.admin();
    admin
        .batch_execute(
            "CREATE TABLE orders (id serial PRIMARY KEY, note text);
             CREATE TABLE order_lines (order_id integer REFERENCES orders, n int);
             INSERT INTO orders (note) SELECT 'old' FROM generate_series(1, 500);
             INSERT INTO order_lines SELECT id, 1 FROM orders;",
        )
        .unwrap();
    let max = one(&mut admin, "SELECT max(id)::bigint FROM orders");
    let work = tempfile::tempdir().unwrap();
    std::fs::set_permissions(work.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let file = work.path().join("convert.sql");
    std::fs::write(&file, recipe).unwrap();
    check("the recipe", m.cluster.psql("admin", "app").args(["-1"]).arg("-f").arg(&file).output().unwrap());
    let id = one(&mut admin, "INSERT INTO orders (note) VALUES ('new') RETURNING id");
    assert!(id > max && worker_of(id) == 5, "{id}");
    admin.batch_execute(&format!("INSERT INTO order_lines VALUES ({id}, 2)")).unwrap();
    let types: Vec<String> = admin
        .query(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute
              WHERE (attrelid, attname) IN (('orders'::regclass, 'id'), ('order_lines'::regclass, 'order_id'))",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(types, ["bigint", "bigint"]);
    assert_eq!(one(&mut admin, "SELECT count(*) FROM pg_class WHERE relname = 'orders_id_seq'"), 0);
}

/// A worker id change whose transaction rolls back never comes into force.
/// It did: the switch set sequences, which a rollback leaves, so the
/// configuration said 5 while IDs carried 7, status showed 7 with no
/// problem, and every draw took the slow path from then on (the fast path
/// built for 7 was rolled back, the one for 5 was retired by the switch).
#[test]
fn a_rolled_back_worker_id_change_never_comes_into_force() {
    let Some(bin) = managed_bin() else { return };
    let m = Managed::installed(&bin, &[]);
    let mut admin = m.admin();
    let range = "SELECT pg_sequence_last_value('snowflake_id_state.snowflake_managed_generation') >> 40";
    let before = one(&mut admin, range);
    admin.batch_execute("BEGIN; SELECT snowflake_id_internal.snowflake_set_worker_id(7); ROLLBACK").unwrap();
    let mut app = m.as_user("app", "app");
    let got = draw(&mut app, 1000);
    assert!(got.iter().all(|id| worker_of(*id) == 5), "a rolled-back worker id is in force");
    assert_eq!(one(&mut admin, range), before, "a rolled-back change retired the fast path");
    // Before its commit, the change is not in force, for its own
    // transaction either.
    admin.batch_execute("BEGIN; SELECT snowflake_id_internal.snowflake_set_worker_id(7)").unwrap();
    let inside = draw(&mut admin, 10);
    assert!(inside.iter().all(|id| worker_of(*id) == 5), "before its commit the change is in force");
    admin.batch_execute("ROLLBACK").unwrap();
    let row = admin.query_one("SELECT worker_id, problem FROM snowflake_id_status", &[]).unwrap();
    assert_eq!((row.get::<_, Option<i64>>(0), row.get::<_, Option<String>>(1)), (Some(5), None));
    // Committed, it is in force, above every ID before it.
    admin.batch_execute("SELECT snowflake_id_internal.snowflake_set_worker_id(7)").unwrap();
    let after = draw(&mut app, 10);
    assert!(after.iter().all(|id| worker_of(*id) == 7) && after[0] > got[999]);
    // A worker id in force that the configuration does not say is named.
    admin
        .batch_execute(
            "BEGIN; SET CONSTRAINTS ALL IMMEDIATE; SELECT snowflake_id_internal.snowflake_set_worker_id(9); ROLLBACK",
        )
        .unwrap();
    let problem: Option<String> = admin.query_one("SELECT problem FROM snowflake_id_status", &[]).unwrap().get(0);
    assert!(problem.is_some_and(|p| p.contains("configuration says 7")), "not named");
}

/// A reinstall or an update takes over the counter's schema as an earlier
/// install left it, grants included: a role granted UPDATE on the counter
/// (by a compromised earlier install, or by mistake) kept it, and could
/// take the counter back under stored IDs. Now every privilege beyond what
/// drawing needs goes at the takeover; what the owner gave to the roles
/// that draw stays.
#[test]
fn a_takeover_keeps_only_the_grants_that_drawing_needs() {
    let Some(bin) = managed_bin() else { return };
    let m = Managed::installed(&bin, &[]);
    m.cluster.sql("CREATE ROLE eve LOGIN");
    let mut admin = m.admin();
    admin
        .batch_execute(
            "GRANT USAGE ON SCHEMA snowflake_id_state TO eve;
             GRANT UPDATE ON SEQUENCE snowflake_id_state.snowflake_managed_counter,
                 snowflake_id_state.snowflake_managed_generation TO eve;
             GRANT SELECT ON SEQUENCE snowflake_id_state.snowflake_managed_layout TO eve WITH GRANT OPTION;
             REVOKE USAGE ON SEQUENCE snowflake_id_state.snowflake_managed_counter FROM PUBLIC;
             GRANT USAGE ON SEQUENCE snowflake_id_state.snowflake_managed_counter TO app;",
        )
        .unwrap();
    admin
        .batch_execute(
            "DROP EXTENSION snowflake_id; CREATE EXTENSION snowflake_id;
             SELECT snowflake_id_internal.snowflake_set_worker_id(5);",
        )
        .unwrap();
    let privs = |sql: &str| -> bool { m.admin().query_one(sql, &[]).unwrap().get(0) };
    for (rel, p) in [
        ("snowflake_managed_counter", "UPDATE"),
        ("snowflake_managed_generation", "UPDATE"),
        ("snowflake_managed_layout", "SELECT"),
    ] {
        assert!(
            !privs(&format!("SELECT has_sequence_privilege('eve', 'snowflake_id_state.{rel}', '{p}')")),
            "eve kept {p} on {rel}"
        );
    }
    assert!(privs("SELECT has_schema_privilege('eve', 'snowflake_id_state', 'USAGE')"));
    assert!(privs("SELECT has_sequence_privilege('app', 'snowflake_id_state.snowflake_managed_counter', 'USAGE')"));
    assert!(!privs("SELECT has_sequence_privilege('eve', 'snowflake_id_state.snowflake_managed_counter', 'USAGE')"));
    let mut eve = m.as_user("eve", "app");
    let (code, text) = sqlstate_of(&mut eve, "SELECT setval('snowflake_id_state.snowflake_managed_counter', 1)");
    assert_eq!(code, "42501", "{text}");
    let got = draw(&mut m.as_user("app", "app"), 10);
    assert!(got.iter().all(|id| worker_of(*id) == 5));
}

/// After a reinstall, stored IDs decode with the layout they were made
/// with: the install takes the layout the kept counter counts in. They
/// decoded with the default layout until the owner set the layout again.
#[test]
fn a_reinstall_decodes_stored_ids_with_their_layout() {
    let Some(bin) = managed_bin() else { return };
    let m = Managed::bare(&bin, &[]);
    m.register("app");
    let mut admin = m.admin();
    admin
        .batch_execute(
            "CREATE EXTENSION snowflake_id;
             SELECT snowflake_id_internal.snowflake_set_layout('2024-06-01 00:00:00+00'::timestamptz, 8, 14);
             SELECT snowflake_id_internal.snowflake_set_worker_id(200);",
        )
        .unwrap();
    let id = draw(&mut admin, 1)[0];
    let decoded = "SELECT (snowflake_timestamp($1) - clock_timestamp()) < interval '1 minute'
                      AND (clock_timestamp() - snowflake_timestamp($1)) < interval '1 minute'";
    let right: bool = admin.query_one(decoded, &[&id]).unwrap().get(0);
    assert!(right, "before the reinstall");
    admin.batch_execute("DROP EXTENSION snowflake_id; CREATE EXTENSION snowflake_id").unwrap();
    let right: bool = admin.query_one(decoded, &[&id]).unwrap().get(0);
    assert!(right, "a stored ID decodes to another time after the reinstall");
    let row =
        admin.query_one("SELECT snowflake_managed_worker_bits(), snowflake_managed_sequence_bits()", &[]).unwrap();
    assert_eq!((row.get::<_, i32>(0), row.get::<_, i32>(1)), (8, 14));
    admin.batch_execute("SELECT snowflake_id_internal.snowflake_set_worker_id(200)").unwrap();
    let next = draw(&mut admin, 1)[0];
    assert!(next > id && (next >> 14) & 255 == 200);
}

/// The pg_tle update path from 0.7.0 (sql/managed/updates), as dist/
/// registers it: a 0.7.0 install with IDs stored 30 s ahead of the clock
/// updates with ALTER EXTENSION UPDATE, keeps its worker id, its counter and
/// the drawing 0.7.0 gave every role, and its counter now outlives DROP
/// EXTENSION.
#[test]
fn a_0_7_0_pg_tle_install_updates_to_0_8_0() {
    let Some(bin) = managed_bin() else { return };
    let m = Managed::bare(&bin, &[]);
    let work = tempfile::tempdir().unwrap();
    std::fs::set_permissions(work.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let old = Command::new("git")
        .args(["-C", env!("CARGO_MANIFEST_DIR"), "show", "dbddaf6:dist/snowflake_id_pg_tle.sql"])
        .output()
        .expect("git");
    assert!(old.status.success(), "0.7.0's pg_tle script from git: {}", String::from_utf8_lossy(&old.stderr));
    let old_script = work.path().join("pg_tle-0.7.0.sql");
    std::fs::write(&old_script, &old.stdout).unwrap();
    let psql = |file: &std::path::Path| {
        let ran = m.cluster.psql("admin", "app").arg("-f").arg(file).output().unwrap();
        check(&format!("psql -f {}", file.display()), ran)
    };
    psql(&old_script);
    let mut admin = m.admin();
    admin.batch_execute("CREATE EXTENSION snowflake_id; SELECT snowflake_set_worker_id(5)").unwrap();
    admin
        .batch_execute(
            "CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), x int);
             SELECT snowflake_advance_past(snowflake_from_timestamp(clock_timestamp() + interval '30 seconds'));
             INSERT INTO t (x) SELECT g FROM generate_series(1, 1000) g;",
        )
        .unwrap();
    let max = one(&mut admin, "SELECT max(id) FROM t");
    psql(std::path::Path::new(&repo_file("dist/snowflake_id_pg_tle.sql")));
    // A role with CREATE on the database made, first, schemas under the
    // names the update once renamed the earlier internals to: the update
    // does not stop on them (nor touch them).
    m.cluster.sql("CREATE ROLE squatter LOGIN; GRANT CREATE ON DATABASE app TO squatter");
    m.as_user("squatter", "app")
        .batch_execute("CREATE SCHEMA snowflake_id_internal_previous; CREATE SCHEMA snowflake_id_private_previous")
        .unwrap();
    // A draw in flight as the update starts: it holds the generation (0.7.0
    // reads it first) and goes on to the counter once the update waits. The
    // update takes them in the same order, so it waits for the draw, which
    // finishes; in the other order the two deadlocked and one failed.
    let mut app = m.as_user("app", "app");
    app.batch_execute(
        "BEGIN;
         SELECT pg_sequence_last_value('snowflake_id_managed.snowflake_managed_generation')",
    )
    .unwrap();
    let updater = {
        let mut admin = m.admin();
        thread::spawn(move || admin.batch_execute("ALTER EXTENSION snowflake_id UPDATE TO '0.8.0'"))
    };
    let started = Instant::now();
    while one(
        &mut admin,
        "SELECT count(*) FROM pg_stat_activity WHERE usename = 'admin' AND wait_event_type = 'Lock'
            AND query LIKE 'ALTER EXTENSION%'",
    ) == 0
    {
        assert!(started.elapsed() < HANG_GUARD, "the update never waited for the draw");
        thread::sleep(Duration::from_millis(10));
    }
    let drawn = app.batch_execute("SELECT nextval('snowflake_id_managed.snowflake_managed_counter'); COMMIT");
    let updated = updater.join().unwrap();
    drawn.map_err(|e| common::describe(&e)).expect("the draw in flight");
    updated.map_err(|e| common::describe(&e)).expect("the update");
    let mut admin = m.admin();
    let version: String =
        admin.query_one("SELECT extversion FROM pg_extension WHERE extname = 'snowflake_id'", &[]).unwrap().get(0);
    assert_eq!(version, "0.8.0");
    admin.batch_execute("INSERT INTO t (x) SELECT g FROM generate_series(1, 100) g").unwrap();
    let first = one(&mut admin, &format!("SELECT min(id) FROM t WHERE id > {max}"));
    let after = one(&mut admin, &format!("SELECT count(*) FROM t WHERE id > {max}"));
    assert_eq!(after, 100, "IDs after the update at or below the stored maximum");
    assert_eq!(worker_of(first), 5);
    // An application 0.7.0 let draw (PUBLIC's grants) still draws.
    let app = draw(&mut m.as_user("app", "app"), 10);
    assert!(app[0] > max && app.iter().all(|id| worker_of(*id) == 5));
    let leftovers = one(
        &mut admin,
        "SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'snowflake_id_%previous%'
            AND nspowner <> 'squatter'::regrole",
    );
    assert_eq!(leftovers, 0);
    let kept = one(&mut admin, "SELECT count(*) FROM pg_namespace WHERE nspowner = 'squatter'::regrole");
    assert_eq!(kept, 2, "the squatter's schemas");
    let members = one(
        &mut admin,
        "SELECT count(*) FROM pg_depend WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
            AND ((classid = 'pg_type'::regclass AND objid = 'snowflake_parts'::regtype)
                 OR (classid = 'pg_class'::regclass AND objid = 'snowflake_parts'::regclass))",
    );
    assert_eq!(members, 1, "the kept type is no longer the extension's");
    admin.batch_execute("DROP EXTENSION snowflake_id CASCADE; CREATE EXTENSION snowflake_id").unwrap();
    admin.batch_execute("SELECT snowflake_id_internal.snowflake_set_worker_id(5)").unwrap();
    let next = one(&mut admin, "SELECT snowflake_nextval()");
    assert!(next > max, "the counter did not outlive DROP EXTENSION: {next} <= {max}");
}

impl Managed {
    /// pg_dump -Fc of `db`, as admin, into the socket directory.
    fn dump(&self, db: &str) -> std::path::PathBuf {
        let dump = self.cluster.socket_dir().join(format!("{db}.dump"));
        check(
            "pg_dump",
            Command::new(self.cluster.tool("pg_dump"))
                .args(["-Fc", "-h"])
                .arg(self.cluster.socket_dir())
                .args(["-p", &self.cluster.port.to_string(), "-U", "admin", "-d", db, "-f"])
                .arg(&dump)
                .output()
                .unwrap(),
        );
        dump
    }

    /// pg_restore of `dump` into `db` (which has pg_tle), as admin; only
    /// pg_tle's own schema and comment, already there, may be refused.
    fn restore(&self, dump: &std::path::Path, db: &str) {
        let out = Command::new(self.cluster.tool("pg_restore"))
            .arg("-h")
            .arg(self.cluster.socket_dir())
            .args(["-p", &self.cluster.port.to_string(), "-U", "admin", "-d", db])
            .arg(dump)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        for line in err.lines().filter(|l| l.starts_with("Command was:")) {
            assert!(
                line == "Command was: CREATE SCHEMA pgtle;"
                    || line.starts_with("Command was: COMMENT ON EXTENSION pg_tle"),
                "pg_restore: {err}"
            );
        }
    }
}

/// A restore into another cluster whose database has the same oid (fresh
/// clusters hand out the same ones, and CREATE DATABASE ... OID keeps it)
/// is a copy too: the configuration records the cluster's system identifier
/// beside the database's oid, and status names the copy until the owner
/// sets (or confirms) its worker id. With the oid alone it was not named.
#[test]
fn a_copy_in_another_cluster_with_the_same_database_oid_is_named() {
    let Some(bin) = managed_bin() else { return };
    let source = Managed::installed(&bin, &[]);
    let mut admin = source.admin();
    draw(&mut admin, 100);
    let oid = one(&mut admin, "SELECT oid::bigint FROM pg_database WHERE datname = 'app'");
    let dump = source.dump("app");
    let target = Managed::bare(&bin, &[]);
    target.cluster.sql("DROP DATABASE app");
    target.cluster.sql(&format!("CREATE DATABASE app OWNER admin OID = {oid}"));
    target.as_user("postgres", "app").batch_execute("CREATE EXTENSION pg_tle").unwrap();
    target.restore(&dump, "app");
    let mut copy = target.admin();
    assert_eq!(one(&mut copy, "SELECT oid::bigint FROM pg_database WHERE datname = 'app'"), oid);
    let problem: Option<String> = copy.query_one("SELECT problem FROM snowflake_id_status", &[]).unwrap().get(0);
    assert!(
        problem.clone().unwrap_or_default().contains("set in another database"),
        "a copy in another cluster with the same database oid is not named: {problem:?}"
    );
    copy.batch_execute("SELECT snowflake_id_internal.snowflake_set_worker_id(6)").unwrap();
    let problem: Option<String> = copy.query_one("SELECT problem FROM snowflake_id_status", &[]).unwrap().get(0);
    assert_eq!(problem, None);
    assert!(draw(&mut copy, 10).iter().all(|id| worker_of(*id) == 6));
}

/// After a restore any role may make the first draw (the fast path is not
/// built yet, and the slow path is executable by PUBLIC). That draw, held
/// in an open transaction, once held the configuration's row and so
/// stopped the owner from giving the copy its own worker id until it
/// ended. Now it takes only the raisers' lock, released at once: the
/// owner's change goes through under a short lock_timeout while the other
/// role's transaction stays open, and IDs drawn after it carry the new
/// worker id above every ID before.
#[test]
fn a_draw_held_open_after_a_restore_never_blocks_the_owners_worker_id() {
    let Some(bin) = managed_bin() else { return };
    let m = Managed::installed(&bin, &[]);
    m.cluster.sql("CREATE ROLE eve LOGIN");
    let mut admin = m.admin();
    let before = draw(&mut admin, 100);
    let dump = m.dump("app");
    m.cluster.sql("CREATE DATABASE copy OWNER admin");
    m.as_user("postgres", "copy").batch_execute("CREATE EXTENSION pg_tle").unwrap();
    m.restore(&dump, "copy");
    let mut eve = m.as_user("eve", "copy");
    eve.batch_execute("BEGIN").unwrap();
    let first = one(&mut eve, "SELECT snowflake_id_internal.snowflake_managed_draw(true)");
    assert!(first > before[99], "the first draw after the restore is below the source's IDs");
    let mut owner = m.as_user("admin", "copy");
    owner
        .batch_execute("SET lock_timeout = '3s'; SELECT snowflake_id_internal.snowflake_set_worker_id(11)")
        .unwrap_or_else(|e| panic!("the owner's worker id waited on another role's draw: {}", common::describe(&e)));
    let after = draw(&mut owner, 100);
    assert!(after.iter().all(|id| worker_of(*id) == 11), "the new worker id is not in force");
    assert!(after[0] > first, "an ID after the change is below one before it");
    eve.batch_execute("COMMIT").unwrap();
    let later = draw(&mut owner, 10);
    assert!(later.iter().all(|id| worker_of(*id) == 11) && later[0] > after[99]);
}

/// A package directory as dbdev reads it (cli/src/models.rs of
/// supabase/dbdev): the control file's keys, the install scripts
/// (`snowflake_id--V.sql`) and the update scripts (`snowflake_id--A--B.sql`).
struct Package {
    default_version: String,
    comment: String,
    requires: Vec<String>,
    installs: Vec<(String, String)>,
    updates: Vec<(String, String, String)>,
}

impl Package {
    fn read(dir: &std::path::Path) -> Package {
        let control = std::fs::read_to_string(dir.join("snowflake_id.control")).expect("the control file");
        let key = |k: &str| {
            control
                .lines()
                .filter(|l| !l.trim_start().starts_with('#'))
                .filter_map(|l| l.split_once('='))
                .find(|(name, _)| name.trim() == k)
                .map(|(_, v)| v.trim().trim_matches('\'').to_string())
        };
        let mut p = Package {
            default_version: key("default_version").expect("default_version"),
            comment: key("comment").expect("comment"),
            requires: key("requires").map(|r| r.split(',').map(|s| s.trim().to_string()).collect()).unwrap_or_default(),
            installs: vec![],
            updates: vec![],
        };
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_str().unwrap().to_string();
            let Some(stem) = name.strip_suffix(".sql") else { continue };
            let body = std::fs::read_to_string(&path).unwrap();
            match stem.split("--").collect::<Vec<_>>()[..] {
                ["snowflake_id", v] => p.installs.push((v.to_string(), body)),
                ["snowflake_id", a, b] => p.updates.push((a.to_string(), b.to_string(), body)),
                _ => panic!("{name}: not a file dbdev publishes"),
            }
        }
        p
    }

    /// Registers the package under `name` as dbdev's client does
    /// (dbdev.install): the first version with pgtle.install_extension,
    /// further ones with install_extension_version_sql, each update path
    /// not there yet with install_update_path, then the default version.
    fn install(&self, client: &mut Client, name: &str) {
        for (version, body) in &self.installs {
            let known: bool = client
                .query_one("SELECT EXISTS (SELECT FROM pgtle.available_extensions() WHERE name = $1)", &[&name])
                .unwrap()
                .get(0);
            let have: bool = client
                .query_one(
                    "SELECT EXISTS (SELECT FROM pgtle.available_extension_versions() WHERE name = $1 AND version = $2)",
                    &[&name, version],
                )
                .unwrap()
                .get(0);
            let done = if !known {
                client.execute(
                    "SELECT pgtle.install_extension($1, $2, $3, $4, $5)",
                    &[&name, version, &self.comment, body, &self.requires],
                )
            } else if !have {
                client.execute("SELECT pgtle.install_extension_version_sql($1, $2, $3)", &[&name, version, body])
            } else {
                Ok(0)
            };
            done.unwrap_or_else(|e| panic!("install {name} {version}: {}", common::describe(&e)));
        }
        for (from, to, body) in &self.updates {
            let have: bool = client
                .query_one(
                    "SELECT EXISTS (SELECT FROM pgtle.extension_update_paths($1)
                                     WHERE source = $2 AND target = $3 AND path IS NOT NULL)",
                    &[&name, from, to],
                )
                .unwrap()
                .get(0);
            if !have {
                client
                    .execute("SELECT pgtle.install_update_path($1, $2, $3, $4)", &[&name, from, to, body])
                    .unwrap_or_else(|e| panic!("update path {from} -> {to}: {}", common::describe(&e)));
            }
        }
        client
            .execute("SELECT pgtle.set_default_version($1, $2)", &[&name, &self.default_version])
            .unwrap_or_else(|e| panic!("set_default_version: {}", common::describe(&e)));
    }
}

/// dist/database.dev, the package for Supabase's database.dev, registered
/// as dbdev registers a package: under the name its registry gives it
/// (`handle@snowflake_id`) and under the control file's (`dbdev install
/// --path`); created, configured and drawing IDs like the pg_tle script's.
#[test]
fn the_database_dev_package_installs_as_dbdev_installs_it() {
    let Some(bin) = managed_bin() else { return };
    let package = Package::read(std::path::Path::new(&repo_file("dist/database.dev")));
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(package.default_version, version);
    assert_eq!(package.installs.len(), 1, "dbdev's CLI installs one install script per package");
    assert!(std::path::Path::new(&repo_file("dist/database.dev/README.md")).exists());
    for name in ["acme@snowflake_id", "snowflake_id"] {
        let m = Managed::bare(&bin, &[]);
        let mut admin = m.admin();
        package.install(&mut admin, name);
        // The guard knows the extension under either name: another role's
        // look-alike stops the install, naming it.
        admin.batch_execute("GRANT CREATE ON SCHEMA public TO app").unwrap();
        m.as_user("app", "app")
            .batch_execute(
                "CREATE FUNCTION public.snowflake_set_layout(epoch text, worker_bits int, sequence_bits int)
                 RETURNS void LANGUAGE sql AS 'SELECT'",
            )
            .unwrap();
        let (code, text) = sqlstate_of(&mut admin, &format!("CREATE EXTENSION \"{name}\""));
        assert_eq!(code, "42710", "{name}: {text}");
        assert!(text.contains("snowflake_set_layout"), "{name}: {text}");
        m.as_user("app", "app").batch_execute("DROP FUNCTION public.snowflake_set_layout(text, int, int)").unwrap();
        admin
            .batch_execute(&format!(
                "CREATE EXTENSION \"{name}\" VERSION '{version}';
                 SELECT snowflake_id_internal.snowflake_set_worker_id(5);"
            ))
            .unwrap_or_else(|e| panic!("{name}: {}", common::describe(&e)));
        admin.batch_execute(&grant_draw("app")).unwrap();
        let got = draw(&mut m.as_user("app", "app"), 1000);
        assert_eq!(got.iter().collect::<HashSet<_>>().len(), 1000, "{name}");
        assert!(got.iter().all(|id| worker_of(*id) == 5), "{name}");
        let more = draw(&mut admin, 10);
        assert!(more[0] > got[999], "{name}");
        let default: String = admin
            .query_one("SELECT default_version FROM pgtle.available_extensions() WHERE name = $1", &[&name])
            .unwrap()
            .get(0);
        assert_eq!(default, version);
        if name != "snowflake_id" {
            // The pg_tle script's extension beside the package's: a second
            // install of the edition in one database is refused, naming both.
            m.register("app");
            let e = common::sql_error(&mut admin, "CREATE EXTENSION snowflake_id");
            assert_eq!(e.code, "42710", "{e:?}");
            assert!(e.message.contains("in this database already"), "{e:?}");
        }
    }
}

/// 0.7.0 installed from its package (what scripts/managed.sh of 0.7.0
/// would have written: the body of 0.7.0's pg_tle script), IDs stored 30 s
/// ahead of the clock, then this version's package registered the same way
/// and ALTER EXTENSION UPDATE through its update path: version, worker id
/// and counter kept.
#[test]
fn the_database_dev_package_updates_0_7_0_through_its_update_path() {
    let Some(bin) = managed_bin() else { return };
    let version = env!("CARGO_PKG_VERSION");
    let old = Command::new("git")
        .args(["-C", env!("CARGO_MANIFEST_DIR"), "show", "dbddaf6:dist/snowflake_id_pg_tle.sql"])
        .output()
        .expect("git");
    assert!(old.status.success(), "0.7.0's pg_tle script from git: {}", String::from_utf8_lossy(&old.stderr));
    let old = String::from_utf8(old.stdout).unwrap();
    let tag = "$snowflake_id_managed$";
    let start = old.find(tag).expect("0.7.0's body") + tag.len();
    let end = start + old[start..].find(tag).expect("the end of 0.7.0's body");
    let old_package = Package {
        default_version: "0.7.0".into(),
        comment: "Snowflake IDs (managed edition: SQL and PL/pgSQL only)".into(),
        requires: vec!["plpgsql".into()],
        installs: vec![("0.7.0".into(), old[start..end].to_string())],
        updates: vec![],
    };
    let package = Package::read(std::path::Path::new(&repo_file("dist/database.dev")));
    // A chain of update scripts from 0.7.0 to this version (0.7.0 to
    // 0.8.0, then 0.8.0 to 0.9.0, ...), which ALTER EXTENSION UPDATE runs
    // in one transaction.
    let mut at = "0.7.0".to_string();
    while at != version {
        let Some((_, to, _)) = package.updates.iter().find(|(from, _, _)| *from == at) else {
            panic!("no update script from {at} in dist/database.dev")
        };
        at = to.clone();
    }
    for name in ["acme@snowflake_id", "snowflake_id"] {
        let m = Managed::bare(&bin, &[]);
        let mut admin = m.admin();
        old_package.install(&mut admin, name);
        admin
            .batch_execute(&format!(
                "CREATE EXTENSION \"{name}\" VERSION '0.7.0';
                 SELECT snowflake_set_worker_id(5);
                 CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), x int);
                 SELECT snowflake_advance_past(snowflake_from_timestamp(clock_timestamp() + interval '30 seconds'));
                 INSERT INTO t (x) SELECT g FROM generate_series(1, 1000) g;"
            ))
            .unwrap_or_else(|e| panic!("{name} 0.7.0: {}", common::describe(&e)));
        let max = one(&mut admin, "SELECT max(id) FROM t");
        package.install(&mut admin, name);
        admin
            .batch_execute(&format!("ALTER EXTENSION \"{name}\" UPDATE"))
            .unwrap_or_else(|e| panic!("{name} update: {}", common::describe(&e)));
        let mut admin = m.admin();
        let now: String =
            admin.query_one("SELECT extversion FROM pg_extension WHERE extname = $1", &[&name]).unwrap().get(0);
        assert_eq!(now, version, "{name}");
        admin.batch_execute("INSERT INTO t (x) SELECT g FROM generate_series(1001, 1100) g").unwrap();
        let new = ids(&mut admin, "SELECT id FROM t WHERE x > 1000 ORDER BY x");
        assert!(new[0] > max, "{name}: after the update {} <= {max}", new[0]);
        assert!(new.iter().all(|id| worker_of(*id) == 5), "{name}: the worker id");
        let status: Option<i64> = admin.query_one("SELECT worker_id FROM snowflake_id_status", &[]).unwrap().get(0);
        assert_eq!(status, Some(5), "{name}");
    }
}

/// Any role, with no privilege at all, can hold ROW EXCLUSIVE on any
/// relation by its OID to the end of its transaction (nextval() locks the
/// relation for the top transaction before it checks the kind or the
/// privilege; a savepoint catches the error and keeps the lock), and a
/// prepared transaction keeps it past the session. Held on every relation
/// of the edition's schemas (its indexes too), it stops no draw, no block,
/// no raise and no worker id change: no path takes a lock that conflicts
/// with it. With the raisers' lock taken IN EXCLUSIVE MODE every raise, so
/// every draw at the next millisecond, waited behind it.
#[test]
fn an_oid_lock_by_a_role_with_no_privilege_stops_no_draw() {
    let Some(bin) = managed_bin() else { return };
    let m = Managed::installed(&bin, &[]);
    m.cluster.sql("CREATE ROLE mallory LOGIN");
    let mut admin = m.admin();
    let oids: Vec<i64> = ids(
        &mut admin,
        "SELECT c.oid::bigint FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname IN ('snowflake_id_internal', 'snowflake_id_private', 'snowflake_id_state')
          ORDER BY 1",
    );
    assert!(oids.len() >= 8, "{oids:?}");
    let mut mallory = m.as_user("mallory", "app");
    mallory.batch_execute("BEGIN").unwrap();
    for oid in &oids {
        mallory.batch_execute("SAVEPOINT s").unwrap();
        assert!(mallory.batch_execute(&format!("SELECT nextval({oid}::oid::regclass)")).is_err());
        mallory.batch_execute("ROLLBACK TO s").unwrap();
    }
    let held = one(
        &mut admin,
        "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
          WHERE a.usename = 'mallory' AND l.granted AND l.mode = 'RowExclusiveLock'
            AND l.relation = 'snowflake_id_private.snowflake_managed_raise_lock'::regclass",
    );
    assert_eq!(held, 1, "the lock the trick takes");
    let mut app = m.as_user("app", "app");
    app.batch_execute("SET statement_timeout = '20s'").unwrap();
    admin.batch_execute("SET statement_timeout = '20s'").unwrap();
    let mut last = 0;
    for _ in 0..5 {
        // The counter behind the clock: the next draw raises it.
        thread::sleep(Duration::from_millis(5));
        let got = draw(&mut app, 200);
        assert!(got[0] > last && got.iter().all(|id| worker_of(*id) == 5));
        let block = ids(&mut app, "SELECT * FROM snowflake_nextval_block(10)");
        assert!(block[0] > got[199]);
        last = block[9];
    }
    admin.batch_execute("SELECT snowflake_id_internal.snowflake_set_worker_id(6)").unwrap();
    let got = draw(&mut app, 100);
    assert!(got[0] > last && got.iter().all(|id| worker_of(*id) == 6));
    let id = one(&mut admin, "SELECT snowflake_advance_past(snowflake_nextval())");
    assert!(id > got[99]);
    mallory.batch_execute("ROLLBACK").unwrap();
}

/// The installing role's default privileges (set before the install, as
/// some teams do for their application role) reach none of the edition's
/// internals: every grant they made on its functions, tables and sequences
/// is taken back. Before, `app` could switch the worker id and the layout
/// by calling the internal switch (SECURITY DEFINER: as the owner), or
/// burn the worker sequence.
#[test]
fn the_installers_default_privileges_reach_no_internal() {
    let Some(bin) = managed_bin() else { return };
    let m = Managed::bare(&bin, &[]);
    m.register("app");
    let mut admin = m.admin();
    admin
        .batch_execute(
            "ALTER DEFAULT PRIVILEGES GRANT EXECUTE ON FUNCTIONS TO app;
             ALTER DEFAULT PRIVILEGES GRANT ALL ON SEQUENCES TO app;
             ALTER DEFAULT PRIVILEGES GRANT ALL ON TABLES TO app;
             ALTER DEFAULT PRIVILEGES GRANT ALL ON SCHEMAS TO app;
             CREATE EXTENSION snowflake_id;
             SELECT snowflake_id_internal.snowflake_set_worker_id(5);",
        )
        .unwrap();
    admin.batch_execute(&grant_draw("app")).unwrap();
    let mut app = m.as_user("app", "app");
    let before = draw(&mut app, 10);
    for call in [
        "SELECT snowflake_id_internal.snowflake_managed_switch_locked(9, '2025-01-01+00', 10, 12, false)",
        "SELECT snowflake_id_internal.snowflake_managed_switch(9, '2025-01-01+00', 10, 12)",
        "SELECT snowflake_id_internal.snowflake_managed_bake(true)",
        "SELECT snowflake_id_internal.snowflake_managed_state_grants()",
        "SELECT snowflake_id_internal.snowflake_managed_state_create()",
        "SELECT snowflake_id_internal.snowflake_managed_state_ensure('2025-01-01+00', 10, 12)",
        "SELECT snowflake_id_internal.snowflake_set_worker_id(9)",
        "SELECT snowflake_set_worker_id(9)",
    ] {
        let (code, text) = sqlstate_of(&mut app, call);
        assert_eq!(code, "42501", "{call}: {text}");
    }
    for rel in [
        "snowflake_id_private.snowflake_managed_worker",
        "snowflake_id_private.snowflake_managed_reference",
        "snowflake_id_state.snowflake_managed_generation",
        "snowflake_id_state.snowflake_managed_offset",
        "snowflake_id_state.snowflake_managed_layout",
    ] {
        let oid = one(&mut admin, &format!("SELECT '{rel}'::regclass::oid::bigint"));
        let (code, text) = sqlstate_of(&mut app, &format!("SELECT nextval({oid}::oid::regclass)"));
        assert_eq!(code, "42501", "nextval {rel}: {text}");
        let (code, text) = sqlstate_of(&mut app, &format!("SELECT setval({oid}::oid::regclass, 1)"));
        assert_eq!(code, "42501", "setval {rel}: {text}");
    }
    let counter = one(&mut admin, "SELECT 'snowflake_id_state.snowflake_managed_counter'::regclass::oid::bigint");
    let (code, text) = sqlstate_of(&mut app, &format!("SELECT setval({counter}::oid::regclass, 1)"));
    assert_eq!(code, "42501", "setval counter: {text}");
    let after = draw(&mut app, 10);
    assert!(after[0] > before[9] && after.iter().all(|id| worker_of(*id) == 5));
    let row = admin.query_one("SELECT worker_id, worker_bits FROM snowflake_id_status", &[]).unwrap();
    assert_eq!((row.get::<_, Option<i64>>(0), row.get::<_, i32>(1)), (Some(5), 10));
}

/// A worker id change stopped between its first and last step (here by the
/// generation's MAXVALUE making its final step fail at COMMIT, as a
/// pg_cancel_backend of the owner's COMMIT did) leaves one worker id
/// issuing. Before, the generation was left odd in the old worker id's
/// range with the new worker id in force: the next raise made the range
/// valid again, and the fast path baked for the old worker id issued beside
/// the slow path's new one.
#[test]
fn a_worker_id_change_stopped_mid_way_leaves_one_worker_id_issuing() {
    let Some(bin) = managed_bin() else { return };
    let m = Managed::installed(&bin, &[]);
    let mut admin = m.admin();
    let mut app = m.as_user("app", "app");
    let first = draw(&mut app, 100);
    let g = one(&mut admin, "SELECT last_value FROM snowflake_id_state.snowflake_managed_generation");
    let range_end = (((g >> 40) + 1) << 40) - 1;
    admin
        .batch_execute(&format!("ALTER SEQUENCE snowflake_id_state.snowflake_managed_generation MAXVALUE {range_end}"))
        .unwrap();
    let failed = admin.batch_execute("BEGIN; SELECT snowflake_id_internal.snowflake_set_worker_id(6); COMMIT");
    assert!(failed.is_err(), "the change was to stop mid-way");
    admin.batch_execute("ROLLBACK").ok();
    let mut got = Vec::new();
    for _ in 0..20 {
        thread::sleep(Duration::from_millis(3));
        got.extend(draw(&mut app, 100));
    }
    assert!(got[0] > first[99] && got.windows(2).all(|w| w[0] < w[1]));
    let workers: HashSet<i64> = got.iter().map(|id| worker_of(*id)).collect();
    assert_eq!(workers.len(), 1, "more than one worker id issuing: {workers:?}");
    admin
        .batch_execute(
            "ALTER SEQUENCE snowflake_id_state.snowflake_managed_generation NO MAXVALUE;
             SELECT snowflake_id_internal.snowflake_set_worker_id(6);",
        )
        .unwrap();
    let after = draw(&mut app, 100);
    assert!(after[0] > *got.last().unwrap() && after.iter().all(|id| worker_of(*id) == 6));
}

/// After a reinstall the layout is the kept counter's: snowflake_set_layout
/// refuses another one at once (55000), so the decoders are never baked for
/// a layout the stored IDs were not made in. Before, it was accepted (and
/// stored IDs decoded wrongly) until snowflake_set_worker_id refused.
#[test]
fn a_reinstall_refuses_a_layout_its_counter_does_not_count_in() {
    let Some(bin) = managed_bin() else { return };
    let m = Managed::bare(&bin, &[]);
    m.register("app");
    let mut admin = m.admin();
    admin
        .batch_execute(
            "CREATE EXTENSION snowflake_id;
             SELECT snowflake_id_internal.snowflake_set_layout('2024-06-01 00:00:00+00'::timestamptz, 8, 14);
             SELECT snowflake_id_internal.snowflake_set_worker_id(200);",
        )
        .unwrap();
    let id = draw(&mut admin, 1)[0];
    admin.batch_execute("DROP EXTENSION snowflake_id; CREATE EXTENSION snowflake_id").unwrap();
    let (code, text) = sqlstate_of(
        &mut admin,
        "SELECT snowflake_id_internal.snowflake_set_layout('2025-01-01 00:00:00+00'::timestamptz, 10, 12)",
    );
    assert_eq!(code, "55000", "{text}");
    let row =
        admin.query_one("SELECT snowflake_managed_worker_bits(), snowflake_managed_sequence_bits()", &[]).unwrap();
    assert_eq!((row.get::<_, i32>(0), row.get::<_, i32>(1)), (8, 14));
    // The kept layout itself is accepted.
    admin
        .batch_execute(
            "SELECT snowflake_id_internal.snowflake_set_layout('2024-06-01 00:00:00+00'::timestamptz, 8, 14);
             SELECT snowflake_id_internal.snowflake_set_worker_id(200);",
        )
        .unwrap();
    let next = draw(&mut admin, 1)[0];
    assert!(next > id && (next >> 14) & 255 == 200);
}

/// Worker id changes in a row while sessions draw one ID at a time, in a
/// layout with no sequence bits (every draw takes a millisecond of its own,
/// so the counter runs ahead of the clock and every draw races the
/// switches): each session's IDs increase, and no two IDs of one
/// millisecond carry two worker ids. A switch that read the counter before
/// it moved the generation set the counter back under a value a fast path
/// had just drawn, which then came out again under the new worker id.
#[test]
fn worker_id_changes_racing_draws_never_set_the_counter_back() {
    let Some(bin) = managed_bin() else { return };
    let m = Managed::bare(&bin, &["max_connections = 40"]);
    m.register("app");
    let mut admin = m.admin();
    admin
        .batch_execute(&format!(
            "CREATE EXTENSION snowflake_id;
             SELECT snowflake_id_internal.snowflake_set_layout('2025-01-01 00:00:00+00', 10, 0);
             SELECT snowflake_id_internal.snowflake_set_worker_id(1000);
             {}",
            grant_draw("app")
        ))
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let drawn = Arc::new(AtomicUsize::new(0));
    let drawers: Vec<_> = (0..3)
        .map(|_| {
            let mut client = m.as_user("app", "app");
            let (stop, drawn) = (stop.clone(), drawn.clone());
            thread::spawn(move || {
                let mut got = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    got.push(one(&mut client, "SELECT snowflake_nextval()"));
                    drawn.fetch_add(1, Ordering::Relaxed);
                }
                got
            })
        })
        .collect();
    // Down from 999 (a worker id below the one in force, so that an ID
    // handed out again under the new one would be smaller), round after
    // round, until 600 switches have raced 12,000 draws, however long a
    // loaded machine takes.
    let hang_guard = Instant::now() + HANG_GUARD;
    let mut switches = 0;
    while switches < 600 || drawn.load(Ordering::Relaxed) < 12_000 {
        assert!(Instant::now() < hang_guard, "{switches} switches, {} draws", drawn.load(Ordering::Relaxed));
        let worker = 999 - switches % 999;
        admin.batch_execute(&format!("SELECT snowflake_id_internal.snowflake_set_worker_id({worker})")).unwrap();
        switches += 1;
    }
    stop.store(true, Ordering::Relaxed);
    let sessions: Vec<Vec<i64>> = drawers.into_iter().map(|h| h.join().expect("drawer")).collect();
    let mut all: Vec<i64> = sessions.concat();
    for (i, got) in sessions.iter().enumerate() {
        let down = got.windows(2).filter(|w| w[1] <= w[0]).count();
        assert_eq!(down, 0, "session {i}: {down} IDs at or below the one before them");
    }
    all.sort_unstable();
    let shared_ms = all.windows(2).filter(|w| w[0] >> 10 == w[1] >> 10 && w[0] & 1023 != w[1] & 1023).count();
    assert_eq!(shared_ms, 0, "{shared_ms} milliseconds drawn in under two worker ids");
}

/// The release 0.8.0's script `dist/{file}` (commit 3fdffc8), written into
/// a directory the server's psql can read; the directory is returned with
/// the path, to be kept for as long as the file is used.
fn script_of_0_8_0(file: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let old = Command::new("git")
        .args(["-C", env!("CARGO_MANIFEST_DIR"), "show", &format!("3fdffc8:dist/{file}")])
        .output()
        .expect("git");
    assert!(old.status.success(), "0.8.0's {file} from git: {}", String::from_utf8_lossy(&old.stderr));
    assert!(String::from_utf8_lossy(&old.stdout).contains("snowflake_id 0.8.0,"), "not 0.8.0's {file}");
    let work = tempfile::tempdir().unwrap();
    std::fs::set_permissions(work.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = work.path().join(file);
    std::fs::write(&path, &old.stdout).unwrap();
    (work, path)
}

/// What 0.8.0's docs had the owner run to let `role` draw.
fn grant_draw_0_8_0(role: &str) -> String {
    format!(
        "GRANT USAGE ON SCHEMA snowflake_id_managed_state TO {role};
         GRANT USAGE ON SEQUENCE snowflake_id_managed_state.snowflake_managed_counter TO {role};
         GRANT SELECT ON SEQUENCE snowflake_id_managed_state.snowflake_managed_generation,
             snowflake_id_managed_state.snowflake_managed_offset TO {role};"
    )
}

/// An install of 0.8.0 in `db`, through `how` ("pg_tle": its pg_tle script
/// and CREATE EXTENSION; "plain": its plain script), worker id 6 and `app`
/// allowed to draw, with 1,000 IDs stored 30 s ahead of the clock in
/// table t, so that the clock alone would not keep new IDs above them.
/// Returns the largest stored ID.
fn install_0_8_0(m: &Managed, db: &str, how: &str) -> i64 {
    let file = if how == "plain" { "snowflake_id_plain.sql" } else { "snowflake_id_pg_tle.sql" };
    let (_dir, script) = script_of_0_8_0(file);
    let ran = m.cluster.psql("admin", db).arg("-f").arg(&script).output().unwrap();
    check(&format!("0.8.0's {file}"), ran);
    let mut admin = m.as_user("admin", db);
    if how != "plain" {
        admin.batch_execute("CREATE EXTENSION snowflake_id").unwrap();
    }
    admin.batch_execute("SELECT snowflake_id_managed.snowflake_set_worker_id(6)").unwrap();
    admin.batch_execute(&grant_draw_0_8_0("app")).unwrap();
    admin
        .batch_execute(
            "CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), x int);
             CREATE VIEW v AS SELECT id, snowflake_timestamp(id) AS ts FROM t;
             SELECT snowflake_id_managed.snowflake_advance_past(
                 snowflake_from_timestamp(clock_timestamp() + interval '30 seconds'));
             INSERT INTO t (x) SELECT g FROM generate_series(1, 1000) g;",
        )
        .unwrap();
    assert_eq!(
        one(&mut admin, "SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'snowflake_id_managed%'"),
        3,
        "0.8.0's three schemas"
    );
    one(&mut admin, "SELECT max(id) FROM t")
}

/// After an update or reinstall from 0.8.0: none of 0.8.0's schemas is
/// left, this version's three are there, and new IDs, of worker id 6, are
/// above every ID 0.8.0 issued, drawn by the owner and by `app`, whose
/// grant of 0.8.0 still holds (on the renamed schema).
fn continues_above_0_8_0(m: &Managed, db: &str, max: i64) {
    let mut admin = m.as_user("admin", db);
    admin.batch_execute("INSERT INTO t (x) SELECT g FROM generate_series(1, 100) g").unwrap();
    let above = one(&mut admin, &format!("SELECT count(*) FROM t WHERE id > {max}"));
    assert_eq!(above, 100, "{db}: IDs at or below the largest 0.8.0 issued ({max})");
    assert_eq!(worker_of(one(&mut admin, "SELECT max(id) FROM t")), 6, "{db}");
    let app = draw(&mut m.as_user("app", db), 10);
    assert!(app[0] > max && app.iter().all(|id| worker_of(*id) == 6), "{db}: app's draws {app:?}");
    let old = one(&mut admin, "SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'snowflake_id_managed%'");
    assert_eq!(old, 0, "{db}: 0.8.0's schemas left");
    let new = one(
        &mut admin,
        "SELECT count(*) FROM pg_namespace
          WHERE nspname IN ('snowflake_id_internal', 'snowflake_id_private', 'snowflake_id_state')",
    );
    assert_eq!(new, 3, "{db}: this version's schemas");
}

/// A pg_tle install of 0.8.0 (its shipped script, from the repository's
/// history) updates with ALTER EXTENSION UPDATE, and a plain install of
/// 0.8.0 with this version's plain script: the schemas take this version's
/// names, the counter (30 s ahead of the clock), the worker id, the column
/// default, the view and the grants for a drawing role stay, a copy is
/// still named one, and the counter then outlives DROP EXTENSION under its
/// new name.
#[test]
fn a_0_8_0_install_updates_to_0_9_0_keeping_its_counter() {
    let Some(bin) = managed_bin() else { return };
    let m = Managed::bare(&bin, &[]);
    m.cluster.sql("CREATE DATABASE plain OWNER admin");
    let max_tle = install_0_8_0(&m, "app", "pg_tle");
    let max_plain = install_0_8_0(&m, "plain", "plain");
    // Where the worker id was set, as a restore into another database
    // leaves it: status names the copy, before and after the update.
    let copy_before = m
        .admin()
        .batch_execute("UPDATE snowflake_id_managed_lock.snowflake_managed_config SET set_in = 1")
        .and_then(|_| m.admin().query_one("SELECT problem FROM snowflake_id_status", &[]))
        .unwrap()
        .get::<_, Option<String>>(0);
    assert!(copy_before.unwrap_or_default().contains("was set in another database"));
    m.register("app");
    m.admin().batch_execute("ALTER EXTENSION snowflake_id UPDATE").unwrap();
    m.psql_file("admin", "plain", "dist/snowflake_id_plain.sql", "");
    let mut admin = m.admin();
    let version: String =
        admin.query_one("SELECT extversion FROM pg_extension WHERE extname = 'snowflake_id'", &[]).unwrap().get(0);
    assert_eq!(version, env!("CARGO_PKG_VERSION"));
    let problem: Option<String> = admin.query_one("SELECT problem FROM snowflake_id_status", &[]).unwrap().get(0);
    assert!(problem.unwrap_or_default().contains("was set in another database"), "the copy is no longer named");
    for (db, max) in [("app", max_tle), ("plain", max_plain)] {
        continues_above_0_8_0(&m, db, max);
        let mut admin = m.as_user("admin", db);
        assert_eq!(one(&mut admin, "SELECT count(*) FROM v"), 1100, "{db}: the view");
        let plan = ids_plan(&mut admin);
        assert!(plan.contains("snowflake_id_state.snowflake_managed_counter"), "{db}: not baked again: {plan}");
    }
    let max = one(&mut admin, "SELECT max(id) FROM t");
    admin.batch_execute("DROP EXTENSION snowflake_id CASCADE; CREATE EXTENSION snowflake_id").unwrap();
    admin.batch_execute("SELECT snowflake_id_internal.snowflake_set_worker_id(6)").unwrap();
    let next = one(&mut admin, "SELECT snowflake_nextval()");
    assert!(next > max, "the counter did not outlive DROP EXTENSION: {next} <= {max}");
}

/// 0.8.0 dropped (DROP EXTENSION, or its plain uninstall script) leaves its
/// counter in snowflake_id_managed_state; this version, installed next,
/// takes that schema over under its own name and continues above every ID
/// 0.8.0 issued, 30 s ahead of the clock. A counter schema of that name of
/// another role's stops the install, as its own name's does.
#[test]
fn a_reinstall_after_dropping_0_8_0_continues_above_its_ids() {
    let Some(bin) = managed_bin() else { return };
    let m = Managed::bare(&bin, &[]);
    m.cluster.sql("CREATE DATABASE plain OWNER admin");
    let max_tle = install_0_8_0(&m, "app", "pg_tle");
    let max_plain = install_0_8_0(&m, "plain", "plain");
    m.admin()
        .batch_execute("DROP VIEW v; ALTER TABLE t ALTER COLUMN id DROP DEFAULT; DROP EXTENSION snowflake_id")
        .unwrap();
    m.as_user("admin", "plain").batch_execute("DROP VIEW v; ALTER TABLE t ALTER COLUMN id DROP DEFAULT").unwrap();
    let (_dir, uninstall) = script_of_0_8_0("snowflake_id_plain_uninstall.sql");
    check("0.8.0's uninstall", m.cluster.psql("admin", "plain").arg("-f").arg(&uninstall).output().unwrap());
    for db in ["app", "plain"] {
        let kept = one(
            &mut m.as_user("admin", db),
            "SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'snowflake_id_%' AND nspname <> 'snowflake_id_managed_state'",
        );
        assert_eq!(kept, 0, "{db}: 0.8.0 left more than its counter");
    }
    m.register("app");
    m.admin().batch_execute("CREATE EXTENSION snowflake_id").unwrap();
    m.psql_file("admin", "plain", "dist/snowflake_id_plain.sql", "");
    for (db, max) in [("app", max_tle), ("plain", max_plain)] {
        let mut admin = m.as_user("admin", db);
        admin
            .batch_execute(
                "SELECT snowflake_id_internal.snowflake_set_worker_id(6);
                 ALTER TABLE t ALTER COLUMN id SET DEFAULT snowflake_nextval();",
            )
            .unwrap();
        continues_above_0_8_0(&m, db, max);
    }
    // Another role's schema of 0.8.0's counter name is not taken over.
    m.cluster.sql("CREATE DATABASE other OWNER admin");
    m.cluster.sql("GRANT CREATE ON DATABASE other TO app");
    m.as_user("app", "other").batch_execute("CREATE SCHEMA snowflake_id_managed_state").unwrap();
    let out =
        m.cluster.psql("admin", "other").arg("-f").arg(repo_file("dist/snowflake_id_plain.sql")).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && stderr.contains("schema snowflake_id_managed_state exists already and belongs to role app"),
        "{stderr}"
    );
}
