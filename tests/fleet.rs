//! Worker ids from a registry, end to end: real node servers whose mark
//! keepers lease worker ids from a real registry server, and clients that
//! draw IDs from all of them.

mod common;

use std::collections::HashSet;
use std::thread;
use std::time::{Duration, Instant};

use common::{assert_no_duplicates, draw_in_order, id_unix_ms, Cluster, DbError, SlowFsync};

/// Draws `n` IDs as soon as the node has a lease (within 30 s).
fn draw_when_leased(cluster: &Cluster, n: i64) -> Vec<i64> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut client = cluster.connect();
    loop {
        match client.query("SELECT snowflake_nextval() FROM generate_series(1, $1::bigint)", &[&n]) {
            Ok(rows) => return rows.iter().map(|r| r.get(0)).collect(),
            Err(e) => {
                assert!(Instant::now() < deadline, "no lease after 30 s: {e:?}\n{}", cluster.log());
                thread::sleep(Duration::from_millis(200));
            }
        }
    }
}

fn worker_of(id: i64) -> i64 {
    (id >> 12) & 1023
}

#[test]
fn auto_gives_each_node_its_own_worker_id() {
    let registry = Cluster::registry();
    // Unset and `auto` mean the same: any free worker id.
    let nodes: Vec<Cluster> = (0..4)
        .map(|i| {
            Cluster::leased_node(
                &registry,
                &format!("n{i}"),
                if i == 0 { &["snowflake_id.worker_id = 'auto'"] } else { &[] },
            )
        })
        .collect();
    let mut all = HashSet::new();
    let mut workers = HashSet::new();
    for n in &nodes {
        let ids = draw_when_leased(n, 10_000);
        let w: HashSet<i64> = ids.iter().map(|id| worker_of(*id)).collect();
        assert_eq!(w.len(), 1, "one worker id per node: {w:?}");
        workers.extend(w);
        all.extend(ids);
    }
    assert_eq!(workers.len(), 4, "{workers:?}");
    assert_eq!(all.len(), 40_000);
    let live = registry.query_i64("SELECT count(*) FROM snowflake_registry WHERE state = 'live'");
    assert_eq!(live, 4);
    // The status shows the leased worker id, though the setting is unset or `auto`.
    for n in &nodes {
        let shown = n.query_i64("SELECT worker_id FROM snowflake_id_status");
        assert!(workers.contains(&shown), "{shown} not among {workers:?}");
    }
    // A clean stop releases the worker id at once.
    let mut first = nodes.into_iter().next().unwrap();
    first.stop();
    let free = registry.query_i64("SELECT count(*) FROM snowflake_registry WHERE state = 'free'");
    assert_eq!(free, 1, "{}", first.log());
}

/// The first error `snowflake_nextval()` gives within `within`, drawing in batches.
fn draw_until_refused(cluster: &Cluster, within: Duration) -> (Vec<i64>, DbError) {
    let deadline = Instant::now() + within;
    let mut client = cluster.connect();
    let mut ids = vec![];
    loop {
        match client.query("SELECT snowflake_nextval() FROM generate_series(1, 1000)", &[]) {
            Ok(rows) => ids.extend(rows.iter().map(|r| r.get::<_, i64>(0))),
            Err(e) => return (ids, DbError::of(e.as_db_error().expect("a database error"))),
        }
        assert!(Instant::now() < deadline, "IDs never stopped");
        thread::sleep(Duration::from_millis(50));
    }
}

fn lease_row(registry: &Cluster, worker_id: i64) -> (i64, String, String) {
    let row = registry
        .connect()
        .query_one(
            "SELECT lease_epoch, node_name, state FROM snowflake_registry WHERE worker_id = $1::int",
            &[&(worker_id as i32)],
        )
        .expect("a lease row");
    (row.get(0), row.get(1), row.get(2))
}

const SHORT_LEASE: &str = "snowflake_id.registry_lease = '3s'";

