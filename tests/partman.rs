//! Partitioning a table by its snowflake key with pg_partman 4.7 (Debian's
//! postgresql-15-partman), ID-based native partitioning with
//! `p_interval := snowflake_id_span('1 day')`: partitions fall on UTC days,
//! rows land in the partition of the day they were made, and premaking and
//! retention work. Debian 12 packages pg_partman for PostgreSQL 15 only, so
//! that test runs on 15 alone; the plain range partitions run on every major.

mod common;

use common::{describe, Cluster};

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

/// A table pg_partman partitions by its snowflake key, whose old rows still
/// carry keys from a sequence (small numbers: no ID-time partition holds
/// them, so they sit in the default partition), re-keyed with
/// `snowflake_convert(..., rekey_by => 'created_at')`: the recent ones move
/// to their partitions with the UPDATE itself, the older ones stay in the
/// default partition until `partman.partition_data_proc` makes their
/// partitions and moves them there. Afterwards every row, old, imported or
/// new, is in the partition whose range holds its ID, and the ID tells the
/// row's time.
#[test]
fn a_rekey_lets_pg_partman_move_old_rows_to_their_id_time_partitions() {
    if !common::only_on_major(15, "pg_partman is Debian 12's postgresql-15-partman, built for 15 only") {
        return;
    }
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 4"]);
    let mut c = cluster.connect();
    c.batch_execute(
        "CREATE SCHEMA partman;
         CREATE EXTENSION pg_partman SCHEMA partman;
         CREATE TABLE events (id bigserial, created_at timestamptz NOT NULL, body text NOT NULL, PRIMARY KEY (id))
             PARTITION BY RANGE (id);
         -- Weeks of IDs from a week back, two premade, and the default partition.
         SELECT partman.create_parent('public.events', 'id', 'native', snowflake_id_span('7 days')::text,
                                      p_premake := 2,
                                      p_start_partition := snowflake_from_timestamp(now() - interval '7 days')::text);
         -- 3,000 old rows over 22 months from 2025-01-03, pairs at one instant, and
         -- 40 of the last 40 hours: keys 1 .. 3,040 from the sequence.
         INSERT INTO events (created_at, body)
         SELECT timestamptz '2025-01-03 00:00+00' + (g / 2) * interval '10 hours 34 minutes 0.123 seconds',
                'old ' || g
           FROM generate_series(0, 2999) g;
         INSERT INTO events (created_at, body)
         SELECT date_trunc('second', now()) - g * interval '1 hour', 'recent ' || g FROM generate_series(1, 40) g;
         CREATE TABLE before AS SELECT body, created_at FROM events;",
    )
    .unwrap_or_else(|e| panic!("set up: {}", describe(&e)));
    assert_eq!(cluster.query_i64("SELECT count(*) FROM events_default"), 3040, "old keys sit in the default partition");

    c.batch_execute("SELECT snowflake_convert('events', 'id', rekey_by => 'created_at')")
        .unwrap_or_else(|e| panic!("re-key: {}", describe(&e)));
    // The recent rows moved to their week with the UPDATE; the rest wait.
    assert_eq!(cluster.query_i64("SELECT count(*) FROM events_default"), 3000);
    c.batch_execute("CALL partman.partition_data_proc('public.events', p_wait := 0, p_quiet := true)")
        .unwrap_or_else(|e| panic!("partition_data_proc: {}", describe(&e)));
    assert_eq!(cluster.query_i64("SELECT count(*) FROM events_default"), 0, "rows left in the default partition");

    // After: an import of past instants (straight into their partitions)
    // and new rows with live IDs.
    c.batch_execute(
        "INSERT INTO events (id, created_at, body)
         SELECT snowflake_nextval_at(t), t, 'imported ' || g
           FROM (SELECT g, timestamptz '2025-02-01 12:00+00' + g * interval '3 days 1 ms' AS t
                   FROM generate_series(0, 199) g) s;
         INSERT INTO events (created_at, body) SELECT clock_timestamp(), 'new ' || g FROM generate_series(1, 100) g;",
    )
    .unwrap_or_else(|e| panic!("after: {}", describe(&e)));

    // Every row is in the partition whose range of IDs holds its ID, and
    // that range's time holds the row's time.
    let (rows, placed, in_time): (i64, i64, i64) = {
        let r = c
            .query_one(
                "WITH parts AS (
                     SELECT format('%I.%I', p.partition_schemaname, p.partition_tablename)::regclass AS part,
                            i.child_start_id, i.child_end_id
                       FROM partman.show_partitions('public.events') p,
                            partman.show_partition_info(format('%s.%s', p.partition_schemaname, p.partition_tablename),
                                                        NULL, 'public.events') i)
                 SELECT count(*),
                        count(*) FILTER (WHERE e.id BETWEEN p.child_start_id AND p.child_end_id),
                        count(*) FILTER (WHERE e.created_at >= snowflake_timestamp(p.child_start_id)
                                           AND e.created_at < snowflake_timestamp(p.child_end_id + 1))
                   FROM events e LEFT JOIN parts p ON p.part = e.tableoid",
                &[],
            )
            .unwrap_or_else(|e| panic!("placement: {}", describe(&e)));
        (r.get(0), r.get(1), r.get(2))
    };
    assert_eq!((rows, placed, in_time), (3340, 3340, 3340), "rows, in their partition's IDs, in its time");
    // Old and imported rows: the ID tells the row's time to the millisecond;
    // new rows: the ID was made within a second of the row's clock_timestamp().
    let (exact, live): (i64, i64) = {
        let r = c
            .query_one(
                "SELECT count(*) FILTER (WHERE body NOT LIKE 'new %'
                                           AND snowflake_timestamp(id) = date_trunc('milliseconds', created_at)),
                        count(*) FILTER (WHERE body LIKE 'new %'
                                           AND abs(extract(epoch FROM snowflake_timestamp(id) - created_at)) < 1)
                   FROM events",
                &[],
            )
            .unwrap();
        (r.get(0), r.get(1))
    };
    assert_eq!((exact, live), (3240, 100), "IDs that tell their row's time: old and imported, new");
    // The old rows kept their times and bodies, one row each.
    let changed: i64 = cluster.query_i64(
        "SELECT count(*) FROM before b FULL JOIN events e USING (body)
          WHERE e.body IS NULL OR b.body IS NULL AND e.body NOT LIKE 'imported %' AND e.body NOT LIKE 'new %'
             OR b.created_at <> e.created_at",
    );
    assert_eq!(changed, 0);
    // A range scan by ID time finds exactly the rows of that time, across
    // partitions made by create_parent, partition_data_proc and the import.
    let (by_id, by_time, differ): (i64, i64, i64) = {
        let r = c
            .query_one(
                "WITH by_id AS (SELECT body FROM events WHERE id >= snowflake_from_timestamp('2025-03-10 13:00+00')
                                                         AND id < snowflake_from_timestamp('2026-02-02 07:30+00')),
                      by_time AS (SELECT body FROM events WHERE created_at >= '2025-03-10 13:00+00'
                                                            AND created_at < '2026-02-02 07:30+00')
                 SELECT (SELECT count(*) FROM by_id), (SELECT count(*) FROM by_time),
                        (SELECT count(*) FROM ((TABLE by_id EXCEPT TABLE by_time) UNION ALL
                                               (TABLE by_time EXCEPT TABLE by_id)) d)",
                &[],
            )
            .unwrap_or_else(|e| panic!("range scan: {}", describe(&e)));
        (r.get(0), r.get(1), r.get(2))
    };
    assert_eq!((by_id, differ), (by_time, 0), "the ID range and the time range hold other rows");
    assert!(by_id > 1000, "{by_id} rows in the range");
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
