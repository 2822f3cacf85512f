//! PostgreSQL's own commands that wait for every process of the server to
//! absorb a ProcSignalBarrier (`DROP DATABASE`, `ALTER DATABASE ... SET
//! TABLESPACE`, `DROP TABLESPACE`), on a server that preloads the library,
//! with the mark keeper idle, busy renewing, waiting for a synchronous
//! standby that is not there, and waiting for a registry that does not
//! answer. 0.3.0's keeper never absorbed a barrier: each of these commands
//! hung for ever. Every statement here runs under statement_timeout, so a
//! process that never answers fails the test (57014) instead of hanging it.

mod common;

use std::io::{ErrorKind, Read};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use common::waits::{expected_event, wait_until_seen};
use common::{describe, Cluster};
use postgres::Client;

/// Far longer than any of these commands takes on a working server.
const TIMEOUT: &str = "SET statement_timeout = '60s'";

fn run(client: &mut Client, sql: &str) {
    client.batch_execute(sql).unwrap_or_else(|e| panic!("{sql}: {}", describe(&e)));
}

/// Every command of PostgreSQL 15 to 18 that waits on a barrier, named
/// `tag` so that one cluster can run them several times. Includes a
/// `DROP TABLESPACE` that must say "not empty" (it waits on a barrier
/// before saying so) and one whose directory still holds the files of a
/// table dropped before the last checkpoint (it waits on a barrier, then
/// succeeds).
fn barrier_commands(cluster: &Cluster, tag: &str) {
    let mut c = cluster.connect();
    run(&mut c, TIMEOUT);
    // Their commits must not wait for the synchronous standby that one test
    // names and never starts.
    run(&mut c, "SET synchronous_commit = local");
    run(&mut c, &format!("CREATE DATABASE drop_{tag}"));
    run(&mut c, &format!("DROP DATABASE drop_{tag}"));
    run(&mut c, "SET allow_in_place_tablespaces = on");
    run(&mut c, &format!("CREATE TABLESPACE ts_{tag} LOCATION ''"));
    run(&mut c, &format!("CREATE DATABASE move_{tag}"));
    run(&mut c, &format!("ALTER DATABASE move_{tag} SET TABLESPACE ts_{tag}"));
    run(&mut c, &format!("ALTER DATABASE move_{tag} SET TABLESPACE pg_default"));
    run(&mut c, &format!("DROP DATABASE move_{tag}"));
    run(&mut c, &format!("CREATE TABLE held_{tag} (a int) TABLESPACE ts_{tag}"));
    match c.batch_execute(&format!("DROP TABLESPACE ts_{tag}")) {
        Ok(()) => panic!("DROP TABLESPACE of a tablespace holding a table succeeded"),
        Err(e) => {
            let db = e.as_db_error().unwrap_or_else(|| panic!("DROP TABLESPACE: {e}"));
            assert_eq!(db.code().code(), "55000", "DROP TABLESPACE of a tablespace holding a table: {}", describe(&e));
        }
    }
    run(&mut c, &format!("DROP TABLE held_{tag}"));
    run(&mut c, &format!("DROP TABLESPACE ts_{tag}"));
}

fn keeper_pid(client: &mut Client) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let pid: i32 = client
            .query_one("SELECT pid FROM pg_stat_activity WHERE backend_type = 'snowflake_id mark keeper'", &[])
            .map(|r| r.get(0))
            .unwrap_or(0);
        if pid != 0 {
            return pid;
        }
        assert!(Instant::now() < deadline, "no mark keeper in pg_stat_activity");
        thread::sleep(Duration::from_millis(50));
    }
}

fn keeper_writes(cluster: &Cluster) -> i64 {
    cluster.query_i64("SELECT mark_writes_by_keeper FROM snowflake_id_status")
}

/// Waits until the keeper's count of marks written passes `above`.
fn wait_for_keeper_write(cluster: &Cluster, above: i64, what: &str) -> i64 {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let writes = keeper_writes(cluster);
        if writes > above {
            return writes;
        }
        assert!(Instant::now() < deadline, "{what}: the keeper wrote no mark past its {above}th");
        thread::sleep(Duration::from_millis(50));
    }
}

/// Sets its flag when dropped.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

#[test]
fn barrier_commands_finish_with_the_keeper_idle_and_busy() {
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 3"]);
    let mut c = cluster.connect();
    let _ = keeper_pid(&mut c);
    c.query_one("SELECT snowflake_nextval()", &[]).unwrap();
    // Idle: the keeper sleeps in its main loop. It renews for ten seconds
    // after the last ID; idle is when its count of writes stands still for
    // longer than the half second between its renewals.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut idle = keeper_writes(&cluster);
    loop {
        thread::sleep(Duration::from_millis(1500));
        let now = keeper_writes(&cluster);
        if now == idle {
            break;
        }
        assert!(Instant::now() < deadline, "the keeper never went idle: {now} writes");
        idle = now;
    }
    barrier_commands(&cluster, "idle");
    assert_eq!(keeper_writes(&cluster), idle, "the keeper wrote during the idle phase");

    // Busy: IDs flow, the keeper renews the mark about twice a second, and
    // goes on renewing while the commands run.
    let stop = AtomicBool::new(false);
    thread::scope(|s| {
        let drawer = s.spawn(|| {
            let mut d = cluster.connect();
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                d.query_one("SELECT count(snowflake_nextval()) FROM generate_series(1, 20000)", &[])
                    .unwrap_or_else(|e| panic!("drawing IDs: {}", describe(&e)));
                n += 1;
            }
            n
        });
        // Stops the drawer on the way out, a failed check too: the scope
        // waits for it before the panic goes on.
        let stopping = StopOnDrop(&stop);
        let busy = wait_for_keeper_write(&cluster, idle, "IDs flowing");
        barrier_commands(&cluster, "busy");
        let after = keeper_writes(&cluster);
        drop(stopping);
        assert!(drawer.join().expect("drawer") > 0);
        assert!(after > busy, "the keeper wrote no mark while the commands ran: it was not busy");
    });
}

