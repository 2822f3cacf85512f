//! What a DBA does to a server around the library: a major-version upgrade
//! with `pg_upgrade` (17 to 18) while the library is preloaded in both clusters, and
//! taking the library out of `shared_preload_libraries` (after a clean
//! shutdown, and after a crash), each as the README tells it.

mod common;

use std::path::Path;

use common::{pg_major, Cluster};

const PRELOAD: &str = "shared_preload_libraries = 'snowflake_id'";
const WORKER: &str = "snowflake_id.worker_id = 21";

/// The newest major the project supports, and the major pg_upgrade goes to it from.
const NEWEST: u32 = 18;
const OLD: u32 = 17;

fn fill(cluster: &Cluster, rows: i64) {
    cluster.sql(&format!("INSERT INTO orders (n) SELECT g FROM generate_series(1, {rows}) g"));
}

/// The errors and last lines of each of pg_upgrade's logs under the new data directory.
fn upgrade_logs(new_data: &Path) -> String {
    let mut text = String::new();
    let Ok(runs) = std::fs::read_dir(new_data.join("pg_upgrade_output.d")) else { return text };
    for run in runs.flatten() {
        for log in std::fs::read_dir(run.path().join("log")).into_iter().flatten().flatten() {
            let body = std::fs::read_to_string(log.path()).unwrap_or_default();
            // Its errors, then its last lines.
            let lines: Vec<&str> = body.lines().collect();
            let errors: Vec<&str> =
                lines.iter().copied().filter(|l| l.contains("ERROR") || l.contains("FATAL")).collect();
            let tail = &lines[lines.len().saturating_sub(8)..];
            text += &format!("== {}\n{}\n...\n{}\n", log.path().display(), errors.join("\n"), tail.join("\n"));
        }
    }
    text
}

/// The bin directory of an installed major, as scripts/pg_servers.sh knows it.
fn bindir_of(major: u32) -> Option<String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/pg_servers.sh");
    let out = std::process::Command::new("bash").arg(script).args(["--bindir", &major.to_string()]).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The bin directory of the old major pg_upgrade starts from:
/// `SNOWFLAKE_OLD_PG_BIN` when set (scripts/test.sh sets it to the 17 it
/// installed the library into in this run, and to nothing when 17 is not
/// part of the run, so that a library left from an earlier run is never
/// what is upgraded), else the installed one; `Err` says why there is none.
fn old_bindir() -> Result<String, String> {
    match std::env::var("SNOWFLAKE_OLD_PG_BIN") {
        Ok(dir) if dir.is_empty() => Err(format!(
            "PostgreSQL {OLD} is not part of this run (PG_MAJORS=\"{OLD} {NEWEST}\" bash scripts/test.sh tests both)"
        )),
        Ok(dir) => Ok(dir),
        Err(_) => bindir_of(OLD).ok_or_else(|| {
            format!("PostgreSQL {OLD} is not installed (PG_MAJORS=\"{OLD} {NEWEST}\" bash scripts/pg_servers.sh)")
        }),
    }
}

