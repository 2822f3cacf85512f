//! Worker ids from a registry, end to end: real node servers whose mark
//! keepers lease worker ids from a real registry server, and clients that
//! draw IDs from all of them.

mod common;

use std::collections::HashSet;
use std::thread;
use std::time::{Duration, Instant};

use common::Cluster;

/// A registry server: plain PostgreSQL with the extension, not preloaded.
fn registry() -> Cluster {
    let mut cluster = Cluster::init(&[]);
    cluster.start();
    cluster.sql("CREATE EXTENSION snowflake_id");
    cluster
}

fn conninfo(registry: &Cluster) -> String {
    format!(
        "snowflake_id.registry = 'host={} port={} dbname=postgres user=postgres'",
        registry.socket_dir().display(),
        registry.port
    )
}

/// A node leasing its worker id from `registry`, with `conf` on top.
fn node(registry: &Cluster, name: &str, conf: &[&str]) -> Cluster {
    let registry_line = conninfo(registry);
    let name_line = format!("snowflake_id.node_name = '{name}'");
    let mut lines = vec!["shared_preload_libraries = 'snowflake_id'", registry_line.as_str(), name_line.as_str()];
    lines.extend_from_slice(conf);
    let mut cluster = Cluster::init(&lines);
    cluster.start();
    cluster.sql("CREATE EXTENSION snowflake_id");
    cluster
}

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
    let registry = registry();
    let nodes: Vec<Cluster> = (0..3).map(|i| node(&registry, &format!("n{i}"), &[])).collect();
    let mut all = HashSet::new();
    let mut workers = HashSet::new();
    for n in &nodes {
        let ids = draw_when_leased(n, 10_000);
        let w: HashSet<i64> = ids.iter().map(|id| worker_of(*id)).collect();
        assert_eq!(w.len(), 1, "one worker id per node: {w:?}");
        workers.extend(w);
        all.extend(ids);
    }
    assert_eq!(workers.len(), 3, "{workers:?}");
    assert_eq!(all.len(), 30_000);
    let live = registry.query_i64("SELECT count(*) FROM snowflake_registry WHERE state = 'live'");
    assert_eq!(live, 3);
    // A clean stop releases the worker id at once.
    let mut first = nodes.into_iter().next().unwrap();
    first.stop();
    let free = registry.query_i64("SELECT count(*) FROM snowflake_registry WHERE state = 'free'");
    assert_eq!(free, 1, "{}", first.log());
}
