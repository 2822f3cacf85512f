//! The managed edition's decoders against the native edition's: every
//! accessor, decoder and text form, snowflake_from_timestamp
//! and snowflake_id_span, over random IDs and the edge values, in the
//! default and other layouts, results and errors (SQLSTATE, message,
//! DETAIL, HINT) alike.
//!
//! One server with the native library: the extension in one database, the
//! managed edition's decode side in another, made from the files the
//! managed scripts are assembled from (scripts/managed.sh: sql/install/parts_type.sql,
//! sql/managed/layout.sql, accessors.sql, the native sql/install/decode.sql,
//! text_forms.sql) with `@extschema@` replaced by the schema, as the plain
//! script does. The server-layout forms are compared in other layouts too:
//! the managed layout functions rewritten (as snowflake_set_layout does)
//! against the native explicit-layout forms, and, for the two functions that
//! have no explicit form, against a native server restarted with that layout.
//!
//! Each query runs twice on each side: with the argument as a constant (the
//! planner evaluates or inlines and folds it) and from a table function (the
//! inlined expression at run time).

mod common;

use std::fmt::Write as _;

use common::soak::Rng;
use common::Cluster;
use postgres::{Client, SimpleQueryMessage};

/// The managed edition as users get it: the plain script scripts/managed.sh
/// writes (it creates everything in the current schema, public here), so
/// that the decoders compared are the shipped ones, helpers and all.
fn managed_script() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/dist/snowflake_id_plain.sql");
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// What a query gave: its first column of every row, as text, or its error.
#[derive(Debug, PartialEq, Clone)]
enum Outcome {
    Rows(Vec<Option<String>>),
    Error { code: String, message: String, detail: Option<String>, hint: Option<String> },
}

fn outcome(client: &mut Client, sql: &str) -> Outcome {
    match client.simple_query(sql) {
        Ok(messages) => Outcome::Rows(
            messages
                .iter()
                .filter_map(|m| match m {
                    SimpleQueryMessage::Row(r) => Some(r.get(0).map(str::to_string)),
                    _ => None,
                })
                .collect(),
        ),
        Err(e) => {
            let db = e.as_db_error().unwrap_or_else(|| panic!("{sql}: not a database error: {e}"));
            Outcome::Error {
                code: db.code().code().to_string(),
                message: db.message().to_string(),
                detail: db.detail().map(str::to_string),
                hint: db.hint().map(str::to_string),
            }
        }
    }
}

/// The two databases and what the comparison found.
struct Differ {
    native: Client,
    managed: Client,
    compared: usize,
    errors_compared: usize,
    mismatches: Vec<String>,
}

impl Differ {
    fn new(cluster: &Cluster, managed_db: &str) -> Differ {
        let mut managed_cfg = cluster.config();
        managed_cfg.dbname(managed_db);
        let mut native_cfg = cluster.config();
        native_cfg.dbname("native");
        let mut d = Differ {
            native: native_cfg.connect(postgres::NoTls).expect("connect native"),
            managed: managed_cfg.connect(postgres::NoTls).expect("connect managed"),
            compared: 0,
            errors_compared: 0,
            mismatches: vec![],
        };
        for c in [&mut d.native, &mut d.managed] {
            c.batch_execute("SET TimeZone = 'UTC'; SET DateStyle = 'ISO, YMD'; SET IntervalStyle = 'postgres'")
                .unwrap();
        }
        d
    }

    /// Runs `native_sql` and `managed_sql`; records a mismatch.
    fn same_as(&mut self, native_sql: &str, managed_sql: &str) -> Outcome {
        let n = outcome(&mut self.native, native_sql);
        let m = outcome(&mut self.managed, managed_sql);
        self.compared += 1;
        if matches!(n, Outcome::Error { .. }) {
            self.errors_compared += 1;
        }
        if n != m && self.mismatches.len() < 40 {
            self.mismatches.push(format!("native:  {native_sql}\n  -> {n:?}\nmanaged: {managed_sql}\n  -> {m:?}"));
        }
        n
    }

