//! Decoding in SQL: the scalar accessors, the composite `snowflake_decode`
//! in both of its forms, time spans, and the planner hook that keeps the
//! FROM form inlined. Checked against plain SQL arithmetic on random IDs.

mod common;

use common::{describe, sql_error, Cluster};

/// Layouts to check (epoch, worker_bits, sequence_bits): the default,
/// JS-safe, Discord's, all-sequence and all-worker.
const LAYOUTS: [(&str, i32, i32); 5] = [
    ("2025-01-01 00:00:00+00", 10, 12),
    ("2025-06-01 00:00:00+00", 6, 6),
    ("2015-01-01 00:00:00+00", 10, 12),
    ("2020-01-01 00:00:00+00", 0, 22),
    ("2010-11-04 01:42:54.657+00", 22, 0),
];

#[test]
fn accessors_and_both_decode_forms_agree_with_plain_arithmetic() {
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 1"]);
    let mut client = cluster.connect();
    for (epoch, w, s) in LAYOUTS {
        // 20,000 random IDs (their timestamps stay within PostgreSQL's range
        // with at least 12 node bits), and the extremes. The reference time is
        // computed in whole days and milliseconds: interval arithmetic on one
        // large factor goes through float8 and loses microseconds.
        client
            .batch_execute(
                "DROP TABLE IF EXISTS r;
                 CREATE TABLE r AS SELECT (random() * 9223372036854775807)::bigint AS id FROM generate_series(1, 20000);
                 INSERT INTO r VALUES (0), (9223372036854775807);",
            )
            .unwrap();
        let n = w + s;
        let mismatches: i64 = client
            .query_one(
                "SELECT count(*) FROM r, snowflake_decode(r.id, $1::text::timestamptz, $2, $3) f
                  WHERE snowflake_timestamp(id, $1::text::timestamptz, $2, $3)
                            IS DISTINCT FROM $1::text::timestamptz
                                + ((id >> $4) / 86400000) * interval '1 day' + ((id >> $4) % 86400000) * interval '1 millisecond'
                     OR snowflake_worker_id(id, $1::text::timestamptz, $2, $3) IS DISTINCT FROM ((id >> $3) & ((1::bigint << $2) - 1))::int
                     OR snowflake_sequence(id, $1::text::timestamptz, $2, $3) IS DISTINCT FROM (id & ((1::bigint << $3) - 1))::int
                     OR (snowflake_decode(id, $1::text::timestamptz, $2, $3)).ts IS DISTINCT FROM snowflake_timestamp(id, $1::text::timestamptz, $2, $3)
                     OR snowflake_decode(id, $1::text::timestamptz, $2, $3) IS DISTINCT FROM f
                     OR f.worker_id IS DISTINCT FROM snowflake_worker_id(id, $1::text::timestamptz, $2, $3)
                     OR f.sequence IS DISTINCT FROM snowflake_sequence(id, $1::text::timestamptz, $2, $3)",
                &[&epoch, &w, &s, &n],
            )
            .unwrap()
            .get(0);
        assert_eq!(mismatches, 0, "layout {epoch} {w}+{s}");
    }

    // The server's layout: the one-argument forms equal the explicit ones.
    client.batch_execute("CREATE TABLE t AS SELECT snowflake_nextval() AS id FROM generate_series(1, 20000)").unwrap();
    let agree: bool = client
        .query_one(
            "SELECT bool_and(snowflake_timestamp(id) = snowflake_timestamp(id, '2025-01-01 00:00:00+00', 10, 12)
                         AND snowflake_worker_id(id) = 1 AND snowflake_worker_id(id, '2025-01-01', 10, 12) = 1
                         AND snowflake_sequence(id) = snowflake_sequence(id, '2025-01-01', 10, 12)
                         AND snowflake_decode(id) = snowflake_decode(id, '2025-01-01', 10, 12)
                         AND snowflake_from_timestamp(snowflake_timestamp(id)) <= id)
               FROM t",
            &[],
        )
        .unwrap()
        .get(0);
    assert!(agree);
}

