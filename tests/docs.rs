//! The docs describe what the extension installs: every function the
//! extension creates in its schema appears in docs/functions.md with its
//! argument types, so that the page a user reads to find a function cannot
//! fall behind the SQL (a function added without a line there fails here).

mod common;

use common::Cluster;

const FUNCTIONS_MD: &str = include_str!("../docs/functions.md");

/// A type as PostgreSQL's `format_type` writes it, from the way the docs
/// write it (`timestamptz`, `int`, `pg_catalog.regclass` ...).
fn normalized_type(t: &str) -> String {
    let t = t.trim().to_lowercase();
    let t = t.rsplit_once('.').map_or(t.as_str(), |(_, name)| name);
    match t {
        "timestamptz" => "timestamp with time zone",
        "timestamp" => "timestamp without time zone",
        "int" | "int4" => "integer",
        "int8" => "bigint",
        "int2" => "smallint",
        "bool" => "boolean",
        other => other,
    }
    .to_string()
}

/// The argument types of a signature's argument list as the docs write it
/// (`id bigint, force boolean DEFAULT false`): names, defaults and OUT
/// arguments dropped, each type normalized.
fn argument_types(args: &str) -> Vec<String> {
    args.split(',')
        .map(str::trim)
        .filter(|a| !a.is_empty() && !a.to_lowercase().starts_with("out "))
        .map(|a| {
            let a = match a.to_lowercase().find(" default ") {
                Some(i) => &a[..i],
                None => a,
            };
            // `name type`, or a bare type.
            normalized_type(a.split_once(char::is_whitespace).map_or(a, |(_, ty)| ty))
        })
        .collect()
}

/// Every `snowflake_...(args)` the page writes, as (name, argument types).
/// A name written after a dot is another schema's (`snowflake_id_internal.`)
/// and is not counted for the extension's own schema.
fn documented_signatures(text: &str) -> Vec<(String, Vec<String>)> {
    let mut found = Vec::new();
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(at) = text[from..].find("snowflake_").map(|i| from + i) {
        from = at + 1;
        let before = at.checked_sub(1).map(|i| bytes[i]);
        if before.is_some_and(|b| b == b'.' || b == b'_' || b.is_ascii_alphanumeric()) {
            continue;
        }
        let name_end =
            text[at..].find(|c: char| !(c == '_' || c.is_ascii_alphanumeric())).map_or(text.len(), |i| at + i);
        if !text[name_end..].starts_with('(') {
            continue;
        }
        let Some(close) = text[name_end + 1..].find([')', '(']).map(|i| name_end + 1 + i) else { continue };
        if bytes[close] != b')' {
            continue;
        }
        found.push((text[at..name_end].to_string(), argument_types(&text[name_end + 1..close])));
    }
    found
}

#[test]
fn the_signature_parser_reads_the_forms_the_page_uses() {
    let text = "`snowflake_advance_past(id bigint, force boolean DEFAULT false)` and \
                `snowflake_decode(id bigint, epoch timestamptz, worker_bits integer, sequence_bits integer)`, \
                `snowflake_nextval()`, `snowflake_id_internal.snowflake_logical_guard(tbl regclass)`, \
                `(snowflake_decode(id)).ts`, `snowflake_logical_guard(tbl pg_catalog.regclass DEFAULT NULL)`";
    let found = documented_signatures(text);
    let s = |v: &[&str]| v.iter().map(|t| t.to_string()).collect::<Vec<_>>();
    assert_eq!(
        found,
        vec![
            ("snowflake_advance_past".to_string(), s(&["bigint", "boolean"])),
            ("snowflake_decode".to_string(), s(&["bigint", "timestamp with time zone", "integer", "integer"])),
            ("snowflake_nextval".to_string(), vec![]),
            ("snowflake_decode".to_string(), s(&["id"])),
            ("snowflake_logical_guard".to_string(), s(&["regclass"])),
        ]
    );
}

