//! Upgrading in place: a database made with the released 0.1.0 or 0.2.0
//! keeps its tables, defaults and rows through `ALTER EXTENSION snowflake_id
//! UPDATE` (from 0.1.0 PostgreSQL chains the 0.1.0--0.2.0 and 0.2.0--0.3.0
//! scripts), works with the new library before the update, and ends up with
//! exactly the objects of a fresh install (compared in the catalogs).

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{ids, sql_error, Cluster};

/// Every object of the extension, described with its definition, ACL and
/// comment, in a stable order.
const DESCRIBE: &str = "
SELECT pg_describe_object(d.classid, d.objid, 0)
       || coalesce(E'\\n' || CASE d.classid
            WHEN 'pg_proc'::regclass THEN
                pg_get_functiondef(d.objid) || coalesce((SELECT proacl::text FROM pg_proc WHERE oid = d.objid), '')
                || coalesce(' initial ' || (SELECT initprivs::text FROM pg_init_privs
                                              WHERE objoid = d.objid AND classoid = d.classid AND objsubid = 0), '')
            WHEN 'pg_class'::regclass THEN
                coalesce(pg_get_viewdef(d.objid), '')
                || coalesce((SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
                                               || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END
                                               || coalesce(' default ' || pg_get_expr(ad.adbin, ad.adrelid), ''),
                                               ', ' ORDER BY a.attnum)
                               FROM pg_attribute a
                               LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
                              WHERE a.attrelid = d.objid AND a.attnum > 0 AND NOT a.attisdropped), '')
                || coalesce(' | ' || (SELECT string_agg(c.conname || ' ' || pg_get_constraintdef(c.oid), ', ' ORDER BY c.conname)
                               FROM pg_constraint c WHERE c.conrelid = d.objid), '')
                || coalesce((SELECT relacl::text FROM pg_class WHERE oid = d.objid), '')
                || CASE WHEN d.objid = ANY (e.extconfig) THEN ' (dumped by pg_dump)' ELSE '' END
            WHEN 'pg_type'::regclass THEN
                (SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod), ', ' ORDER BY a.attnum)
                   FROM pg_attribute a WHERE a.attrelid = (SELECT typrelid FROM pg_type WHERE oid = d.objid) AND a.attnum > 0)
          END, '')
       || coalesce(E'\\ncomment: ' || obj_description(d.objid, d.classid::regclass::name), '')
  FROM pg_depend d JOIN pg_extension e ON d.refclassid = 'pg_extension'::regclass AND d.refobjid = e.oid
 WHERE e.extname = 'snowflake_id' AND d.deptype = 'e'
 ORDER BY 1";

fn describe(client: &mut postgres::Client) -> Vec<String> {
    client.query(DESCRIBE, &[]).expect("describe the extension").iter().map(|r| r.get(0)).collect()
}

#[test]
fn update_from_0_1_0_keeps_the_data_and_matches_a_fresh_install() {
    let cluster = Cluster::preloaded_without_extension(&["snowflake_id.worker_id = 1"]);
    let mut old = cluster.connect();
    old.batch_execute(
        "CREATE EXTENSION snowflake_id VERSION '0.1.0';
         CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), item text);
         CREATE VIEW order_times AS SELECT id, (snowflake_decode(id)).ts FROM orders;",
    )
    .unwrap();
    let before = ids(&mut old, "INSERT INTO orders (item) SELECT 'tea' FROM generate_series(1, 1000) RETURNING id");
    // The new library serves 0.1.0's definitions until the update.
    let decoded: i64 =
        old.query_one("SELECT count(*) FROM orders WHERE (snowflake_decode(id)).worker_id = 1", &[]).unwrap().get(0);
    assert_eq!(decoded, 1000);
    old.query_one("SELECT ids_issued FROM snowflake_id_status", &[]).unwrap();
    let version: String =
        old.query_one("SELECT extversion FROM pg_extension WHERE extname = 'snowflake_id'", &[]).unwrap().get(0);
    assert_eq!(version, "0.1.0");

    old.batch_execute("ALTER EXTENSION snowflake_id UPDATE").unwrap();
    let version: String =
        old.query_one("SELECT extversion FROM pg_extension WHERE extname = 'snowflake_id'", &[]).unwrap().get(0);
    assert_eq!(version, env!("CARGO_PKG_VERSION"));

    // The table, its default and its rows survive; new IDs are above the old.
    let default: String = old
        .query_one(
            "SELECT pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d
              WHERE d.adrelid = 'orders'::regclass AND d.adnum = 1",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(default, "snowflake_nextval()");
    let after = ids(&mut old, "INSERT INTO orders (item) SELECT 'cake' FROM generate_series(1, 1000) RETURNING id");
    assert!(after.iter().min() > before.iter().max(), "new IDs are not above the old ones");
    let rows: i64 = old.query_one("SELECT count(*) FROM order_times WHERE ts IS NOT NULL", &[]).unwrap().get(0);
    assert_eq!(rows, 2000, "the view on snowflake_decode");
    // The 0.2.0 functions are there.
    old.query_one("SELECT snowflake_timestamp(id), snowflake_id_span('1 day') FROM orders LIMIT 1", &[]).unwrap();

    // 0.3.0's NULL decoding.
    assert!(decode_null_is_null(&mut old));

    assert_same_as_a_fresh_install(&cluster, &mut old);
}

