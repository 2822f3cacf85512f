//! Blocks of IDs in one call (`snowflake_nextval_block`, `snowflake_nextval_array`):
//! every guarantee of single IDs, on a real server.

mod common;

use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use common::{
    assert_all_above, assert_no_duplicates, assert_strictly_increasing, draw_in_order, ids, sql_error, Cluster,
};

fn status_i64(cluster: &Cluster, column: &str) -> i64 {
    cluster.query_i64(&format!("SELECT {column}::bigint FROM snowflake_id_status"))
}

fn array(client: &mut postgres::Client, n: i32) -> Vec<i64> {
    client.query_one("SELECT snowflake_nextval_array($1)", &[&n]).expect("array block").get(0)
}

fn set_of(client: &mut postgres::Client, n: i32) -> Vec<i64> {
    let rows = client.query("SELECT id FROM snowflake_nextval_block($1) id", &[&n]).expect("block");
    rows.iter().map(|r| r.get(0)).collect()
}

/// Four connections mixing both block forms with single calls, 240 live IDs
/// per ms so that blocks span many ticks (runs) and other backends' IDs fall
/// between their runs: no ID twice, each connection's IDs increase across
/// every call, each block is ascending and as long as asked.
#[test]
fn blocks_and_single_calls_from_many_backends_never_repeat() {
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 3", "snowflake_id.sequence_bits = 8"]);
    let per_conn: Vec<Vec<i64>> = thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|c| {
                let cluster = &cluster;
                s.spawn(move || {
                    let mut client = cluster.connect();
                    let mut got = Vec::new();
                    for i in 0..60usize {
                        // Sizes from 1 to a few ticks' worth, per connection in another order.
                        let n = [1, 7, 239, 240, 241, 1_000, 3_000][(i * 5 + c * 3) % 7];
                        let block = match (i + c) % 3 {
                            0 => array(&mut client, n),
                            1 => set_of(&mut client, n),
                            _ => draw_in_order(&mut client, n.into()),
                        };
                        assert_eq!(block.len(), n as usize);
                        assert_strictly_increasing(&block, "one block");
                        got.extend(block);
                    }
                    got
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("drawing thread")).collect()
    });
    for (c, got) in per_conn.iter().enumerate() {
        assert_strictly_increasing(got, &format!("connection {c}, across its calls"));
    }
    let distinct = assert_no_duplicates(&per_conn);
    assert!(status_i64(&cluster, "ids_issued") >= distinct as i64);
    // Every ID carries the worker id and a time within a second of now.
    let all: Vec<i64> = per_conn.concat();
    let far = cluster
        .connect()
        .query_one(
            "SELECT count(*) FROM unnest($1::bigint[]) id
              WHERE snowflake_worker_id(id) <> 3 OR abs(extract(epoch FROM snowflake_timestamp(id) - now())) > 30",
            &[&all],
        )
        .expect("decode")
        .get::<_, i64>(0);
    assert_eq!(far, 0);
}

/// n <= 0, n past the documented maximum: 22023 with a hint, nothing issued.
/// NULL is no block (STRICT). The maximum itself is served.
#[test]
fn block_sizes_out_of_bounds_are_refused_and_issue_nothing() {
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 4"]);
    let mut client = cluster.connect();
    let first = array(&mut client, 3);
    let issued = status_i64(&cluster, "ids_issued");
    for n in ["0", "-1", "1000001", "-2147483648", "2147483647"] {
        for f in ["snowflake_nextval_array", "snowflake_nextval_block"] {
            let e = sql_error(&mut client, &format!("SELECT {f}({n})"));
            assert_eq!(e.code, "22023", "{f}({n}): {e:?}");
            assert!(e.message.contains(f) && e.message.contains(n), "{e:?}");
            assert!(e.hint.contains("at most 1000000"), "{e:?}");
        }
    }
    assert_eq!(status_i64(&cluster, "ids_issued"), issued, "a refused block issued IDs");
    assert_eq!(cluster.query_i64("SELECT count(*) FROM snowflake_nextval_block(NULL)"), 0);
    assert_eq!(cluster.query_i64("SELECT count(*) FROM (SELECT snowflake_nextval_array(NULL) a) s WHERE a IS NULL"), 1);
    let big = array(&mut client, 1_000_000);
    assert_eq!(big.len(), 1_000_000);
    assert_strictly_increasing(&big, "the largest block");
    assert!(big[0] > first[2]);
    assert_eq!(status_i64(&cluster, "ids_issued"), issued + 1_000_000);
}