#[test]
fn a_worker_id_held_by_a_live_node_is_refused_naming_the_holder() {
    let registry = Cluster::registry();
    let a = Cluster::leased_node(&registry, "a", &["snowflake_id.worker_id = 5"]);
    assert!(draw_when_leased(&a, 10).iter().all(|id| worker_of(*id) == 5));
    let b = Cluster::leased_node(&registry, "b", &["snowflake_id.worker_id = 5"]);
    // b's keeper asks, is refused, and says why; b issues nothing.
    let deadline = Instant::now() + Duration::from_secs(20);
    let e = loop {
        let e = b.sql_error("SELECT snowflake_nextval()");
        if e.detail.contains("SFL02") || Instant::now() > deadline {
            break e;
        }
        thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(e.code, "55000", "{e:?}");
    assert!(e.message.contains("no worker id yet"), "{e:?}");
    assert!(e.detail.contains("held by node \"a\""), "{e:?}");
    let problem = b.query_text("SELECT problem FROM snowflake_id_status");
    assert!(problem.starts_with("55000: snowflake_id: no worker id yet"), "{problem}");
    assert_eq!(b.query_text("SELECT lease_state FROM snowflake_id_status"), "acquiring");
    assert_eq!(a.query_text("SELECT lease_state || ' ' || worker_id FROM snowflake_id_status"), "held 5");
}

#[test]
fn a_registry_down_at_start_then_back_lets_ids_flow() {
    let mut registry = Cluster::registry();
    registry.stop();
    let a = Cluster::leased_node(&registry, "a", &[]);
    let e = a.sql_error("SELECT snowflake_nextval()");
    assert_eq!(e.code, "55000", "{e:?}");
    assert!(e.message.contains("no worker id yet"), "{e:?}");
    registry.start();
    let ids = draw_when_leased(&a, 100);
    assert_eq!(ids.len(), 100);
    assert_eq!(a.query_text("SELECT lease_state FROM snowflake_id_status"), "held");
}

#[test]
fn a_registry_stopped_under_load_stops_ids_at_the_ceiling_and_they_resume() {
    let mut registry = Cluster::registry();
    let a = Cluster::leased_node(&registry, "a", &[SHORT_LEASE]);
    draw_when_leased(&a, 100);
    let ceiling_before: i64 =
        a.query_i64("SELECT (extract(epoch FROM lease_ceiling) * 1000)::bigint FROM snowflake_id_status");
    registry.stop_immediate();
    let (ids, e) = draw_until_refused(&a, Duration::from_secs(20));
    assert!(!ids.is_empty(), "IDs continue within the lease while the registry is down");
    assert_eq!(e.code, "55000", "{e:?}");
    assert!(e.message.contains("the registry has not renewed it"), "{e:?}");
    assert!(e.detail.contains("unreachable"), "{e:?}");
    // Nothing past the ceiling the registry granted.
    let last_ms = ids.iter().map(|id| id_unix_ms(*id)).max().unwrap();
    let ceiling_now: i64 =
        a.query_i64("SELECT (extract(epoch FROM lease_ceiling) * 1000)::bigint FROM snowflake_id_status");
    assert!(ceiling_now >= ceiling_before);
    assert!(last_ms <= ceiling_now, "an ID at {last_ms} past the ceiling {ceiling_now}");
    assert_eq!(a.query_text("SELECT lease_state FROM snowflake_id_status"), "expired");
    // Logged, and not once per retry: at most one line a minute.
    let warnings = a.log().matches("WARNING:  snowflake_id: worker id registry:").count();
    assert_eq!(warnings, 1, "{}", a.log());
    registry.start();
    assert_eq!(draw_when_leased(&a, 100).len(), 100);
}

/// A node paused past its lease, a takeover of its worker id, the node
/// resumed: it issues nothing past its old ceiling, and the new holder
/// nothing below it.
#[test]
fn a_paused_node_resumed_after_a_takeover_stops_at_its_ceiling() {
    let registry = Cluster::registry();
    let a = Cluster::leased_node(&registry, "a", &[SHORT_LEASE, "snowflake_id.worker_id = 9"]);
    let before = draw_when_leased(&a, 1_000);
    registry.sql("UPDATE snowflake_registry_namespaces SET stale_margin = '1s'");
    let mut a_client = a.connect();
    a.signal_all("STOP");
    let b = Cluster::leased_node(&registry, "b", &[SHORT_LEASE, "snowflake_id.worker_id = 9"]);
    let b_ids = draw_when_leased(&b, 1_000);
    a.signal_all("CONT");
    let (a_after, e) = {
        let mut ids = vec![];
        let deadline = Instant::now() + Duration::from_secs(20);
        let e = loop {
            match a_client.query("SELECT snowflake_nextval() FROM generate_series(1, 1000)", &[]) {
                Ok(rows) => ids.extend(rows.iter().map(|r| r.get::<_, i64>(0))),
                Err(e) => break e,
            }
            if Instant::now() > deadline {
                let b_min = b_ids.iter().min().unwrap();
                let overlap = ids.iter().filter(|id| *id >= b_min).count();
                panic!(
                    "the resumed node kept issuing for 20 s: {} IDs, {overlap} of them at or above b's first",
                    ids.len()
                );
            }
        };
        (ids, e)
    };
    let e = e.as_db_error().expect("a database error").clone();
    assert_eq!(e.code().code(), "55000", "{e:?}");
    let a_max = before.iter().chain(&a_after).max().unwrap();
    let b_min = b_ids.iter().min().unwrap();
    assert!(a_max < b_min, "a issued {a_max} at or above b's first {b_min}");
    let (epoch, name, state) = lease_row(&registry, 9);
    assert_eq!((epoch, name.as_str(), state.as_str()), (2, "b", "live"));
}

/// A standby promoted while its old primary still runs: the new primary
/// takes the worker id at once above the old ceiling; the old primary stops
/// at its ceiling; no ID is issued twice.
#[test]
fn split_brain_keeps_the_two_primaries_ranges_apart() {
    let registry = Cluster::registry();
    let primary = Cluster::leased_node(&registry, "p", &[SHORT_LEASE, "snowflake_id.worker_id = 3"]);
    let before = draw_when_leased(&primary, 1_000);
    let mut standby = Cluster::standby_of(&primary, &[]);
    standby.start();
    let lsn = primary.query_text("SELECT pg_current_wal_lsn()::text");
    standby.wait_replayed(&lsn);
    standby.promote();
    let new_ids = draw_when_leased(&standby, 1_000);
    let (old_ids, e) = draw_until_refused(&primary, Duration::from_secs(20));
    assert_eq!(e.code, "55000", "{e:?}");
    assert!(e.message.contains("is lost") || e.message.contains("has not renewed"), "{e:?}");
    let old_max = before.iter().chain(&old_ids).max().unwrap();
    let new_min = new_ids.iter().min().unwrap();
    assert!(old_max < new_min, "the old primary issued {old_max}, the new one began at {new_min}");
    let all: HashSet<i64> = before.iter().chain(&old_ids).chain(&new_ids).copied().collect();
    assert_eq!(all.len(), before.len() + old_ids.len() + new_ids.len());
    let (epoch, _, state) = lease_row(&registry, 3);
    assert_eq!((epoch, state.as_str()), (2, "live"));
}

/// A clean stop frees the worker id at once: the next node takes it right
/// above the last ID, without waiting for the lease to go stale.
#[test]
fn a_clean_stop_hands_the_worker_id_on_at_once_above_the_last_id() {
    let registry = Cluster::registry();
    let mut a = Cluster::leased_node(&registry, "a", &["snowflake_id.worker_id = 4"]);
    let a_ids = draw_when_leased(&a, 5_000);
    a.stop();
    assert_eq!(lease_row(&registry, 4).2, "free", "{}", a.log());
    let started = Instant::now();
    let b = Cluster::leased_node(&registry, "b", &["snowflake_id.worker_id = 4"]);
    let b_ids = draw_when_leased(&b, 5_000);
    assert!(started.elapsed() < Duration::from_secs(20), "the worker id was not free at once");
    assert!(a_ids.iter().max() < b_ids.iter().min());
    let (epoch, name, _) = lease_row(&registry, 4);
    assert_eq!((epoch, name.as_str()), (2, "b"));
    // b started right above a's last ID, not a lease (30 s) ahead of the clock.
    let ahead_ms =
        b.query_i64("SELECT (extract(epoch FROM logical_clock - wall_clock) * 1000)::bigint FROM snowflake_id_status");
    assert!(ahead_ms < 5_000, "b runs {ahead_ms} ms ahead of its clock");
}

/// A crash and restart within the lease goes on without the registry: the
/// lease is on disk with the mark.
#[test]
fn a_restart_within_the_lease_goes_on_without_the_registry() {
    let mut registry = Cluster::registry();
    let mut a = Cluster::leased_node(&registry, "a", &["snowflake_id.registry_lease = '60s'"]);
    let before = draw_when_leased(&a, 1_000);
    registry.stop();
    a.crash();
    a.start();
    let after = draw_when_leased(&a, 1_000);
    assert!(before.iter().max() < after.iter().min());
    assert_eq!(worker_of(before[0]), worker_of(after[0]));
    assert_eq!(a.query_text("SELECT lease_state FROM snowflake_id_status"), "held");
    // A promoted copy would not: the lease is tied to its timeline (see split brain).
    registry.start();
}

/// The registry fails over to its synchronous standby; nodes follow through
/// the multi-host connection string and renew there, lease unchanged.
#[test]
fn nodes_follow_a_registry_failover() {
    let mut primary = Cluster::registry();
    primary.sql("ALTER SYSTEM SET synchronous_standby_names = '*'");
    primary.restart();
    let mut standby = Cluster::standby_of(&primary, &[]);
    standby.start();
    primary.wait_sync_standby(&standby);
    let conninfo = format!(
        "snowflake_id.registry = 'host={},{} port={},{} dbname=postgres user=postgres target_session_attrs=read-write connect_timeout=2'",
        primary.socket_dir().display(),
        standby.socket_dir().display(),
        primary.port,
        standby.port
    );
    let mut lines = vec!["shared_preload_libraries = 'snowflake_id'", conninfo.as_str(), SHORT_LEASE];
    lines.push("snowflake_id.node_name = 'a'");
    let mut a = Cluster::init(&lines);
    a.start();
    a.sql("CREATE EXTENSION snowflake_id");
    let before = draw_when_leased(&a, 1_000);
    let epoch_before = a.query_i64("SELECT lease_epoch FROM snowflake_id_status");
    primary.stop_immediate();
    standby.promote();
    // Its copied settings still ask for a synchronous standby it does not
    // have: every commit (a renewal too) would wait, as the DBA's would.
    standby.sql("ALTER SYSTEM RESET synchronous_standby_names");
    standby.sql("SELECT pg_reload_conf()");
    // Past the old ceiling (a 3 s lease): only a renewal through the new
    // registry primary lets IDs continue.
    thread::sleep(Duration::from_secs(4));
    let after = draw_when_leased(&a, 1_000);
    assert!(before.iter().max() < after.iter().min());
    assert_eq!(a.query_i64("SELECT lease_epoch FROM snowflake_id_status"), epoch_before);
    let renewed_after_failover: bool = a
        .connect()
        .query_one("SELECT lease_ceiling > now() AND registry_error IS NULL FROM snowflake_id_status", &[])
        .unwrap()
        .get(0);
    assert!(renewed_after_failover);
    let (epoch, name, state) = lease_row(&standby, worker_of(after[0]));
    assert_eq!((epoch, name.as_str(), state.as_str()), (epoch_before, "a", "live"));
}

/// Crash after crash (`kill -9` of the postmaster), an `auto` node issues
/// again within seconds and near its clock: its old start renewed the lease
/// on disk a moment ago, so the registry refuses that lease to the new start
/// (it could be a copy), and `auto` takes a free worker id at once rather
/// than wait for the old start to fall silent and be granted the old one
/// anew above its ceiling, a lease ahead of the clock.
#[test]
fn crash_restarts_renew_the_lease_and_stay_near_the_clock() {
    let registry = Cluster::registry();
    let mut a = Cluster::leased_node(&registry, "a", &[]);
    draw_when_leased(&a, 100);
    for _ in 0..3 {
        a.crash();
        a.start();
        draw_when_leased(&a, 100);
    }
    // Give the keeper a turn to renew the restored lease.
    thread::sleep(Duration::from_millis(500));
    let ahead_ms = a.query_i64(
        "SELECT (extract(epoch FROM (snowflake_decode(snowflake_nextval())).ts - clock_timestamp()) * 1000)::bigint",
    );
    assert!(ahead_ms < 3_000, "after three crashes a new ID is {ahead_ms} ms ahead of the clock");
    assert_eq!(a.query_i64("SELECT lease_epoch FROM snowflake_id_status"), 1);
    assert_eq!(lease_row(&registry, worker_of(draw_when_leased(&a, 1)[0])).0, 1);
}

/// With `auto`, a node whose worker id went to another node while it was
/// paused takes any free one instead of waiting for its old one for ever.
#[test]
fn an_auto_node_that_lost_its_worker_id_takes_another() {
    let registry = Cluster::registry();
    let a = Cluster::leased_node(&registry, "a", &[SHORT_LEASE]);
    let first = worker_of(draw_when_leased(&a, 10)[0]);
    registry.sql("UPDATE snowflake_registry_namespaces SET stale_margin = '1s'");
    a.signal_all("STOP");
    thread::sleep(Duration::from_secs(5));
    let b = Cluster::leased_node(&registry, "b", &[SHORT_LEASE]);
    assert_eq!(worker_of(draw_when_leased(&b, 10)[0]), first, "b takes the stale worker id");
    a.signal_all("CONT");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let ids = draw_when_leased(&a, 10);
        if worker_of(ids[0]) != first {
            break;
        }
        assert!(Instant::now() < deadline, "a kept its lost worker id {first}");
        thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(a.query_text("SELECT lease_state FROM snowflake_id_status"), "held");
}

/// A node whose worker id is taken from it switches to a lower one while
/// IDs flow, and no ID goes below one issued before (invariant 1). The
/// keeper writes the new lease's mark (file and WAL) with the spinlock
/// released; meanwhile backends go on issuing under the old worker id, so
/// the floor that keeps the new worker id's IDs above theirs must be taken
/// when the worker id switches, not before the write. Each fsync of the
/// keeper is made 100 ms long so that the write spans many bursts.
#[test]
fn a_switch_to_a_lower_worker_id_under_load_never_goes_back() {
    let registry = Cluster::registry();
    // 256 IDs a millisecond: the bursts below outrun the wall clock, so the
    // next ID is in the millisecond of the one before (not a fresh one) at
    // the switch too, where a lower worker id would sort below it.
    const SEQUENCE: &str = "snowflake_id.sequence_bits = 8";
    let worker = |id: i64| (id >> 8) & 1023;
    let mut low = Cluster::leased_node(&registry, "low", &[SEQUENCE]);
    assert_eq!(worker(draw_when_leased(&low, 1)[0]), 0);
    // A lease long enough that the lost one's ceiling is still seconds ahead
    // when the new one is taken: IDs flow under the old worker id meanwhile.
    let a = Cluster::leased_node(&registry, "a", &[SEQUENCE, "snowflake_id.registry_lease = '10s'"]);
    assert_eq!(worker(draw_when_leased(&a, 1)[0]), 1);
    // A clean stop releases worker id 0: the lowest free one when a looks again.
    low.stop();

    let keeper: i32 = a.query_i64("SELECT keeper_pid::int8 FROM snowflake_id_status") as i32;
    let _slow = SlowFsync::attach(keeper, 100_000);
    let stop = std::sync::atomic::AtomicBool::new(false);
    let drawn: Vec<Vec<i64>> = thread::scope(|s| {
        let drawers: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    let mut client = a.connect();
                    let mut ids = Vec::new();
                    while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                        if let Ok(rows) = client.query("SELECT snowflake_nextval() FROM generate_series(1, 20000)", &[])
                        {
                            ids.extend(rows.iter().map(|r| r.get::<_, i64>(0)));
                        }
                    }
                    ids
                })
            })
            .collect();
        thread::sleep(Duration::from_secs(1));
        // Worker id 1 handed to someone else: a's next renewal is refused.
        registry.sql("UPDATE snowflake_registry_leases SET holder_token = holder_token + 1 WHERE worker_id = 1");
        let deadline = Instant::now() + Duration::from_secs(30);
        while a.query_i64("SELECT worker_id::int8 FROM snowflake_id_status") != 0 {
            assert!(Instant::now() < deadline, "a did not switch to worker id 0:\n{}", a.log());
            thread::sleep(Duration::from_millis(100));
        }
        thread::sleep(Duration::from_secs(1));
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        drawers.into_iter().map(|d| d.join().expect("drawer")).collect()
    });

    // Every ID under worker id 0 was issued after every ID under worker id
    // 1 (the switch is one lock hold): strictly increasing means above all
    // of them, whichever client drew which.
    let all: Vec<i64> = drawn.iter().flatten().copied().collect();
    let last_old = all.iter().copied().filter(|id| worker(*id) == 1).max().expect("IDs under worker id 1");
    let first_new = all.iter().copied().filter(|id| worker(*id) == 0).min().expect("IDs under worker id 0");
    assert!(
        first_new > last_old,
        "IDs went back at the switch: {last_old} (worker id 1, tick {}) was issued before {first_new} (worker id 0, tick {})",
        last_old >> 18,
        first_new >> 18
    );
    for ids in &drawn {
        assert!(ids.windows(2).all(|w| w[1] > w[0]), "a client's IDs went back");
    }
}

