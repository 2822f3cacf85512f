//! IDs for past instants (`snowflake_nextval_at`, invariant 9): unique by
//! construction against live IDs of the same milliseconds, against each
//! other across sessions, `kill -9` and a failover, with every bad input
//! refused with its SQLSTATE.

mod common;

use std::thread;
use std::time::Duration;

use common::{
    assert_no_duplicates, assert_strictly_increasing, describe, draw_in_order, sql_error, Cluster, DEFAULT_EPOCH_MS,
};
use postgres::Client;

/// One past-instant ID per element of `unix_ms`, in that order, in one
/// statement (the import path: set-based).
fn draw_at(client: &mut Client, unix_ms: &[i64]) -> Vec<i64> {
    client
        .query(
            "SELECT snowflake_nextval_at('epoch'::timestamptz + ms * interval '1 millisecond')
               FROM unnest($1::bigint[]) WITH ORDINALITY AS u(ms, n) ORDER BY n",
            &[&unix_ms],
        )
        .unwrap_or_else(|e| panic!("snowflake_nextval_at: {}", describe(&e)))
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// (Unix ms, worker id, sequence) of an ID under a layout of `worker_bits`
/// and `sequence_bits` with the default epoch.
fn split(id: i64, worker_bits: u32, sequence_bits: u32) -> (i64, i64, i64) {
    (
        (id >> (worker_bits + sequence_bits)) + DEFAULT_EPOCH_MS,
        (id >> sequence_bits) & ((1 << worker_bits) - 1),
        id & ((1 << sequence_bits) - 1),
    )
}

fn server_now_ms(client: &mut Client) -> i64 {
    client.query_one("SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint", &[]).unwrap().get(0)
}

/// 4 sequence bits: 15 live IDs a millisecond and one history slot, so that
/// a live burst fills every millisecond it passes up to the slot below the
/// history one, and a past-instant ID at those milliseconds can only be
/// unique if live IDs never take the history slot.
#[test]
fn past_instant_ids_never_meet_live_ids_of_the_same_milliseconds() {
    let cluster = Cluster::preloaded(&[
        "snowflake_id.worker_id = 3",
        "snowflake_id.worker_bits = 10",
        "snowflake_id.sequence_bits = 4",
        "snowflake_id.max_drift = 0",
    ]);
    let first = draw_in_order(&mut cluster.connect(), 30_000);
    let full_ms = first.iter().filter(|&&id| split(id, 10, 4).2 == 14).count();
    assert!(full_ms > 1_000, "the burst did not fill its milliseconds ({full_ms} reached sequence 14)");
    // Its milliseconds, once they are all in the past.
    let mut instants: Vec<i64> = first.iter().map(|&id| split(id, 10, 4).0).collect();
    instants.dedup();
    let last = *instants.last().unwrap();
    let mut client = cluster.connect();
    while server_now_ms(&mut client) <= last {
        thread::sleep(Duration::from_millis(50));
    }
    // A back-fill of those milliseconds while a second burst runs.
    let (back_filled, second) = thread::scope(|s| {
        let live = s.spawn(|| draw_in_order(&mut cluster.connect(), 30_000));
        let past = draw_at(&mut cluster.connect(), &instants);
        (past, live.join().unwrap())
    });
    assert_eq!(back_filled.len(), instants.len());
    for (id, at) in back_filled.iter().zip(&instants) {
        let (ms, worker, sequence) = split(*id, 10, 4);
        assert_eq!((ms, worker, sequence), (*at, 3, 15), "past-instant ID {id} for {at}");
    }
    assert_no_duplicates([&first, &second, &back_filled]);
}

/// More rows at one instant than a millisecond has history slots: they take
/// the next milliseconds, in the order they came, and never a live slot.
/// 1,000 rows need 4 milliseconds of 256 slots; a session's claims that meet
/// skip a few slots of the next milliseconds (a claim starts above the
/// highest level of its span), so they may reach one more.
#[test]
fn rows_past_a_milliseconds_slots_spill_to_the_next_in_order() {
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 4"]);
    let at = DEFAULT_EPOCH_MS + 86_400_000; // a day after the epoch
    let ids = draw_at(&mut cluster.connect(), &vec![at; 1_000]);
    assert_strictly_increasing(&ids, "rows at one instant");
    let parts: Vec<_> = ids.iter().map(|&id| split(id, 10, 12)).collect();
    assert_eq!(parts.iter().filter(|p| p.0 == at).count(), 256, "every history slot of the instant is used first");
    assert!(parts.iter().all(|p| p.0 >= at && p.0 <= at + 4 && p.1 == 4 && p.2 >= 3840), "{:?}", parts.last());
}

/// Two sessions back-filling the same instants at once, then `kill -9`, then
/// a promotion of the synchronous standby: no ID twice in the ledger of every
/// ID returned.
#[test]
fn past_instant_ids_stay_unique_across_sessions_kill_9_and_a_failover() {
    let primary = Cluster::preloaded(&["snowflake_id.worker_id = 5"]);
    let mut standby = Cluster::standby_of(&primary, &[]);
    standby.start();
    primary.make_synchronous(&standby);
    // 300 rows at each of 20 instants a minute apart, a year back.
    let base = DEFAULT_EPOCH_MS + 30 * 86_400_000;
    let instants: Vec<i64> = (0..20).flat_map(|i| std::iter::repeat_n(base + i * 60_000, 300)).collect();
    let mut ledger = vec![];
    let (a, b) = thread::scope(|s| {
        let other = s.spawn(|| draw_at(&mut primary.connect(), &instants));
        (draw_at(&mut primary.connect(), &instants), other.join().unwrap())
    });
    ledger.extend([a, b]);
    assert_eq!(crash_and_failover_repeat_nothing(primary, standby, &instants, ledger), 5 * instants.len());
}

/// After the draws of `ledger`: `kill -9` of the primary and a restart, then
/// a promotion of its synchronous standby, each followed by drawing
/// `instants` again; no ID twice in the whole ledger. Returns its length.
fn crash_and_failover_repeat_nothing(
    mut primary: Cluster,
    standby: Cluster,
    instants: &[i64],
    mut ledger: Vec<Vec<i64>>,
) -> usize {
    assert_no_duplicates(&ledger);

    primary.crash();
    primary.start();
    ledger.push(draw_at(&mut primary.connect(), instants));
    assert_no_duplicates(&ledger);

    // What the standby has is all a promoted standby knows.
    primary.make_synchronous(&standby);
    ledger.push(draw_at(&mut primary.connect(), instants));
    primary.crash();
    standby.promote();
    ledger.push(draw_at(&mut standby.connect(), instants));
    assert_no_duplicates(&ledger)
}

/// How many times the server has flushed WAL to disk: `pg_stat_wal.wal_sync`
/// up to 17, `pg_stat_io`'s fsyncs of WAL from 18 (which moved it there).
fn wal_flushes(cluster: &Cluster) -> i64 {
    if cluster.query_i64("SELECT current_setting('server_version_num')::bigint") >= 180_000 {
        cluster.query_i64("SELECT coalesce(sum(fsyncs), 0)::bigint FROM pg_catalog.pg_stat_io WHERE object = 'wal'")
    } else {
        cluster.query_i64("SELECT wal_sync FROM pg_catalog.pg_stat_wal")
    }
}

/// An import in random order (3,000 rows scattered over 600 days) claims
/// the time between its rows ahead, many pieces in one durable write (one
/// history file write, a WAL record each, one flush): every piece carried
/// so is as durable as the row's own claim, across `kill -9` and a
/// promotion of the synchronous standby.
#[test]
fn a_random_order_import_stays_unique_across_kill_9_and_a_failover() {
    let primary = Cluster::preloaded(&["snowflake_id.worker_id = 9"]);
    let mut standby = Cluster::standby_of(&primary, &[]);
    standby.start();
    primary.make_synchronous(&standby);
    // 3,000 rows scattered over 600 days, in an order unrelated to time.
    let base = DEFAULT_EPOCH_MS + 10 * 86_400_000;
    let instants: Vec<i64> = (1..=3_000i64).map(|g| base + (g * 2_654_435_761) % (600 * 86_400_000)).collect();
    let wal = |c: &Cluster| (wal_flushes(c), c.query_i64("SELECT wal_records FROM pg_catalog.pg_stat_wal"));
    let before = wal(&primary);
    let ledger = vec![draw_at(&mut primary.connect(), &instants)];
    thread::sleep(Duration::from_millis(500)); // a backend's statistics are in once it has exited
    let after = wal(&primary);
    let (flushes, records) = (after.0 - before.0, after.1 - before.1);
    assert!(flushes * 2 < records, "{flushes} WAL flushes for {records} records: nothing carried ahead");
    assert_eq!(crash_and_failover_repeat_nothing(primary, standby, &instants, ledger), 4 * instants.len());
}

/// A random-order import (200,000 rows over 600 days) on a fresh level map,
/// then on one that short pooled sessions filled to its 2,048 intervals (a
/// map never shrinks back): the aged import makes no more durable writes
/// than claims at one level made before pieces (about 1,000), and no row
/// comes out late. Cutting a claim to the one piece a full map had room for
/// made about 3,600.
#[test]
fn a_random_order_import_on_a_level_map_that_filled_once_makes_few_durable_writes() {
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 9"]);
    let day = 86_400_000;
    let base = DEFAULT_EPOCH_MS + 10 * day;
    let rows: Vec<i64> = (1..=200_000i64).map(|g| base + (g * 2_654_435_761) % (600 * day)).collect();
    let syncs = || wal_flushes(&cluster);
    let import = || {
        let before = syncs();
        let ids = draw_at(&mut cluster.connect(), &rows);
        thread::sleep(Duration::from_millis(500)); // a backend's statistics are in once it has exited
        let late = rows.iter().zip(&ids).filter(|&(&at, &id)| split(id, 10, 12).0 != at).count();
        (syncs() - before, late)
    };
    let fresh = import();
    assert!(fresh.0 < 100 && fresh.1 == 0, "fresh map: (WAL flushes, rows late) {fresh:?}");
    // 200 pooled sessions of 40 rows scattered over the same 600 days.
    let intervals = || {
        let file = std::fs::read_to_string(cluster.data().join("snowflake_id.history")).unwrap();
        file.lines().filter(|l| l.starts_with("interval=")).count()
    };
    let mut most = 0;
    for s in 0..200i64 {
        let scattered: Vec<i64> = (0..40)
            .map(|g| base + ((s * 40 + g).wrapping_mul(7_046_029_254_386_353_131)).rem_euclid(600 * day))
            .collect();
        draw_at(&mut cluster.connect(), &scattered);
        most = most.max(intervals());
    }
    assert_eq!(most, 2048, "the level map filled");
    let aged = import();
    assert!(aged.0 < 2_000 && aged.1 == 0, "map that filled once: (WAL flushes, rows late) {aged:?}");
    println!("200,000 rows in random order: {fresh:?} on a fresh map, {aged:?} on one that filled once");
}

/// Claims made since the last checkpoint come back from WAL alone: redo
/// rewrites the history file that a crash (here, a deletion) lost.
#[test]
fn crash_recovery_restores_claims_from_wal_alone() {
    let mut cluster = Cluster::preloaded(&["snowflake_id.worker_id = 6"]);
    cluster.sql("CHECKPOINT");
    let instants: Vec<i64> = (0..50).map(|i| DEFAULT_EPOCH_MS + 7 * 86_400_000 + i * 1_000).collect();
    let before = draw_at(&mut cluster.connect(), &instants);
    cluster.crash();
    std::fs::remove_file(cluster.data().join("snowflake_id.history")).expect("remove the history file");
    cluster.start();
    // Before any new claim, which would write the file itself.
    assert!(cluster.data().join("snowflake_id.history").exists(), "redo did not rewrite the history file");
    let after = draw_at(&mut cluster.connect(), &instants);
    assert_no_duplicates([&before, &after]);
}

#[test]
fn bad_input_gets_a_clear_error() {
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 7"]);
    let mut c = cluster.connect();
    let e = sql_error(&mut c, "SELECT snowflake_nextval_at('2024-12-31 23:59:59.999+00')");
    assert_eq!(e.code, "22008", "{e:?}");
    assert!(e.message.contains("before the epoch"), "{e:?}");
    let e = sql_error(&mut c, "SELECT snowflake_nextval_at('infinity')");
    assert_eq!(e.code, "22008", "{e:?}");
    let e = sql_error(&mut c, "SELECT snowflake_nextval_at('2200-01-01+00')");
    assert_eq!(e.code, "22008", "{e:?}");
    assert!(e.message.contains("after the last instant"), "{e:?}");
    for future in ["now() + interval '1 hour'", "clock_timestamp() + interval '1 second'"] {
        let e = sql_error(&mut c, &format!("SELECT snowflake_nextval_at({future})"));
        assert_eq!(e.code, "22023", "{e:?}");
        assert!(e.hint.contains("snowflake_nextval()"), "{e:?}");
    }
    let null: Option<i64> = c.query_one("SELECT snowflake_nextval_at(NULL)", &[]).unwrap().get(0);
    assert_eq!(null, None);
    c.batch_execute("BEGIN READ ONLY").unwrap();
    let e = sql_error(&mut c, "SELECT snowflake_nextval_at('2025-06-01+00')");
    assert_eq!(e.code, "25006", "{e:?}");
    c.batch_execute("ROLLBACK").unwrap();
    // Not for every role: history slots are finite.
    c.batch_execute("CREATE ROLE importer LOGIN").unwrap();
    let mut config = cluster.config();
    let mut importer = config.user("importer").connect(postgres::NoTls).unwrap();
    let e = sql_error(&mut importer, "SELECT snowflake_nextval_at('2025-06-01+00')");
    assert_eq!(e.code, "42501", "{e:?}");
    c.batch_execute("GRANT EXECUTE ON FUNCTION snowflake_nextval_at(timestamptz) TO importer").unwrap();
    importer.query_one("SELECT snowflake_nextval_at('2025-06-01+00')", &[]).unwrap();

    // A layout with too few sequence bits has no history slots.
    let small = Cluster::preloaded(&["snowflake_id.worker_id = 1", "snowflake_id.sequence_bits = 3"]);
    let e = small.sql_error("SELECT snowflake_nextval_at('2025-06-01+00')");
    assert_eq!(e.code, "22023", "{e:?}");
    assert!(e.hint.contains("sequence_bits"), "{e:?}");
}

#[test]
fn a_standby_refuses() {
    let primary = Cluster::preloaded(&["snowflake_id.worker_id = 8"]);
    let mut standby = Cluster::standby_of(&primary, &[]);
    standby.start();
    let e = standby.sql_error("SELECT snowflake_nextval_at('2025-06-01+00')");
    assert_eq!(e.code, "25006", "{e:?}");
}

/// A worker id leased from a registry moves between servers; the slots it
/// used for past instants would not move with it, so it is refused for now.
/// Draws past-instant IDs at `unix_ms` on a registry node as soon as it
/// holds a lease (within 30 s).
fn draw_at_when_leased(node: &Cluster, unix_ms: &[i64]) -> Vec<i64> {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let mut client = node.connect();
        let held = client.query_one("SELECT lease_state = 'held' FROM snowflake_id_status", &[]).unwrap().get(0);
        if held {
            return draw_at(&mut client, unix_ms);
        }
        assert!(std::time::Instant::now() < deadline, "no lease after 30 s\n{}", node.log());
        thread::sleep(Duration::from_millis(200));
    }
}

