//! Look-alikes planted beside every function of the extension (mission
//! invariant 11, docs/security.md's trust rule 2), through what re-creates
//! the extension's objects from their text: `pg_upgrade` (17 to 18, 18 to
//! 19), a dump restored into a fresh database, and `ALTER EXTENSION
//! snowflake_id UPDATE` from 0.6.0 and from 0.7.0.
//!
//! An ordinary role `planter` that may create in the extension's schema
//! (`public`: the pre-15 default, a `public` carried through pg_upgrade, a
//! grant) adds, for every function of the extension in that schema, one
//! with the same name and arguments plus `snowflake_planted integer DEFAULT
//! 0`. The list is read from the catalogs when the test runs, so a function
//! added later is covered without touching this file. From then on every
//! call by that name and those argument types is "not unique" (42725): a
//! body or view of the extension that names one of its own public functions
//! fails when it is created again from its text (0.7.0's and 0.8.0's did:
//! pg_upgrade's restore stopped at `snowflake_registry_check_holder`, and
//! the 0.6.0 -> 0.7.0 update refused). The tests here hold the extension
//! to doing everything it does with such plants in place.
//!
//! No application object in these databases names an extension function
//! (no column `DEFAULT snowflake_nextval()`, no view over the decoders):
//! those are the application's own calls, which PostgreSQL resolves among
//! every candidate, and a dump writes them as names (docs/security.md,
//! trust rule 3). IDs are drawn by queries and stored as plain values.

mod common;

use std::path::Path;

use common::upgrade::{carry_state_file, old_bin_with_the_library, pg_upgrade};
use common::{check, describe, Cluster};
use postgres::{Client, NoTls};

/// The role that plants: may create in the extension's schema, nothing more.
const PLANTER: &str = "planter";
/// An ordinary session, for the positive control: it calls by name.
const READER: &str = "reader";
/// What every planted body raises, so that a call that reached one says so.
const MARKER: &str = "SNOWFLAKE_PLANTED";
const PRELOAD: &str = "shared_preload_libraries = 'snowflake_id'";
const WORKER_ID: i32 = 21;
const WORKER: &str = "snowflake_id.worker_id = 21";

/// The extension's functions in its own schema, each with what a
/// look-alike of it needs. Procedures are planted as procedures.
/// Skipped, as they cannot be overloaded with one more argument at the end:
/// a function with a `VARIADIC` parameter (nothing may follow it), and one
/// taking a pseudo-type other than the polymorphic ones (`internal`,
/// `cstring`: type I/O and support functions, which only C can define,
/// and which the server calls by OID, never by name). The extra argument is
/// `integer`, or `text` where the extension itself has the function with
/// one more `integer` (the look-alike would be that function).
const EXTENSION_FUNCTIONS: &str = "
SELECT p.proname::text,
       n.nspname::text,
       p.prokind::text,
       pg_catalog.pg_get_function_identity_arguments(p.oid),
       CASE WHEN p.prokind = 'p' THEN ''
            WHEN rt.typtype = 'p' AND rt.typname NOT IN ('record', 'void') AND rt.typname !~ '^any' THEN 'void'
            ELSE pg_catalog.pg_get_function_result(p.oid) END,
       CASE WHEN EXISTS (SELECT FROM pg_catalog.pg_proc q
                          WHERE q.pronamespace = p.pronamespace AND q.proname = p.proname
                            AND q.proargtypes::oid[] = p.proargtypes::oid[] || 'integer'::regtype::oid)
            THEN 'text' ELSE 'integer' END,
       p.provariadic <> 0
         OR EXISTS (SELECT FROM pg_catalog.unnest(p.proargtypes) a JOIN pg_catalog.pg_type t ON t.oid = a
                     WHERE t.typtype = 'p' AND t.typname !~ '^any' AND t.typname <> 'record'),
       CASE WHEN EXISTS (SELECT FROM pg_catalog.unnest(p.proargtypes) a JOIN pg_catalog.pg_type t ON t.oid = a
                          WHERE t.typtype = 'p')
            THEN NULL
            ELSE coalesce((SELECT pg_catalog.string_agg(
                                      pg_catalog.format('NULL::%s', pg_catalog.format_type(a, NULL)), ', ' ORDER BY o)
                             FROM pg_catalog.unnest(p.proargtypes) WITH ORDINALITY u(a, o)), '') END
  FROM pg_catalog.pg_proc p
  JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_proc'::regclass AND d.objid = p.oid
   AND d.refclassid = 'pg_catalog.pg_extension'::regclass AND d.deptype = 'e'
  JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid AND e.extname = 'snowflake_id'
  JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace AND n.oid = e.extnamespace
  JOIN pg_catalog.pg_type rt ON rt.oid = p.prorettype
 ORDER BY 1, 4";

