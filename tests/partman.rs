//! Partitioning a table by its snowflake key with pg_partman 4.7 (Debian's
//! postgresql-15-partman), ID-based native partitioning with
//! `p_interval := snowflake_id_span('1 day')`: partitions fall on UTC days,
//! rows land in the partition of the day they were made, and premaking and
//! retention work. Debian 12 packages pg_partman for PostgreSQL 15 only, so
//! that test runs on 15 alone; the plain range partitions run on every major.

mod common;

use common::Cluster;

/// (start day relative to today in UTC, number of rows) of each partition,
/// ordered, with a check that every partition is one whole UTC day.
fn partition_days(client: &mut postgres::Client) -> Vec<(i32, i64)> {
    let rows = client
        .query(
            "SELECT (snowflake_timestamp(i.child_start_id) AT TIME ZONE 'UTC')::date - (now() AT TIME ZONE 'UTC')::date,
                    (snowflake_timestamp(i.child_start_id) AT TIME ZONE 'UTC')::time = '00:00',
                    i.child_end_id - i.child_start_id + 1 = snowflake_id_span('1 day'),
                    (SELECT count(*) FROM events e WHERE e.tableoid = format('%I.%I', p.partition_schemaname, p.partition_tablename)::regclass)
               FROM partman.show_partitions('public.events') p,
                    partman.show_partition_info(format('%s.%s', p.partition_schemaname, p.partition_tablename), NULL, 'public.events') i
              ORDER BY i.child_start_id",
            &[],
        )
        .expect("partitions");
    rows.iter()
        .map(|r| {
            assert!(r.get::<_, bool>(1), "a partition does not start at a UTC midnight");
            assert!(r.get::<_, bool>(2), "a partition is not one day of IDs");
            (r.get(0), r.get(3))
        })
        .collect()
}

#[test]
fn pg_partman_partitions_by_utc_day_premakes_and_drops() {
    if !common::only_on_major(15, "pg_partman is Debian 12's postgresql-15-partman, built for 15 only") {
        return;
    }
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 1"]);
    let mut client = cluster.connect();
    client
        .batch_execute(
            "CREATE SCHEMA partman;
             CREATE EXTENSION pg_partman SCHEMA partman;
             CREATE TABLE events (id bigint NOT NULL DEFAULT snowflake_nextval(), body text, PRIMARY KEY (id))
                 PARTITION BY RANGE (id);
             -- Three days back, premake 4: partitions for days -3 .. +1.
             SELECT partman.create_parent('public.events', 'id', 'native', snowflake_id_span('1 day')::text,
                                          p_premake := 4,
                                          p_start_partition := snowflake_from_timestamp(now() - interval '3 days')::text);",
        )
        .unwrap();
    let days: Vec<i32> = partition_days(&mut client).iter().map(|d| d.0).collect();
    assert_eq!(days, vec![-3, -2, -1, 0, 1]);

    // Rows of earlier days (IDs made from their instants, as a backfill
    // would carry them) and of today (the column default).
    client
        .batch_execute(
            "CREATE TEMP TABLE d0 AS SELECT date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS midnight;
             INSERT INTO events (id, body)
                  SELECT snowflake_from_timestamp(midnight + k * interval '1 day' + interval '1 hour') + n, 'day ' || k
                    FROM d0, generate_series(-3, -1) k, generate_series(0, 9) n;
             INSERT INTO events (body) SELECT 'now' FROM generate_series(1, 10);",
        )
        .unwrap();
    // Every row is in the partition of its own UTC day; none in the default.
    let misplaced: i64 = client
        .query_one(
            "SELECT count(*) FROM events e,
                    partman.show_partition_info('public.' || e.tableoid::regclass::text, NULL, 'public.events') i
              WHERE (snowflake_timestamp(e.id) AT TIME ZONE 'UTC')::date
                    <> (snowflake_timestamp(i.child_start_id) AT TIME ZONE 'UTC')::date",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(misplaced, 0);
    assert_eq!(cluster.query_i64("SELECT count(*) FROM events_default"), 0);
    assert_eq!(partition_days(&mut client).iter().map(|d| d.1).sum::<i64>(), 40);

    // A row of tomorrow: maintenance premakes four days past it.
    client
        .batch_execute(
            "INSERT INTO events (id, body)
                 SELECT snowflake_from_timestamp(midnight + interval '1 day 1 hour'), 'tomorrow' FROM d0;
             SELECT partman.run_maintenance('public.events');",
        )
        .unwrap();
    let days: Vec<i32> = partition_days(&mut client).iter().map(|d| d.0).collect();
    assert_eq!(days, (-3..=5).collect::<Vec<_>>());

    // Retention of two days of IDs below the newest: days -3 and -2 end
    // before it and are dropped with their rows; day -1 stays.
    client
        .batch_execute(
            "UPDATE partman.part_config SET retention = snowflake_id_span('2 days')::text, retention_keep_table = false
              WHERE parent_table = 'public.events';
             SELECT partman.run_maintenance('public.events');",
        )
        .unwrap();
    let days = partition_days(&mut client);
    assert_eq!(days.first(), Some(&(-1, 10)), "{days:?}");
    assert_eq!(cluster.query_i64("SELECT count(*) FROM events"), 21);
}

/// The README's plain PostgreSQL recipe: monthly range partitions with
/// bounds written as instants.
#[test]
fn range_partitions_from_timestamps_hold_the_rows_of_their_month() {
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 2"]);
    let mut client = cluster.connect();
    client
        .batch_execute(
            "CREATE TABLE log (id bigint NOT NULL DEFAULT snowflake_nextval(), line text) PARTITION BY RANGE (id);",
        )
        .unwrap();
    let ddl: String = client
        .query_one(
            "SELECT format('CREATE TABLE log_this_month PARTITION OF log FOR VALUES FROM (%s) TO (%s)',
                           snowflake_from_timestamp(date_trunc('month', now(), 'UTC')),
                           snowflake_from_timestamp(date_trunc('month', now(), 'UTC') + interval '1 month'))",
            &[],
        )
        .unwrap()
        .get(0);
    client.batch_execute(&ddl).unwrap();
    client.batch_execute("INSERT INTO log (line) SELECT 'x' FROM generate_series(1, 1000)").unwrap();
    assert_eq!(cluster.query_i64("SELECT count(*) FROM log_this_month"), 1000);
}
