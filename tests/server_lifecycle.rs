//! What a DBA does to a server around the library: a major-version upgrade
//! with `pg_upgrade` (17 to 18, 18 to 19) while the library is preloaded in
//! both clusters, of a plain server and of a logical replication publisher, and
//! taking the library out of `shared_preload_libraries` (after a clean
//! shutdown, and after a crash), each as the README tells it.

mod common;

use common::upgrade::{carry_state_file, old_bin_with_the_library, pg_upgrade};
use common::waits::wait_until;
use common::{conninfo, Cluster, LOGICAL};

const PRELOAD: &str = "shared_preload_libraries = 'snowflake_id'";
const WORKER: &str = "snowflake_id.worker_id = 21";
/// How long a step of the publisher's upgrade may take to show.
const WAIT: std::time::Duration = std::time::Duration::from_secs(60);

fn fill(cluster: &Cluster, rows: i64) {
    cluster.sql(&format!("INSERT INTO orders (n) SELECT g FROM generate_series(1, {rows}) g"));
}

/// pg_upgrade from the major before: 17 to 18 (both built here from
/// Debian's source packages), 18 to 19 (Debian's experimental binaries).
/// Not from Debian 12's 15.20: that minor stores an attribute option
/// (`pg_attver`) on every column that 18.6 does not know, so on this machine
/// pg_upgrade from it fails for any cluster with a table, with or without
/// the library ("unrecognized parameter"). Without the old major (or the
/// library in it) the test fails unless the test command skips it by name:
/// a pass that upgraded nothing would hide the gap.
#[test]
fn pg_upgrade_to_the_next_major_with_the_library_preloaded_in_both_clusters() {
    let Some(old_bin) = old_bin_with_the_library() else { return };
    let mut old = Cluster::init_with_bin(&old_bin, &["--data-checksums"], &[PRELOAD, WORKER]);
    old.start();
    old.sql("CREATE EXTENSION snowflake_id");
    old.sql("CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), n int)");
    fill(&old, 10_000);
    // IDs the old cluster returned but no table holds (keys handed to
    // another system, rows deleted), issued a minute ahead of the clock as
    // after a burst, an advance or a clock that ran fast: only the state
    // file remembers them, so the new cluster must go on from it.
    old.sql("SELECT snowflake_advance_past(snowflake_from_timestamp(clock_timestamp() + interval '60 seconds'))");
    let old_max = old.query_i64("SELECT max(x) FROM (SELECT snowflake_nextval() AS x FROM generate_series(1, 1000)) s");
    // template1 is dropped and made again by pg_upgrade's restore: a barrier
    // the keeper of the new cluster must absorb (0.3.0 hung here for ever).
    old.stop();

    let mut new = Cluster::init(&[PRELOAD, WORKER]);
    new.stop_on_drop();
    old.stop_on_drop();
    pg_upgrade(&old, &old_bin, &new);

    // docs/operations.md's steps after pg_upgrade: the old data directory's
    // state file into the new one before its first start (pg_upgrade copies
    // no file of ours), then past the largest stored ID as a backstop.
    carry_state_file(&old, &new);
    new.start();
    assert_eq!(new.query_i64("SELECT count(*) FROM orders"), 10_000);
    new.sql("SELECT snowflake_advance_past(max(id)) FROM orders");
    fill(&new, 1_000);
    assert_eq!(new.query_i64("SELECT count(DISTINCT id) FROM orders"), 11_000);
    let above = new.query_i64(&format!("SELECT count(*) FROM orders WHERE id > {old_max}"));
    assert_eq!(above, 1_000, "not every ID drawn after the upgrade is above every ID the old cluster returned");
    let version = new.query_text("SELECT extversion FROM pg_extension WHERE extname = 'snowflake_id'");
    assert_eq!(version, env!("CARGO_PKG_VERSION"), "the extension is not at its version after the upgrade");
}

/// A logical replication publisher upgraded with its subscription's slot.
/// Since 17, pg_upgrade carries logical slots over, and first decodes the
/// WAL of each from its confirmed position to the end to check that the
/// subscriber has everything: the mark's WAL records, which the library
/// writes while IDs are drawn and on its own, are in that WAL. The upgrade
/// must succeed with them there, the slot come over, and the subscriber go
/// on receiving from the upgraded publisher, every new ID above every one
/// it had.
#[test]
fn pg_upgrade_of_a_publisher_keeps_its_slot_and_the_subscriber_receives_ids_above_the_earlier_ones() {
    let Some(old_bin) = old_bin_with_the_library() else { return };
    let mut conf = vec![PRELOAD, WORKER];
    conf.extend_from_slice(LOGICAL);
    let mut old = Cluster::init_with_bin(&old_bin, &["--data-checksums"], &conf);
    old.start();
    old.sql("CREATE EXTENSION snowflake_id");
    old.sql("CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), n int)");
    old.sql("CREATE PUBLICATION p FOR TABLE orders");

    // The subscriber runs the major under test, with a worker id of its own.
    let mut sub_conf = vec!["snowflake_id.worker_id = 22"];
    sub_conf.extend_from_slice(LOGICAL);
    let subscriber = Cluster::preloaded(&sub_conf);
    subscriber.sql("CREATE TABLE orders (id bigint PRIMARY KEY, n int)");
    subscriber
        .sql(&format!("CREATE SUBSCRIPTION s CONNECTION '{}' PUBLICATION p WITH (copy_data = false)", conninfo(&old)));
    wait_until("the subscription's slot on the publisher", WAIT, || {
        old.query_i64("SELECT count(*) FROM pg_replication_slots WHERE slot_name = 's' AND active") == 1
    });
    for _ in 0..10 {
        fill(&old, 1_000);
    }
    let old_max = old.query_i64("SELECT max(id) FROM orders");
    wait_until("the subscriber to have every row", WAIT, || {
        subscriber.query_i64("SELECT count(*) FROM orders") == 10_000
    });
    // pg_upgrade's own order: the subscription stopped, so that its slot is
    // idle, then the publisher shut down cleanly.
    subscriber.sql("ALTER SUBSCRIPTION s DISABLE");
    wait_until("the slot to be released", WAIT, || {
        old.query_i64("SELECT count(*) FROM pg_replication_slots WHERE slot_name = 's' AND NOT active") == 1
    });
    old.stop();

    let mut new = Cluster::init(&conf);
    new.stop_on_drop();
    old.stop_on_drop();
    pg_upgrade(&old, &old_bin, &new);

    new.start();
    assert_eq!(
        new.query_i64("SELECT count(*) FROM pg_replication_slots WHERE slot_name = 's' AND slot_type = 'logical'"),
        1,
        "the subscription's slot did not come over"
    );
    new.sql("SELECT snowflake_advance_past(max(id)) FROM orders");
    subscriber.sql(&format!("ALTER SUBSCRIPTION s CONNECTION '{}'", conninfo(&new)));
    subscriber.sql("ALTER SUBSCRIPTION s ENABLE");
    fill(&new, 1_000);
    wait_until("the subscriber to receive from the upgraded publisher", WAIT, || {
        subscriber.query_i64("SELECT count(*) FROM orders") == 11_000
    });
    let above = subscriber.query_i64(&format!("SELECT count(*) FROM orders WHERE id > {old_max}"));
    assert_eq!(above, 1_000, "the subscriber received IDs at or below the ones it had");
    assert_eq!(new.query_i64("SELECT count(DISTINCT id) FROM orders"), 11_000);
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