/// Reads `SELECT snowflake_nextval()` on `node` until `within` has passed:
/// the IDs it got, and how many times it was refused with SQLSTATE 55000.
fn draw_or_refusals(node: &Cluster, within: Duration, mut between: impl FnMut()) -> (Vec<i64>, usize) {
    let (mut ids, mut refusals) = (vec![], 0);
    let mut client = node.connect();
    let started = Instant::now();
    while started.elapsed() < within {
        match client.query_one("SELECT snowflake_nextval()", &[]) {
            Ok(row) => ids.push(row.get(0)),
            Err(e) => {
                let code = e.code().map(|c| c.code().to_string());
                assert_eq!(code.as_deref(), Some("55000"), "{e:?}");
                refusals += 1;
            }
        }
        between();
        thread::sleep(Duration::from_millis(100));
    }
    (ids, refusals)
}

/// A copy of a running node's data directory (same system identifier,
/// timeline and lease on disk, as a VM snapshot or a base backup started as
/// a primary) is refused before its first ID for as long as the original
/// runs, longer than the silence a crash restart waits for, and the original
/// keeps issuing throughout (0.3.0's copy issued 10,003 of the original's
/// IDs in 10 s). The copy says why, with what to do.
#[test]
fn a_copy_of_a_running_node_is_refused_and_the_original_keeps_issuing() {
    let registry = Cluster::registry();
    let a = Cluster::leased_node(&registry, "a", &["snowflake_id.worker_id = 7"]);
    let mut original = draw_when_leased(&a, 1_000);
    let mut copy = Cluster::copy_of(&a, &[]);
    copy.start();
    let mut a_client = a.connect();
    let status = |copy: &Cluster| {
        copy.query_text(
            "SELECT lease_state || ' | ' || coalesce(registry_error, '') || ' | ' || coalesce(problem, '') FROM snowflake_id_status",
        )
    };
    // First: refused as another running start of the lease.
    let (from_copy, refusals) =
        draw_or_refusals(&copy, Duration::from_secs(4), || original.extend(draw_in_order(&mut a_client, 100)));
    assert!(from_copy.is_empty(), "the copy issued {} IDs:\n{}", from_copy.len(), copy.log());
    assert!(refusals > 10, "{refusals}");
    let refused = status(&copy);
    assert!(refused.starts_with("confirming | SFL05: worker id 7 of namespace"), "{refused}");
    assert!(refused.contains("in use by another running start of this server"), "{refused}");
    assert!(refused.contains("the registry has not confirmed this server's lease"), "{refused}");
    assert!(copy.log().contains("give it its own snowflake_id.worker_id (or auto"), "{}", copy.log());
    // Refused past the silence (9 s) while the original renewed: a proven
    // copy, which waits for the worker id like any other node.
    let (from_copy, _) =
        draw_or_refusals(&copy, Duration::from_secs(11), || original.extend(draw_in_order(&mut a_client, 100)));
    assert!(from_copy.is_empty(), "the copy issued {} IDs:\n{}", from_copy.len(), copy.log());
    assert!(copy.log().contains("this server is a copy of a running node"), "{}", copy.log());
    let waiting = status(&copy);
    assert!(waiting.starts_with("acquiring | SFL02: worker id 7 of namespace"), "{waiting}");
    // The original's lease is as it was, and it issued all along.
    assert_eq!(lease_row(&registry, 7), (1, "a".into(), "live".into()));
    assert_eq!(a.query_text("SELECT lease_state || ' ' || lease_epoch FROM snowflake_id_status"), "held 1");
    // Issued all along: draws of 100 throughout the copy's 11 s of refusals
    // (a count, not a speed: a loaded machine drew 9,900).
    assert!(original.len() > 1_000, "{}", original.len());
    assert_no_duplicates([&original]);
}