/// A leased worker id moves between servers; its history slots move with
/// it through the registry's history level. Two nodes back-fill the same
/// instants at once; worker id 7 then passes from `a` to `b` (a clean stop),
/// back to `a` (a takeover after `b` was killed), and `a` restarts without
/// its history file (granted 7 anew, its old start having just renewed):
/// every ID in one ledger, no two
/// alike, and past-instant IDs from an unreachable registry refused.
#[test]
fn past_instant_ids_stay_unique_as_a_leased_worker_id_moves_between_servers() {
    let mut registry = Cluster::registry();
    const LEASE: &str = "snowflake_id.registry_lease = '3s'";
    const SEVEN: &str = "snowflake_id.worker_id = 7";
    let mut a = Cluster::leased_node(&registry, "a", &[LEASE, SEVEN]);
    let mut b = Cluster::leased_node(&registry, "b", &[LEASE]);
    registry.sql("UPDATE snowflake_registry_namespaces SET stale_margin = '0'");
    // 200 rows at each of 10 instants a second apart, a year back.
    let base = DEFAULT_EPOCH_MS + 30 * 86_400_000;
    let instants: Vec<i64> = (0..10).flat_map(|i| std::iter::repeat_n(base + i * 1_000, 200)).collect();
    let mut ledger = vec![];
    let worker_of = |id: &i64| (id >> 12) & 1023;

    // Both nodes at once, each on its own worker id.
    let (from_a, from_b) = thread::scope(|s| {
        let other = s.spawn(|| draw_at_when_leased(&b, &instants));
        (draw_at_when_leased(&a, &instants), other.join().unwrap())
    });
    assert!(from_a.iter().all(|id| worker_of(id) == 7));
    assert!(from_b.iter().all(|id| worker_of(id) != 7));
    ledger.extend([from_a, from_b]);
    let recorded = registry.query_i64("SELECT count(*) FROM snowflake_registry_history WHERE worker_id = 7");
    assert!(recorded > 0, "the registry did not hear of a's claims");
    // A session that imported and stays open keeps no registry connection
    // (idle importers would fill the registry's max_connections, and nodes
    // could then not renew their leases).
    let mut idle = a.connect();
    ledger.push(draw_at(&mut idle, &[base - 1_000]));
    let kept = registry.query_i64(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'snowflake_id % (past-instant IDs)'",
    );
    assert_eq!(kept, 0, "importing sessions keep registry connections open");
    drop(idle);

    // A clean stop releases 7; b, restarted on 7, back-fills the same instants.
    a.stop();
    b.stop();
    b.append_conf(&[SEVEN]);
    b.start();
    let again = draw_at_when_leased(&b, &instants);
    assert!(again.iter().all(|id| worker_of(id) == 7));
    ledger.push(again);
    assert_no_duplicates(&ledger);

    // b is killed; a takes 7 over once b's lease is stale, with its own
    // history file of 7 from before (the levels b claimed are not in it).
    b.crash();
    a.start();
    ledger.push(draw_at_when_leased(&a, &instants));
    assert_no_duplicates(&ledger);

    // a restarts without its history file (a careless copy, say): only the
    // registry knows what a claimed under its lease, which this start is
    // granted anew once its old start fell silent (it could be a copy).
    a.sql("CHECKPOINT");
    a.crash();
    std::fs::remove_file(a.data().join("snowflake_id.history")).unwrap();
    a.start();
    ledger.push(draw_at_when_leased(&a, &instants));
    let n = assert_no_duplicates(&ledger);
    assert_eq!(n, 5 * instants.len() + 1);

    // An unreachable registry stops past-instant IDs (once the claims made
    // run out), not live ones.
    registry.stop();
    let mut client = a.connect();
    let e = loop {
        match client.query("SELECT snowflake_nextval_at('2025-06-01+00') FROM generate_series(1, 1000)", &[]) {
            Ok(_) => continue,
            Err(e) => break common::DbError::of(e.as_db_error().expect("a server error")),
        }
    };
    assert_eq!(e.code, "08006", "{e:?}");
    assert!(e.message.contains("registry"), "{e:?}");
    let live: i64 = client.query_one("SELECT snowflake_nextval()", &[]).unwrap().get(0);
    assert_eq!(worker_of(&live), 7);
}