/// pg_upgrade from 17 (built here from the same upstream series as 18).
/// Not from Debian 12's 15.20: that minor stores an attribute option
/// (`pg_attver`) on every column that 18.6 does not know, so on this machine
/// pg_upgrade from it fails for any cluster with a table, with or without
/// the library ("unrecognized parameter"). Without 17 (or the library in
/// it) the test fails unless the test command skips it by name: a pass
/// that upgraded nothing would hide the gap.
#[test]
fn pg_upgrade_to_the_newest_major_with_the_library_preloaded_in_both_clusters() {
    if !common::only_on_major(NEWEST, "pg_upgrade runs to the newest major") {
        return;
    }
    let old_bin = match old_bindir() {
        Ok(dir) => dir,
        Err(why) => return common::cannot_run(&why),
    };
    let pkglibdir = std::process::Command::new(Path::new(&old_bin).join("pg_config")).arg("--pkglibdir").output();
    let pkglibdir = pkglibdir.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string()).unwrap_or_default();
    let old_lib = Path::new(&pkglibdir).join("snowflake_id.so");
    if !old_lib.exists() {
        return common::cannot_run(&format!(
            "the library is not installed into PostgreSQL {OLD} ({})",
            old_lib.display()
        ));
    }
    let mut old = Cluster::init_with_bin(&old_bin, &["--data-checksums"], &[PRELOAD, WORKER]);
    old.start();
    old.sql("CREATE EXTENSION snowflake_id");
    old.sql("CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), n int)");
    fill(&old, 10_000);
    // template1 is dropped and made again by pg_upgrade's restore: a barrier
    // the keeper of the new cluster must absorb (0.3.0 hung here for ever).
    let old_max = old.query_i64("SELECT max(id) FROM orders");
    old.stop();

    let mut new = Cluster::init(&[PRELOAD, WORKER]);
    new.stop_on_drop();
    old.stop_on_drop();
    let (old_data, new_data) = (old.data(), new.data());
    let (old_port, new_port) = (old.port.to_string(), new.port.to_string());
    let socket = old.socket_dir().display().to_string();
    let upgrade = new.tool("pg_upgrade");
    let new_bin = common::bin();
    // Bounded: a hang fails the test instead of stopping the suite.
    let args = [
        "timeout",
        "600",
        &upgrade,
        "-b",
        &old_bin,
        "-B",
        new_bin,
        "-d",
        old_data.to_str().unwrap(),
        "-D",
        new_data.to_str().unwrap(),
        "-p",
        &old_port,
        "-P",
        &new_port,
        "-s",
        &socket,
        "-U",
        "postgres",
    ];
    let out = std::process::Command::new("runuser")
        .args(["-u", "postgres", "--"])
        .args(args)
        .current_dir(old.socket_dir())
        .output()
        .expect("pg_upgrade");
    assert!(
        out.status.success(),
        "pg_upgrade failed (exit {:?}; 124 is the 10-minute timeout):\n{}\n{}\n--- its logs ---\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        upgrade_logs(&new_data)
    );

    // The README's procedure after a move to a new cluster: past the
    // largest stored ID, then IDs as usual.
    new.start();
    assert_eq!(new.query_i64("SELECT count(*) FROM orders"), 10_000);
    new.sql("SELECT snowflake_advance_past(max(id)) FROM orders");
    fill(&new, 1_000);
    assert_eq!(new.query_i64("SELECT count(DISTINCT id) FROM orders"), 11_000);
    let above = new.query_i64(&format!("SELECT count(*) FROM orders WHERE id > {old_max}"));
    assert_eq!(above, 1_000, "not every ID drawn after the upgrade is above the old cluster's IDs");
    assert_eq!(pg_major(), NEWEST);
}

/// The README's way to take the library out: a clean shutdown first (no
/// record of ours left to replay), then `shared_preload_libraries` without
/// it. After a crash the WAL still holds the mark's records, which only the
/// library can replay: the server refuses to start without it, and starts
/// again once the library is back for one clean start and stop.
#[test]
fn the_library_comes_out_after_a_clean_shutdown_and_after_a_crash_only_through_one() {
    let mut cluster = Cluster::preloaded(&[WORKER]);
    cluster.sql("CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), n int)");
    fill(&cluster, 1_000);

    // Out after a clean shutdown: the server starts, the extension's
    // decoding works, drawing IDs says what is missing.
    cluster.stop();
    cluster.append_conf(&["shared_preload_libraries = ''"]);
    cluster.start();
    assert_eq!(cluster.query_i64("SELECT count(*) FROM orders"), 1_000);
    assert_eq!(cluster.query_i64("SELECT count(*) FROM orders WHERE (snowflake_decode(id)).worker_id = 21"), 1_000);
    let e = cluster.sql_error("INSERT INTO orders (n) VALUES (1)");
    assert_eq!(e.code, "55000", "{e:?}");
    assert!(e.hint.contains("shared_preload_libraries"), "{e:?}");

    // Back in: IDs go on above the earlier ones (the state file stayed).
    let before = cluster.query_i64("SELECT max(id) FROM orders");
    cluster.stop();
    cluster.append_conf(&[PRELOAD]);
    cluster.start();
    fill(&cluster, 10);
    assert_eq!(cluster.query_i64(&format!("SELECT count(*) FROM orders WHERE id > {before}")), 10);

    // A crash right after IDs were drawn: the mark's records are in the WAL
    // after the last checkpoint.
    fill(&cluster, 100_000);
    cluster.crash();
    cluster.append_conf(&["shared_preload_libraries = ''"]);
    let refused = cluster.try_start();
    assert!(refused.is_err(), "the server replayed our WAL records without the library");
    assert!(
        cluster.log().contains("resource manager with ID 187 not registered"),
        "the log does not say why the start failed:\n{}",
        cluster.log()
    );
    // The README's remedy: the library back for one start (recovery) and a
    // clean stop, then out.
    cluster.append_conf(&[PRELOAD]);
    cluster.start();
    cluster.stop();
    cluster.append_conf(&["shared_preload_libraries = ''"]);
    cluster.start();
    assert_eq!(cluster.query_i64("SELECT count(*) FROM orders"), 101_010);
}