/// With `auto`, a copy of a running node takes a free worker id of its own:
/// it issues, and never one of the original's IDs.
#[test]
fn a_copy_of_a_running_auto_node_takes_a_worker_id_of_its_own() {
    let registry = Cluster::registry();
    let a = Cluster::leased_node(&registry, "a", &[]);
    let mut original = draw_when_leased(&a, 1_000);
    let mut copy = Cluster::copy_of(&a, &[]);
    copy.start();
    let from_copy = draw_when_leased(&copy, 1_000);
    original.extend(draw_when_leased(&a, 1_000));
    assert_ne!(worker_of(from_copy[0]), worker_of(original[0]));
    assert_eq!(lease_row(&registry, worker_of(original[0])), (1, "a".into(), "live".into()));
    assert_no_duplicates([&original, &from_copy]);
}

/// A crash restart of a node with a fixed worker id: its old start renewed
/// the lease a moment ago, so the new one waits until that start has been
/// silent for a quarter of the lease (it could be the original of a copy),
/// then is granted the worker id anew above the old ceiling: IDs resume
/// above every earlier one, ahead of the clock by at most the lease. The
/// price a copy's refusal puts on crash restarts, measured here (printed).
#[test]
fn a_crash_restart_with_a_fixed_worker_id_waits_for_its_old_start_to_fall_silent() {
    let registry = Cluster::registry();
    let mut a = Cluster::leased_node(&registry, "a", &["snowflake_id.worker_id = 7"]);
    let before = draw_when_leased(&a, 1_000);
    a.crash();
    let crashed = Instant::now();
    a.start();
    let after = draw_when_leased(&a, 1);
    let waited = crashed.elapsed();
    let now_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    let ahead_ms = id_unix_ms(after[0]) - now_ms;
    eprintln!(
        "crash restart with a fixed worker id: first ID {waited:?} after the kill, {ahead_ms} ms ahead of the clock"
    );
    assert!(waited < Duration::from_secs(15), "{waited:?}");
    assert!(ahead_ms <= 30_001, "{ahead_ms}");
    assert!(before.iter().max() < after.iter().min());
    assert_eq!(a.query_text("SELECT lease_state || ' ' || lease_epoch FROM snowflake_id_status"), "held 2");
    // A backend killed reinitialises shared memory under the same postmaster:
    // the same instance, so the lease goes on at once, as it is.
    let mut victim = a.connect();
    let victim_pid: i32 = victim.query_one("SELECT pg_backend_pid()", &[]).unwrap().get(0);
    assert!(std::process::Command::new("kill").args(["-9", &victim_pid.to_string()]).status().unwrap().success());
    let killed = Instant::now();
    thread::sleep(Duration::from_millis(500));
    a.wait_accepting();
    let again = draw_when_leased(&a, 1);
    eprintln!("backend crash: first ID {:?} after the kill", killed.elapsed());
    assert!(killed.elapsed() < Duration::from_secs(5), "{:?}", killed.elapsed());
    assert!(after.iter().max() < again.iter().min());
    assert_eq!(a.query_text("SELECT lease_state || ' ' || lease_epoch FROM snowflake_id_status"), "held 2");
}