#[test]
fn update_from_0_2_0_brings_null_decoding_back_and_matches_a_fresh_install() {
    let cluster = Cluster::preloaded_without_extension(&["snowflake_id.worker_id = 2"]);
    let mut old = cluster.connect();
    // 0.2.0's install script where this machine has one, else 0.1.0's and
    // the update to 0.2.0 (PostgreSQL picks the path): the same objects.
    old.batch_execute(
        "CREATE EXTENSION snowflake_id VERSION '0.2.0';
         CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), item text);
         CREATE VIEW order_times AS SELECT id, (snowflake_decode(id)).ts FROM orders;",
    )
    .unwrap();
    let before = ids(&mut old, "INSERT INTO orders (item) SELECT 'tea' FROM generate_series(1, 1000) RETURNING id");
    // 0.2.0's meaning, served by the new library until the update: a row of NULLs.
    assert!(!decode_null_is_null(&mut old));

    old.batch_execute("ALTER EXTENSION snowflake_id UPDATE").unwrap();
    let version: String =
        old.query_one("SELECT extversion FROM pg_extension WHERE extname = 'snowflake_id'", &[]).unwrap().get(0);
    assert_eq!(version, env!("CARGO_PKG_VERSION"));
    assert!(decode_null_is_null(&mut old));
    let after = ids(&mut old, "INSERT INTO orders (item) SELECT 'cake' FROM generate_series(1, 1000) RETURNING id");
    assert!(after.iter().min() > before.iter().max(), "new IDs are not above the old ones");
    // The view made under 0.2.0 reads the field as the accessor alone.
    let rows: i64 = old.query_one("SELECT count(*) FROM order_times WHERE ts IS NOT NULL", &[]).unwrap().get(0);
    assert_eq!(rows, 2000);
    let plan: Vec<String> = old
        .query("EXPLAIN (VERBOSE, COSTS OFF) SELECT ts FROM order_times", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(plan.iter().any(|l| l.contains("snowflake_timestamp(orders.id)")), "{plan:#?}");

    assert_same_as_a_fresh_install(&cluster, &mut old);
}

/// Whether `snowflake_decode(NULL)` is NULL as a whole (0.1.0 and 0.3.0)
/// rather than a row of NULLs (0.2.0), told by count(), which counts the latter.
fn decode_null_is_null(client: &mut postgres::Client) -> bool {
    let (is_null, counted): (bool, i64) = client
        .query_one(
            "SELECT bool_and(snowflake_decode(id) IS NULL), count(snowflake_decode(id)) FROM (VALUES (NULL::bigint)) v(id)",
            &[],
        )
        .map(|r| (r.get(0), r.get(1)))
        .unwrap();
    assert!(is_null, "snowflake_decode(NULL) IS NULL holds in every version");
    counted == 0
}

/// The upgraded database's extension objects equal a fresh install's of the
/// new version, in a new database of the same cluster.
fn assert_same_as_a_fresh_install(cluster: &Cluster, old: &mut postgres::Client) {
    cluster.sql("CREATE DATABASE fresh");
    let mut cfg = cluster.config();
    cfg.dbname("fresh");
    let mut fresh = cfg.connect(postgres::NoTls).unwrap();
    fresh.batch_execute("CREATE EXTENSION snowflake_id").unwrap();
    let (upgraded, installed) = (describe(old), describe(&mut fresh));
    assert!(installed.len() > 10, "{installed:?}");
    for (u, f) in upgraded.iter().zip(&installed) {
        assert_eq!(u, f, "upgraded and fresh objects differ");
    }
    assert_eq!(upgraded.len(), installed.len(), "upgraded: {upgraded:#?}\nfresh: {installed:#?}");
}

/// An object another role created in the extension's
/// schema under a name an update is about to create stops the update with
/// an error naming it, its owner and the fix, not a bare "already exists"
/// (or, for an overload, no error and a look-alike left to be called in
/// place of the extension's function). Once it is gone, the update runs.
#[test]
fn an_object_planted_where_an_update_creates_one_is_named_with_its_owner_and_the_fix() {
    let cluster = Cluster::preloaded_without_extension(&["snowflake_id.worker_id = 3"]);
    let mut c = cluster.connect();
    c.batch_execute(
        "CREATE EXTENSION snowflake_id VERSION '0.3.0';
         CREATE ROLE app LOGIN;
         GRANT CREATE ON SCHEMA public TO app;
         SET ROLE app;
         CREATE FUNCTION public.snowflake_nextval_at(ts timestamptz) RETURNS bigint LANGUAGE sql RETURN 1;
         CREATE TABLE public.snowflake_registry_history (x int);
         RESET ROLE;",
    )
    .unwrap();
    let version = |c: &mut postgres::Client| -> String {
        c.query_one("SELECT extversion FROM pg_extension WHERE extname = 'snowflake_id'", &[]).unwrap().get(0)
    };
    let e = sql_error(&mut c, "ALTER EXTENSION snowflake_id UPDATE");
    assert_eq!(e.code, "42710", "{e:?}");
    assert!(
        e.message.contains("function public.snowflake_nextval_at(ts timestamp with time zone), owned by role app"),
        "{e:?}"
    );
    assert!(e.hint.contains("DROP FUNCTION public.snowflake_nextval_at(ts timestamp with time zone);"), "{e:?}");
    assert_eq!(version(&mut c), "0.3.0");
    c.batch_execute("DROP FUNCTION public.snowflake_nextval_at(timestamptz)").unwrap();

    let e = sql_error(&mut c, "ALTER EXTENSION snowflake_id UPDATE");
    assert_eq!(e.code, "42710", "{e:?}");
    assert!(e.message.contains("table public.snowflake_registry_history, owned by role app"), "{e:?}");
    assert!(e.hint.contains("DROP TABLE public.snowflake_registry_history;"), "{e:?}");
    assert_eq!(version(&mut c), "0.3.0");
    c.batch_execute("DROP TABLE public.snowflake_registry_history").unwrap();

    c.batch_execute("ALTER EXTENSION snowflake_id UPDATE").unwrap();
    assert_eq!(version(&mut c), env!("CARGO_PKG_VERSION"));
    assert_same_as_a_fresh_install(&cluster, &mut c);
}