/// A restart with a history file older than the lease's last claim (a
/// backup restored, a disk snapshot) must not make that claim's slots look
/// free. Since copies are fenced, a postmaster restart presents its lease
/// and, its old start having renewed within the silence, is granted the
/// worker id anew: the registry's record of the earlier lease's claims
/// covers it. (The same lease goes on only under the same postmaster, whose
/// file is intact; the rule that inherits a lease's own claims too is
/// played by core `past_instants/leased.rs`.)
#[test]
fn a_history_file_older_than_the_leases_claims_does_not_repeat_ids() {
    let registry = Cluster::registry();
    let mut a =
        Cluster::leased_node(&registry, "a", &["snowflake_id.registry_lease = '3s'", "snowflake_id.worker_id = 7"]);
    let at = DEFAULT_EPOCH_MS + 100 * 86_400_000;
    let first = draw_at_when_leased(&a, &[at]);
    let file = a.data().join("snowflake_id.history");
    let backup = std::fs::read(&file).unwrap();
    // A new session claims anew, one level up.
    let second = draw_at_when_leased(&a, &[at]);
    let epoch = registry.query_i64("SELECT lease_epoch FROM snowflake_registry_leases WHERE worker_id = 7");
    a.sql("CHECKPOINT");
    a.crash();
    std::fs::write(&file, backup).unwrap();
    a.start();
    let third = draw_at_when_leased(&a, &[at]);
    let regranted = registry.query_i64("SELECT lease_epoch FROM snowflake_registry_leases WHERE worker_id = 7");
    assert_eq!(regranted, epoch + 1, "the restart was granted the worker id anew");
    assert_no_duplicates(&[first, second, third]);
}