/// One look-alike made: its label and the call that must now be ambiguous.
struct Plant {
    label: String,
    /// `SELECT name(NULL::t, ...)` or `CALL ...`: the extension's own
    /// argument types, by name; `None` for polymorphic arguments, which a
    /// NULL cannot name.
    unqualified_call: Option<String>,
    /// The same with the extra argument given: reaches the plant itself.
    planted_call: Option<String>,
}

/// Connects to `db` of `cluster` as `user`.
fn connect_as(cluster: &Cluster, user: &str, db: &str) -> Client {
    let mut cfg = cluster.config();
    cfg.user(user).dbname(db);
    cfg.connect(NoTls).unwrap_or_else(|e| panic!("connect as {user} to {db}: {e}"))
}

/// The two ordinary roles (once per cluster) and `planter`'s right to create
/// in `schema` of `db`.
fn make_roles(cluster: &Cluster, db: &str, schema: &str) {
    connect_as(cluster, "postgres", db)
        .batch_execute(&format!(
            "DO $$ BEGIN
                 IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = '{PLANTER}') THEN
                     CREATE ROLE {PLANTER} LOGIN NOSUPERUSER;
                 END IF;
                 IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = '{READER}') THEN
                     CREATE ROLE {READER} LOGIN NOSUPERUSER;
                 END IF;
             END $$;
             GRANT CREATE ON SCHEMA {schema} TO {PLANTER}"
        ))
        .unwrap_or_else(|e| panic!("make the roles: {}", describe(&e)));
}

/// The extension's schema in `db`.
fn extension_schema(cluster: &Cluster, db: &str) -> String {
    connect_as(cluster, "postgres", db)
        .query_one(
            "SELECT extnamespace::regnamespace::text FROM pg_catalog.pg_extension WHERE extname = 'snowflake_id'",
            &[],
        )
        .unwrap_or_else(|e| panic!("the extension's schema in {db}: {}", describe(&e)))
        .get(0)
}

/// Plants, through `planter` (a connection as a role that may create in
/// the extension's schema), a look-alike of every function of the
/// extension in its schema: same name, its identity arguments and
/// `snowflake_planted integer DEFAULT 0`, a body that raises [`MARKER`].
/// Returns what was planted; panics when a look-alike cannot be made, or
/// when there is nothing to plant.
fn plant_look_alikes(planter: &mut Client) -> Vec<Plant> {
    let rows = planter.query(EXTENSION_FUNCTIONS, &[]).unwrap_or_else(|e| panic!("list: {}", describe(&e)));
    assert!(!rows.is_empty(), "the extension has no function in its schema: nothing to plant");
    let mut plants = vec![];
    for row in rows {
        let (name, schema, kind, args, result, extra): (String, String, String, String, String, String) =
            (row.get(0), row.get(1), row.get(2), row.get(3), row.get(4), row.get(5));
        let cannot: bool = row.get(6);
        let nulls: Option<String> = row.get(7);
        if cannot {
            eprintln!("not planted (cannot be overloaded with one more argument): {schema}.{name}({args})");
            continue;
        }
        let label = format!("{schema}.{name}({args})");
        let qname = format!("{}.{}", quote_ident(&schema), quote_ident(&name));
        let sep = if args.is_empty() { "" } else { ", " };
        let params = format!("{args}{sep}snowflake_planted {extra} DEFAULT 0");
        let body = format!(
            "LANGUAGE plpgsql AS $p$ BEGIN RAISE EXCEPTION '{MARKER}: the look-alike of % was called', \
             {}; END $p$",
            quote_literal(&label)
        );
        let create = if kind == "p" {
            format!("CREATE PROCEDURE {qname}({params}) {body}")
        } else {
            format!("CREATE FUNCTION {qname}({params}) RETURNS {result} {body}")
        };
        planter.batch_execute(&create).unwrap_or_else(|e| panic!("{create}: {}", describe(&e)));
        let verb = if kind == "p" { "CALL" } else { "SELECT" };
        let extra_null = format!("NULL::{extra}");
        plants.push(Plant {
            unqualified_call: nulls.as_ref().map(|n| format!("{verb} {}({n})", quote_ident(&name))),
            planted_call: nulls.as_ref().map(|n| format!("{verb} {qname}({n}{sep}{extra_null})")),
            label,
        });
    }
    plants
}