#[test]
fn null_negative_and_bad_layouts_get_what_decode_gets() {
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 1"]);
    let mut client = cluster.connect();
    let row = client
        .query_one(
            "SELECT snowflake_timestamp(NULL) IS NULL AND snowflake_worker_id(NULL) IS NULL AND snowflake_sequence(NULL) IS NULL
                AND snowflake_timestamp(NULL, now(), 10, 12) IS NULL AND snowflake_worker_id(1, NULL, 10, 12) IS NULL
                AND snowflake_sequence(1, now(), NULL, 12) IS NULL
                AND snowflake_decode(NULL) IS NULL AND (snowflake_decode(NULL)).ts IS NULL
                AND (SELECT d IS NULL FROM snowflake_decode(NULL) d)",
            &[],
        )
        .unwrap();
    assert!(row.get::<_, bool>(0));
    // NULL in, NULL out, the whole value as in 0.1.0 (not a row of NULLs,
    // for which IS NULL is true too but count() counts it, coalesce() keeps
    // it and its text is "(,,)"); in FROM, one row of NULLs as ever.
    let row = client
        .query_one(
            "SELECT snowflake_decode(NULL)::text IS NULL, snowflake_decode(NULL, now(), 10, 12)::text IS NULL,
                    snowflake_decode(1, NULL, 10, 12)::text IS NULL, snowflake_decode(1, now(), 10, NULL)::text IS NULL,
                    (SELECT count(snowflake_decode(id))::int FROM (VALUES (1::bigint), (NULL), (2)) v(id)),
                    (SELECT count((snowflake_decode(id)).ts)::int FROM (VALUES (1::bigint), (NULL), (2)) v(id)),
                    coalesce(snowflake_decode(NULL), snowflake_decode(0))::text,
                    coalesce(snowflake_decode(NULL, '2025-01-01 00:00:00+00', 10, 12), snowflake_decode(4097))::text,
                    (SELECT count(*)::int FROM snowflake_decode(NULL) d WHERE d IS NULL AND d.ts IS NULL),
                    (SELECT count(*)::int FROM (VALUES (1::bigint), (NULL)) v(id), snowflake_decode(v.id) d)",
            &[],
        )
        .unwrap();
    let (whole, fields) = ((0..4).map(|i| row.get::<_, bool>(i)).collect::<Vec<_>>(), (row.get(4), row.get(5)));
    assert_eq!(whole, [true; 4], "snowflake_decode of a NULL argument is not NULL");
    assert_eq!(fields, (2, 2), "count() of decoded values and of a field");
    let epoch =
        client.query_one("SELECT '2025-01-01 00:00:00+00'::timestamptz::text", &[]).unwrap().get::<_, String>(0);
    assert_eq!(row.get::<_, String>(6), format!("(\"{epoch}\",0,0)"));
    assert_eq!(row.get::<_, String>(7), format!("(\"{epoch}\",1,1)"));
    assert_eq!((row.get::<_, i32>(8), row.get::<_, i32>(9)), (1, 2), "decoding NULL in FROM");
    for f in ["snowflake_timestamp", "snowflake_worker_id", "snowflake_sequence", "snowflake_decode"] {
        let e = sql_error(&mut client, &format!("SELECT {f}(-7)"));
        assert_eq!(
            (e.code.as_str(), e.message.as_str()),
            ("22003", "snowflake_id: snowflake ID -7 is negative"),
            "{f}"
        );
        let e = sql_error(&mut client, &format!("SELECT {f}(1, now(), 13, 10)"));
        assert_eq!(e.code, "22023", "{f}: {e:?}");
        let e = sql_error(&mut client, &format!("SELECT * FROM {f}(-7) x"));
        assert_eq!(e.code, "22003", "{f} in FROM: {e:?}");
    }
    // A layout whose timestamps leave PostgreSQL's range is an error, not a wrong time.
    let e = sql_error(&mut client, "SELECT snowflake_timestamp(9223372036854775807, now(), 0, 0)");
    assert_eq!(e.code, "22008", "{e:?}");
}

#[test]
fn decode_in_from_is_inlined_everywhere_it_appears() {
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 2"]);
    let mut client = cluster.connect();
    client
        .batch_execute(
            "CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), n int);
             INSERT INTO t (n) SELECT g FROM generate_series(1, 1000) g;
             CREATE VIEW v AS SELECT t.n, d.* FROM t, snowflake_decode(t.id) d;",
        )
        .unwrap();
    let plan = |client: &mut postgres::Client, sql: &str| -> String {
        let rows = client.query(&format!("EXPLAIN (VERBOSE, COSTS OFF) {sql}"), &[]).unwrap();
        rows.iter().map(|r| r.get::<_, String>(0)).collect::<Vec<_>>().join("\n")
    };
    for sql in [
        "SELECT d.ts, d.worker_id, d.sequence FROM t, snowflake_decode(t.id) d",
        "SELECT d.* FROM t CROSS JOIN LATERAL snowflake_decode(t.id, '2025-01-01', 10, 12) d",
        "SELECT * FROM v",
        "WITH x AS MATERIALIZED (SELECT d.ts FROM t, snowflake_decode(t.id) d) SELECT count(*) FROM x",
        "SELECT n FROM t WHERE EXISTS (SELECT 1 FROM snowflake_decode(t.id) d WHERE d.sequence > 5)",
    ] {
        let p = plan(&mut client, sql);
        assert!(!p.contains("Function Scan"), "not inlined: {sql}\n{p}");
        assert!(p.contains("snowflake_timestamp") || p.contains("snowflake_sequence"), "{sql}\n{p}");
    }
    // The results are those of the composite, row for row.
    let same: i64 = client
        .query_one(
            "SELECT count(*) FROM t, snowflake_decode(t.id) d
              WHERE d IS DISTINCT FROM snowflake_decode(t.id) OR d.worker_id <> 2",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(same, 0);
    assert_eq!(cluster.query_i64("SELECT count(*) FROM v"), 1000);
    // WITH ORDINALITY keeps the plain function scan, and works.
    assert_eq!(cluster.query_i64("SELECT max(o) FROM t, snowflake_decode(t.id) WITH ORDINALITY AS d(ts, w, s, o)"), 1);
}

#[test]
fn immutable_accessors_serve_expression_indexes_and_generated_columns() {
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 3"]);
    let mut client = cluster.connect();
    client
        .batch_execute(
            "CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), n int,
                             made timestamptz GENERATED ALWAYS AS (snowflake_timestamp(id, '2025-01-01 00:00:00+00', 10, 12)) STORED);
             CREATE INDEX t_made ON t (snowflake_timestamp(id, '2025-01-01 00:00:00+00', 10, 12));
             INSERT INTO t (n) SELECT g FROM generate_series(1, 20000) g;
             ANALYZE t;",
        )
        .unwrap();
    let query = "SELECT count(*) FROM t
                  WHERE snowflake_timestamp(id, '2025-01-01 00:00:00+00', 10, 12) >= now() - interval '1 hour'";
    let plan: Vec<String> = client.query(&format!("EXPLAIN {query}"), &[]).unwrap().iter().map(|r| r.get(0)).collect();
    // Without enable_seqscan = off: the index is chosen on its merits for a narrow range.
    client.batch_execute("SET enable_seqscan = off").unwrap();
    let forced: Vec<String> =
        client.query(&format!("EXPLAIN {query}"), &[]).unwrap().iter().map(|r| r.get(0)).collect();
    assert!(forced.iter().any(|l| l.contains("t_made")), "the expression index is not used: {forced:?} / {plan:?}");
    assert_eq!(cluster.query_i64(query), 20_000);
    assert_eq!(cluster.query_i64("SELECT count(*) FROM t WHERE made = snowflake_timestamp(id)"), 20_000);
    // The server-layout accessor is STABLE: PostgreSQL refuses it in an index.
    let e = sql_error(&mut client, "CREATE INDEX ON t (snowflake_timestamp(id))");
    assert_eq!(e.code, "42P17", "{e:?}");
}