/// A millisecond filled by another session just ahead of an import in time
/// order shrinks the import's claims to the room before it, rather than
/// making every later row a claim of its own (each a file write, a WAL
/// flush and a standby wait).
#[test]
fn a_full_millisecond_ahead_of_an_import_does_not_make_a_claim_per_row() {
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 5"]);
    let x = DEFAULT_EPOCH_MS + 100 * 86_400_000;
    let claims = || {
        let lines = std::fs::read_to_string(cluster.data().join("snowflake_id.history")).unwrap_or_default();
        lines.lines().filter(|l| l.starts_with("interval=")).count()
    };
    // 400 rows at x fill [x, x + 2 ms) and more.
    draw_at(&mut cluster.connect(), &[x; 400]);
    let before = claims();
    // The file read is the history file (no file would read as 0 intervals
    // and let the bound below pass).
    assert!(before > 0, "no interval in the history file after 400 rows");
    // 1,500 rows one second apart, in time order, up to a second before x.
    let rows: Vec<i64> = (0..1500).map(|i| x - 1_501_000 + i * 1000).collect();
    let ids = draw_at(&mut cluster.connect(), &rows);
    assert_eq!(ids.iter().map(|&id| split(id, 10, 12).0).collect::<Vec<_>>(), rows);
    let made = claims().saturating_sub(before);
    assert!(made < 60, "{made} new intervals for 1,500 rows");
}

