//! The registry's fence under chaos: three nodes share a namespace of two
//! worker ids (so one always waits for a free one), clients draw from all of
//! them, and a random schedule pauses nodes past their lease (SIGSTOP, then
//! SIGCONT), kills them (`kill -9` of the postmaster, then a restart) and
//! restarts the registry. The ledger must show no duplicate, and for each
//! worker id the ranges of ID time of its successive leases (told apart by
//! the lease epoch the node reports around each batch) disjoint and in
//! epoch order: invariant 8.
//!
//! About 40 s by default; `SNOWFLAKE_CHAOS_SECS` soaks longer and
//! `SNOWFLAKE_CHAOS_SEED` replays an earlier run's schedule.

mod common;

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use common::soak::{self, Rng};
use common::Cluster;
use parking_lot::Mutex;

/// worker_bits = 1: two worker ids for three nodes.
const LAYOUT: [&str; 2] = ["snowflake_id.worker_bits = 1", "snowflake_id.sequence_bits = 12"];
const SEQUENCE_BITS: i64 = 12;

/// One batch a client drew, with the lease it was drawn under when the node
/// reported the same lease before and after it.
struct Batch {
    lease: Option<(i64, i64)>,
    ids: Vec<i64>,
}

fn lease_of(client: &mut postgres::Client) -> Option<(i64, i64)> {
    let row = client.query_one("SELECT worker_id, lease_epoch FROM snowflake_id_status", &[]).ok()?;
    Some((row.get::<_, Option<i64>>(0)?, row.get::<_, Option<i64>>(1)?))
}

/// Draws batches from `cfg` until `stop`; every failure (no lease, a paused
/// or restarting node) is only a reason to try again.
fn client(cfg: postgres::Config, stop: Arc<AtomicBool>, ledger: Arc<Mutex<Vec<Batch>>>) {
    let mut connection: Option<postgres::Client> = None;
    while !stop.load(Ordering::Relaxed) {
        let Some(c) = connection.as_mut() else {
            connection = cfg.connect(postgres::NoTls).ok();
            if connection.is_none() {
                thread::sleep(Duration::from_millis(100));
            }
            continue;
        };
        let before = lease_of(c);
        match c.query("SELECT snowflake_nextval() FROM generate_series(1, 200)", &[]) {
            Ok(rows) => {
                let ids: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
                let after = lease_of(c);
                let lease = before.filter(|b| Some(*b) == after);
                ledger.lock().push(Batch { lease, ids });
            }
            Err(e) if e.is_closed() || e.as_db_error().is_none() => connection = None,
            Err(_) => thread::sleep(Duration::from_millis(50)),
        }
    }
}