/// The one window the fence leaves open, shown: a copy started while the
/// registry is unreachable goes on under the lease on disk after 5 s (a
/// restart must not wait out a registry outage), issuing under the
/// original's lease, until its first renewal reaches the registry: refused
/// (SFL05), it stops at once, not at its ceiling. The original goes on.
#[test]
fn a_copy_started_during_a_registry_outage_stops_at_its_first_contact() {
    let mut registry = Cluster::registry();
    let a = Cluster::leased_node(&registry, "a", &["snowflake_id.worker_id = 7"]);
    draw_when_leased(&a, 100);
    registry.stop();
    let mut copy = Cluster::copy_of(&a, &[]);
    copy.start();
    let unconfirmed = draw_when_leased(&copy, 10);
    assert_eq!(worker_of(unconfirmed[0]), 7);
    assert!(copy.log().contains("resumed worker id 7 from disk unconfirmed"), "{}", copy.log());
    registry.start();
    let (later, _) = draw_or_refusals(&copy, Duration::from_secs(8), || {});
    let status =
        copy.query_text("SELECT lease_state || ' | ' || coalesce(registry_error, '') FROM snowflake_id_status");
    assert!(status.starts_with("lost | SFL05: the lease on worker id 7"), "{status}");
    // Stopped at its first contact: nothing in the last seconds.
    let (after_refusal, refusals) = draw_or_refusals(&copy, Duration::from_secs(2), || {});
    assert!(after_refusal.is_empty() && refusals > 0, "{} IDs after the refusal", after_refusal.len());
    eprintln!("copy during an outage: {} IDs after the registry came back, before its refusal", later.len());
    let original = draw_when_leased(&a, 1_000);
    assert_eq!(worker_of(original[0]), 7);
    assert_eq!(lease_row(&registry, 7), (1, "a".into(), "live".into()));
}