/// `snowflake_convert(..., rekey_by => 'created_at')`: every old key becomes
/// a past-instant ID at its row's time, in the referencing table and the
/// partitioned referencing table too, ties keeping their order; afterwards
/// time decoding, range scans and ID-time partitions are right for old and
/// new rows alike.
#[test]
fn a_rekeyed_table_tells_the_time_of_its_old_rows() {
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 9"]);
    let mut c = cluster.connect();
    c.batch_execute(
        "CREATE TABLE orders (id serial PRIMARY KEY, created_at timestamptz NOT NULL, n int);
         -- 2,000 orders over 2025, in pairs at the same instant.
         INSERT INTO orders (created_at, n)
         SELECT timestamptz '2025-01-01 00:00+00' + (g / 2) * interval '4 hours 17 minutes 0.123 seconds', g
           FROM generate_series(0, 1999) g;
         CREATE TABLE order_lines (id serial PRIMARY KEY, order_id int NOT NULL REFERENCES orders, item text);
         INSERT INTO order_lines (order_id, item) SELECT id, 'tea' FROM orders;
         INSERT INTO order_lines (order_id, item) SELECT id, 'cake' FROM orders WHERE id % 3 = 0;
         CREATE TABLE order_events (order_id int REFERENCES orders, at timestamptz NOT NULL) PARTITION BY RANGE (at);
         CREATE TABLE order_events_2025 PARTITION OF order_events FOR VALUES FROM ('2025-01-01+00') TO ('2026-01-01+00');
         INSERT INTO order_events SELECT id, created_at FROM orders;
         CREATE TABLE before AS SELECT o.id, o.created_at, o.n, count(l.*) AS lines
           FROM orders o JOIN order_lines l ON l.order_id = o.id GROUP BY o.id;",
    )
    .unwrap_or_else(|e| panic!("set up: {}", describe(&e)));

    let planned: Vec<String> = c
        .query("SELECT snowflake_convert('orders', 'id', dry_run => true, rekey_by => 'created_at')", &[])
        .unwrap_or_else(|e| panic!("dry run: {}", describe(&e)))
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(planned.iter().any(|s| s.starts_with("UPDATE public.order_events AS t SET order_id")), "{planned:#?}");
    assert!(planned.iter().any(|s| s.contains("snowflake_nextval_at(at)")), "{planned:#?}");
    let untouched: i64 = c.query_one("SELECT max(id)::bigint FROM orders", &[]).unwrap().get(0);
    assert_eq!(untouched, 2000, "a dry run changes nothing");

    c.batch_execute("SELECT snowflake_convert('orders', 'id', rekey_by => 'created_at')")
        .unwrap_or_else(|e| panic!("re-key: {}", describe(&e)));
    // Every old row: its ID tells its time (to the millisecond, at most a few
    // ms late for a crowded one), its lines and events follow it.
    let checks: (i64, i64, i64, i64, i64) = {
        let r = c
            .query_one(
                "SELECT count(*),
                        count(*) FILTER (WHERE snowflake_timestamp(o.id) BETWEEN date_trunc('milliseconds', o.created_at)
                                               AND date_trunc('milliseconds', o.created_at) + interval '3 ms'),
                        count(*) FILTER (WHERE (SELECT count(*) FROM order_lines l WHERE l.order_id = o.id) = b.lines),
                        count(*) FILTER (WHERE EXISTS (SELECT 1 FROM order_events e WHERE e.order_id = o.id)),
                        count(*) FILTER (WHERE snowflake_worker_id(o.id) = 9)
                   FROM orders o JOIN before b USING (n)",
                &[],
            )
            .unwrap_or_else(|e| panic!("check: {}", describe(&e)));
        (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4))
    };
    assert_eq!(checks, (2000, 2000, 2000, 2000, 2000), "rows, times, lines, events, worker ids");
    // Ties keep the old order; the keys sort as the times do.
    let out_of_order: i64 = c
        .query_one(
            "SELECT count(*) FROM (SELECT id, created_at, n, lag(created_at) OVER w AS pt, lag(n) OVER w AS pn
                                     FROM orders WINDOW w AS (ORDER BY id)) s
              WHERE pt > created_at OR (pt = created_at AND pn > n)",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(out_of_order, 0);
    // A range scan by ID time finds exactly the rows of that time.
    let (by_id, by_time): (i64, i64) = {
        let r = c
            .query_one(
                "SELECT (SELECT count(*) FROM orders WHERE id >= snowflake_from_timestamp('2025-03-01+00')
                                                     AND id < snowflake_from_timestamp('2025-05-01+00')),
                        (SELECT count(*) FROM orders WHERE created_at >= '2025-03-01+00' AND created_at < '2025-05-01+00')",
                &[],
            )
            .unwrap();
        (r.get(0), r.get(1))
    };
    assert_eq!(by_id, by_time);
    assert!(by_id > 100);
    // The foreign keys are back, and new rows are live IDs above every old one.
    let fks: i64 = c
        .query_one("SELECT count(*) FROM pg_constraint WHERE contype = 'f' AND conparentid = 0 AND confrelid = 'orders'::regclass", &[])
        .unwrap()
        .get(0);
    assert_eq!(fks, 2);
    let e = sql_error(&mut c, "INSERT INTO order_lines (order_id, item) VALUES (12345, 'x')");
    assert_eq!(e.code, "23503", "{e:?}");
    let (new_id, old_max): (i64, i64) = {
        let r = c.query_one(
            "INSERT INTO orders (created_at) VALUES (now()) RETURNING id, (SELECT max(id) FROM before)",
            &[],
        );
        let r = r.unwrap();
        (r.get(0), r.get::<_, i32>(1).into())
    };
    assert!(new_id > old_max);
    let above: bool =
        c.query_one("SELECT $1 > (SELECT max(id) FROM orders WHERE id <> $1)", &[&new_id]).unwrap().get(0);
    assert!(above);
}