    /// `expr` (with `{x}` for the argument) over `args` (SQL literals of
    /// type `ty`), on both sides: as constants one by one, and at run time
    /// over all of them at once (one by one when that batch fails, so that
    /// each value's error is compared). `managed_expr` is what the managed
    /// side runs (the same as `expr` unless a layout is substituted).
    fn over(&mut self, expr: &str, managed_expr: &str, ty: &str, args: &[String], constants: bool) {
        if constants {
            for a in args {
                let lit = format!("({a})::{ty}");
                self.same_as(
                    &format!("SELECT ({})::text", expr.replace("{x}", &lit)),
                    &format!("SELECT ({})::text", managed_expr.replace("{x}", &lit)),
                );
            }
        }
        let batch = |e: &str, vals: &[String]| {
            format!(
                "SELECT ({})::text FROM unnest(ARRAY[{}]::{ty}[]) WITH ORDINALITY AS u(x, n) ORDER BY n",
                e.replace("{x}", "u.x"),
                vals.iter().map(|v| format!("({v})::{ty}")).collect::<Vec<_>>().join(", ")
            )
        };
        let n = self.same_as(&batch(expr, args), &batch(managed_expr, args));
        if matches!(n, Outcome::Error { .. }) && args.len() > 1 {
            for a in args {
                let one = [a.clone()];
                self.same_as(&batch(expr, &one), &batch(managed_expr, &one));
            }
        }
    }

    fn assert_clean(&self, what: &str) {
        assert!(
            self.mismatches.is_empty(),
            "{what}: {} of {} comparisons differ; first ones:\n{}",
            self.mismatches.len(),
            self.compared,
            self.mismatches.join("\n\n")
        );
    }
}

/// IDs at every bit boundary, the extremes, and random ones of every size.
fn ids(rng: &mut Rng) -> Vec<String> {
    let mut v: Vec<i64> = vec![0, 1, 2, i64::MAX, i64::MAX - 1];
    for k in 1..63 {
        v.push((1i64 << k) - 1);
        v.push(1i64 << k);
    }
    for _ in 0..200 {
        let bits = rng.range(1, 63);
        v.push((rng.next() >> (64 - bits)) as i64);
    }
    v.iter().map(|i| i.to_string()).collect()
}

/// Arguments that are not IDs: negative and NULL.
fn bad_ids() -> Vec<String> {
    ["-1", "-9223372036854775808", "-4194304", "NULL"].iter().map(|s| s.to_string()).collect()
}

/// Layouts as (epoch, worker_bits, sequence_bits) SQL literals.
fn layouts() -> Vec<(String, String, String)> {
    let l = |e: &str, w: &str, s: &str| (e.to_string(), w.to_string(), s.to_string());
    vec![
        l("'2025-01-01 00:00:00+00'", "10", "12"),
        l("'2010-11-04 01:42:54.657+00'", "10", "12"),
        l("'2015-01-01 00:00:00+00'", "5", "5"),
        l("'1970-01-01 00:00:00+00'", "0", "0"),
        l("'2000-01-01 00:00:00.0005+00'", "22", "0"),
        l("'1999-12-31 23:59:59.9995+00'", "0", "22"),
        l("'1969-07-20 20:17:40.123456+00'", "3", "19"),
        l("'4713-11-24 00:00:00+00 BC'", "0", "1"),
        l("'294276-12-31 23:59:59.999999+00'", "7", "7"),
        l("'infinity'", "10", "12"),
        l("'-infinity'", "0", "0"),
        l("'-infinity'", "10", "12"),
    ]
}

/// Layouts the native edition refuses, and NULL in each place.
fn bad_layouts() -> Vec<(String, String, String)> {
    let l = |e: &str, w: &str, s: &str| (e.to_string(), w.to_string(), s.to_string());
    vec![
        l("'2025-01-01 00:00:00+00'", "23", "0"),
        l("'2025-01-01 00:00:00+00'", "0", "23"),
        l("'2025-01-01 00:00:00+00'", "11", "12"),
        l("'2025-01-01 00:00:00+00'", "-1", "12"),
        l("'2025-01-01 00:00:00+00'", "10", "-1"),
        l("'2025-01-01 00:00:00+00'", "2147483647", "2147483647"),
        l("'2025-01-01 00:00:00+00'", "-2147483648", "-2147483648"),
        l("NULL", "10", "12"),
        l("'2025-01-01 00:00:00+00'", "NULL", "12"),
        l("'2025-01-01 00:00:00+00'", "10", "NULL"),
        l("NULL", "99", "99"),
    ]
}

/// The explicit-layout expressions, with {x} for the ID and {l} for the layout.
const EXPLICIT: [&str; 7] = [
    "snowflake_timestamp({x}, {l})",
    "snowflake_worker_id({x}, {l})",
    "snowflake_sequence({x}, {l})",
    "snowflake_decode({x}, {l})",
    "(snowflake_decode({x}, {l})).ts",
    "snowflake_decode_fields({x}, {l})",
    "(SELECT d FROM snowflake_decode_rows({x}, {l}) d)",
];

