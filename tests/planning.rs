//! What the planner hook must not change: every query of every database of a
//! server that preloads the library passes through it. Compared side by side
//! with a server of the same binaries without the library: errors raised
//! while a query is planned (every field the client receives, in the
//! database's encoding), how deep an expression may nest before
//! `stack depth limit exceeded`, and the locks a new session takes. 0.3.0's
//! hook caught planning errors and raised a copy (no CONTEXT, no
//! schema/datatype/constraint names, the message mangled outside UTF8),
//! recursed three times deeper than PostgreSQL, and looked up `pg_extension`
//! under a lock at each session's first query.

mod common;

use common::{describe, Cluster};
use postgres::Client;

/// The same two servers for every comparison: `plain` never loads the
/// library; `loaded` preloads it and has the extension in every database used.
struct Pair {
    plain: Cluster,
    loaded: Cluster,
}

/// Objects that make the planner raise errors: SQL functions that it inlines
/// and folds, a domain whose check fails while folding, and a database in
/// LATIN1 (the message quotes the input in the database's encoding).
const SETUP: &str = "
    CREATE FUNCTION divide_by_zero() RETURNS int LANGUAGE sql AS 'SELECT 1/0';
    CREATE DOMAIN positive AS int CONSTRAINT positive_check CHECK (VALUE > 0);
    CREATE FUNCTION to_positive(int) RETURNS positive LANGUAGE sql IMMUTABLE AS 'SELECT $1::positive';
    CREATE FUNCTION to_int(text) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT $1::int';
";

impl Pair {
    fn new() -> Pair {
        let mut plain = Cluster::init(&[]);
        plain.start();
        let loaded = Cluster::preloaded_without_extension(&["snowflake_id.worker_id = 6"]);
        for (cluster, extension) in [(&plain, ""), (&loaded, "CREATE EXTENSION snowflake_id;")] {
            cluster.sql(&format!("{SETUP} {extension}"));
            cluster.sql("CREATE DATABASE latin TEMPLATE template0 ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C'");
            let mut latin = connect(cluster, "latin");
            latin.batch_execute(&format!("{SETUP} {extension}")).expect("setup in latin");
        }
        Pair { plain, loaded }
    }
}

fn connect(cluster: &Cluster, dbname: &str) -> Client {
    let mut cfg = cluster.config();
    cfg.dbname(dbname);
    cfg.connect(postgres::NoTls).unwrap_or_else(|e| panic!("connect to {dbname}: {e}"))
}

/// Everything the client receives of the error `sql` raises: severity,
/// SQLSTATE, message, detail, hint, position, context, the schema, table,
/// column, datatype and constraint names, and the source location.
fn error_fields(client: &mut Client, sql: &str) -> String {
    match client.batch_execute(sql) {
        Ok(()) => panic!("{sql} succeeded"),
        Err(e) => format!("{:#?}", e.as_db_error().unwrap_or_else(|| panic!("{sql}: {e}"))),
    }
}

#[test]
fn errors_raised_while_planning_reach_the_client_as_postgresql_raised_them() {
    let pair = Pair::new();
    let cases = [
        // An SQL function of pg_catalog, inlined and folded.
        ("postgres", "SELECT log(-12.34)"),
        // substring(... similar ... escape ...) is an SQL function too.
        ("postgres", "SELECT substring('abc' similar 'a' escape 'xy')"),
        // A user's SQL function: "during inlining".
        ("postgres", "SELECT divide_by_zero()"),
        // A domain check failing while a function is folded: schema,
        // datatype and constraint names.
        ("postgres", "SELECT to_positive(-1)"),
        // In a LATIN1 database with a UTF8 client: the message quotes the
        // input, converted from the database's encoding.
        ("latin", "SELECT to_int('é')"),
        ("latin", "SELECT to_positive(-1)"),
    ];
    for (db, sql) in cases {
        let want = error_fields(&mut connect(&pair.plain, db), sql);
        let got = error_fields(&mut connect(&pair.loaded, db), sql);
        assert_eq!(got, want, "in database {db}, {sql} raised a different error with the library preloaded");
    }
    // The CONTEXT line the issue was about is really there.
    let mut loaded = connect(&pair.loaded, "postgres");
    let fields = error_fields(&mut loaded, "SELECT divide_by_zero()");
    assert!(fields.contains("during inlining"), "no CONTEXT: {fields}");
}

/// The longest `SELECT x+x+...+x` that `cluster` plans and runs, by
/// bisection between `low` (known to work) and `high` (known to fail).
fn longest_sum(client: &mut Client, mut low: usize, mut high: usize) -> usize {
    while high - low > 1 {
        let mid = (low + high) / 2;
        let sql = format!("SELECT {} FROM (SELECT 1 AS x) s", vec!["x"; mid].join("+"));
        match client.batch_execute(&sql) {
            Ok(()) => low = mid,
            Err(e) => {
                let code = e.as_db_error().map(|d| d.code().code().to_string());
                assert_eq!(code.as_deref(), Some("54001"), "{mid} terms: {}", describe(&e));
                high = mid;
            }
        }
    }
    low
}

/// What the hook's one frame above `standard_planner` may cost, in terms of
/// the sum below (a few hundred bytes; each term costs the planner's
/// recursion about as much).
const HOOK_FRAME_TERMS: usize = 4;

#[test]
fn the_hook_costs_no_stack_depth() {
    let pair = Pair::new();
    let mut plain = pair.plain.connect();
    let mut loaded = pair.loaded.connect();
    let limit = longest_sum(&mut plain, 10, 200_000);
    assert!(limit > 1_000, "the plain server plans only {limit} terms");
    // The same bound on the server with the library, in a database with the
    // extension. The hook's own frame, below the planner's recursion, may be
    // worth a term (4,850 of 4,851 on 16.2); a frame per level, as 0.3.0's
    // recursive walk had, cost two thirds of them.
    let with_library = longest_sum(&mut loaded, 10, 200_000);
    eprintln!("longest sum that plans: {limit} terms without the library, {with_library} with it");
    assert!(
        with_library + HOOK_FRAME_TERMS >= limit,
        "with the library a sum of {} terms is too deep; without it {limit} plan",
        with_library + 1
    );
}

#[test]
fn a_new_session_takes_no_lock_on_pg_extension() {
    let pair = Pair::new();
    let mut holder = pair.loaded.connect();
    holder.batch_execute("BEGIN; LOCK pg_extension IN ACCESS EXCLUSIVE MODE").unwrap();
    let mut cfg = pair.loaded.config();
    cfg.options("-c lock_timeout=5s");
    let mut fresh = cfg.connect(postgres::NoTls).expect("connect");
    // A query through the hook, then one that decodes in FROM (the swap).
    fresh.batch_execute("SELECT 1").unwrap_or_else(|e| panic!("first query: {}", describe(&e)));
    let n: i64 = fresh
        .query_one("SELECT count(d.ts) FROM (VALUES (12345::bigint << 22)) v(id), snowflake_decode(v.id) d", &[])
        .unwrap_or_else(|e| panic!("decoding: {}", describe(&e)))
        .get(0);
    assert_eq!(n, 1);
    holder.batch_execute("ROLLBACK").unwrap();
}