#[test]
fn pauses_kills_and_registry_restarts_never_let_two_holders_overlap() {
    let (secs, seed) = soak::settings("fleet soak", 40);
    let mut rng = Rng(seed);

    let mut registry = Cluster::registry();
    let conninfo = format!(
        "snowflake_id.registry = 'host={} port={} dbname=postgres user=postgres connect_timeout=2'",
        registry.socket_dir().display(),
        registry.port
    );
    let mut nodes: Vec<Cluster> = (0..3)
        .map(|i| {
            let name = format!("snowflake_id.node_name = 'n{i}'");
            let mut lines = vec![
                "shared_preload_libraries = 'snowflake_id'",
                conninfo.as_str(),
                name.as_str(),
                "snowflake_id.registry_lease = '2s'",
            ];
            lines.extend_from_slice(&LAYOUT);
            let mut cluster = Cluster::init(&lines);
            cluster.start();
            cluster.sql("CREATE EXTENSION snowflake_id");
            cluster
        })
        .collect();
    // Takeovers of a paused node within seconds, not the default 10 s margin.
    let deadline = Instant::now() + Duration::from_secs(30);
    while registry.query_i64("SELECT count(*) FROM snowflake_registry_namespaces") == 0 {
        assert!(Instant::now() < deadline, "no node reached the registry");
        thread::sleep(Duration::from_millis(100));
    }
    registry.sql("UPDATE snowflake_registry_namespaces SET stale_margin = '500ms'");

    let stop = Arc::new(AtomicBool::new(false));
    let ledger = Arc::new(Mutex::new(Vec::new()));
    let clients: Vec<_> = nodes
        .iter()
        .map(|n| {
            let (cfg, stop, ledger) = (n.config(), stop.clone(), ledger.clone());
            thread::spawn(move || client(cfg, stop, ledger))
        })
        .collect();

    let mut events = vec![];
    let end = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < end {
        thread::sleep(Duration::from_millis(1_000 + rng.below(1_500)));
        let victim = rng.below(3) as usize;
        match rng.below(10) {
            // A pause past the lease and the stale margin: another node may take over.
            0..=4 => {
                // Past the lease (2 s) and the margin (0.5 s), with time for
                // a waiting node (asking every second) to take over.
                let pause = 4_000 + rng.below(2_000);
                events.push(format!("pause n{victim} for {pause} ms"));
                // A backend may exit between pgrep and kill: kill then fails for it alone.
                let _ = nodes[victim].try_signal_all("STOP");
                thread::sleep(Duration::from_millis(pause));
                let _ = nodes[victim].try_signal_all("CONT");
            }
            5..=7 => {
                events.push(format!("kill -9 n{victim}, restart"));
                nodes[victim].crash();
                nodes[victim].start();
            }
            _ => {
                events.push("registry restart (immediate)".into());
                registry.stop_immediate();
                thread::sleep(Duration::from_millis(rng.below(2_000)));
                registry.start();
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    for c in clients {
        c.join().expect("client");
    }

    let batches = std::mem::take(&mut *ledger.lock());
    let all: Vec<i64> = batches.iter().flat_map(|b| b.ids.iter().copied()).collect();
    let distinct: HashSet<i64> = all.iter().copied().collect();
    println!(
        "fleet soak: {} IDs in {} batches ({} attributed to a lease); events: {}",
        all.len(),
        batches.len(),
        batches.iter().filter(|b| b.lease.is_some()).count(),
        events.join(", ")
    );
    assert_eq!(distinct.len(), all.len(), "duplicate IDs (seed {seed})");
    assert!(all.len() > 10_000, "the clients drew too little: {}", all.len());

    // Per worker id, the time ranges of its leases, in epoch order.
    let mut ranges: BTreeMap<(i64, i64), (i64, i64)> = BTreeMap::new();
    for b in batches.iter().filter(|b| !b.ids.is_empty()) {
        let Some((worker, epoch)) = b.lease else { continue };
        for id in &b.ids {
            assert_eq!((id >> SEQUENCE_BITS) & 1, worker, "an ID of another worker id under lease {worker}/{epoch}");
        }
        let ticks = b.ids.iter().map(|id| id >> (SEQUENCE_BITS + 1));
        let (lo, hi) = (ticks.clone().min().unwrap(), ticks.max().unwrap());
        let r = ranges.entry((worker, epoch)).or_insert((lo, hi));
        *r = (r.0.min(lo), r.1.max(hi));
    }
    let mut previous: Option<((i64, i64), (i64, i64))> = None;
    for (&(worker, epoch), &(lo, hi)) in &ranges {
        if let Some(((pw, pe), (_, phi))) = previous {
            if pw == worker {
                assert!(
                    phi < lo,
                    "worker id {worker}: lease epoch {pe} issued up to tick {phi}, epoch {epoch} from tick {lo} (seed {seed}); events: {}",
                    events.join(", ")
                );
            }
        }
        previous = Some(((worker, epoch), (lo, hi)));
    }
    let leases: Vec<String> = ranges.keys().map(|(w, e)| format!("{w}/{e}")).collect();
    println!("fleet soak: leases seen (worker/epoch): {}", leases.join(" "));
    assert!(ranges.len() >= 3, "too few leases to test a takeover: {leases:?}");
}