/// The server-layout expressions, and the explicit forms they equal.
const SERVER: [(&str, &str); 6] = [
    ("snowflake_timestamp({x})", "snowflake_timestamp({x}, {l})"),
    ("snowflake_worker_id({x})", "snowflake_worker_id({x}, {l})"),
    ("snowflake_sequence({x})", "snowflake_sequence({x}, {l})"),
    ("snowflake_decode({x})", "snowflake_decode({x}, {l})"),
    // Native's planner hook computes only the field asked for; the managed
    // edition has no hook, so a field of snowflake_decode computes the whole
    // row, and an ID whose instant PostgreSQL cannot hold (layouts of few
    // node bits) raises the instant's error where native gives the field:
    // compared against a native decode kept whole (OFFSET 0), as documented.
    (
        "(snowflake_decode({x})).worker_id",
        "(SELECT (d).worker_id FROM (SELECT snowflake_decode({x}, {l}) AS d OFFSET 0) s)",
    ),
    ("(SELECT d FROM snowflake_decode_rows({x}) d)", "(SELECT d FROM snowflake_decode_rows({x}, {l}) d)"),
];

fn layout_args((e, w, s): &(String, String, String)) -> String {
    format!("({e})::timestamptz, ({w})::integer, ({s})::integer")
}

/// A server with the native library preloaded, the extension in database
/// `native` and the managed decode side in `managed`.
fn two_editions(conf: &[&str]) -> Cluster {
    let cluster = Cluster::preloaded_without_extension(conf);
    cluster.sql("CREATE DATABASE native");
    cluster.sql("CREATE DATABASE managed");
    let mut cfg = cluster.config();
    cfg.dbname("native").connect(postgres::NoTls).unwrap().batch_execute("CREATE EXTENSION snowflake_id").unwrap();
    install_managed(&cluster, "managed", None);
    cluster
}

/// Installs the managed decode side in `db`, with `mutation` (from, to)
/// applied to the script first (for the test that sees a broken body fail).
fn install_managed(cluster: &Cluster, db: &str, mutation: Option<(&str, &str)>) {
    let mut script = managed_script();
    if let Some((from, to)) = mutation {
        assert!(script.contains(from), "the mutation's text {from:?} is not in the script");
        script = script.replacen(from, to, 1);
    }
    let mut cfg = cluster.config();
    let mut client = cfg.dbname(db).connect(postgres::NoTls).unwrap();
    client.batch_execute(&script).unwrap_or_else(|e| panic!("managed script: {}", common::describe(&e)));
}

/// Rewrites the managed layout functions (in snowflake_id_internal, where
/// the decoders read them) with literals, as the managed
/// edition's snowflake_set_layout does.
fn set_managed_layout(client: &mut Client, (e, w, s): &(String, String, String)) {
    client
        .batch_execute(&format!(
            "CREATE OR REPLACE FUNCTION snowflake_id_internal.snowflake_managed_epoch() RETURNS timestamptz
                 LANGUAGE sql IMMUTABLE PARALLEL SAFE RETURN ({e})::pg_catalog.timestamptz;
             CREATE OR REPLACE FUNCTION snowflake_id_internal.snowflake_managed_worker_bits() RETURNS integer
                 LANGUAGE sql IMMUTABLE PARALLEL SAFE RETURN {w};
             CREATE OR REPLACE FUNCTION snowflake_id_internal.snowflake_managed_sequence_bits() RETURNS integer
                 LANGUAGE sql IMMUTABLE PARALLEL SAFE RETURN {s};"
        ))
        .unwrap();
}

fn explicit_and_server_forms(d: &mut Differ, rng: &mut Rng) {
    let ids = ids(rng);
    let few: Vec<String> =
        ["0", "1", "4194304", "9223372036854775807", "-1", "NULL"].iter().map(|s| s.to_string()).collect();
    for layout in layouts() {
        let l = layout_args(&layout);
        for e in EXPLICIT {
            let expr = e.replace("{l}", &l);
            d.over(&expr, &expr, "bigint", &ids, false);
            d.over(&expr, &expr, "bigint", &few, true);
            d.over(&expr, &expr, "bigint", &bad_ids(), true);
        }
    }
    for layout in bad_layouts() {
        let l = layout_args(&layout);
        for e in EXPLICIT {
            let expr = e.replace("{l}", &l);
            d.over(&expr, &expr, "bigint", &few, true);
        }
    }
    // The server-layout forms in the default layout: the same calls on both sides.
    for (server, _) in SERVER {
        d.over(server, server, "bigint", &ids, false);
        d.over(server, server, "bigint", &few, true);
    }
    // Other layouts: the managed layout functions rewritten, against the
    // native explicit forms of that layout.
    for layout in layouts().into_iter().skip(1) {
        set_managed_layout(&mut d.managed, &layout);
        let l = layout_args(&layout);
        for (server, explicit) in SERVER {
            let native = explicit.replace("{l}", &l);
            d.over(&native, server, "bigint", &ids, false);
            d.over(&native, server, "bigint", &few, true);
        }
    }
    set_managed_layout(&mut d.managed, &layouts()[0]);
}