/// Like `snowflake_nextval()`: 25006 in a read-only transaction and on a
/// standby, naming the function, nothing issued.
#[test]
fn blocks_are_refused_read_only_and_on_a_standby() {
    let primary = Cluster::preloaded(&["snowflake_id.worker_id = 5"]);
    let mut client = primary.connect();
    array(&mut client, 1);
    let issued = status_i64(&primary, "ids_issued");
    for f in ["snowflake_nextval_array", "snowflake_nextval_block"] {
        client.batch_execute("BEGIN READ ONLY").unwrap();
        let e = sql_error(&mut client, &format!("SELECT {f}(10)"));
        client.batch_execute("ROLLBACK").unwrap();
        assert_eq!(e.code, "25006", "{e:?}");
        assert_eq!(e.message, format!("cannot execute {f}(integer) in a read-only transaction"));
    }
    assert_eq!(status_i64(&primary, "ids_issued"), issued);

    let mut standby = Cluster::standby_of(&primary, &[]);
    standby.start();
    let mut on_standby = standby.connect();
    for f in ["snowflake_nextval_array", "snowflake_nextval_block"] {
        let e = sql_error(&mut on_standby, &format!("SELECT {f}(10)"));
        assert_eq!(e.code, "25006", "{e:?}");
        assert!(e.message.contains(&format!("{f}(integer)")) && e.message.contains("recovery"), "{e:?}");
    }
}

/// One call is one block, also in FROM of a parallel plan: the leader calls
/// it, not the leader and every worker (a PARALLEL SAFE block handed out a
/// different block to each, up to three times the IDs asked for).
#[test]
fn a_block_in_a_parallel_join_is_one_call() {
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 4"]);
    let mut client = cluster.connect();
    client.batch_execute("CREATE TABLE big AS SELECT g FROM generate_series(1, 300000) g").unwrap();
    client.batch_execute("VACUUM ANALYZE big").unwrap();
    client
        .batch_execute(
            "SET max_parallel_workers_per_gather = 2; SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0;
             SET min_parallel_table_scan_size = 0; SET parallel_leader_participation = on;",
        )
        .unwrap();
    for (f, from) in [
        ("snowflake_nextval_block", "snowflake_nextval_block(1) b"),
        ("snowflake_nextval_array", "unnest(snowflake_nextval_array(1)) b"),
    ] {
        // The plan has a Gather: the join runs in workers.
        let sql = format!("SELECT count(DISTINCT b), count(*) FROM big, {from} WHERE big.g % 7 <> 0");
        let plan: Vec<String> =
            client.query(&format!("EXPLAIN {sql}"), &[]).unwrap().iter().map(|r| r.get(0)).collect();
        assert!(plan.iter().any(|l| l.contains("Gather")), "{f}: no parallel plan:\n{}", plan.join("\n"));
        let row = client.query_one(&sql, &[]).unwrap();
        let (distinct, rows): (i64, i64) = (row.get(0), row.get(1));
        assert_eq!((distinct, rows), (1, 300000 - 300000 / 7), "{f}: one call of a block of 1 gave {distinct} IDs");
    }
}

/// A block larger than the layout gives within `max_drift` waits for the
/// clock, and never runs the logical clock past `max_drift`; the wait ends
/// at once on statement_timeout and pg_cancel_backend.
#[test]
fn a_block_waits_within_max_drift_and_a_cancel_ends_the_wait() {
    // 4 IDs per ms (no history slots below 4 sequence bits), 20 ms of drift.
    let cluster = Cluster::preloaded(&[
        "snowflake_id.worker_id = 6",
        "snowflake_id.sequence_bits = 2",
        "snowflake_id.max_drift = '20ms'",
    ]);
    let mut client = cluster.connect();
    let first = array(&mut client, 1);
    let started = Instant::now();
    // 2,000 IDs are 500 ms of ticks: at most 20 ms of them ahead of the clock.
    let block = array(&mut client, 2_000);
    assert!(started.elapsed() >= Duration::from_millis(450), "{:?}: the block did not wait", started.elapsed());
    assert_strictly_increasing(&block, "a waiting block");
    assert!(block[0] > first[0]);
    assert!(status_i64(&cluster, "waits") > 0);
    let drift = status_i64(&cluster, "drift_ms");
    assert!(drift <= 40, "drift {drift} ms went past max_drift");

    // A million is 250 s of ticks: cancelled while it waits.
    client.batch_execute("SET statement_timeout = '1s'").unwrap();
    let started = Instant::now();
    let e = sql_error(&mut client, "SELECT snowflake_nextval_array(1000000)");
    assert_eq!(e.code, "57014", "{e:?}");
    assert_eq!(e.message, "canceling statement due to statement timeout");
    assert!(started.elapsed() < Duration::from_secs(5), "the cancel took {:?}", started.elapsed());
    client.batch_execute("RESET statement_timeout").unwrap();

    let pid: i32 = client.query_one("SELECT pg_backend_pid()", &[]).unwrap().get(0);
    let canceller = thread::spawn({
        let cfg = cluster.config();
        move || {
            thread::sleep(Duration::from_millis(500));
            let mut c = cfg.connect(postgres::NoTls).unwrap();
            c.query_one("SELECT pg_cancel_backend($1)", &[&pid]).unwrap();
        }
    });
    let e = sql_error(&mut client, "SELECT count(*) FROM snowflake_nextval_block(1000000)");
    canceller.join().unwrap();
    assert_eq!(e.code, "57014", "{e:?}");
    // The session and the generator go on above everything issued.
    let after = set_of(&mut client, 10);
    assert!(after[0] > *block.last().unwrap());
    let drift = status_i64(&cluster, "drift_ms");
    assert!(drift <= 40, "drift {drift} ms went past max_drift after the cancels");
}