/// 0.4.0 to 0.5.0: the update replaces every body 0.5.0 fixed.
/// Bodies parsed at CREATE (the registry view, its staleness test) bound
/// whatever look-alike the schema offered when they were made, and 0.4.0's
/// snowflake_convert called a planted snowflake_timestamp(integer) as its
/// caller: both seen here on 0.4.0, and gone after the update, which ends
/// with exactly a fresh install's objects.
#[test]
fn update_from_0_4_0_rebinds_every_body_and_matches_a_fresh_install() {
    let cluster = Cluster::preloaded_without_extension(&["snowflake_id.worker_id = 4"]);
    let mut c = cluster.connect();
    // Look-alikes of built-ins the 0.4.0 scripts call with inexact types,
    // there before the extension is created.
    c.batch_execute(
        "CREATE ROLE app LOGIN;
         GRANT CREATE ON SCHEMA public TO app;
         SET ROLE app;
         CREATE TABLE public.calls (who text, what text);
         GRANT INSERT ON public.calls TO PUBLIC;
         CREATE FUNCTION public.to_timestamp(x numeric) RETURNS timestamptz LANGUAGE plpgsql AS
             $f$BEGIN INSERT INTO public.calls VALUES (current_user, 'to_timestamp(numeric)');
                      RETURN pg_catalog.to_timestamp(x::float8); END$f$;
         RESET ROLE;
         CREATE EXTENSION snowflake_id VERSION '0.4.0';
         INSERT INTO snowflake_registry_namespaces (namespace, worker_bits, sequence_bits, epoch_ms)
              VALUES ('fleet', 10, 12, 1735689600000);
         INSERT INTO snowflake_registry_leases (namespace, worker_id, lease_epoch, holder_token, system_identifier,
                                                timeline, node_name, floor_tick, ceiling_tick, horizon_ms,
                                                granted_at, renewed_at)
              VALUES ('fleet', 1, 1, 42, '1', 1, 'a', 0, 1000, 30000, now(), now());
         CREATE TABLE orders (id serial PRIMARY KEY, created_at timestamptz NOT NULL);
         INSERT INTO orders (created_at) SELECT now() - g * interval '1 hour' FROM generate_series(1, 10) g;
         SET ROLE app;
         CREATE FUNCTION public.snowflake_timestamp(id integer) RETURNS timestamptz LANGUAGE plpgsql AS
             $f$BEGIN INSERT INTO public.calls VALUES (current_user, 'snowflake_timestamp(integer)');
                      RETURN '2000-01-01'; END$f$;
         RESET ROLE;",
    )
    .unwrap();
    let calls = |c: &mut postgres::Client| -> String {
        c.query_one("SELECT coalesce(string_agg(DISTINCT who || ': ' || what, ', ' ORDER BY who || ': ' || what), '') FROM calls", &[])
            .unwrap()
            .get(0)
    };
    let exercise = |c: &mut postgres::Client| {
        c.query("SELECT * FROM snowflake_registry", &[]).unwrap();
        c.query("SELECT snowflake_convert('orders', 'id', dry_run => true, rekey_by => 'created_at')", &[]).unwrap();
    };
    exercise(&mut c);
    assert_eq!(calls(&mut c), "postgres: snowflake_timestamp(integer), postgres: to_timestamp(numeric)", "0.4.0");
    let (mut updater, notices) = cluster.connect_collecting_notices();
    updater.batch_execute("TRUNCATE calls; ALTER EXTENSION snowflake_id UPDATE").unwrap();
    // The look-alike still there is named, for untyped calls of users.
    assert!(
        notices.lock().iter().any(|n| n.starts_with("WARNING")
            && n.contains("public.snowflake_timestamp(id integer) owned by app")
            && !n.contains("to_timestamp")),
        "{:?}",
        notices.lock()
    );
    exercise(&mut c);
    assert_eq!(calls(&mut c), "", "a planted function ran after the update");
    // Nothing of the extension depends on them any more (0.4.0's view did).
    c.batch_execute("DROP FUNCTION public.to_timestamp(numeric); DROP FUNCTION public.snowflake_timestamp(integer);")
        .unwrap();
    let version: String =
        c.query_one("SELECT extversion FROM pg_extension WHERE extname = 'snowflake_id'", &[]).unwrap().get(0);
    assert_eq!(version, env!("CARGO_PKG_VERSION"));
    assert_same_as_a_fresh_install(&cluster, &mut c);
}

/// 0.5.0 to 0.6.0: the update creates snowflake_logical_peers()
/// and gives snowflake_cluster_check() its body that checks logical peers
/// too. A function another role planted under the new name stops it with
/// the name, the owner and the fix (section 0 of the script); once it is
/// gone, the update ends with exactly a fresh install's objects.
#[test]
fn update_from_0_5_0_names_a_planted_logical_peers_and_matches_a_fresh_install() {
    let cluster = Cluster::preloaded_without_extension(&["snowflake_id.worker_id = 6"]);
    let mut c = cluster.connect();
    c.batch_execute(
        "CREATE EXTENSION snowflake_id VERSION '0.5.0';
         CREATE ROLE app LOGIN;
         GRANT CREATE ON SCHEMA public TO app;
         SET ROLE app;
         CREATE FUNCTION public.snowflake_logical_peers() RETURNS SETOF text LANGUAGE sql RETURN 'x';
         RESET ROLE;",
    )
    .unwrap();
    let e = sql_error(&mut c, "ALTER EXTENSION snowflake_id UPDATE");
    assert_eq!(e.code, "42710", "{e:?}");
    assert!(e.message.contains("function public.snowflake_logical_peers(), owned by role app"), "{e:?}");
    assert!(e.hint.contains("DROP FUNCTION public.snowflake_logical_peers();"), "{e:?}");
    c.batch_execute("DROP FUNCTION public.snowflake_logical_peers(); ALTER EXTENSION snowflake_id UPDATE").unwrap();
    let version: String =
        c.query_one("SELECT extversion FROM pg_extension WHERE extname = 'snowflake_id'", &[]).unwrap().get(0);
    assert_eq!(version, env!("CARGO_PKG_VERSION"));
    assert_same_as_a_fresh_install(&cluster, &mut c);
}