/// Instants and spans for snowflake_from_timestamp and snowflake_id_span.
fn instants(rng: &mut Rng, epoch: &str) -> Vec<String> {
    let mut v: Vec<String> = [
        "NULL",
        "'infinity'",
        "'-infinity'",
        "'4713-11-24 00:00:00+00 BC'",
        "'1970-01-01 00:00:00+00'",
        "'2000-01-01 00:00:00+00'",
        "'2026-11-28 02:00:00.123456+00'",
        "'2094-09-07 15:47:35.551+00'",
        "'2094-09-07 15:47:35.552+00'",
        "'2094-09-07 15:47:35.5519+00'",
        "'9999-12-31 23:59:59.999+00'",
        "'10000-01-01 00:00:00+00'",
        "'262142-12-31 23:59:59.999+00'",
        "'262143-01-01 00:00:00+00'",
        "'294276-12-31 23:59:59.999999+00'",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for off in ["-1 ms", "-0.5 ms", "0", "0.5 ms", "1 ms", "1 day", "69 years", "70 years", "1000 years"] {
        v.push(format!("({epoch})::timestamptz + interval '{off}'"));
    }
    for _ in 0..60 {
        let us = rng.range(0, 3_000_000_000_000_000) as i64 - 200_000_000_000_000;
        v.push(format!("'2000-01-01 00:00:00+00'::timestamptz + make_interval(secs => {us} / 1000000.0)"));
    }
    v
}

fn spans(rng: &mut Rng) -> Vec<String> {
    let mut v: Vec<String> = [
        "NULL",
        "'1 day'",
        "'15 minutes'",
        "'1 ms'",
        "'0'",
        "'-1 ms'",
        "'-5 ms'",
        "'1.5 ms'",
        "'1 microsecond'",
        "'1 mon'",
        "'-1 mon'",
        "'1 year'",
        "'1 year -12 mon'",
        "'2 days -3 hours'",
        "'1 day -86400000 ms'",
        "'106751991 days'",
        "'106751992 days'",
        "'106751992 days -1000 hours'",
        "'2147483647 days'",
        "'-2147483648 days 2562047788 hours'",
        "make_interval(secs => 9223372036854.775807)",
        "'2562047788:00:54.775 '",
        "'1 day 00:00:00.001'",
        "'50000 years'",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if common::pg_major() >= 17 {
        v.push("'infinity'".into());
        v.push("'-infinity'".into());
    }
    for _ in 0..40 {
        v.push(format!("'{} ms'", rng.range(1, 5_000_000_000_000)));
        v.push(format!("'{} days {} ms'", rng.range(0, 30_000), rng.range(0, 86_400_000)));
    }
    v
}

fn from_timestamp_and_spans(d: &mut Differ, rng: &mut Rng, epoch: &str) {
    d.over(
        "snowflake_from_timestamp({x})",
        "snowflake_from_timestamp({x})",
        "timestamptz",
        &instants(rng, epoch),
        true,
    );
    d.over("snowflake_id_span({x})", "snowflake_id_span({x})", "interval", &spans(rng), true);
}

/// Text the decoders must read or refuse as the native ones do.
fn texts(rng: &mut Rng) -> Vec<String> {
    let mut v: Vec<&str> = vec![
        "",
        "0",
        "z",
        "Z",
        "10",
        "AzL8n0Y58m7",
        "AzL8n0Y58m8",
        "zzzzzzzzzzz",
        "00000000000",
        "000000000001",
        "0000000000000",
        "00000000000001",
        "7ZZZZZZZZZZZZ",
        "8000000000000",
        "ZZZZZZZZZZZZZ",
        "0000-0000-0001F",
        "0-000000000001",
        "-5",
        "5-",
        "5--6",
        "00U1",
        "00u1",
        "1O",
        "Io",
        "lL",
        "iIlLoO",
        "I-L-O",
        "Z-ZZZZZZZZZZZZ",
        "7-ZZZZ-ZZZZ-ZZZZ",
        "ab-c",
        "ab+c",
        " 5",
        "5 ",
        "5\n",
        "a\tb",
        "a'b",
        "a\\b",
        "a\"b",
        "a\rb",
        "\u{1}x",
        "\u{7f}",
        "ab\u{e9}c",
        "7\u{1F600}",
        "e\u{301}",
        "x\u{200b}",
        "\u{feff}1",
        "\u{85}",
        "\u{a0}",
        "0123456789012345678901234567890123456789",
        "01234567890123456789012345678901234567890",
        "0123456789012345678901234567890123456789\u{e9}\u{e9}",
        "000000000000000!",
        "-",
        "--",
        "0-",
        "-0-0",
    ];
    let owned: Vec<String> = (0..60)
        .map(|_| {
            let id = (rng.next() >> rng.range(1, 63)) as i64;
            match rng.below(4) {
                0 => format!("{id}"),
                1 => format!("{:x}", id),
                2 => format!("{:X}", id),
                _ => format!("{:o}", id),
            }
        })
        .collect();
    v.extend(owned.iter().map(String::as_str));
    v.iter().map(|t| format!("'{}'", t.replace('\'', "''"))).collect()
}

fn text_forms(d: &mut Differ, rng: &mut Rng) {
    let ids = ids(rng);
    for f in ["snowflake_to_base62({x})", "snowflake_to_base32({x})"] {
        d.over(f, f, "bigint", &ids, false);
        d.over(f, f, "bigint", &bad_ids(), true);
    }
    let texts = texts(rng);
    for f in ["snowflake_from_base62({x})", "snowflake_from_base32({x})"] {
        d.over(f, f, "text", &texts, true);
    }
    // The written forms of every ID read back, base32 as people type it.
    let written: Vec<String> = ids.iter().map(|i| format!("snowflake_to_base62({i})")).collect();
    d.over("snowflake_from_base62({x})", "snowflake_from_base62({x})", "text", &written, false);
    let typed: Vec<String> = ids
        .iter()
        .map(|i| format!("translate(lower(snowflake_to_base32({i})), '01', 'ol')"))
        .chain(ids.iter().map(|i| format!("regexp_replace(snowflake_to_base32({i}), '(....)', '\\1-', 'g')")))
        .collect();
    d.over("snowflake_from_base32({x})", "snowflake_from_base32({x})", "text", &typed, false);
}

#[test]
fn managed_decoders_give_the_native_results_and_errors() {
    let seed = std::env::var("SNOWFLAKE_DIFF_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x05ee_d41b);
    println!("SNOWFLAKE_DIFF_SEED={seed}");
    let mut rng = Rng(seed);
    let mut cluster = two_editions(&[]);
    let mut d = Differ::new(&cluster, "managed");
    explicit_and_server_forms(&mut d, &mut rng);
    text_forms(&mut d, &mut rng);
    from_timestamp_and_spans(&mut d, &mut rng, "'2025-01-01 00:00:00+00'");
    d.assert_clean("default layout");
    assert!(d.compared > 1000 && d.errors_compared > 200, "{} compared, {} errors", d.compared, d.errors_compared);
    let (compared, errors) = (d.compared, d.errors_compared);
    drop(d);

    // snowflake_from_timestamp and snowflake_id_span have no explicit-layout
    // form: a native server restarted with another layout, against the
    // managed layout functions rewritten to it.
    let other = ("'2010-11-04 01:42:54.657+00'".to_string(), "5".to_string(), "7".to_string());
    cluster.append_conf(&[
        "snowflake_id.epoch = '2010-11-04 01:42:54.657+00'",
        "snowflake_id.worker_bits = 5",
        "snowflake_id.sequence_bits = 7",
    ]);
    cluster.restart();
    let mut d = Differ::new(&cluster, "managed");
    set_managed_layout(&mut d.managed, &other);
    from_timestamp_and_spans(&mut d, &mut rng, &other.0);
    for (server, _) in SERVER {
        let ids = ids(&mut rng);
        d.over(server, server, "bigint", &ids, false);
    }
    d.assert_clean("layout 2010-11-04 01:42:54.657, 5, 7");
    let mut summary = String::new();
    let _ = write!(summary, "{} comparisons ({} of errors), then {}", compared, errors, d.compared);
    println!("{summary}");
}

/// The comparison sees a broken body: the same differential over a managed
/// edition whose explicit-layout worker id shifts by the wrong field, and
/// one whose base32 decoder reads the wrong table, finds differences.
#[test]
fn a_broken_managed_body_is_caught() {
    let mut rng = Rng(7);
    let cluster = two_editions(&[]);
    cluster.sql("CREATE DATABASE broken_worker");
    cluster.sql("CREATE DATABASE broken_text");
    install_managed(
        &cluster,
        "broken_worker",
        Some((
            "ELSE ((id OPERATOR(pg_catalog.>>) sequence_bits)",
            "ELSE ((id OPERATOR(pg_catalog.>>) (sequence_bits OPERATOR(pg_catalog.+) 1))",
        )),
    );
    install_managed(
        &cluster,
        "broken_text",
        Some(("OPERATOR(pg_catalog.=) 92 THEN '\\\\'::text", "OPERATOR(pg_catalog.=) 92 THEN '\\'::text")),
    );
    let ids = ids(&mut rng);
    let mut d = Differ::new(&cluster, "broken_worker");
    d.over("snowflake_worker_id({x})", "snowflake_worker_id({x})", "bigint", &ids, false);
    assert!(!d.mismatches.is_empty(), "a worker id read one bit off went unnoticed");
    let mut d = Differ::new(&cluster, "broken_text");
    d.over("snowflake_from_base62({x})", "snowflake_from_base62({x})", "text", &texts(&mut rng), true);
    assert!(!d.mismatches.is_empty(), "a backslash named without its escape went unnoticed");
    // And the intact edition passes the same comparisons.
    let mut d = Differ::new(&cluster, "managed");
    d.over("snowflake_worker_id({x})", "snowflake_worker_id({x})", "bigint", &ids, false);
    d.over("snowflake_from_base62({x})", "snowflake_from_base62({x})", "text", &texts(&mut rng), true);
    d.assert_clean("intact");
}

/// The managed decoders are inlined: the plan of a query over a column holds
/// their expressions, not calls of them (a STRICT label, a SET clause or a
/// subquery in a body would stop that and cost a function call per row).
#[test]
fn managed_decoders_are_inlined() {
    let cluster = two_editions(&[]);
    let mut cfg = cluster.config();
    let mut client = cfg.dbname("managed").connect(postgres::NoTls).unwrap();
    let calls = [
        "snowflake_timestamp(id)",
        "snowflake_worker_id(id)",
        "snowflake_sequence(id)",
        "snowflake_timestamp(id, '2025-01-01 00:00:00+00', 10, 12)",
        "snowflake_worker_id(id, '2025-01-01 00:00:00+00', 10, 12)",
        "snowflake_sequence(id, '2025-01-01 00:00:00+00', 10, 12)",
        "snowflake_decode(id)",
        "snowflake_to_base62(id)",
        "snowflake_to_base32(id)",
        "snowflake_from_base62(t)",
        "snowflake_from_base32(t)",
    ];
    for call in calls {
        let (inlined, plan) = inlined(&mut client, call);
        assert!(inlined, "{call} is not inlined:\n{plan}");
    }
    // The check sees a body that is not inlined: the server-layout accessor
    // marked STRICT, as the native one is.
    cluster.sql("CREATE DATABASE strict");
    install_managed(
        &cluster,
        "strict",
        Some((
            "CREATE FUNCTION snowflake_timestamp(id bigint) RETURNS timestamptz\n    LANGUAGE sql STABLE",
            "CREATE FUNCTION snowflake_timestamp(id bigint) RETURNS timestamptz\n    LANGUAGE sql STABLE STRICT",
        )),
    );
    let mut client = cfg.dbname("strict").connect(postgres::NoTls).unwrap();
    assert!(!inlined(&mut client, "snowflake_timestamp(id)").0, "a STRICT body went unnoticed");
}

/// Whether `call` (of columns id bigint and t text) is inlined, and the plan.
fn inlined(client: &mut Client, call: &str) -> (bool, String) {
    let sql = format!("EXPLAIN (VERBOSE) SELECT {call} FROM (VALUES (1::bigint, '1'::text), (2, '2')) v(id, t)");
    let plan: String =
        client.query(&sql, &[]).unwrap().iter().map(|r| r.get::<_, String>(0)).collect::<Vec<_>>().join("\n");
    let name = call.split('(').next().unwrap_or(call);
    (!plan.contains(&format!("{name}(")) && plan.contains("CASE"), plan)
}