#[test]
fn id_span_counts_the_ids_of_a_duration() {
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 4"]);
    let mut client = cluster.connect();
    assert_eq!(cluster.query_i64("SELECT snowflake_id_span('1 day')"), 86_400_000 << 22);
    assert_eq!(cluster.query_i64("SELECT snowflake_id_span('15 minutes 1 ms')"), 900_001 << 22);
    // The span between two instants is the difference of their smallest IDs.
    assert_eq!(
        cluster.query_i64(
            "SELECT snowflake_from_timestamp('2026-03-02 00:00:00+00') - snowflake_from_timestamp('2026-03-01 00:00:00+00')
                  - snowflake_id_span('1 day')"
        ),
        0
    );
    for bad in ["1 month", "0", "-1 day", "1.5 milliseconds", "30000000 days"] {
        let e = sql_error(&mut client, &format!("SELECT snowflake_id_span('{bad}')"));
        assert_eq!(e.code, "22023", "{bad}: {e:?}");
        assert!(!e.hint.is_empty(), "{bad}: {e:?}");
    }
}

/// The hook looks the extension up once per backend, and again after the
/// catalogs change: a session that planned queries before CREATE EXTENSION
/// (in another session) gets the rewrites after it, and none after DROP.
#[test]
fn the_hook_follows_create_and_drop_extension_in_other_sessions() {
    let cluster = Cluster::preloaded_without_extension(&["snowflake_id.worker_id = 6"]);
    let mut a = cluster.connect();
    let mut b = cluster.connect();
    a.batch_execute("CREATE TABLE t AS SELECT g::bigint AS id FROM generate_series(1, 100) g").unwrap();
    let plan = |client: &mut postgres::Client, sql: &str| -> String {
        let rows = client.query(&format!("EXPLAIN (VERBOSE, COSTS OFF) {sql}"), &[]).unwrap();
        rows.iter().map(|r| r.get::<_, String>(0)).collect::<Vec<_>>().join("\n")
    };
    let from = "SELECT d.ts FROM t, snowflake_decode(t.id) d";
    let field = "SELECT (snowflake_decode(id)).ts FROM t";
    // No extension: planned as PostgreSQL plans it (and an own function of that name is left alone).
    a.batch_execute(
        "CREATE FUNCTION snowflake_decode(id bigint, OUT ts bigint, OUT w int) LANGUAGE sql AS 'SELECT id, 1'",
    )
    .unwrap();
    assert!(plan(&mut a, from).contains("Function Scan"));
    a.batch_execute("DROP FUNCTION snowflake_decode(bigint)").unwrap();
    b.batch_execute("CREATE EXTENSION snowflake_id").unwrap();
    let p = plan(&mut a, from);
    assert!(!p.contains("Function Scan") && p.contains("snowflake_timestamp"), "after CREATE EXTENSION:\n{p}");
    let p = plan(&mut a, field);
    assert!(!p.contains("CASE") && p.contains("snowflake_timestamp(id)"), "after CREATE EXTENSION:\n{p}");
    b.batch_execute("DROP EXTENSION snowflake_id").unwrap();
    a.batch_execute(
        "CREATE FUNCTION snowflake_decode(id bigint, OUT ts bigint, OUT w int) LANGUAGE sql AS 'SELECT id, 1'",
    )
    .unwrap();
    assert!(plan(&mut a, from).contains("Function Scan"));
    assert_eq!(
        a.query_one("SELECT sum(d.ts)::bigint FROM t, snowflake_decode(t.id) d", &[]).unwrap().get::<_, i64>(0),
        5050
    );
}