/// A table range-partitioned by its own ID's time (monthly partitions): old
/// rows move to the partition of their month.
#[test]
fn a_rekey_moves_rows_to_their_id_time_partitions() {
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 10"]);
    let mut c = cluster.connect();
    c.batch_execute(
        "CREATE TABLE log (id bigserial, created_at timestamptz NOT NULL, PRIMARY KEY (id)) PARTITION BY RANGE (id);
         -- Where the sequence values live before the re-key.
         CREATE TABLE log_sequence PARTITION OF log FOR VALUES FROM (MINVALUE) TO (1000000);
         DO $$
         DECLARE m timestamptz;
         BEGIN
             FOR m IN SELECT generate_series(timestamptz '2025-01-01+00', '2026-12-01+00', interval '1 month') LOOP
                 EXECUTE format('CREATE TABLE log_%s PARTITION OF log FOR VALUES FROM (%s) TO (%s)',
                                to_char(m AT TIME ZONE 'UTC', 'YYYY_MM'),
                                greatest(snowflake_from_timestamp(m), 1000000),
                                snowflake_from_timestamp(m + interval '1 month'));
             END LOOP;
         END $$;
         INSERT INTO log (created_at)
         SELECT timestamptz '2025-01-03 00:00+00' + g * interval '7 hours' FROM generate_series(0, 1999) g;",
    )
    .unwrap_or_else(|e| panic!("set up: {}", describe(&e)));
    c.batch_execute("SELECT snowflake_convert('log', 'id', rekey_by => 'created_at')")
        .unwrap_or_else(|e| panic!("re-key: {}", describe(&e)));
    let misplaced: i64 = c
        .query_one(
            "SELECT count(*) FROM log
              WHERE tableoid::regclass::text <> 'log_' || to_char(created_at AT TIME ZONE 'UTC', 'YYYY_MM')",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(misplaced, 0);
    let left: i64 = c.query_one("SELECT count(*) FROM log_sequence", &[]).unwrap().get(0);
    assert_eq!(left, 0);
}

#[test]
fn a_rekey_refuses_a_time_column_that_is_not_one_or_has_nulls() {
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 11"]);
    let mut c = cluster.connect();
    c.batch_execute(
        "CREATE TABLE t (id serial PRIMARY KEY, label text, created_at timestamptz);
         INSERT INTO t (label, created_at) VALUES ('a', '2025-02-01+00'), ('b', NULL), ('c', NULL);",
    )
    .unwrap();
    let e = sql_error(&mut c, "SELECT snowflake_convert('t', 'id', rekey_by => 'label')");
    assert_eq!(e.code, "42804", "{e:?}");
    let e = sql_error(&mut c, "SELECT snowflake_convert('t', 'id', rekey_by => 'created_at')");
    assert_eq!(e.code, "23502", "{e:?}");
    assert!(e.message.starts_with("2 rows of public.t have no time"), "{e:?}");
    assert!(e.hint.contains("UPDATE public.t SET created_at"), "{e:?}");
    // Nothing was changed: still the sequence's default.
    let default: String = c
        .query_one("SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef WHERE adrelid = 't'::regclass", &[])
        .unwrap()
        .get(0);
    assert!(default.starts_with("nextval("), "{default}");
}

/// A change of epoch (allowed on purpose) numbers IDs anew, and the numbers
/// meet: an epoch a day earlier gives the same bigint for the instant a day
/// earlier. The past-instant IDs returned before must not come back.
#[test]
fn a_layout_change_does_not_hand_out_returned_ids_again() {
    let mut cluster = Cluster::preloaded(&["snowflake_id.worker_id = 12"]);
    let before = draw_at(&mut cluster.connect(), &[DEFAULT_EPOCH_MS + 151 * 86_400_000; 300]);
    cluster.stop();
    cluster.append_conf(&["snowflake_id.epoch = '2024-12-31 00:00:00+00'", "snowflake_id.allow_layout_change = on"]);
    cluster.start();
    let after = draw_at(&mut cluster.connect(), &[DEFAULT_EPOCH_MS + 150 * 86_400_000; 300]);
    assert_no_duplicates([&before, &after]);
}

/// A change of worker id keeps the old map's levels, and no more: one full
/// millisecond under the old worker id leaves every other instant open.
#[test]
fn a_worker_id_change_leaves_the_other_instants_open() {
    let mut cluster = Cluster::preloaded(&["snowflake_id.worker_id = 13"]);
    draw_at(&mut cluster.connect(), &[DEFAULT_EPOCH_MS + 59 * 86_400_000; 300]);
    cluster.stop();
    cluster.append_conf(&["snowflake_id.worker_id = 14"]);
    cluster.start();
    let ids =
        draw_at(&mut cluster.connect(), &[DEFAULT_EPOCH_MS + 250 * 86_400_000, DEFAULT_EPOCH_MS + 400 * 86_400_000]);
    assert_eq!(split(ids[0], 10, 12).0, DEFAULT_EPOCH_MS + 250 * 86_400_000);
    assert_eq!(split(ids[1], 10, 12), (DEFAULT_EPOCH_MS + 400 * 86_400_000, 14, 3840));
}

/// A claim whose wait for the synchronous standbys is cut short is kept for
/// the next call: a client retrying against a missing standby does not
/// spend the instant's slots, and its ID, once the standby is back (here:
/// no longer asked for), is at its instant.
#[test]
fn a_cancelled_wait_for_the_standbys_keeps_its_claim() {
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 15"]);
    cluster.sql("ALTER SYSTEM SET synchronous_standby_names = 'nobody'");
    cluster.sql("SELECT pg_reload_conf()");
    common::waits::wait_until_commits_wait_for_standbys(&cluster);
    let at = DEFAULT_EPOCH_MS + 90 * 86_400_000 + 43_200_000;
    let mut c = cluster.connect();
    c.batch_execute("SET statement_timeout = '50ms'").unwrap();
    for _ in 0..40 {
        let e =
            sql_error(&mut c, &format!("SELECT snowflake_nextval_at('epoch'::timestamptz + {at} * interval '1 ms')"));
        assert_eq!(e.code, "57014", "{e:?}");
    }
    cluster.sql("ALTER SYSTEM RESET synchronous_standby_names");
    cluster.sql("SELECT pg_reload_conf()");
    // No wait for the reset: the draw's own wait for the standbys ends
    // when the checkpointer publishes it; bounded, so that a reset never
    // seen fails here (57014) rather than hangs.
    c.batch_execute("SET statement_timeout = '60s'").unwrap();
    let id = draw_at(&mut c, &[at])[0];
    // A retry that claimed anew would raise the instant's level by one each
    // time and still stay in its millisecond (256 slots): only the slot and
    // the level show that the first claim was the one used.
    assert_eq!(split(id, 10, 12), (at, 15, 3840), "the retried ID is not the instant's first history slot");
    let file = std::fs::read_to_string(cluster.data().join("snowflake_id.history")).unwrap();
    let levels: Vec<&str> = file.lines().filter_map(|l| l.strip_prefix("interval=")?.rsplit(',').next()).collect();
    assert_eq!(levels, ["1"], "40 retries spent claims:\n{file}");
}