#[test]
fn barrier_commands_finish_while_ids_wait_for_a_missing_synchronous_standby() {
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 4", "snowflake_id.sequence_bits = 2"]);
    let mut c = cluster.connect();
    let keeper = keeper_pid(&mut c);
    c.query_one("SELECT count(snowflake_nextval()) FROM generate_series(1, 1000)", &[]).unwrap();
    run(&mut c, "ALTER SYSTEM SET synchronous_standby_names = 'nobody'");
    run(&mut c, "SELECT pg_reload_conf()");
    // The keeper's wait: our own event since 17, PostgreSQL's SyncRep before.
    let sync_wait = expected_event("SnowflakeIdSyncStandby", ("IPC", "SyncRep"));
    let cfg = cluster.config();
    thread::scope(|s| {
        // Draws until the mark is used up, then waits for the standby
        // (bounded: it ends when the standby names are cleared below).
        let waiter = s.spawn(move || {
            let mut d = cfg.connect(postgres::NoTls).expect("connect");
            d.batch_execute("SET statement_timeout = '120s'").unwrap();
            d.query_one("SELECT count(snowflake_nextval()) FROM generate_series(1, 50000)", &[])
                .map(|r| r.get::<_, i64>(0))
        });
        wait_until_seen(&mut c, keeper, &sync_wait, "the keeper renewing the mark");
        barrier_commands(&cluster, "standby");
        // Still waiting: the commands finished because the waits absorbed
        // the barriers, not because the waits ended.
        wait_until_seen(&mut c, keeper, &sync_wait, "the keeper, after the commands");
        run(&mut c, "ALTER SYSTEM RESET synchronous_standby_names");
        run(&mut c, "SELECT pg_reload_conf()");
        let drawn = waiter.join().expect("waiter").unwrap_or_else(|e| panic!("the waiting call: {}", describe(&e)));
        assert_eq!(drawn, 50_000);
    });
}

/// Whether the peer of `stream` still holds the connection open.
fn still_open(stream: &mut TcpStream) -> bool {
    stream.set_nonblocking(true).expect("nonblocking");
    let mut buf = [0u8; 512];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return false,
            Ok(_) => continue, // the startup packet, unanswered
            Err(e) if e.kind() == ErrorKind::WouldBlock => return true,
            Err(_) => return false,
        }
    }
}

#[test]
fn barrier_commands_finish_while_the_keeper_waits_for_a_registry_that_does_not_answer() {
    // A "registry" that accepts connections and never says a word: each of
    // the keeper's calls waits on the socket until its own timeout (5 s),
    // then closes it. Accepted by a thread as they come, so the time of
    // acceptance is the time the keeper's call began.
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let (calls_tx, calls) = mpsc::channel::<TcpStream>();
    thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            if calls_tx.send(stream).is_err() {
                return;
            }
        }
    });
    let registry =
        format!("snowflake_id.registry = 'host=127.0.0.1 port={port} dbname=postgres user=postgres sslmode=disable'");
    let cluster = Cluster::preloaded(&[&registry]);
    let mut d = cluster.connect();
    run(&mut d, TIMEOUT);
    run(&mut d, "CREATE DATABASE drop_registry");
    // Skip the calls already queued; the next one is fresh.
    while calls.recv_timeout(Duration::from_millis(200)).is_ok() {}
    let mut call = calls.recv_timeout(Duration::from_secs(60)).expect("the keeper calls the registry again");
    run(&mut d, "DROP DATABASE drop_registry");
    // Had DROP DATABASE waited until the keeper's call timed out, the keeper
    // would have closed the connection by now.
    assert!(still_open(&mut call), "DROP DATABASE waited until the keeper's registry call timed out");
    drop(call);
    barrier_commands(&cluster, "registry");
}

#[test]
fn the_keeper_logs_its_memory_contexts_when_asked() {
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 5"]);
    let mut c = cluster.connect();
    let keeper = keeper_pid(&mut c);
    let asked: bool = c.query_one("SELECT pg_log_backend_memory_contexts($1)", &[&keeper]).unwrap().get(0);
    assert!(asked);
    let line = format!("logging memory contexts of PID {keeper}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !cluster.log().contains(&line) {
        assert!(Instant::now() < deadline, "the keeper never logged its memory contexts:\n{}", cluster.log());
        thread::sleep(Duration::from_millis(50));
    }
}