fn quote_ident(s: &str) -> String {
    if s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_') {
        s.to_string()
    } else {
        format!("\"{}\"", s.replace('"', "\"\""))
    }
}

fn quote_literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// The positive control: an ordinary session's call of each of the
/// extension's functions by name and its own argument types is now "not
/// unique" (42725), and with the extra argument it reaches the plant,
/// which says so. A plant that a typo or a changed signature broke fails
/// here, instead of leaving its test to pass because nothing could reach it.
fn prove_reachable(cluster: &Cluster, db: &str, plants: &[Plant]) {
    let mut reader = connect_as(cluster, READER, db);
    let mut broken = vec![];
    let mut proven = 0;
    for plant in plants {
        let (Some(unqualified), Some(planted)) = (&plant.unqualified_call, &plant.planted_call) else { continue };
        match reader.batch_execute(unqualified) {
            Err(e) if e.as_db_error().is_some_and(|d| d.code().code() == "42725") => {}
            other => broken.push(format!("{unqualified}: {:?}, not 42725", other.map_err(|e| describe(&e)))),
        }
        match reader.batch_execute(planted) {
            Err(e) if e.as_db_error().is_some_and(|d| d.message().contains(MARKER)) => proven += 1,
            other => broken.push(format!("{planted}: {:?}, not the plant's error", other.map_err(|e| describe(&e)))),
        }
    }
    assert!(broken.is_empty(), "a plant is not in the way, so the test proves nothing:\n  {}", broken.join("\n  "));
    assert!(proven > 0, "no plant could be called");
}

/// Everything of the extension that works by name-free means while the
/// plants are there: every view of the extension answers, the guard's event
/// trigger (where the version has one) lets a table be made, and no object
/// of the extension depends on a plant (which would mean it called one).
fn works_with_plants(cluster: &Cluster, db: &str) {
    let mut su = connect_as(cluster, "postgres", db);
    let views: Vec<String> = su
        .query(
            "SELECT c.oid::regclass::text FROM pg_catalog.pg_class c
               JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_class'::regclass AND d.objid = c.oid
                AND d.refclassid = 'pg_catalog.pg_extension'::regclass AND d.deptype = 'e'
               JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid AND e.extname = 'snowflake_id'
              WHERE c.relkind = 'v' ORDER BY 1",
            &[],
        )
        .expect("list the views")
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(views.iter().any(|v| v.ends_with("snowflake_id_status")), "no status view among {views:?}");
    let mut failed = vec![];
    for view in &views {
        match su.query(&format!("SELECT count(*) FROM {view}"), &[]) {
            Ok(_) => {}
            // snowflake_cluster_problems on a server without Citus or a
            // subscription: the check's own refusal, so its body ran.
            Err(e)
                if e.as_db_error().is_some_and(|d| {
                    d.code().code() == "55000" && d.message().contains("needs Citus or a subscription")
                }) => {}
            Err(e) => failed.push(format!("{view}: {}", describe(&e))),
        }
    }
    assert!(failed.is_empty(), "views of the extension fail with the plants in place:\n  {}", failed.join("\n  "));
    su.batch_execute("CREATE TABLE plants_probe (id bigint PRIMARY KEY, note text); DROP TABLE plants_probe")
        .unwrap_or_else(|e| panic!("a table cannot be made with the plants in place: {}", describe(&e)));
    let bound: Vec<String> = su
        .query(
            &format!(
                "SELECT pg_catalog.pg_describe_object(d.classid, d.objid, d.objsubid)
                        || ' -> ' || p.oid::regprocedure::text
                   FROM pg_catalog.pg_depend d JOIN pg_catalog.pg_proc p
                     ON d.refclassid = 'pg_catalog.pg_proc'::regclass AND d.refobjid = p.oid
                  WHERE p.proowner = '{PLANTER}'::regrole"
            ),
            &[],
        )
        .expect("dependencies on plants")
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(bound.is_empty(), "objects depend on plants (they call them): {bound:?}");
}

/// `planter` drops its look-alikes, of which there must be `planted` (the
/// ones made, so that they were all there through what the test did).
fn remove_plants(cluster: &Cluster, db: &str, planted: usize) {
    let mut planter = connect_as(cluster, PLANTER, db);
    let there = planter
        .query(
            &format!("SELECT oid::regprocedure::text FROM pg_catalog.pg_proc WHERE proowner = '{PLANTER}'::regrole"),
            &[],
        )
        .expect("list the plants");
    assert_eq!(there.len(), planted, "not every plant was still there");
    for row in there {
        let sig: String = row.get(0);
        planter
            .batch_execute(&format!("DROP ROUTINE {sig}"))
            .unwrap_or_else(|e| panic!("drop {sig}: {}", describe(&e)));
    }
}