/// The durable mark covers every ID of a block before the block is
/// returned: with the mark keeper stopped (so that nothing renews behind
/// the block), a block that runs the logical clock a hundred seconds ahead
/// (1 ID per ms, never wait), then a crash: every later ID is above it.
#[test]
fn a_crash_right_after_a_block_never_repeats_it() {
    let cluster = Cluster::preloaded(&[
        "snowflake_id.worker_id = 2",
        "snowflake_id.sequence_bits = 0",
        "snowflake_id.max_drift = 0",
    ]);
    let mut client = cluster.connect();
    array(&mut client, 1);
    let keeper = keeper_pid(&cluster);
    signal(keeper, "STOP");
    let block = array(&mut client, 100_000);
    assert_strictly_increasing(&block, "the block");
    // kill -9 of a child: the postmaster resets shared memory and recovers.
    signal(keeper, "KILL");
    drop(client);
    cluster.wait_accepting();
    let deadline = Instant::now() + Duration::from_secs(60);
    let after = loop {
        match cluster.config().connect(postgres::NoTls) {
            Ok(mut c) => match c.query("SELECT snowflake_nextval_block(1000)", &[]) {
                Ok(rows) => break rows.iter().map(|r| r.get::<_, i64>(0)).collect::<Vec<i64>>(),
                Err(e) if Instant::now() < deadline => eprintln!("not yet: {e}"),
                Err(e) => panic!("no IDs after the crash: {e}"),
            },
            Err(e) if Instant::now() < deadline => eprintln!("not yet: {e}"),
            Err(e) => panic!("no connection after the crash: {e}"),
        }
        thread::sleep(Duration::from_millis(200));
    };
    assert_all_above(&block, &after, "a crash right after a block");
    let single = ids(&mut cluster.connect(), "SELECT snowflake_nextval()");
    assert_all_above(&after, &single, "after the block");
}

fn keeper_pid(cluster: &Cluster) -> i32 {
    let out = Command::new("pgrep")
        .args(["-P", &cluster.postmaster_pid().to_string(), "-f", "snowflake_id mark keeper"])
        .output()
        .expect("pgrep");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines().next().and_then(|l| l.trim().parse().ok()).unwrap_or_else(|| panic!("no mark keeper: {text:?}"))
}

fn signal(pid: i32, signal: &str) {
    assert!(Command::new("kill").args([format!("-{signal}"), pid.to_string()]).status().expect("kill").success());
}

/// With a worker id leased from a registry that went away, blocks stop at
/// the lease's ceiling: a block that would pass it is refused whole (55000),
/// and no ID of any block returned is past it. 1 ID per ms and no
/// `max_drift`, so that blocks run the logical clock to the ceiling at once.
#[test]
fn blocks_never_pass_the_lease_ceiling() {
    let mut registry = Cluster::registry();
    let node = Cluster::leased_node(
        &registry,
        "a",
        &["snowflake_id.registry_lease = '3s'", "snowflake_id.sequence_bits = 0", "snowflake_id.max_drift = 0"],
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut client = node.connect();
    while client.query("SELECT snowflake_nextval_array(1)", &[]).is_err() {
        assert!(Instant::now() < deadline, "no lease after 30 s\n{}", node.log());
        thread::sleep(Duration::from_millis(200));
    }
    registry.stop_immediate();
    let mut got: Vec<i64> = Vec::new();
    let e = loop {
        match client.query_one("SELECT snowflake_nextval_array(500)", &[]) {
            Ok(row) => got.extend(row.get::<_, Vec<i64>>(0)),
            Err(e) => break common::DbError::of(e.as_db_error().expect("a server error")),
        }
        assert!(got.len() < 1_000_000, "a lease of 3 s gave {} IDs at 1 per ms", got.len());
    };
    assert_eq!(e.code, "55000", "{e:?}");
    assert!(!got.is_empty(), "blocks within the lease are served while the registry is down");
    assert_strictly_increasing(&got, "blocks under a lease");
    let past = client
        .query_one(
            "SELECT count(*) FROM unnest($1::bigint[]) id, snowflake_id_status s WHERE snowflake_timestamp(id) > s.lease_ceiling",
            &[&got],
        )
        .expect("ceiling")
        .get::<_, i64>(0);
    assert_eq!(past, 0, "IDs past the lease ceiling");
}