/// Nodes may be updated before their registry: a 0.4.0 node whose
/// registry's extension is still 0.3.0 resumes its lease at once after a
/// crash, as 0.3.0 did, and warns that copies are not fenced; once the
/// registry is updated, the same node renews on and the registry records
/// its instance.
#[test]
fn a_registry_not_yet_updated_keeps_its_nodes_going_unfenced() {
    let mut registry = Cluster::init(&[]);
    registry.start();
    registry.sql("CREATE EXTENSION snowflake_id VERSION '0.3.0'");
    let mut a = Cluster::leased_node(&registry, "a", &["snowflake_id.worker_id = 7"]);
    let before = draw_when_leased(&a, 100);
    a.crash();
    a.start();
    let restarted = Instant::now();
    let after = draw_when_leased(&a, 100);
    assert!(restarted.elapsed() < Duration::from_secs(4), "{:?}", restarted.elapsed());
    assert!(before.iter().max() < after.iter().min());
    assert!(a.log().contains("the registry's extension is older than 0.4.0"), "{}", a.log());
    assert_eq!(lease_row(&registry, 7), (1, "a".into(), "live".into()));
    registry.sql("ALTER EXTENSION snowflake_id UPDATE");
    thread::sleep(Duration::from_secs(4)); // a heartbeat
    draw_when_leased(&a, 100);
    let recorded = registry.query_i64("SELECT count(*) FROM snowflake_registry_leases WHERE instance IS NOT NULL");
    assert_eq!(recorded, 1);
}