/// The extension's generator and decoders by name, once the plants are
/// gone: IDs of this worker, above `above`, decoded to about now.
fn draws_above(cluster: &Cluster, db: &str, above: i64) {
    let mut su = connect_as(cluster, "postgres", db);
    let row = su
        .query_one(
            "SELECT min(x), max(x), count(DISTINCT x),
                    bool_and((snowflake_decode(x)).worker_id = $1),
                    max(abs(extract(epoch FROM (snowflake_decode(x)).ts - now())))::float8
               FROM (SELECT snowflake_nextval() AS x FROM generate_series(1, 1000)) s",
            &[&WORKER_ID],
        )
        .unwrap_or_else(|e| panic!("draw and decode: {}", describe(&e)));
    let (min, count, ours, off): (i64, i64, bool, f64) = (row.get(0), row.get(2), row.get(3), row.get(4));
    assert!(min > above, "an ID drawn now ({min}) is not above one drawn before ({above})");
    assert_eq!(count, 1000);
    assert!(ours, "an ID does not decode to worker {WORKER_ID}");
    assert!(off < 600.0, "an ID decodes {off} s away from now");
    su.query("SELECT * FROM snowflake_id_status", &[]).unwrap_or_else(|e| panic!("status: {}", describe(&e)));
}

/// IDs drawn by query and kept as plain values; returns the largest.
fn draw_and_keep(cluster: &Cluster, db: &str) -> i64 {
    let mut su = connect_as(cluster, "postgres", db);
    su.batch_execute(
        "CREATE TABLE orders (id bigint PRIMARY KEY, n integer);
         INSERT INTO orders SELECT snowflake_nextval(), g FROM generate_series(1, 1000) g",
    )
    .unwrap_or_else(|e| panic!("draw: {}", describe(&e)));
    su.query_one("SELECT max(id) FROM orders", &[]).unwrap().get(0)
}

/// The extension created in `db`, the roles made, the plants planted and
/// proven; returns how many.
fn plant_everywhere(cluster: &Cluster, db: &str) -> usize {
    make_roles(cluster, db, &extension_schema(cluster, db));
    let plants = plant_look_alikes(&mut connect_as(cluster, PLANTER, db));
    prove_reachable(cluster, db, &plants);
    log_plants(db, &plants);
    plants.len()
}

fn log_plants(db: &str, plants: &[Plant]) {
    eprintln!(
        "{} look-alikes planted in {db}: {}",
        plants.len(),
        plants.iter().map(|p| &p.label[..]).collect::<Vec<_>>().join(", ")
    );
}

/// `pg_dump -F format` of `db` into `file`.
fn dump(cluster: &Cluster, db: &str, format: &str, file: &Path) {
    check(
        "pg_dump",
        std::process::Command::new(cluster.tool("pg_dump"))
            .arg("-h")
            .arg(cluster.socket_dir())
            .args(["-p", &cluster.port.to_string(), "-U", "postgres", "-d", db, "-F", format, "-f"])
            .arg(file)
            .output()
            .expect("pg_dump"),
    );
}

/// Restores `file` into `db`: a plain dump through psql (`ON_ERROR_STOP`),
/// another through `pg_restore --exit-on-error`; panics with the errors.
fn restore(cluster: &Cluster, db: &str, plain: bool, file: &Path) {
    let out = if plain {
        cluster.psql("postgres", db).arg("-f").arg(file).output().expect("psql")
    } else {
        std::process::Command::new(cluster.tool("pg_restore"))
            .arg("-h")
            .arg(cluster.socket_dir())
            .args(["--exit-on-error", "-p", &cluster.port.to_string(), "-U", "postgres", "-d", db])
            .arg(file)
            .output()
            .expect("pg_restore")
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && !stderr.contains("ERROR"),
        "the restore of {} into {db} failed with the plants in place (exit {:?}):\n{stderr}",
        file.display(),
        out.status.code()
    );
}