/// CREATE EXTENSION refuses an object of another role under one
/// of the names it creates in its schema (an overload of another signature
/// too, which would otherwise stay to be called in place of the
/// extension's function by untyped calls), naming it, its owner and the fix.
/// The names it checks are every name a fresh install creates.
#[test]
fn a_fresh_install_refuses_a_look_alike_in_its_schema_and_checks_every_name_it_creates() {
    let cluster = Cluster::preloaded_without_extension(&["snowflake_id.worker_id = 5"]);
    let mut c = cluster.connect();
    c.batch_execute(
        "CREATE ROLE app LOGIN;
         GRANT CREATE ON SCHEMA public TO app;
         SET ROLE app;
         CREATE FUNCTION public.snowflake_timestamp(id integer) RETURNS timestamptz LANGUAGE sql RETURN now();
         RESET ROLE;",
    )
    .unwrap();
    let e = sql_error(&mut c, "CREATE EXTENSION snowflake_id");
    assert_eq!(e.code, "42710", "{e:?}");
    assert!(e.message.contains("function public.snowflake_timestamp(id integer), owned by role app"), "{e:?}");
    assert!(e.hint.contains("DROP FUNCTION public.snowflake_timestamp(id integer);"), "{e:?}");
    c.batch_execute("DROP FUNCTION public.snowflake_timestamp(integer); CREATE EXTENSION snowflake_id").unwrap();

    let guard = include_str!("../sql/install/objects_in_the_way.sql");
    let names: Vec<String> = c
        .query(
            "WITH members AS (
                 SELECT d.classid, d.objid FROM pg_depend d JOIN pg_extension e ON d.refobjid = e.oid
                  WHERE d.refclassid = 'pg_extension'::regclass AND e.extname = 'snowflake_id' AND d.deptype = 'e')
             SELECT p.proname::text FROM members m JOIN pg_proc p ON m.classid = 'pg_proc'::regclass AND p.oid = m.objid
             UNION SELECT c.relname::text FROM members m JOIN pg_class c ON m.classid = 'pg_class'::regclass AND c.oid = m.objid
             UNION SELECT t.typname::text FROM members m JOIN pg_type t ON m.classid = 'pg_type'::regclass AND t.oid = m.objid
                                            AND t.typelem = 0
             UNION SELECT i.relname::text FROM members m JOIN pg_index x ON m.classid = 'pg_class'::regclass
                                                                          AND x.indrelid = m.objid
                                           JOIN pg_class i ON i.oid = x.indexrelid",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(names.len() > 20, "{names:?}");
    for name in names {
        assert!(
            guard.contains(&format!("'{name}'")),
            "{name} is missing from the names sql/install/objects_in_the_way.sql checks"
        );
    }
}

/// The 0.5.0 -> 0.6.0 update creates two views; section 0
/// names what another role put under either name (without it the update
/// stopped at PostgreSQL's bare "already exists"). Each name in turn.
#[test]
fn update_from_0_5_0_names_a_planted_object_under_either_new_view_name() {
    let cluster = Cluster::preloaded_without_extension(&["snowflake_id.worker_id = 6"]);
    let mut c = cluster.connect();
    c.batch_execute(
        "CREATE EXTENSION snowflake_id VERSION '0.5.0';
         CREATE ROLE app LOGIN;
         GRANT CREATE ON SCHEMA public TO app;",
    )
    .unwrap();
    for (kind, name) in [("VIEW", "snowflake_cluster_problems"), ("TABLE", "snowflake_logical_peer_answers")] {
        let plant = if kind == "VIEW" { "AS SELECT 1 AS x" } else { "(x int)" };
        c.batch_execute(&format!("SET ROLE app; CREATE {kind} public.{name} {plant}; RESET ROLE;")).unwrap();
        let e = sql_error(&mut c, "ALTER EXTENSION snowflake_id UPDATE");
        assert_eq!(e.code, "42710", "{e:?}");
        assert!(e.message.contains(&format!("public.{name}, owned by role app")), "{e:?}");
        c.batch_execute(&format!("DROP {kind} public.{name}")).unwrap();
    }
    c.batch_execute("ALTER EXTENSION snowflake_id UPDATE").unwrap();
    assert_same_as_a_fresh_install(&cluster, &mut c);
}

/// A connection whose WARNINGs are collected as "message | hint".
fn collecting_warnings(cfg: &mut postgres::Config) -> (postgres::Client, Arc<Mutex<Vec<String>>>) {
    let warnings = Arc::new(Mutex::new(Vec::new()));
    let sink = warnings.clone();
    cfg.notice_callback(move |n| {
        if n.severity() == "WARNING" {
            sink.lock().unwrap().push(format!("{} | {}", n.message(), n.hint().unwrap_or("")));
        }
    });
    (cfg.connect(postgres::NoTls).expect("connect"), warnings)
}