/// Every function in `pg_proc` that belongs to the extension (its
/// `pg_depend` entry) and lives in the extension's schema is written in
/// docs/functions.md as `name(arguments)` with the same argument types.
#[test]
fn every_function_of_the_extension_is_in_functions_md() {
    let c = Cluster::preloaded(&["snowflake_id.worker_id = 1"]);
    let rows = c
        .connect()
        .query(
            "SELECT p.proname::text, coalesce(string_agg(pg_catalog.format_type(t.oid, NULL), ', '
                                                      ORDER BY a.n), '')
               FROM pg_catalog.pg_extension e
               JOIN pg_catalog.pg_depend d ON d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass
                                          AND d.refobjid = e.oid AND d.deptype = 'e'
                                          AND d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass
               JOIN pg_catalog.pg_proc p ON p.oid = d.objid AND p.pronamespace = e.extnamespace
               LEFT JOIN LATERAL pg_catalog.unnest(p.proargtypes::pg_catalog.oid[]) WITH ORDINALITY a(oid, n) ON true
               LEFT JOIN pg_catalog.pg_type t ON t.oid = a.oid
              WHERE e.extname = 'snowflake_id'
              GROUP BY p.oid, p.proname
              ORDER BY 1, 2",
            &[],
        )
        .unwrap_or_else(|e| panic!("pg_proc: {}", common::describe(&e)));
    // A query that found nothing would pass whatever the page says.
    assert!(rows.len() >= 30, "only {} functions of the extension found in pg_proc", rows.len());
    assert_documented(&rows, "the extension's schema");
}

/// The same for the managed edition: every function the plain script
/// creates in the schema it installs into (the one users call; its
/// internals live in schemas of their own) is on the page, with its
/// argument types. The plain script needs no pg_tle, and the pg_tle script
/// creates the same functions (tests/managed.rs compares the two installs).
#[test]
fn every_function_of_the_managed_edition_is_in_functions_md() {
    let mut c = Cluster::init(&[]);
    c.start();
    c.sql("CREATE DATABASE plain");
    let out = c
        .psql("postgres", "plain")
        .arg("-f")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/dist/snowflake_id_plain.sql"))
        .output()
        .expect("psql");
    common::check("psql -f dist/snowflake_id_plain.sql", out);
    let rows = c
        .config()
        .dbname("plain")
        .connect(postgres::NoTls)
        .expect("connect to plain")
        .query(
            "SELECT p.proname::text, coalesce(string_agg(pg_catalog.format_type(t.oid, NULL), ', '
                                                      ORDER BY a.n), '')
               FROM pg_catalog.pg_proc p
               LEFT JOIN LATERAL pg_catalog.unnest(p.proargtypes::pg_catalog.oid[]) WITH ORDINALITY a(oid, n) ON true
               LEFT JOIN pg_catalog.pg_type t ON t.oid = a.oid
              WHERE p.pronamespace = 'public'::pg_catalog.regnamespace AND p.proname LIKE 'snowflake%'
              GROUP BY p.oid, p.proname
              ORDER BY 1, 2",
            &[],
        )
        .unwrap_or_else(|e| panic!("pg_proc: {}", common::describe(&e)));
    assert!(rows.len() >= 20, "only {} functions of the managed edition found in pg_proc", rows.len());
    assert_documented(&rows, "the managed edition's plain install");
}

/// Fails naming each (name, argument types) row not written in
/// docs/functions.md as `name(arguments)` with those types.
fn assert_documented(rows: &[postgres::Row], what: &str) {
    let documented = documented_signatures(FUNCTIONS_MD);
    let missing: Vec<String> = rows
        .iter()
        .map(|r| (r.get::<_, String>(0), r.get::<_, String>(1)))
        .filter(|(name, types)| {
            let types: Vec<String> = types.split(", ").filter(|t| !t.is_empty()).map(normalized_type).collect();
            !documented.iter().any(|(n, t)| n == name && *t == types)
        })
        .map(|(name, types)| format!("{name}({types})"))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/functions.md does not list {} function(s) of {what} (write each as `name(arg type, ...)`):\n  {}",
        missing.len(),
        missing.join("\n  ")
    );
}