/// An ERROR inside the hook's walk is an ordinary error: the session and
/// the server go on. Here the stack depth limit, lowered between PREPARE and
/// EXECUTE so that it strikes in planning, on an expression 1,000 calls deep
/// (no subquery: PostgreSQL's own walkers before the planner skip
/// expressions without one, so the hook's walk is the first to go that deep;
/// gdb shows the error raised under `planner::visit`).
#[test]
fn an_error_inside_the_hooks_walk_is_an_ordinary_error() {
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 7"]);
    let mut client = cluster.connect();
    let started: String = client.query_one("SELECT pg_postmaster_start_time()::text", &[]).unwrap().get(0);
    let depth = 1000;
    let nested = format!(
        "SELECT {}(snowflake_decode(n::bigint)).sequence{} FROM generate_series(1, 3) n",
        "abs(".repeat(depth),
        ")".repeat(depth)
    );
    client.batch_execute("SET max_stack_depth = '7MB'").unwrap();
    client.batch_execute(&format!("PREPARE deep AS {nested}")).unwrap();
    client.batch_execute("SET max_stack_depth = '100kB'").unwrap();
    let e = sql_error(&mut client, "EXECUTE deep");
    assert_eq!(e.code, "54001", "{e:?}");
    // With room again the same statement plans and runs: nothing left half-done.
    client.batch_execute("SET max_stack_depth = '7MB'").unwrap();
    assert_eq!(client.query("EXECUTE deep", &[]).unwrap().len(), 3);
    client.batch_execute("RESET max_stack_depth").unwrap();
    assert_eq!(client.query_one("SELECT count(*) FROM snowflake_decode(1) d", &[]).unwrap().get::<_, i64>(0), 1);
    let again: String = client.query_one("SELECT pg_postmaster_start_time()::text", &[]).unwrap().get(0);
    assert_eq!(again, started, "the server restarted");
    assert!(!cluster.log().contains("terminated by signal"), "{}", cluster.log());
}