/// In a database at 0.4.0, three tables of `app` that the
/// guard pass of the update cannot guard: a partition whose trigger named
/// snowflake_id_received is cloned from app's partitioned parent (0.6.0's
/// update stopped for good on "cannot drop trigger"), app's temporary table
/// in a session kept open ("cannot alter temporary tables of other
/// sessions"), and app's table with an insert in a transaction left open
/// (the update waited as long as it lasted, holding the locks of the tables
/// already done). The update reaches the version, guards the DBA's table,
/// names each of the three in a WARNING with the call that guards it later,
/// and waits for the lock no longer than its short lock_timeout; the guard
/// function then does the same instead of aborting as a whole.
#[test]
fn update_from_0_4_0_guards_each_table_on_its_own_and_names_those_it_cannot() {
    let cluster = Cluster::preloaded_without_extension(&["snowflake_id.worker_id = 7"]);
    let mut c = cluster.connect();
    c.batch_execute(
        "CREATE EXTENSION snowflake_id VERSION '0.4.0';
         CREATE ROLE app LOGIN;
         GRANT CREATE ON SCHEMA public TO app;
         CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), item text);
         SET ROLE app;
         CREATE TABLE public.parts (id bigint DEFAULT snowflake_nextval(), note text) PARTITION BY RANGE (id);
         CREATE TABLE public.parts_1 PARTITION OF public.parts FOR VALUES FROM (MINVALUE) TO (MAXVALUE);
         CREATE FUNCTION public.app_audit() RETURNS trigger LANGUAGE plpgsql AS $t$ BEGIN RETURN NEW; END $t$;
         CREATE TRIGGER snowflake_id_received BEFORE INSERT ON public.parts
             FOR EACH ROW EXECUTE FUNCTION public.app_audit();
         CREATE TABLE public.busy (id bigint PRIMARY KEY DEFAULT snowflake_nextval());
         RESET ROLE;",
    )
    .unwrap();
    let mut as_app = cluster.config();
    as_app.user("app");
    let mut staging = as_app.connect(postgres::NoTls).unwrap();
    staging.batch_execute("CREATE TEMP TABLE staging (id bigint DEFAULT snowflake_nextval())").unwrap();
    let mut idle = as_app.connect(postgres::NoTls).unwrap();
    idle.batch_execute("BEGIN; INSERT INTO public.busy DEFAULT VALUES;").unwrap();

    let (mut updater, warnings) = collecting_warnings(&mut cluster.config());
    let started = Instant::now();
    updater.batch_execute("ALTER EXTENSION snowflake_id UPDATE").unwrap_or_else(|e| panic!("update: {e:?}"));
    let took = started.elapsed();
    let version: String =
        c.query_one("SELECT extversion FROM pg_extension WHERE extname = 'snowflake_id'", &[]).unwrap().get(0);
    assert_eq!(version, env!("CARGO_PKG_VERSION"));
    // One short lock_timeout for the one locked table, not the idle transaction's life.
    assert!(took < Duration::from_secs(20), "the update took {took:?}");
    let named = |warnings: &[String], what: &str, cause: &str| {
        warnings.iter().any(|w| {
            w.starts_with("snowflake_id: the logical replication guard is not on table ")
                && w.contains(what)
                && w.contains(cause)
                && w.contains("snowflake_logical_guard(")
        })
    };
    // Another session's temporary table: 15, 17 and 18 refuse to alter it
    // ("cannot alter temporary tables of other sessions") and the update names
    // it; 16 lets the guard's ALTER TABLE reach it, and it is simply guarded.
    let staging_guarded: bool = c
        .query_one(
            "SELECT EXISTS (SELECT FROM pg_trigger t JOIN pg_class r ON r.oid = t.tgrelid
                             WHERE r.relname = 'staging' AND r.relpersistence = 't'
                               AND t.tgname = 'snowflake_id_received' AND t.tgenabled = 'R')",
            &[],
        )
        .unwrap()
        .get(0);
    let expected: Vec<(&str, &str)> =
        [("public.parts_1", "cannot drop trigger"), (".staging", "of other sessions"), ("public.busy", "lock timeout")]
            .into_iter()
            .filter(|(what, _)| !(staging_guarded && *what == ".staging"))
            .collect();
    {
        let seen = warnings.lock().unwrap();
        for &(what, cause) in &expected {
            assert!(named(&seen, what, cause), "the update did not name {what} ({cause}): {seen:#?}");
        }
    }
    let guarded = |c: &mut postgres::Client, table: &str| -> bool {
        c.query_one(
            "SELECT EXISTS (SELECT FROM pg_trigger WHERE tgrelid = $1::text::regclass
                              AND tgname = 'snowflake_id_received' AND tgenabled = 'R')",
            &[&table],
        )
        .unwrap()
        .get(0)
    };
    assert!(guarded(&mut c, "orders"), "the DBA's table was left unguarded");
    assert!(!guarded(&mut c, "busy"));

    // 0.7.0's guard function: the same three named, nothing aborted.
    warnings.lock().unwrap().clear();
    let made: Vec<String> = updater
        .query("SELECT table_name::text FROM snowflake_logical_guard()", &[])
        .unwrap_or_else(|e| panic!("snowflake_logical_guard() aborted: {e:?}"))
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(made.is_empty(), "{made:?}");
    {
        let seen = warnings.lock().unwrap();
        for &(what, cause) in &expected {
            assert!(named(&seen, what, cause), "snowflake_logical_guard() did not name {what} ({cause}): {seen:#?}");
        }
    }
    // Once the transaction is over, the call the hint gives guards the table.
    idle.batch_execute("COMMIT").unwrap();
    let hint = warnings
        .lock()
        .unwrap()
        .iter()
        .find(|w| w.contains("public.busy"))
        .and_then(|w| w.split_once("run ").map(|(_, call)| call.split_once(';').unwrap().0.to_string()))
        .expect("a hint with a call");
    let made: Vec<String> = updater
        .query(&format!("SELECT table_name::text FROM ({hint}) g"), &[])
        .unwrap_or_else(|e| panic!("{hint}: {e:?}"))
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(made, ["busy"], "{hint}");
    assert!(guarded(&mut c, "busy"));
    drop(staging);
    // Called by app: the DBA's table left unguarded (made with event
    // triggers off) is not app's to guard, and is named; app's own new
    // table is guarded all the same.
    c.batch_execute(
        "SET session_replication_role = replica;
         CREATE TABLE dba_only (id bigint PRIMARY KEY DEFAULT snowflake_nextval());
         RESET session_replication_role;",
    )
    .unwrap();
    let (mut app, warnings) = collecting_warnings(&mut as_app);
    app.batch_execute("CREATE TABLE public.mine (id bigint DEFAULT snowflake_nextval())").unwrap();
    let made: Vec<String> = app
        .query("SELECT table_name::text FROM snowflake_logical_guard()", &[])
        .unwrap_or_else(|e| panic!("app's snowflake_logical_guard() aborted: {e:?}"))
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(made.is_empty(), "{made:?}");
    assert!(named(&warnings.lock().unwrap(), "public.dba_only", "permission denied"), "{:?}", warnings.lock().unwrap());
    assert!(guarded(&mut c, "mine"));
    assert_same_as_a_fresh_install(&cluster, &mut c);
}

