//! Application clients: a Python program using psycopg 3 (from PyPI, in the
//! test virtualenv that scripts/test.sh makes) inserts with `RETURNING id`,
//! decodes and round-trips IDs exactly against a real server.

mod common;

use std::process::Command;

use common::Cluster;

#[test]
fn psycopg_inserts_decodes_and_round_trips_ids() {
    let python = std::env::var("SNOWFLAKE_TEST_PYTHON")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/target/test-venv/bin/python").to_string());
    assert!(std::path::Path::new(&python).exists(), "{python} is missing: run scripts/test.sh, which makes it");
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 7"]);
    let out = Command::new(&python)
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/psycopg_roundtrip.py"))
        .arg(cluster.socket_dir())
        .arg(cluster.port.to_string())
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "psycopg client failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("round trip: ok"));
}