/// A dump of a database with the extension and the plants, restored into
/// a fresh database, as a plain script and as pg_restore's archive. The
/// database is also a registry a node holds a lease from, so that the
/// extension's configuration tables have rows to restore. (The dump
/// creates the extension before any function of the database, so its
/// script meets no plant here: what is restored with them in place is
/// those rows and the database's own objects, under the extension's event
/// trigger. A fresh install into a schema that already has them refuses,
/// naming them: tests/upgrade.rs.)
#[test]
fn a_dump_restores_into_a_fresh_database_with_look_alikes_planted() {
    let registry = Cluster::preloaded_without_extension(&[WORKER]);
    registry.sql("CREATE EXTENSION snowflake_id");
    let node = Cluster::leased_node(&registry, "n1", &[]);
    wait_held(&node);
    drop(node);
    let leases = registry.query_i64("SELECT count(*) FROM snowflake_registry_leases");
    assert!(leases > 0, "the node's lease is not in the registry");
    let old_max = draw_and_keep(&registry, "postgres");
    let planted = plant_everywhere(&registry, "postgres");
    works_with_plants(&registry, "postgres");

    let dir = tempfile::tempdir().expect("tempdir");
    for (format, plain) in [("p", true), ("c", false)] {
        let file = dir.path().join(format!("registry.{format}"));
        dump(&registry, "postgres", format, &file);
        let db = format!("restored_{format}");
        registry.sql(&format!("CREATE DATABASE {db}"));
        restore(&registry, &db, plain, &file);
        works_with_plants(&registry, &db);
        let restored = connect_as(&registry, "postgres", &db)
            .query_one("SELECT count(*) FROM snowflake_registry_leases", &[])
            .expect("leases")
            .get::<_, i64>(0);
        assert_eq!(restored, leases, "the registry's leases were not restored");
        remove_plants(&registry, &db, planted);
        draws_above(&registry, &db, old_max);
    }
}

/// Waits until `node` holds its lease (30 s at most).
fn wait_held(node: &Cluster) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let state = node.query_text("SELECT lease_state FROM snowflake_id_status");
        if state == "held" {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "no lease after 30 s ({state})\n{}", node.log());
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// `ALTER EXTENSION snowflake_id UPDATE` from `version`, with the plants
/// made after `CREATE EXTENSION ... VERSION`: the update reaches the
/// version the control file gives, and the extension works after.
fn update_with_plants(version: &str) {
    let cluster = Cluster::preloaded_without_extension(&[WORKER]);
    cluster.sql(&format!("CREATE EXTENSION snowflake_id VERSION '{version}'"));
    let old_max = draw_and_keep(&cluster, "postgres");
    let planted = plant_everywhere(&cluster, "postgres");
    cluster.sql("ALTER EXTENSION snowflake_id UPDATE");
    let (now, wanted) = (
        cluster.query_text("SELECT extversion FROM pg_extension WHERE extname = 'snowflake_id'"),
        cluster.query_text("SELECT default_version FROM pg_available_extensions WHERE name = 'snowflake_id'"),
    );
    assert_eq!(now, wanted, "the update from {version} stopped short");
    works_with_plants(&cluster, "postgres");
    remove_plants(&cluster, "postgres", planted);
    draws_above(&cluster, "postgres", old_max);
}

#[test]
fn update_from_0_6_0_with_look_alikes_planted() {
    update_with_plants("0.6.0");
}

#[test]
fn update_from_0_7_0_with_look_alikes_planted() {
    update_with_plants("0.7.0");
}

/// pg_upgrade from the major before, both clusters preloading the library:
/// the old one with the extension, IDs drawn and the plants made; the
/// upgrade succeeds, the new cluster's extension works with the plants
/// still in place and by name once they are gone, and goes on above every
/// ID the old cluster returned (its state file copied, as
/// docs/operations.md says).
#[test]
fn pg_upgrade_with_look_alikes_planted() {
    let Some(old_bin) = old_bin_with_the_library() else { return };
    let mut old = Cluster::init_with_bin(&old_bin, &["--data-checksums"], &[PRELOAD, WORKER]);
    old.start();
    old.sql("CREATE EXTENSION snowflake_id");
    draw_and_keep(&old, "postgres");
    // IDs the old cluster returned but no table holds, a minute ahead of
    // the clock: only the state file remembers them.
    old.sql("SELECT snowflake_advance_past(snowflake_from_timestamp(clock_timestamp() + interval '60 seconds'))");
    let old_max = old.query_i64("SELECT max(x) FROM (SELECT snowflake_nextval() AS x FROM generate_series(1, 1000)) s");
    let planted = plant_everywhere(&old, "postgres");
    works_with_plants(&old, "postgres");
    old.stop();

    let mut new = Cluster::init(&[PRELOAD, WORKER]);
    new.stop_on_drop();
    old.stop_on_drop();
    pg_upgrade(&old, &old_bin, &new);
    carry_state_file(&old, &new);
    new.start();
    assert_eq!(new.query_i64("SELECT count(*) FROM orders"), 1000);
    works_with_plants(&new, "postgres");
    remove_plants(&new, "postgres", planted);
    draws_above(&new, "postgres", old_max);
}