/// A table the update's guard
/// pass guarded stays locked until ALTER EXTENSION commits, so each wait
/// for another table's lock also blocks the writers of the tables already
/// guarded. With ten of app's tables locked by one open transaction, 0.7.0's
/// first cut (2 s per table) took over 20 s and kept the DBA's inserts
/// into the table it had guarded first waiting as long. The update now
/// finishes in well under ten times 2 s, names each locked table with the
/// call that guards it later, and the DBA's insert during it is not held
/// for long; the guard function then waits as little.
#[test]
fn update_from_0_4_0_waits_briefly_for_many_locked_tables() {
    const LOCKED: usize = 10;
    let cluster = Cluster::preloaded_without_extension(&["snowflake_id.worker_id = 7"]);
    let mut c = cluster.connect();
    // The DBA's table first: the pass goes in oid order, so it is guarded,
    // and locked by the update, before any of app's.
    c.batch_execute(
        "CREATE EXTENSION snowflake_id VERSION '0.4.0';
         CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), item text);
         CREATE ROLE app LOGIN;
         GRANT CREATE ON SCHEMA public TO app;",
    )
    .unwrap();
    let mut as_app = cluster.config();
    as_app.user("app");
    let mut idle = as_app.connect(postgres::NoTls).unwrap();
    let mut hold = String::from("BEGIN;");
    for i in 1..=LOCKED {
        idle.batch_execute(&format!(
            "CREATE TABLE public.busy_{i} (id bigint PRIMARY KEY DEFAULT snowflake_nextval())"
        ))
        .unwrap();
        hold.push_str(&format!("INSERT INTO public.busy_{i} DEFAULT VALUES;"));
    }
    idle.batch_execute(&hold).unwrap();

    let mut config = cluster.config();
    let update = std::thread::spawn(move || {
        let (mut updater, warnings) = collecting_warnings(&mut config);
        let started = Instant::now();
        let outcome = updater.batch_execute("ALTER EXTENSION snowflake_id UPDATE").map_err(|e| format!("{e:?}"));
        let seen = warnings.lock().unwrap().clone();
        (outcome, started.elapsed(), seen)
    });
    // The DBA's insert while the update runs (once it is past orders).
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    c.batch_execute("INSERT INTO orders (item) VALUES ('during the update')").unwrap();
    let insert_waited = started.elapsed();
    let (outcome, took, warnings) = update.join().unwrap();
    outcome.unwrap_or_else(|e| panic!("update: {e}"));
    eprintln!("the update took {took:?}; the DBA's insert waited {insert_waited:?}");
    let budget = Duration::from_secs(2) * LOCKED as u32 / 3;
    assert!(took < budget, "the update took {took:?} for {LOCKED} locked tables");
    assert!(insert_waited < budget, "the DBA's insert into a guarded table waited {insert_waited:?}");
    for i in 1..=LOCKED {
        let table = format!("public.busy_{i}:");
        assert!(
            warnings
                .iter()
                .any(|w| w.contains(&table) && w.contains("lock timeout") && w.contains("snowflake_logical_guard(")),
            "{table} not named: {warnings:#?}"
        );
    }
    let guarded: bool = c
        .query_one(
            "SELECT EXISTS (SELECT FROM pg_trigger WHERE tgrelid = 'orders'::regclass
                              AND tgname = 'snowflake_id_received' AND tgenabled = 'R')",
            &[],
        )
        .unwrap()
        .get(0);
    assert!(guarded, "the DBA's table was left unguarded");

    // The guard function, the same way: the locked tables named, quickly.
    let (mut dba, warnings) = collecting_warnings(&mut cluster.config());
    let started = Instant::now();
    dba.query("SELECT * FROM snowflake_logical_guard()", &[]).unwrap();
    let took = started.elapsed();
    assert!(took < budget, "snowflake_logical_guard() took {took:?} for {LOCKED} locked tables");
    assert_eq!(warnings.lock().unwrap().len(), LOCKED, "{:#?}", warnings.lock().unwrap());
    idle.batch_execute("COMMIT").unwrap();
    assert_same_as_a_fresh_install(&cluster, &mut c);
}

/// 0.7.0's update bound the guard's entry points in snowflake_id_internal
/// to the extension's snowflake_logical_guard(regclass); app's overload
/// with a defaulted argument beside it made that "not unique", and 0.7.0's
/// script refused the update until it was dropped. Now the update runs
/// through to the current version with the overload in place (the entry
/// points are the implementation's, in snowflake_id_internal), ends with a
/// fresh install's objects, and the guard works.
#[test]
fn update_from_0_6_0_runs_with_a_guard_look_alike_in_place() {
    let cluster = Cluster::preloaded_without_extension(&["snowflake_id.worker_id = 3"]);
    let mut c = cluster.connect();
    c.batch_execute(
        "CREATE EXTENSION snowflake_id VERSION '0.6.0';
         CREATE ROLE app LOGIN;
         GRANT CREATE ON SCHEMA public TO app;
         SET ROLE app;
         CREATE FUNCTION public.snowflake_logical_guard(tbl regclass, x integer DEFAULT 0)
             RETURNS TABLE (table_name regclass, columns name[]) LANGUAGE sql BEGIN ATOMIC SELECT NULL::regclass, NULL::name[]; END;
         RESET ROLE;",
    )
    .unwrap();
    c.batch_execute("ALTER EXTENSION snowflake_id UPDATE").unwrap_or_else(|e| panic!("{}", common::describe(&e)));
    // The overload is still there and still app's (nothing of another
    // role's is touched): a call by name of the public function is as
    // ambiguous as PostgreSQL makes it.
    let e = sql_error(&mut c, "SELECT * FROM public.snowflake_logical_guard('pg_class'::regclass)");
    assert_eq!(e.code, "42725", "{e:?}");
    c.batch_execute("DROP FUNCTION public.snowflake_logical_guard(regclass, integer)").unwrap();
    c.batch_execute("CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_nextval())").unwrap();
    let n: i64 = c
        .query_one("SELECT count(*) FROM snowflake_id_internal.snowflake_logical_guard('t'::regclass)", &[])
        .unwrap()
        .get(0);
    assert_eq!(n, 0, "the event trigger guarded t already");
    c.query("SELECT * FROM snowflake_id_internal.snowflake_logical_guard()", &[]).unwrap();
    assert_same_as_a_fresh_install(&cluster, &mut c);
}

