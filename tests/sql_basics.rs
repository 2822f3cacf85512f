//! The SQL functions one at a time, inside a preloaded server with worker id
//! 42, as a client of a server of the major under test (`SNOWFLAKE_PG_BIN`):
//! what `#[pg_test]` functions inside the library once checked through
//! `cargo pgrx test`, the same SQL and the same assertions, so that the
//! suite needs no second build of the extension per major.
//! Each test has its own cluster (one `#[pg_test]` each had its own
//! transaction in one server).

mod common;

use common::Cluster;
use postgres::types::FromSqlOwned;

/// The settings `cargo pgrx test` used (`pg_test::postgresql_conf_options`).
fn server() -> Cluster {
    Cluster::preloaded(&["snowflake_id.worker_id = '42'"])
}

/// The one value of a query that must return one non-NULL value.
fn one<T: FromSqlOwned>(c: &Cluster, sql: &str) -> T {
    let row = c.connect().query_one(sql, &[]).unwrap_or_else(|e| panic!("{sql}: {}", common::describe(&e)));
    row.get::<_, Option<T>>(0).unwrap_or_else(|| panic!("{sql} returned NULL"))
}

/// The statement fails with exactly this message (as `#[pg_test(error = ...)]` checked).
fn fails_with(c: &Cluster, sql: &str, message: &str) {
    let e = c.sql_error(sql);
    assert_eq!(e.message, message, "{sql}: {e:?}");
}

#[test]
fn nextval_increases_and_decodes_to_this_worker_and_now() {
    let c = server();
    assert!(one::<bool>(
        &c,
        "SELECT bool_and(id > prev) FROM (SELECT id, lag(id) OVER (ORDER BY n) AS prev
           FROM (SELECT n, snowflake_nextval() AS id FROM generate_series(1, 20000) n) s) t
         WHERE prev IS NOT NULL"
    ));
    assert_eq!(one::<i32>(&c, "SELECT (snowflake_decode(snowflake_nextval())).worker_id"), 42);
    assert!(one::<bool>(
        &c,
        "SELECT abs(extract(epoch FROM (snowflake_decode(snowflake_nextval())).ts - clock_timestamp())) < 5"
    ));
}

/// Discord's documented example ID and its documented breakdown:
/// https://discord.com/developers/docs/reference#snowflakes
#[test]
fn decodes_discords_documented_id() {
    let c = server();
    let row = one::<String>(
        &c,
        "SELECT format('%s|%s|%s', (d).ts AT TIME ZONE 'UTC', (d).worker_id, (d).sequence)
           FROM (SELECT snowflake_decode(175928847299117063, '2015-01-01 00:00:00+00', 10, 12) AS d) s",
    );
    assert_eq!(row, "2016-04-30 11:18:25.796|32|7");
}

#[test]
fn from_timestamp_bounds_ids_by_time() {
    let c = server();
    assert_eq!(one::<i64>(&c, "SELECT snowflake_from_timestamp('2025-01-01 00:00:00+00')"), 0);
    assert_eq!(one::<i64>(&c, "SELECT snowflake_from_timestamp('2025-01-01 00:00:00.001+00')"), 1 << 22);
    assert_eq!(one::<i64>(&c, "SELECT snowflake_from_timestamp('1999-01-01')"), 0);
    assert!(one::<bool>(
        &c,
        "SELECT snowflake_from_timestamp(now() - interval '1 second') <= id
            AND id < snowflake_from_timestamp(clock_timestamp() + interval '1 second')
           FROM (SELECT snowflake_nextval() AS id) s"
    ));
    assert!(one::<bool>(
        &c,
        "SELECT snowflake_from_timestamp((snowflake_decode(id)).ts) <= id FROM (SELECT snowflake_nextval() AS id) s"
    ));
}

#[test]
fn decode_null_is_null() {
    let c = server();
    assert!(one::<bool>(&c, "SELECT snowflake_decode(NULL) IS NULL"));
}

#[test]
fn decode_negative_is_an_error() {
    fails_with(&server(), "SELECT snowflake_decode(-1)", "snowflake_id: snowflake ID -1 is negative");
}

#[test]
fn decode_with_impossible_layout_is_an_error() {
    fails_with(
        &server(),
        "SELECT snowflake_decode(1, now(), 20, 12)",
        "snowflake_id: worker_bits (20) + sequence_bits (12) must be at most 22, each between 0 and 22",
    );
}

#[test]
fn worker_id_cannot_be_set() {
    fails_with(
        &server(),
        "SET snowflake_id.worker_id = '7'",
        "parameter \"snowflake_id.worker_id\" cannot be changed without restarting the server",
    );
}

#[test]
fn status_counts_issued_ids() {
    let c = server();
    c.sql("SELECT snowflake_nextval() FROM generate_series(1, 10)");
    assert!(one::<i64>(&c, "SELECT ids_issued FROM snowflake_id_status") >= 10);
    assert_eq!(one::<i64>(&c, "SELECT worker_id FROM snowflake_id_status"), 42);
    assert!(one::<bool>(&c, "SELECT last_id IS NOT NULL AND durable_mark >= logical_clock FROM snowflake_id_status"));
}

/// The running server's side of the supported versions (the version boundaries
/// are a unit test in `core/src/minors.rs`): the running server reports a
/// supported version, and the layout of the synchronous-standby status that
/// the extension picks from it is the right one. Read as the wrong layout
/// (a version it took to be older), a server without synchronous standbys
/// looks as if it had one that never flushes, and a new durable mark would
/// wait for it for ever; with the right one, IDs come at once.
#[test]
fn sync_status_layout_follows_the_running_minor() {
    let c = server();
    assert!(one::<bool>(&c, "SELECT current_setting('server_version_num')::int >= 150000"));
    let mut client = c.connect();
    client.batch_execute("SET statement_timeout = '20s'").expect("statement_timeout");
    let drawn: i64 = client
        .query_one("SELECT count(snowflake_nextval()) FROM generate_series(1, 200000)", &[])
        .unwrap_or_else(|e| panic!("drawing IDs without synchronous standbys: {}", common::describe(&e)))
        .get(0);
    assert_eq!(drawn, 200000);
}