/// A field of the composite is the one accessor call, wherever the field
/// selection appears: no composite built per row, no CASE for NULL.
#[test]
fn a_field_of_decode_is_the_accessor_alone() {
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 5"]);
    let mut client = cluster.connect();
    client
        .batch_execute(
            "CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), n int);
             INSERT INTO t (n) SELECT g FROM generate_series(1, 1000) g;
             INSERT INTO t VALUES (0, NULL);
             CREATE TABLE u (id bigint);
             INSERT INTO u VALUES (NULL), (42);
             CREATE VIEW w AS SELECT n, (snowflake_decode(id)).ts FROM t;",
        )
        .unwrap();
    let plan = |client: &mut postgres::Client, sql: &str| -> String {
        let rows = client.query(&format!("EXPLAIN (VERBOSE, COSTS OFF) {sql}"), &[]).unwrap();
        rows.iter().map(|r| r.get::<_, String>(0)).collect::<Vec<_>>().join("\n")
    };
    for (sql, accessor) in [
        ("SELECT (snowflake_decode(id)).ts FROM t", "snowflake_timestamp(id)"),
        ("SELECT count((snowflake_decode(id)).worker_id) FROM t", "snowflake_worker_id(id)"),
        ("SELECT n FROM t WHERE (snowflake_decode(id)).sequence > 3", "snowflake_sequence(t.id)"),
        ("SELECT (snowflake_decode(id, '2025-01-01', 10, 12)).ts FROM t", "snowflake_timestamp(id, '2025-01-01"),
        ("SELECT ts FROM w", "snowflake_timestamp(t.id)"),
        ("SELECT (SELECT (snowflake_decode(u.id)).ts FROM u WHERE u.id = t.n) FROM t", "snowflake_timestamp(u.id)"),
        ("SELECT (snowflake_decode(id)).* FROM t", "snowflake_sequence(id)"),
    ] {
        let p = plan(&mut client, sql);
        assert!(p.contains(accessor), "{sql}: {accessor} expected\n{p}");
        assert!(!p.contains("CASE") && !p.contains("ROW("), "a composite is built per row: {sql}\n{p}");
    }
    // The whole value keeps the CASE that makes NULL decode to NULL, for a
    // column that may hold NULL (since 19 the planner folds `id IS NULL` to
    // false for a NOT NULL column such as t's key, and the CASE with it).
    assert!(plan(&mut client, "SELECT snowflake_decode(id) FROM u").contains("CASE WHEN"));
    // And the fields are the composite's, NULL for NULL.
    let same: i64 = client
        .query_one(
            "SELECT count(*) FROM (SELECT id FROM t UNION ALL SELECT id FROM u) x
              WHERE (snowflake_decode(id)).ts IS DISTINCT FROM snowflake_timestamp(id)
                 OR (snowflake_decode(id)).worker_id IS DISTINCT FROM (SELECT (d).worker_id FROM (SELECT snowflake_decode(id) d) s)
                 OR ((snowflake_decode(id)).sequence IS NULL) <> (id IS NULL)",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(same, 0);
}

/// An error raised while the hook's planner runs (constant folding of a
/// decode call) reaches the client as PostgreSQL raised it, even with
/// RUST_BACKTRACE in the server's environment: no Rust backtrace as DETAIL.
#[test]
fn errors_while_planning_carry_no_rust_backtrace() {
    let mut cluster = Cluster::init(&["shared_preload_libraries = 'snowflake_id'", "snowflake_id.worker_id = 1"]);
    cluster.set_env(vec![("RUST_BACKTRACE", "1".to_string())]);
    cluster.start();
    cluster.sql("CREATE EXTENSION snowflake_id");
    let mut client = cluster.connect();
    for sql in [
        "SELECT snowflake_decode(-7)",
        "SELECT (snowflake_decode(-7)).ts",
        "SELECT * FROM snowflake_decode(-7) d",
        "SELECT snowflake_timestamp(-7)",
        "SELECT 1/0",
    ] {
        let e = sql_error(&mut client, sql);
        assert!(e.code == "22003" || e.code == "22012", "{sql}: {e:?}");
        assert_eq!(e.detail, "", "{sql}: {e:?}");
    }
}

/// The swap never calls a function the extension did not create: in a
/// database without the extension, a user's own `snowflake_decode` with
/// functions of the twins' names and signatures beside it (planted by
/// another role, who may create in `public`) is planned as PostgreSQL plans
/// it, and the planted functions never run.
#[test]
fn the_hook_swaps_only_to_twins_of_the_extension() {
    let cluster = Cluster::preloaded_without_extension(&["snowflake_id.worker_id = 6"]);
    let mut owner = cluster.connect();
    owner
        .batch_execute(
            "CREATE TYPE parts AS (ts bigint, worker int);
             CREATE FUNCTION snowflake_decode(id bigint) RETURNS parts LANGUAGE sql IMMUTABLE
               AS 'SELECT row(id >> 22, ((id >> 12) & 1023)::int)::parts';
             CREATE TABLE t AS SELECT (g::bigint << 22) | (7 << 12) AS id FROM generate_series(1, 10) g;
             CREATE ROLE planter LOGIN;
             GRANT CREATE ON SCHEMA public TO planter;
             SET ROLE planter;
             CREATE FUNCTION snowflake_decode_fields(id bigint) RETURNS parts LANGUAGE plpgsql
               AS $$BEGIN RAISE EXCEPTION 'planted code ran as %', current_user; END$$;
             CREATE FUNCTION snowflake_decode_rows(id bigint) RETURNS SETOF parts LANGUAGE plpgsql
               AS $$BEGIN RAISE EXCEPTION 'planted code ran as %', current_user; END$$;
             RESET ROLE;",
        )
        .unwrap();
    let field: i64 = owner
        .query_one("SELECT sum((snowflake_decode(id)).ts + (snowflake_decode(id)).worker)::bigint FROM t", &[])
        .unwrap_or_else(|e| panic!("field form: {}", describe(&e)))
        .get(0);
    assert_eq!(field, 55 + 70);
    let from: i64 = owner
        .query_one("SELECT sum(d.ts)::bigint FROM t, snowflake_decode(t.id) d", &[])
        .unwrap_or_else(|e| panic!("FROM form: {}", describe(&e)))
        .get(0);
    assert_eq!(from, 55);
}

/// Privileges are those of the function the query names: a role refused
/// `snowflake_decode` is refused in the swapped forms too, and a role
/// allowed it (and the accessors) but not the twins still decodes.
#[test]
fn the_swap_keeps_the_privileges_of_the_function_named() {
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 6"]);
    let mut su = cluster.connect();
    su.batch_execute(
        "CREATE TABLE t AS SELECT snowflake_nextval() AS id FROM generate_series(1, 10);
         CREATE ROLE refused LOGIN; CREATE ROLE allowed LOGIN;
         GRANT SELECT ON t TO refused, allowed;
         REVOKE EXECUTE ON FUNCTION snowflake_decode(bigint) FROM public;
         REVOKE EXECUTE ON FUNCTION snowflake_decode_fields(bigint), snowflake_decode_rows(bigint) FROM public;
         GRANT EXECUTE ON FUNCTION snowflake_decode(bigint) TO allowed;",
    )
    .unwrap();
    let as_role = |role: &str| {
        let mut cfg = cluster.config();
        cfg.user(role);
        cfg.connect(postgres::NoTls).expect("connect")
    };
    let mut refused = as_role("refused");
    for sql in ["SELECT (snowflake_decode(id)).ts FROM t", "SELECT d.ts FROM t, snowflake_decode(t.id) d"] {
        let e = refused.query(sql, &[]).expect_err(sql);
        let db = e.as_db_error().unwrap_or_else(|| panic!("{sql}: {e}"));
        assert_eq!(db.code().code(), "42501", "{sql}: {}", describe(&e));
        assert!(db.message().ends_with("function snowflake_decode"), "{sql}: {}", describe(&e));
    }
    // A plan cached for one role is not run for another: prepared by the
    // superuser (the twins swapped in and inlined: the plan calls the
    // accessors alone, which everyone may run), then executed after SET ROLE.
    // (The GRANT commits first: a plan made in its transaction would be
    // invalidated by it.)
    su.batch_execute(
        "GRANT EXECUTE ON FUNCTION snowflake_decode_fields(bigint), snowflake_decode_rows(bigint) TO refused",
    )
    .unwrap();
    su.batch_execute(
        "PREPARE f AS SELECT count((snowflake_decode(id)).ts) FROM t;
         PREPARE r AS SELECT count(d.ts) FROM t, snowflake_decode(t.id) d;
         EXECUTE f; EXECUTE r;",
    )
    .unwrap();
    for (role, allowed) in [("refused", false), ("allowed", true)] {
        for statement in ["EXECUTE f", "EXECUTE r"] {
            su.batch_execute(&format!("SET ROLE {role}")).unwrap();
            let outcome = su.query_one(statement, &[]);
            su.batch_execute("RESET ROLE").unwrap();
            match (outcome, allowed) {
                (Ok(row), true) => assert_eq!(row.get::<_, i64>(0), 10, "{role}: {statement}"),
                (Err(e), false) => {
                    let message = e.as_db_error().map(|d| d.message().to_string()).unwrap_or_default();
                    assert!(message.ends_with("function snowflake_decode"), "{role}: {statement}: {}", describe(&e));
                }
                (Ok(_), false) => panic!("{role}: {statement} decoded with a plan cached for the superuser"),
                (Err(e), true) => panic!("{role}: {statement}: {}", describe(&e)),
            }
        }
    }
    let mut allowed = as_role("allowed");
    for sql in ["SELECT count((snowflake_decode(id)).ts) FROM t", "SELECT count(d.ts) FROM t, snowflake_decode(t.id) d"]
    {
        let n: i64 = allowed.query_one(sql, &[]).unwrap_or_else(|e| panic!("{sql}: {}", describe(&e))).get(0);
        assert_eq!(n, 10, "{sql}");
    }
}

/// The planner's plan of `sql`, one string.
fn plan_of(client: &mut postgres::Client, sql: &str) -> String {
    let rows = client.query(&format!("EXPLAIN (COSTS OFF) {sql}"), &[]).unwrap();
    rows.iter().map(|r| r.get::<_, String>(0)).collect::<Vec<_>>().join("\n")
}

/// An expression index, a partial index's predicate and a
/// range partition key on a field of the IMMUTABLE `snowflake_decode` serve
/// the queries that name that field, as without the hook: the query's copy
/// is swapped and folded to the accessor, and so is the planner's copy of
/// the stored expression. 0.4.0 swapped the query's copy alone: a
/// sequential scan and every partition scanned. `ON CONFLICT` on such an
/// index finds it (0.4.0: 42P10, "no unique or exclusion constraint").
#[test]
fn indexes_and_partition_keys_on_a_decoded_field_serve_the_queries_naming_it() {
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 8"]);
    let mut client = cluster.connect();
    let ts = "(snowflake_decode(id, '2025-01-01 00:00:00+00', 10, 12)).ts";
    let seq = "(snowflake_decode(id, '2025-01-01 00:00:00+00', 10, 12)).sequence";
    client
        .batch_execute(&format!(
            "CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), n int);
             CREATE INDEX t_ts ON t (({ts}));
             CREATE TABLE u (id bigint, n int);
             CREATE INDEX u_recent ON u (n) WHERE {ts} >= '2026-01-01 00:00:00+00';
             CREATE TABLE v (id bigint, n int);
             CREATE UNIQUE INDEX v_seq_n ON v (({seq}), n);
             CREATE TABLE p (id bigint NOT NULL, n int) PARTITION BY RANGE (({ts}));
             CREATE TABLE p2025 PARTITION OF p FOR VALUES FROM ('2025-01-01 00:00:00+00') TO ('2026-01-01 00:00:00+00');
             CREATE TABLE p2026 PARTITION OF p FOR VALUES FROM ('2026-01-01 00:00:00+00') TO ('2027-01-01 00:00:00+00');
             CREATE TABLE plater PARTITION OF p FOR VALUES FROM ('2027-01-01 00:00:00+00') TO (MAXVALUE);
             INSERT INTO t (n) SELECT g FROM generate_series(1, 20000) g;
             INSERT INTO u SELECT id, n FROM t;
             INSERT INTO p VALUES (snowflake_from_timestamp('2025-06-01 00:00:00+00'), 1),
                                  (snowflake_from_timestamp('2026-06-01 00:00:00+00'), 2),
                                  (snowflake_from_timestamp('2027-06-01 00:00:00+00'), 3);
             ANALYZE t, u, p;
             SET enable_seqscan = off;"
        ))
        .unwrap();
    let recent = format!("SELECT count(*) FROM t WHERE {ts} >= now() - interval '1 hour'");
    let p = plan_of(&mut client, &recent);
    assert!(p.contains("t_ts"), "the expression index is not used:\n{p}");
    assert_eq!(cluster.query_i64(&recent), 20_000);
    let latest = format!("SELECT id FROM t ORDER BY {ts} DESC LIMIT 1");
    let p = plan_of(&mut client, &latest);
    assert!(p.contains("Index Scan Backward using t_ts"), "ORDER BY does not use the index:\n{p}");
    // The FROM form reaches the same index.
    let from = "SELECT count(*) FROM t, snowflake_decode(t.id, '2025-01-01 00:00:00+00', 10, 12) d
                 WHERE d.ts >= now() - interval '1 hour'";
    let p = plan_of(&mut client, from);
    assert!(p.contains("t_ts"), "the FROM form does not use the index:\n{p}");
    let partial = format!("SELECT count(*) FROM u WHERE n = 5 AND {ts} >= '2026-01-01 00:00:00+00'");
    let p = plan_of(&mut client, &partial);
    assert!(p.contains("u_recent"), "the partial index's predicate is not matched:\n{p}");
    assert_eq!(cluster.query_i64(&partial), 1);
    let pruned = format!("SELECT n FROM p WHERE {ts} >= '2026-01-01 00:00:00+00' AND {ts} < '2026-02-01 00:00:00+00'");
    client.batch_execute("RESET enable_seqscan").unwrap();
    let p = plan_of(&mut client, &pruned);
    assert!(p.contains("p2026") && !p.contains("p2025") && !p.contains("plater"), "no partition pruning:\n{p}");
    let in_2026 = format!("SELECT count(*) FROM p WHERE {ts} >= '2026-01-01 00:00:00+00' AND {ts} < '2027-01-01'");
    assert_eq!(cluster.query_i64(&in_2026), 1);
    // Pruning at run time too, with the bound a parameter of a generic plan.
    client
        .batch_execute(&format!(
            "SET plan_cache_mode = force_generic_plan;
             PREPARE later(timestamptz) AS SELECT n FROM p WHERE {ts} >= $1;"
        ))
        .unwrap();
    let rows = client.query("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) EXECUTE later('2027-01-01')", &[]);
    let p = rows.unwrap().iter().map(|r| r.get::<_, String>(0)).collect::<Vec<_>>().join("\n");
    assert!(p.contains("Subplans Removed: 2"), "no run-time pruning:\n{p}");
    // ON CONFLICT finds the unique index on the field.
    for _ in 0..2 {
        client
            .batch_execute(&format!("INSERT INTO v VALUES (4097, 1) ON CONFLICT (({seq}), n) DO NOTHING"))
            .unwrap_or_else(|e| panic!("ON CONFLICT: {}", describe(&e)));
    }
    assert_eq!(cluster.query_i64("SELECT count(*) FROM v"), 1);
}

/// An index on a public accessor, `snowflake_timestamp(id, ...)` as the
/// README suggests, serves a query through the same field of
/// `snowflake_decode`, and one that names both forms: the decoder's twin
/// reduces to the accessor of `snowflake_id_internal`, and the hook moves
/// the index's expression and the query's own accessor calls there too.
#[test]
fn an_index_on_a_public_accessor_serves_a_query_through_the_decoder() {
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 8"]);
    let mut client = cluster.connect();
    let layout = "'2025-01-01 00:00:00+00', 10, 12";
    client
        .batch_execute(&format!(
            "CREATE TABLE w (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), n int);
             CREATE INDEX w_ts ON w (snowflake_timestamp(id, {layout}));
             INSERT INTO w (n) SELECT g FROM generate_series(1, 20000) g;
             ANALYZE w;
             SET enable_seqscan = off;"
        ))
        .unwrap();
    let through_decoder =
        format!("SELECT count(*) FROM w WHERE (snowflake_decode(id, {layout})).ts >= now() - interval '1 hour'");
    let p = plan_of(&mut client, &through_decoder);
    assert!(p.contains("w_ts"), "the accessor's index is not used through the decoder:\n{p}");
    assert_eq!(cluster.query_i64(&through_decoder), 20_000);
    let both = format!(
        "SELECT count(*) FROM w WHERE snowflake_timestamp(id, {layout}) >= now() - interval '1 hour'
            AND (snowflake_decode(id, {layout})).sequence >= 0"
    );
    let p = plan_of(&mut client, &both);
    assert!(p.contains("w_ts"), "the accessor's index is not used beside a decoder:\n{p}");
    assert_eq!(cluster.query_i64(&both), 20_000);
    let plain = format!("SELECT count(*) FROM w WHERE snowflake_timestamp(id, {layout}) >= now() - interval '1 hour'");
    let p = plan_of(&mut client, &plain);
    assert!(p.contains("w_ts"), "the accessor's index is not used by the accessor:\n{p}");
}

/// An upsert whose arbiter names a public accessor, on a unique index of
/// that accessor, still finds its index when the same statement decodes:
/// PostgreSQL matches the arbiter against the index as the relcache holds
/// it, so the hook must leave the arbiter's accessor calls as written (as it
/// leaves a decoder there), even when it moves the query's other accessor
/// calls to their twins.
#[test]
fn an_upsert_on_an_accessor_index_works_beside_a_decoder() {
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 8"]);
    let mut client = cluster.connect();
    let key = "snowflake_worker_id(id, '2025-01-01 00:00:00+00'::timestamptz, 10, 12)";
    client
        .batch_execute(&format!(
            "CREATE TABLE u (id bigint PRIMARY KEY, v text);
             CREATE UNIQUE INDEX u_worker ON u ({key});
             CREATE TABLE src (id bigint);
             INSERT INTO src SELECT snowflake_nextval();"
        ))
        .unwrap();
    // The control: without a decoder in the statement the arbiter matches.
    client
        .batch_execute(&format!("INSERT INTO u SELECT s.id, 'a' FROM src s ON CONFLICT ({key}) DO NOTHING"))
        .unwrap_or_else(|e| panic!("{}", describe(&e)));
    // A decoder in the source query's FROM list.
    client
        .batch_execute(&format!(
            "INSERT INTO u SELECT s.id, d.worker_id::text FROM src s, snowflake_decode(s.id) d
             ON CONFLICT ({key}) DO NOTHING"
        ))
        .unwrap_or_else(|e| panic!("a decoder in the source: {}", describe(&e)));
    // A decoder's field in RETURNING, on a row of the same worker id.
    client
        .batch_execute(&format!(
            "INSERT INTO u VALUES ((SELECT id + 1 FROM src), 'x') ON CONFLICT ({key}) DO UPDATE SET v = 'y'
             RETURNING (snowflake_decode(u.id)).worker_id"
        ))
        .unwrap_or_else(|e| panic!("a decoder in RETURNING: {}", describe(&e)));
    assert_eq!(cluster.query_i64("SELECT count(*) FROM u WHERE v = 'y'"), 1);
}

/// An ERROR raised and caught while the query is being planned (a plpgsql
/// EXCEPTION block in an IMMUTABLE function the planner folds, whose own
/// statement fails in planning) leaves the query its expression index: the
/// hook's "this query was swapped" flag is put back by the subtransaction's
/// abort, not only by a planning that returns (else: a seq scan).
#[test]
fn an_error_caught_during_planning_leaves_the_query_its_index() {
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 8"]);
    let mut client = cluster.connect();
    let ts = "(snowflake_decode(id, '2025-01-01 00:00:00+00', 10, 12)).ts";
    client
        .batch_execute(&format!(
            "CREATE TABLE ev (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), n int);
             CREATE INDEX ev_ts ON ev (({ts}));
             INSERT INTO ev (n) SELECT g FROM generate_series(1, 20000) g;
             ANALYZE ev;
             CREATE FUNCTION caught(x int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS
               $$BEGIN BEGIN PERFORM 1 / x; EXCEPTION WHEN division_by_zero THEN NULL; END; RETURN 0; END$$;
             SET enable_seqscan = off;"
        ))
        .unwrap();
    for x in [1, 0, 0] {
        let sql = format!("SELECT count(*) FROM ev WHERE {ts} >= '2026-09-01 00:00:00+00' AND caught({x}) = 0");
        let p = plan_of(&mut client, &sql);
        assert!(p.contains("ev_ts"), "caught({x}): the expression index is not used:\n{p}");
    }
}

/// An error of the extension's decoding names `snowflake_decode` in its
/// CONTEXT, as without the hook, never a twin: a call on constants is
/// folded as written (the swap would gain nothing there), and one that
/// PostgreSQL cannot inline (a volatile argument) is not swapped either.
#[test]
fn decode_errors_name_snowflake_decode_not_a_twin() {
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 9"]);
    let mut client = cluster.connect();
    for (sql, names_decode) in [
        ("SELECT (snowflake_decode(-7, '2025-01-01 00:00:00+00', 10, 12)).ts", true),
        ("SELECT * FROM snowflake_decode(-7, '2025-01-01 00:00:00+00', 10, 12) d", true),
        ("SELECT d.ts FROM snowflake_decode(-7, '2025-01-01 00:00:00+00', 10, 12) d", true),
        ("SELECT (snowflake_decode(1, '2025-01-01 00:00:00+00', 13, 10)).ts", true),
        ("SELECT (snowflake_decode(id + (random() * 0)::bigint)).ts FROM (VALUES (-7::bigint)) v(id)", true),
        ("SELECT d.ts FROM (VALUES (-7::bigint)) v(id), snowflake_decode(v.id + (random() * 0)::bigint) d", true),
        // Inlined from a row: no SQL function runs, none is named.
        ("SELECT (snowflake_decode(id)).ts FROM (VALUES (-7::bigint)) v(id)", false),
        ("SELECT d.ts FROM (VALUES (-7::bigint)) v(id), snowflake_decode(v.id) d", false),
    ] {
        let e = client.batch_execute(sql).expect_err(sql);
        let db = e.as_db_error().unwrap_or_else(|| panic!("{sql}: {e}"));
        assert!(db.code().code() == "22003" || db.code().code() == "22023", "{sql}: {}", describe(&e));
        let context = db.where_().unwrap_or("");
        assert!(!context.contains("snowflake_decode_"), "{sql}: a twin in the CONTEXT: {context}");
        if names_decode {
            assert!(context.contains("SQL function \"snowflake_decode\""), "{sql}: CONTEXT {context:?}");
        }
    }
}
