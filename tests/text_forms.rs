//! The short text forms of IDs in SQL: base62 and Crockford
//! base32, both ways, on a real server. The core's property tests cover
//! every bigint; here the SQL edge: round trips over random and extreme
//! IDs, text order under `COLLATE "C"`, what Crockford lets a person type,
//! NULL, the errors and their SQLSTATEs, and the functions' markings.

mod common;

use common::{describe, sql_error, Cluster};

#[test]
fn both_forms_round_trip_and_sort_as_the_ids() {
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 3"]);
    let mut client = cluster.connect();
    client
        .batch_execute(
            "CREATE TABLE r AS
               SELECT (random() * 9223372036854775807)::bigint AS id FROM generate_series(1, 20000)
               UNION ALL SELECT snowflake_nextval() FROM generate_series(1, 5000)
               UNION ALL VALUES (0), (1), (61), (62), (31), (32), (9223372036854775806), (9223372036854775807);",
        )
        .unwrap();
    let row = client
        .query_one(
            "SELECT count(*) FILTER (WHERE snowflake_from_base62(snowflake_to_base62(id)) IS DISTINCT FROM id),
                    count(*) FILTER (WHERE snowflake_from_base32(snowflake_to_base32(id)) IS DISTINCT FROM id),
                    count(*) FILTER (WHERE length(snowflake_to_base62(id)) <> 11 OR length(snowflake_to_base32(id)) <> 13),
                    count(*) FILTER (WHERE snowflake_from_base32(lower(snowflake_to_base32(id))) <> id)
               FROM r",
            &[],
        )
        .unwrap();
    let mismatches: Vec<i64> = (0..4).map(|i| row.get(i)).collect();
    assert_eq!(mismatches, [0, 0, 0, 0], "round trip, width, lower case");
    // Text order is ID order: the rank of each ID by text equals its rank by number.
    let out_of_order: i64 = client
        .query_one(
            "SELECT count(*) FROM (
               SELECT rank() OVER (ORDER BY id) AS by_id,
                      rank() OVER (ORDER BY snowflake_to_base62(id) COLLATE \"C\") AS by_62,
                      rank() OVER (ORDER BY snowflake_to_base32(id) COLLATE \"C\") AS by_32
                 FROM r) x
              WHERE by_id <> by_62 OR by_id <> by_32",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(out_of_order, 0);
    let row = client
        .query_one(
            "SELECT snowflake_to_base62(9223372036854775807), snowflake_to_base32(9223372036854775807),
                    snowflake_to_base62(0), snowflake_to_base32(0)",
            &[],
        )
        .unwrap();
    let extremes: Vec<String> = (0..4).map(|i| row.get(i)).collect();
    assert_eq!(extremes, ["AzL8n0Y58m7", "7ZZZZZZZZZZZZ", "00000000000", "0000000000000"]);
}

#[test]
fn crockford_reads_what_people_type_and_null_is_null() {
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 3"]);
    let mut client = cluster.connect();
    let row = client
        .query_one(
            "SELECT snowflake_from_base32('1O'), snowflake_from_base32('io'), snowflake_from_base32('Ll'),
                    snowflake_from_base32('0000-0000-0001F'), snowflake_from_base32('z'), snowflake_from_base62('z'),
                    snowflake_from_base62('10')",
            &[],
        )
        .unwrap();
    let values: Vec<i64> = (0..7).map(|i| row.get(i)).collect();
    assert_eq!(values, [32, 32, 33, 47, 31, 61, 62]);
    let nulls: bool = client
        .query_one(
            "SELECT snowflake_to_base62(NULL) IS NULL AND snowflake_to_base32(NULL) IS NULL
                AND snowflake_from_base62(NULL) IS NULL AND snowflake_from_base32(NULL) IS NULL",
            &[],
        )
        .unwrap()
        .get(0);
    assert!(nulls);
}

#[test]
fn bad_text_and_negative_ids_are_refused_with_the_character_named() {
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 3"]);
    let mut client = cluster.connect();
    for (sql, code, words) in [
        ("SELECT snowflake_from_base32('00U1')", "22P02", "invalid character 'U' at position 3"),
        ("SELECT snowflake_from_base32('-5')", "22P02", "invalid character '-' at position 1"),
        ("SELECT snowflake_from_base32(' 5')", "22P02", "invalid character ' ' at position 1"),
        ("SELECT snowflake_from_base62('ab-c')", "22P02", "invalid character '-' at position 3"),
        ("SELECT snowflake_from_base62('abéc')", "22P02", "invalid character 'é' at position 3"),
        ("SELECT snowflake_from_base62('')", "22P02", "empty base62 text"),
        ("SELECT snowflake_from_base62('000000000001')", "22P02", "12 symbols is too long"),
        ("SELECT snowflake_from_base32('00000000000001')", "22P02", "14 symbols is too long"),
        ("SELECT snowflake_from_base62('zzzzzzzzzzz')", "22003", "above the largest bigint"),
        ("SELECT snowflake_from_base32('8000000000000')", "22003", "above the largest bigint"),
        ("SELECT snowflake_to_base62(-1)", "22003", "snowflake ID -1 is negative"),
        ("SELECT snowflake_to_base32(-9223372036854775808)", "22003", "is negative"),
    ] {
        let e = sql_error(&mut client, sql);
        assert_eq!(e.code, code, "{sql}: {e:?}");
        assert!(e.message.contains(words), "{sql}: {e:?}");
        assert!(!e.hint.is_empty(), "{sql}: no hint: {e:?}");
    }
    // The DETAIL quotes the text, cut short when long.
    let long = format!("SELECT snowflake_from_base62('{}!')", "0".repeat(100));
    let e = client.batch_execute(&long).expect_err("too long");
    let detail = e.as_db_error().and_then(|d| d.detail()).unwrap_or_default().to_string();
    assert!(detail.contains("...") && detail.len() < 80, "{detail}");
    assert!(describe(&e).contains("position 101"), "{}", describe(&e));
}

/// In a database whose encoding is not UTF-8, a non-ASCII character is still
/// bad text (22P02) named by its position and code point, never an internal
/// error (pgrx's `&str` argument failed there with XX000), and good text reads.
#[test]
fn bad_text_in_a_latin1_database_is_named_not_an_internal_error() {
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 3"]);
    cluster.sql("CREATE DATABASE latin1 ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0");
    let mut client = cluster.config().dbname("latin1").connect(postgres::NoTls).expect("connect to latin1");
    client.batch_execute("CREATE EXTENSION snowflake_id").unwrap();
    for (sql, words) in [
        ("SELECT snowflake_from_base62('\u{e9}1')", "invalid character '\\u{e9}' at position 1"),
        ("SELECT snowflake_from_base32('1\u{e9}')", "invalid character '\\u{e9}' at position 2"),
        ("SELECT snowflake_from_base32('1-\u{fc}')", "invalid character '-' at position 2"),
    ] {
        let e = sql_error(&mut client, sql);
        assert_eq!(e.code, "22P02", "{sql}: {e:?}");
        assert!(e.message.contains(words), "{sql}: {e:?}");
    }
    let row = client
        .query_one(
            "SELECT snowflake_from_base62(snowflake_to_base62(251678372659204103)),
                    snowflake_from_base32('06zh44p0-00407')",
            &[],
        )
        .unwrap();
    assert_eq!((row.get::<_, i64>(0), row.get::<_, i64>(1)), (251678372659204103, 251678372659204103));
}

#[test]
fn the_functions_are_immutable_strict_and_parallel_safe() {
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 3"]);
    let mut client = cluster.connect();
    let rows = client
        .query(
            "SELECT proname || '(' || pg_get_function_identity_arguments(oid) || ') ' || provolatile::text || proisstrict::text || proparallel::text
               FROM pg_proc WHERE proname ~ '^snowflake_(to|from)_base(62|32)$' ORDER BY 1",
            &[],
        )
        .unwrap();
    let got: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
    assert_eq!(
        got,
        [
            "snowflake_from_base32(text text) itrues",
            "snowflake_from_base62(text text) itrues",
            "snowflake_to_base32(id bigint) itrues",
            "snowflake_to_base62(id bigint) itrues",
        ]
    );
    // So they serve an expression index, and a lookup by the text form uses
    // it; a lookup by the decoded text uses the primary key (the decoder
    // folds to a constant).
    client
        .batch_execute(
            "CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), n int);
             INSERT INTO t (n) SELECT g FROM generate_series(1, 1000) g;
             CREATE INDEX t_b32 ON t (snowflake_to_base32(id));
             ANALYZE t;",
        )
        .unwrap();
    let key: String = client.query_one("SELECT snowflake_to_base32(id) FROM t WHERE n = 500", &[]).unwrap().get(0);
    let by_text = "SELECT n FROM t WHERE snowflake_to_base32(id) = $1";
    let n: i32 = client.query_one(by_text, &[&key]).unwrap().get(0);
    assert_eq!(n, 500);
    assert_uses_index(&mut client, by_text, &key, "t_b32");
    let by_id = "SELECT n FROM t WHERE id = snowflake_from_base32($1)";
    let n: i32 = client.query_one(by_id, &[&key]).unwrap().get(0);
    assert_eq!(n, 500);
    assert_uses_index(&mut client, by_id, &key, "t_pkey");
}

/// Asserts that the plan of `query`, with `key` for `$1`, scans `index`.
/// The plan's own text: a lookup that read the whole table would still find
/// the row, so only EXPLAIN shows the index at work.
fn assert_uses_index(client: &mut postgres::Client, query: &str, key: &str, index: &str) {
    let literal = format!("'{}'", key.replace('\'', "''"));
    let explain = format!("EXPLAIN (COSTS OFF) {}", query.replace("$1", &literal));
    let plan: Vec<String> = client.query(&explain, &[]).unwrap().iter().map(|r| r.get(0)).collect();
    let plan = plan.join("\n");
    assert!(
        plan.contains(&format!("Index Scan using {index} on t"))
            || plan.contains(&format!("Bitmap Index Scan on {index}")),
        "{query} does not use {index}:\n{plan}"
    );
}