/// 0.7.0 to 0.8.0 changes nothing in the native edition's SQL (0.8.0 is the
/// managed edition's second pass), but a database at 0.7.0 still updates to
/// the current version and ends with a fresh install's objects, its rows
/// and its default untouched.
#[test]
fn update_from_0_7_0_reaches_the_current_version_and_matches_a_fresh_install() {
    let cluster = Cluster::preloaded_without_extension(&["snowflake_id.worker_id = 8"]);
    let mut c = cluster.connect();
    c.batch_execute(
        "CREATE EXTENSION snowflake_id VERSION '0.7.0';
         CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), item text);",
    )
    .unwrap();
    let before = ids(&mut c, "INSERT INTO orders (item) SELECT 'tea' FROM generate_series(1, 100) RETURNING id");
    c.batch_execute("ALTER EXTENSION snowflake_id UPDATE").unwrap();
    let version: String =
        c.query_one("SELECT extversion FROM pg_extension WHERE extname = 'snowflake_id'", &[]).unwrap().get(0);
    assert_eq!(version, env!("CARGO_PKG_VERSION"));
    let after = ids(&mut c, "INSERT INTO orders (item) SELECT 'tea' FROM generate_series(1, 100) RETURNING id");
    assert!(after[0] > *before.iter().max().unwrap(), "an ID after the update is below one before it");
    assert_same_as_a_fresh_install(&cluster, &mut c);
}

/// The updates that replace the status view (0.4.0 to 0.5.0, and 0.8.0 to
/// 0.9.0) wait for an open transaction that read it 5 s at most, then fail
/// with 55P03 naming that session, instead of waiting with no end while
/// every later reader queues behind them; once that transaction ends, the
/// update runs. Each starting version is the one whose next step replaces
/// the view.
#[test]
fn updates_that_replace_the_status_view_wait_briefly_for_a_reader_and_name_it() {
    for from in ["0.4.0", "0.8.0"] {
        let cluster = Cluster::preloaded_without_extension(&["snowflake_id.worker_id = 9"]);
        let mut c = cluster.connect();
        c.batch_execute(&format!("CREATE EXTENSION snowflake_id VERSION '{from}'")).unwrap();
        let mut reader = cluster.connect();
        reader.batch_execute("BEGIN; SELECT count(*) FROM public.snowflake_id_status;").unwrap();
        let pid: i32 = reader.query_one("SELECT pg_backend_pid()", &[]).unwrap().get(0);
        // A bound of the test's own, so that an update that waits with no
        // end fails here rather than hangs.
        c.batch_execute("SET statement_timeout = '60s'").unwrap();
        let started = Instant::now();
        let e = sql_error(&mut c, "ALTER EXTENSION snowflake_id UPDATE");
        let waited = started.elapsed();
        assert_eq!(e.code, "55P03", "from {from}: {e:?}");
        assert!(e.message.contains("snowflake_id_status is in use"), "from {from}: {e:?}");
        assert!(e.detail.contains(&format!("pid {pid} ")), "from {from}: {e:?}");
        assert!(waited < Duration::from_secs(60), "from {from}: the update waited {waited:?}");
        reader.batch_execute("COMMIT").unwrap();
        c.batch_execute("ALTER EXTENSION snowflake_id UPDATE").unwrap_or_else(|e| panic!("{}", common::describe(&e)));
        assert_same_as_a_fresh_install(&cluster, &mut c);
    }
}

/// An ordinary role that may only connect (and make temporary tables, as
/// every role may by default) cannot stop the update from 0.8.0: 0.8.0's
/// SQL wrappers in snowflake_id_internal were executable by everyone, and a
/// temporary table's default, a view or an SQL-standard body of another
/// role's may use one. The update must go through (keeping what uses them
/// working), not fail on "other objects depend on it" for as long as that
/// role keeps its session.
#[test]
fn an_ordinary_roles_use_of_an_internal_wrapper_does_not_stop_the_update_from_0_8_0() {
    let cluster = Cluster::preloaded_without_extension(&["snowflake_id.worker_id = 10"]);
    let mut c = cluster.connect();
    c.batch_execute("CREATE EXTENSION snowflake_id VERSION '0.8.0'; CREATE ROLE mallory LOGIN;").unwrap();
    let mut mallory = cluster.config().user("mallory").connect(postgres::NoTls).unwrap();
    // One of each kind of 0.7.0 wrapper: the library's, the registry's,
    // the logical guard's (a view needs no EXECUTE to be made).
    mallory
        .batch_execute(
            "CREATE TEMP TABLE hold (at timestamptz DEFAULT snowflake_id_internal.snowflake_timestamp(0::bigint));
             CREATE TEMP VIEW at AS SELECT snowflake_id_internal.snowflake_nextval_at(now());
             CREATE TEMP VIEW renew AS SELECT snowflake_id_internal.snowflake_registry_renew('n', 0, 1::bigint,
                 1::bigint, 1::bigint, 1000::bigint);
             CREATE TEMP VIEW guard AS SELECT * FROM snowflake_id_internal.snowflake_logical_guard();
             CREATE TEMP VIEW guard_one AS
                 SELECT * FROM snowflake_id_internal.snowflake_logical_guard('pg_class'::regclass);",
        )
        .unwrap();
    c.batch_execute("ALTER EXTENSION snowflake_id UPDATE").unwrap_or_else(|e| panic!("{}", common::describe(&e)));
    mallory.batch_execute("INSERT INTO hold DEFAULT VALUES").unwrap();
    // What they use is the implementation now, with its privileges: the
    // registry's is not mallory's to call.
    let e = common::sql_error(&mut mallory, "SELECT * FROM renew");
    assert_eq!(e.code, "42501", "{e:?}");
    assert_same_as_a_fresh_install(&cluster, &mut c);
}

