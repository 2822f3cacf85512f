//! Many connections drawing from one server's generator at once.

mod common;

use std::thread;

use common::{assert_no_duplicates, assert_strictly_increasing, draw_in_order, Cluster};

const CONNECTIONS: usize = 4;
const PER_CONNECTION: i64 = 100_000;

fn check_decoded(cluster: &Cluster, ids: &[i64], worker_id: i32) {
    let mut client = cluster.connect();
    let sample: Vec<i64> = ids.iter().step_by(997).copied().chain(ids.last().copied()).collect();
    let rows = client
        .query(
            "SELECT (d).worker_id, abs(extract(epoch FROM (d).ts - clock_timestamp()))::float8
               FROM (SELECT snowflake_decode(id) AS d FROM unnest($1::bigint[]) id) s",
            &[&sample],
        )
        .expect("decode");
    for row in rows {
        assert_eq!(row.get::<_, i32>(0), worker_id);
        let age: f64 = row.get(1);
        assert!(age < 30.0, "decoded time is {age} s away from now");
    }
}

#[test]
fn concurrent_select_and_default_never_repeat() {
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 5"]);
    cluster.sql("CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), conn int, n int)");

    // Per connection: its SELECT IDs, its INSERT IDs, and all of them in
    // the order they were drawn.
    let per_conn: Vec<(Vec<i64>, Vec<i64>, Vec<i64>)> = thread::scope(|s| {
        let handles: Vec<_> = (0..CONNECTIONS)
            .map(|c| {
                let cluster = &cluster;
                s.spawn(move || {
                    let mut client = cluster.connect();
                    let mut selected = Vec::new();
                    let mut inserted = Vec::new();
                    let mut in_order = Vec::new();
                    // Alternate the two paths so both really run at the same time.
                    for _ in 0..4 {
                        let batch = draw_in_order(&mut client, PER_CONNECTION / 4);
                        in_order.extend(&batch);
                        selected.extend(batch);
                        let rows = client
                            .query(
                                "INSERT INTO t (conn, n) SELECT $1, g FROM generate_series(1, $2::int) g RETURNING id",
                                &[&(c as i32), &((PER_CONNECTION / 4) as i32)],
                            )
                            .expect("insert");
                        let batch: Vec<i64> = rows.iter().map(|r| r.get::<_, i64>(0)).collect();
                        in_order.extend(&batch);
                        inserted.extend(batch);
                    }
                    (selected, inserted, in_order)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("worker thread")).collect()
    });

    for (c, (selected, inserted, in_order)) in per_conn.iter().enumerate() {
        assert_eq!(selected.len() as i64, PER_CONNECTION);
        assert_eq!(inserted.len() as i64, PER_CONNECTION);
        assert_strictly_increasing(selected, &format!("connection {c} SELECT"));
        assert_strictly_increasing(inserted, &format!("connection {c} INSERT"));
        // Each connection's IDs increase across both paths too.
        assert_strictly_increasing(in_order, &format!("connection {c}, SELECT and INSERT in turn"));
        check_decoded(&cluster, in_order, 5);
    }
    let all: Vec<Vec<i64>> = per_conn.iter().flat_map(|(a, b, _)| [a.clone(), b.clone()]).collect();
    let distinct = assert_no_duplicates(&all);
    assert_eq!(distinct as i64, 2 * PER_CONNECTION * CONNECTIONS as i64);
    assert_eq!(cluster.query_i64("SELECT count(*) FROM t"), PER_CONNECTION * CONNECTIONS as i64);
    assert!(cluster.query_i64("SELECT ids_issued FROM snowflake_id_status") >= distinct as i64);
}

#[test]
fn copy_and_insert_select_fill_the_default() {
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 9"]);
    let mut client = cluster.connect();
    client
        .batch_execute(
            "CREATE TABLE events (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), body text);
             INSERT INTO events (body) SELECT 'bulk ' || g FROM generate_series(1, 5000) g;",
        )
        .unwrap();
    let mut writer = client.copy_in("COPY events (body) FROM STDIN").unwrap();
    use std::io::Write;
    for i in 0..5000 {
        writeln!(writer, "copied {i}").unwrap();
    }
    writer.finish().unwrap();
    let row = client
        .query_one(
            "SELECT count(*), count(DISTINCT id), bool_and((snowflake_decode(id)).worker_id = 9),
                    max(id) FILTER (WHERE body LIKE 'bulk%') < min(id) FILTER (WHERE body LIKE 'copied%')
               FROM events",
            &[],
        )
        .unwrap();
    assert_eq!(row.get::<_, i64>(0), 10_000);
    assert_eq!(row.get::<_, i64>(1), 10_000);
    assert!(row.get::<_, bool>(2));
    assert!(row.get::<_, bool>(3), "rows copied later must have larger IDs");
}

#[test]
fn parallel_workers_draw_unique_ids() {
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 3", "max_parallel_workers_per_gather = 2"]);
    let mut client = cluster.connect();
    client
        .batch_execute(
            "CREATE TABLE src AS SELECT g FROM generate_series(1, 300000) g;
             ANALYZE src;
             SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0;",
        )
        .unwrap();
    let query = "SELECT count(*), count(DISTINCT id) FROM (SELECT snowflake_nextval() AS id FROM src) s";
    // Workers must really run the function: a Gather alone may launch none.
    let plan: Vec<String> =
        client.query(&format!("EXPLAIN ANALYZE {query}"), &[]).unwrap().iter().map(|r| r.get(0)).collect();
    let launched: i64 = plan
        .iter()
        .find_map(|l| l.trim().strip_prefix("Workers Launched: "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("expected a parallel plan: {plan:?}"));
    assert!(launched > 0, "no parallel worker launched: {plan:?}");
    let row = client.query_one(query, &[]).unwrap();
    assert_eq!(row.get::<_, i64>(0), 300_000);
    assert_eq!(row.get::<_, i64>(1), 300_000);
}
