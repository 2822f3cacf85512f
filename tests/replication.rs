//! Streaming replication and failover: a standby refuses to issue IDs, the
//! durable mark reaches it through WAL, and a promoted standby never
//! repeats an ID its old primary returned. Standbys are made with
//! `pg_basebackup -R`, as a DBA makes them; clocks are shifted with
//! libfaketime, never the machine's.

mod common;

use std::thread;
use std::time::Duration;

use common::waits::wait_until;
use common::{
    assert_all_above, assert_no_duplicates, assert_strictly_increasing, describe, draw_in_order, sql_error,
    state_file_mark, Cluster, FakeClock,
};

/// The end of the newest mark record the primary wrote, as text.
fn mark_lsn(cluster: &Cluster) -> String {
    cluster.query_text("SELECT mark_lsn::text FROM snowflake_id_status")
}

/// Whether the server's durable mark (on a standby: the one replayed) is at
/// or past the millisecond of `id`.
fn mark_covers(cluster: &Cluster, id: i64) -> bool {
    cluster
        .connect()
        .query_one("SELECT durable_mark >= snowflake_timestamp($1) FROM snowflake_id_status", &[&id])
        .unwrap()
        .get(0)
}

fn insert_ids(client: &mut postgres::Client, n: i32) -> Vec<i64> {
    client
        .query("INSERT INTO t (n) SELECT g FROM generate_series(1, $1) g RETURNING id", &[&n])
        .unwrap_or_else(|e| panic!("insert: {}", describe(&e)))
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// A primary with table `t` (id defaulting to snowflake_nextval()) and a
/// running streaming standby of it.
fn primary_and_standby(primary_conf: &[&str], standby_env: Option<&str>) -> (Cluster, Cluster, Option<FakeClock>) {
    let primary = Cluster::preloaded(primary_conf);
    primary.sql("CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), n int)");
    let mut standby = Cluster::standby_of(&primary, &[]);
    let clock = match standby_env {
        Some(offset) => Some(standby.start_with_fake_clock(offset)),
        None => {
            standby.start();
            None
        }
    };
    (primary, standby, clock)
}

#[test]
fn standby_refuses_to_issue_ids_and_still_decodes() {
    let (primary, standby, _) = primary_and_standby(&["snowflake_id.worker_id = 1"], None);
    let ids = insert_ids(&mut primary.connect(), 1000);
    // The keeper may write one more mark after the draws (it renews while
    // IDs flowed lately, later on a loaded machine): the standby has the
    // primary's mark once it has replayed the newest one the primary holds.
    let mut agreed = String::new();
    wait_until("the standby to hold the primary's last mark", Duration::from_secs(60), || {
        agreed = mark_lsn(&primary);
        standby.wait_replayed(&agreed);
        mark_lsn(&standby) == agreed && mark_lsn(&primary) == agreed
    });

    let e = standby.sql_error("SELECT snowflake_nextval()");
    assert_eq!(e.code, "25006", "{e:?}");
    assert_eq!(e.message, "cannot execute snowflake_nextval() during recovery");
    assert!(e.hint.contains("primary"), "{e:?}");

    // Decoding, time bounds and the status view work on the standby.
    let max_id = *ids.iter().max().unwrap();
    let worker: i32 =
        standby.connect().query_one("SELECT (snowflake_decode($1)).worker_id", &[&max_id]).unwrap().get(0);
    assert_eq!(worker, 1);
    assert!(standby.query_i64("SELECT snowflake_from_timestamp(now())") > 0);
    let row = standby
        .connect()
        .query_one(
            "SELECT in_recovery, durable_mark >= (snowflake_decode($1)).ts, mark_lsn::text, last_id IS NULL
               FROM snowflake_id_status",
            &[&max_id],
        )
        .unwrap();
    assert!(row.get::<_, bool>(0), "in_recovery");
    assert!(row.get::<_, bool>(1), "the replayed mark is below the primary's IDs");
    // That mark, or one the primary wrote since and the standby replayed.
    let (shown, now) = (row.get::<_, String>(2), mark_lsn(&primary));
    assert!(shown == agreed || shown == now, "the standby's mark_lsn {shown} is not the primary's ({agreed}, {now})");
    assert!(row.get::<_, bool>(3), "a standby issued IDs");

    // No mark keeper on a standby: nothing there may write a mark.
    assert_eq!(standby.keeper_processes(), 0, "a mark keeper runs on the standby");
    assert!(standby.query_text("SELECT coalesce(keeper_pid::text, 'none') FROM snowflake_id_status") == "none");
}

/// Burst IDs run the primary's logical clock tens of seconds ahead of the
/// wall clock; only the mark replayed from WAL tells the standby.
fn burst_on(primary: &Cluster) -> Vec<i64> {
    let mut client = primary.connect();
    let mut returned = insert_ids(&mut client, 40_000);
    returned.extend(draw_in_order(&mut client, 60_000));
    let drift = primary.query_i64("SELECT drift_ms FROM snowflake_id_status");
    assert!(drift > 10_000, "the burst should run the logical clock ahead by tens of seconds: {drift} ms");
    returned
}

/// What the new primary does after a failover: inserts with the default
/// succeed, and every new ID is above every ID the old primary returned.
fn after_failover_ids_are_above(new_primary: &Cluster, returned: &[i64]) {
    let mut client = new_primary.connect();
    let inserted = insert_ids(&mut client, 5_000);
    let drawn = draw_in_order(&mut client, 5_000);
    assert_strictly_increasing(&inserted, "inserted after promotion");
    assert_all_above(returned, &inserted, "inserted after promotion");
    assert_all_above(returned, &drawn, "drawn after promotion");
    assert_no_duplicates([&returned.to_vec(), &inserted, &drawn]);
}

#[test]
fn promoted_standby_continues_above_a_burst_of_its_old_primary() {
    // 2 sequence bits: 4 IDs per ms, so 100k IDs borrow about 25 s (with
    // max_drift = 0, "never wait"; the default would cap it at a second).
    let (mut primary, standby, _) = primary_and_standby(
        &["snowflake_id.worker_id = 2", "snowflake_id.sequence_bits = 2", "snowflake_id.max_drift = 0"],
        None,
    );
    let returned = burst_on(&primary);
    // Asynchronous replication: the failover keeps what reached the standby.
    standby.wait_replayed(&mark_lsn(&primary));
    primary.crash();
    standby.promote();
    after_failover_ids_are_above(&standby, &returned);
}

#[test]
fn promoted_standby_with_its_clock_an_hour_behind_does_not_repeat() {
    let (mut primary, standby, _) = primary_and_standby(&["snowflake_id.worker_id = 3"], Some("-1h"));
    let returned = insert_ids(&mut primary.connect(), 20_000);
    let behind: bool = standby
        .connect()
        .query_one(
            "SELECT now() < $1::text::timestamptz - interval '50 minutes'",
            &[&primary.query_text("SELECT now()::text")],
        )
        .unwrap()
        .get(0);
    assert!(behind, "the standby's clock is not an hour behind");
    standby.wait_replayed(&mark_lsn(&primary));
    primary.crash();
    standby.promote();
    after_failover_ids_are_above(&standby, &returned);
}

#[test]
fn standby_keeps_the_replayed_mark_across_a_restartpoint_and_restart() {
    let (mut primary, mut standby, _) = primary_and_standby(
        &["snowflake_id.worker_id = 4", "snowflake_id.sequence_bits = 2", "snowflake_id.max_drift = 0"],
        None,
    );
    let returned = burst_on(&primary);
    // A checkpoint on the primary, replayed, lets the standby make a
    // restartpoint that moves its redo pointer past every mark record.
    primary.sql("CHECKPOINT");
    standby.wait_replayed(&primary.query_text("SELECT pg_current_wal_insert_lsn()::text"));
    standby.sql("CHECKPOINT");
    standby.restart();
    let max_returned = *returned.iter().max().unwrap();
    assert!(mark_covers(&standby, max_returned), "after a restart the standby lost the mark it had replayed");
    primary.crash();
    standby.promote();
    after_failover_ids_are_above(&standby, &returned);
}

#[test]
fn synchronous_standby_has_the_mark_before_ids_under_it_are_returned() {
    let (mut primary, mut standby, _) = primary_and_standby(
        &["snowflake_id.worker_id = 5", "snowflake_id.sequence_bits = 2", "snowflake_id.max_drift = 0"],
        None,
    );
    primary.make_synchronous(&standby);

    // With the standby down, IDs past the mark it has are not returned: the
    // caller waits (interruptibly) for the standby.
    draw_in_order(&mut primary.connect(), 1_000);
    standby.stop();
    let mut client = primary.connect();
    client.batch_execute("SET statement_timeout = '3s'").unwrap();
    let before = primary.query_text("SELECT durable_mark::text FROM snowflake_id_status");
    let e = sql_error(&mut client, "SELECT count(snowflake_nextval()) FROM generate_series(1, 50000)");
    assert_eq!(e.code, "57014", "{e:?}");
    assert!(
        primary.log().contains("for the synchronous standbys to flush the durable mark"),
        "no log line says why IDs stopped"
    );
    assert_eq!(
        primary.query_text("SELECT durable_mark::text FROM snowflake_id_status"),
        before,
        "the usable mark moved while the synchronous standby was away"
    );
    standby.start();
    client.batch_execute("RESET statement_timeout").unwrap();
    draw_in_order(&mut client, 1_000);

    // Failover under load, with no wait for replay: whatever a client got,
    // the standby had the mark for.
    let cfg = primary.config();
    let during: Vec<Vec<i64>> = thread::scope(|s| {
        let loaders: Vec<_> = (0..3)
            .map(|_| {
                let cfg = cfg.clone();
                s.spawn(move || {
                    let mut c = cfg.connect(postgres::NoTls).expect("connect");
                    let mut got = Vec::new();
                    while let Ok(rows) = c.query("SELECT snowflake_nextval() FROM generate_series(1, 4000)", &[]) {
                        got.extend(rows.iter().map(|r| r.get::<_, i64>(0)));
                    }
                    got
                })
            })
            .collect();
        thread::sleep(Duration::from_millis(1500));
        primary.crash();
        loaders.into_iter().map(|h| h.join().expect("loader")).collect()
    });
    let returned: Vec<i64> = during.iter().flatten().copied().collect();
    assert!(returned.len() > 10_000, "the load drew too little: {}", returned.len());
    standby.promote();
    after_failover_ids_are_above(&standby, &returned);
}

#[test]
fn crash_recovery_restores_the_mark_from_wal_alone() {
    let (mut primary, clock) = Cluster::preloaded_with_fake_clock(&["snowflake_id.worker_id = 6"]);
    primary.sql("CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), n int)");
    let before = insert_ids(&mut primary.connect(), 10_000);
    primary.crash();
    // The state file is gone and the clock is an hour behind: only the
    // records replayed from WAL know how far IDs went.
    std::fs::remove_file(primary.data().join("snowflake_id.state")).expect("remove the state file");
    clock.set("-1h");
    primary.start();
    // Before any new ID, whose mark would write the file itself: redo wrote
    // it, with a mark at or past the last ID's millisecond.
    let mark = state_file_mark(&primary).expect("redo did not rewrite the state file");
    let last_tick = before.iter().max().unwrap() >> 22;
    assert!(mark >= last_tick, "redo wrote mark {mark}, below the last ID's tick {last_tick}");
    let after = insert_ids(&mut primary.connect(), 10_000);
    assert_all_above(&before, &after, "after crash recovery");
}

#[test]
fn walinspect_names_the_records_and_the_resource_manager_is_listed() {
    // A non-default id: the setting that resolves a clash with another extension.
    let primary = Cluster::preloaded(&["snowflake_id.worker_id = 7", "snowflake_id.wal_rmgr_id = 200"]);
    let mut client = primary.connect();
    client.batch_execute("CREATE EXTENSION pg_walinspect").unwrap();
    let start: String = client.query_one("SELECT pg_current_wal_insert_lsn()::text", &[]).unwrap().get(0);
    draw_in_order(&mut client, 1000);
    let past = primary.query_i64("SELECT snowflake_from_timestamp(now() + interval '1 minute')");
    client.query_one("SELECT snowflake_advance_past($1)", &[&past]).unwrap();
    let rows = client
        .query(
            "SELECT record_type, description FROM pg_get_wal_records_info($1::text::pg_lsn, pg_current_wal_lsn())
              WHERE resource_manager = 'snowflake_id' ORDER BY start_lsn",
            &[&start],
        )
        .unwrap();
    let records: Vec<(String, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert!(records.iter().any(|(kind, _)| kind == "MARK"), "{records:?}");
    assert_eq!(records.last().map(|r| r.0.as_str()), Some("ADVANCE"), "{records:?}");
    for (_, description) in &records {
        assert!(description.starts_with("mark 20") && description.contains("worker_id 7"), "{records:?}");
    }
    let listed: String = client
        .query_one("SELECT rm_name FROM pg_get_wal_resource_managers() WHERE rm_id = 200 AND NOT rm_builtin", &[])
        .unwrap()
        .get(0);
    assert_eq!(listed, "snowflake_id");
}

#[test]
fn advance_past_moves_the_mark_durably_and_is_for_superusers() {
    let (mut primary, standby, _) =
        primary_and_standby(&["snowflake_id.worker_id = 8", "snowflake_id.max_drift = '50ms'"], None);
    // IDs restored from a cluster whose clock ran an hour ahead.
    let restored = primary.query_i64("SELECT snowflake_from_timestamp(now() + interval '1 hour') + 123");
    let next = primary.query_i64(&format!("SELECT snowflake_advance_past({restored})"));
    assert!(next > restored);
    // A crash right after, before any ID was drawn, keeps the new mark.
    primary.crash();
    primary.start();
    let mut client = primary.connect();
    client.batch_execute("SET statement_timeout = '10s'").unwrap();
    // Far ahead of the wall clock, but not a burst: max_drift does not stall
    // it until the clock catches up (an hour). Only the part of this insert
    // past the first millisecond after the restart may wait, for about a
    // lease, since the restart floor is a lease past the advanced point.
    let after = insert_ids(&mut client, 5_000);
    assert_all_above(&[restored], &after, "after advance and crash");
    let waits = primary.query_i64("SELECT waits FROM snowflake_id_status");
    assert!(waits <= 10, "{waits} waits after an advance an hour ahead");

    // Without a crash, the next ID is the one it announced.
    let restored = *after.iter().max().unwrap() + (1 << 22) * 60_000;
    let next = primary.query_i64(&format!("SELECT snowflake_advance_past({restored})"));
    assert_eq!(draw_in_order(&mut client, 1), vec![next]);

    // An ordinary role may not.
    primary.sql("CREATE ROLE app LOGIN");
    let mut cfg = primary.config();
    cfg.user("app");
    let e = sql_error(&mut cfg.connect(postgres::NoTls).unwrap(), "SELECT snowflake_advance_past(1)");
    assert_eq!(e.code, "42501", "{e:?}");

    // The standby has it from WAL and refuses to advance itself.
    standby.wait_replayed(&mark_lsn(&primary));
    let e = standby.sql_error("SELECT snowflake_advance_past(1)");
    assert_eq!(e.code, "25006", "{e:?}");
    assert!(mark_covers(&standby, restored), "the standby does not have the advanced mark");
}