/// What a DBA granted or revoked on 0.8.0's functions still holds after the
/// update, through whichever function now does the work: a REVOKE on the
/// public status function and accessor keeps a role out of the status view
/// and the decoder (which read their twins in snowflake_id_internal now),
/// and a node role's grant on the registry's acquire reaches the
/// implementation that nodes call.
#[test]
fn the_update_from_0_8_0_keeps_the_dbas_grants_and_revokes() {
    let cluster = Cluster::preloaded_without_extension(&["snowflake_id.worker_id = 11"]);
    let mut c = cluster.connect();
    c.batch_execute(
        "CREATE EXTENSION snowflake_id VERSION '0.8.0';
         CREATE ROLE eve LOGIN; CREATE ROLE node LOGIN;
         REVOKE EXECUTE ON FUNCTION snowflake_id_status() FROM PUBLIC;
         REVOKE EXECUTE ON FUNCTION snowflake_timestamp(bigint) FROM PUBLIC;
         GRANT EXECUTE ON FUNCTION snowflake_registry_acquire(text, integer, integer, bigint, integer, text, integer,
                                                              text, bigint, bigint, bigint, bigint) TO node;",
    )
    .unwrap();
    c.batch_execute("ALTER EXTENSION snowflake_id UPDATE").unwrap_or_else(|e| panic!("{}", common::describe(&e)));
    let mut eve = cluster.config().user("eve").connect(postgres::NoTls).unwrap();
    for denied in ["SELECT last_id FROM public.snowflake_id_status", "SELECT (public.snowflake_decode(1::bigint)).ts"] {
        let e = sql_error(&mut eve, denied);
        assert_eq!(e.code, "42501", "{denied}: {e:?}");
    }
    let mut node = cluster.config().user("node").connect(postgres::NoTls).unwrap();
    node.query_one(
        "SELECT worker_id FROM snowflake_id_internal.snowflake_registry_acquire('n', 10, 12, 0::bigint, NULL::integer,
             '1', 1, 'a', 1::bigint, 1000::bigint, NULL::bigint, NULL::bigint)",
        &[],
    )
    .unwrap_or_else(|e| panic!("the node's grant: {}", common::describe(&e)));
    let e = sql_error(
        &mut eve,
        "SELECT worker_id FROM snowflake_id_internal.snowflake_registry_acquire('n', 10, 12, 0::bigint, NULL::integer,
             '2', 1, 'b', 1::bigint, 1000::bigint, NULL::bigint, NULL::bigint)",
    );
    assert_eq!(e.code, "42501", "{e:?}");
}

/// The grants the update from 0.8.0 copies to the functions that are the
/// implementations now are the DBA's, not the extension's: a database
/// updated in place and then dumped and restored (a registry moved to a
/// new server, or restored from a logical backup) keeps them. PostgreSQL
/// records every GRANT and REVOKE an extension script runs as the
/// extension's initial privileges (pg_init_privs), which pg_dump leaves
/// out, and the restore's CREATE EXTENSION makes a fresh install: the node
/// role would lose the implementations nodes call, and a REVOKE on an
/// accessor would stop holding for its twin.
#[test]
fn a_dump_of_a_database_updated_from_0_8_0_keeps_the_grants_the_update_copied() {
    let cluster = Cluster::preloaded_without_extension(&["snowflake_id.worker_id = 12"]);
    let mut c = cluster.connect();
    c.batch_execute(
        "CREATE EXTENSION snowflake_id VERSION '0.8.0';
         CREATE ROLE eve LOGIN; CREATE ROLE node LOGIN;
         GRANT EXECUTE ON FUNCTION snowflake_registry_acquire, snowflake_registry_renew,
               snowflake_registry_release, snowflake_registry_history_of,
               snowflake_registry_record_history TO node;
         REVOKE EXECUTE ON FUNCTION snowflake_timestamp(bigint) FROM PUBLIC;",
    )
    .unwrap();
    c.batch_execute("ALTER EXTENSION snowflake_id UPDATE").unwrap_or_else(|e| panic!("{}", common::describe(&e)));
    let file = std::env::temp_dir().join(format!("snowflake_id_upgrade_dump_{}.sql", cluster.port));
    let out = std::process::Command::new(cluster.tool("pg_dump"))
        .arg("-h")
        .arg(cluster.socket_dir())
        .args(["-p", &cluster.port.to_string(), "-U", "postgres", "-d", "postgres", "-f"])
        .arg(&file)
        .output()
        .expect("pg_dump");
    assert!(out.status.success(), "pg_dump: {}", String::from_utf8_lossy(&out.stderr));
    cluster.sql("CREATE DATABASE restored");
    let out = cluster.psql("postgres", "restored").arg("-f").arg(&file).output().expect("psql");
    let _ = std::fs::remove_file(&file);
    assert!(out.status.success(), "restore: {}", String::from_utf8_lossy(&out.stderr));
    let mut node = cluster.config().dbname("restored").user("node").connect(postgres::NoTls).unwrap();
    for call in [
        "SELECT worker_id FROM snowflake_id_internal.snowflake_registry_acquire('n', 10, 12, 0::bigint, NULL::integer,
             '1', 1, 'a', 1::bigint, 1000::bigint, NULL::bigint, NULL::bigint)",
        "SELECT worker_id FROM public.snowflake_registry_acquire('n', 10, 12, 0::bigint, NULL::integer,
             '1', 1, 'a', 1::bigint, 1000::bigint, NULL::bigint, NULL::bigint)",
    ] {
        node.query_one(call, &[])
            .unwrap_or_else(|e| panic!("the node's grant after the restore: {}", common::describe(&e)));
    }
    let mut eve = cluster.config().dbname("restored").user("eve").connect(postgres::NoTls).unwrap();
    let e = sql_error(&mut eve, "SELECT (public.snowflake_decode(1::bigint)).ts");
    assert_eq!(e.code, "42501", "the REVOKE on snowflake_timestamp(bigint) after the restore: {e:?}");
}
