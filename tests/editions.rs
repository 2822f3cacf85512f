//! Moving a database between the native and the managed edition with
//! pg_dump/pg_restore, both ways, by the commands docs/managed.md gives
//! ("Moving a database between editions"), run as shell commands with the
//! same text.
//!
//! Two servers: the native one is the server under test (`SNOWFLAKE_PG_BIN`,
//! with the library installed and preloaded), the managed one the pg_tle
//! server without the native files (`SNOWFLAKE_MANAGED_PG_BIN`, from
//! `bash scripts/pg_tle_server.sh MAJOR`), the edition registered from
//! dist/snowflake_id_pg_tle.sql by `admin`, a role that is not a superuser.
//!
//! Each source is put a minute ahead of the clock (`snowflake_advance_past`)
//! before it stores its last rows, so that the clock cannot hide a missing
//! step: each test first draws an ID on the receiving side without the
//! documented step and sees it at or below a stored one, then takes the step
//! and sees every new ID above every stored one.

mod common;

use std::path::Path;
use std::process::Command;

use common::{check, Cluster};
use postgres::{Client, NoTls};

/// The bin directory of the pg_tle server. Unset is a failure, not a skip.
fn managed_bin() -> String {
    match std::env::var("SNOWFLAKE_MANAGED_PG_BIN") {
        Ok(dir) if !dir.is_empty() => dir.trim_end_matches('/').to_string(),
        _ => panic!(
            "SNOWFLAKE_MANAGED_PG_BIN is not set: export SNOWFLAKE_MANAGED_PG_BIN=$(bash scripts/pg_tle_server.sh 15)"
        ),
    }
}

fn repo_file(path: &str) -> String {
    format!("{}/{path}", env!("CARGO_MANIFEST_DIR"))
}

fn connect(cluster: &Cluster, user: &str, db: &str) -> Client {
    let mut cfg = cluster.config();
    cfg.user(user).dbname(db);
    cfg.connect(NoTls).unwrap_or_else(|e| panic!("connect as {user}: {e}\n{}", cluster.log()))
}

fn one(client: &mut Client, sql: &str) -> i64 {
    client.query_one(sql, &[]).unwrap_or_else(|e| panic!("{sql}: {}", common::describe(&e))).get(0)
}

fn worker_of(id: i64) -> i64 {
    (id >> 12) & 1023
}

/// A pg_tle server as a managed service runs it: `admin` (CREATEDB,
/// CREATEROLE, pgtle_admin; no superuser), database `app` owned by it with
/// pg_tle created by the superuser, and snowflake_id registered by `admin`.
fn managed_server() -> Cluster {
    let mut cluster = Cluster::init_with_bin(&managed_bin(), &[], &["shared_preload_libraries = 'pg_tle'"]);
    cluster.start();
    cluster.sql(
        "CREATE EXTENSION pg_tle;
         CREATE ROLE admin LOGIN CREATEDB CREATEROLE;
         GRANT pgtle_admin TO admin;",
    );
    cluster.sql("CREATE DATABASE app OWNER admin");
    connect(&cluster, "postgres", "app").batch_execute("CREATE EXTENSION pg_tle").expect("pg_tle in app");
    let script = repo_file("dist/snowflake_id_pg_tle.sql");
    sh(&cluster, "admin", &format!("psql -X -q -v ON_ERROR_STOP=1 -d app -f {script}"));
    cluster
}

/// Runs `script` under `bash -e` in `cluster`'s socket directory (where the
/// dumps and lists go), connected as `user` through PGHOST/PGPORT/PGUSER and
/// with `cluster`'s programs first on PATH: the commands of the docs as a
/// DBA types them.
fn sh(cluster: &Cluster, user: &str, script: &str) -> String {
    let bin = Path::new(&cluster.tool("psql")).parent().unwrap().display().to_string();
    let out = Command::new("bash")
        .args(["-e", "-o", "pipefail", "-c", script])
        .current_dir(cluster.socket_dir())
        .env("PATH", format!("{bin}:{}", std::env::var("PATH").unwrap_or_default()))
        .env("PGHOST", cluster.socket_dir())
        .env("PGPORT", cluster.port.to_string())
        .env("PGUSER", user)
        .output()
        .expect("bash");
    String::from_utf8_lossy(&check(script, out).stdout).into_owned()
}

/// Copies `file` from one cluster's directory to another's.
fn carry(from: &Cluster, to: &Cluster, file: &str) {
    let dest = to.socket_dir().join(file);
    std::fs::copy(from.socket_dir().join(file), &dest).expect("copy the dump");
    std::fs::set_permissions(&dest, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
}

/// The rows a source stores: 1,000 at the clock, then 1,000 after
/// `advance_past` (the call given) put its generator 60 s ahead of the clock
/// (more than a dump and restore take on a loaded machine).
/// Returns the largest stored ID.
fn store_rows_ahead(client: &mut Client, advance: &str) -> i64 {
    client
        .batch_execute(
            "CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), v int);
             INSERT INTO t (v) SELECT g FROM generate_series(1, 1000) g;",
        )
        .unwrap();
    client
        .batch_execute(&format!(
            "SELECT {advance}(snowflake_from_timestamp(clock_timestamp() + interval '60 seconds'))"
        ))
        .unwrap();
    client.batch_execute("INSERT INTO t (v) SELECT g FROM generate_series(1001, 2000) g").unwrap();
    let max = one(client, "SELECT max(id) FROM t");
    let now_ms = one(client, "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint");
    assert!(
        common::id_unix_ms(max) > now_ms + 50_000,
        "the source is not ahead of the clock: {} vs {now_ms}",
        common::id_unix_ms(max)
    );
    max
}

/// After the restore: the rows are there; an ID drawn without the step is at
/// or below a stored one (`without_step`); after `step`, 1,000 inserted rows
/// all get IDs above every stored one, of `worker`.
fn continues_above(client: &mut Client, max: i64, worker: i64, step: &str) {
    assert_eq!(one(client, "SELECT count(*) FROM t"), 2000);
    assert_eq!(one(client, "SELECT max(id) FROM t"), max);
    let without_step = one(client, "SELECT snowflake_nextval()");
    assert!(without_step <= max, "without the step the first ID {without_step} is already above {max}");
    client.batch_execute(step).unwrap_or_else(|e| panic!("{step}: {}", common::describe(&e)));
    client.batch_execute("INSERT INTO t (v) SELECT g FROM generate_series(2001, 3000) g").unwrap();
    let new: Vec<i64> =
        client.query("SELECT id FROM t WHERE v > 2000 ORDER BY v", &[]).unwrap().iter().map(|r| r.get(0)).collect();
    assert_eq!(new.len(), 1000);
    assert!(new[0] > max, "after the step: {} <= {max}", new[0]);
    common::assert_strictly_increasing(&new, "new IDs");
    assert!(new.iter().all(|id| worker_of(*id) == worker), "worker id {worker}");
}

/// docs/managed.md, "From the native edition to the managed one".
#[test]
fn a_native_database_restored_into_the_managed_edition_continues_above() {
    let native = Cluster::preloaded(&["snowflake_id.worker_id = 7"]);
    let max = store_rows_ahead(&mut native.connect(), "snowflake_advance_past");
    sh(&native, "postgres", "pg_dump -Fc -d postgres -f native.dump");

    let managed = managed_server();
    carry(&native, &managed, "native.dump");
    // The edition first (the restored defaults call its snowflake_nextval()),
    // with the source's worker id: the source issues no more IDs.
    sh(
        &managed,
        "admin",
        "psql -X -v ON_ERROR_STOP=1 -d app -c 'CREATE EXTENSION snowflake_id' \
             -c 'SELECT snowflake_id_internal.snowflake_set_worker_id(7)'",
    );
    // Everything but the native extension: its entry, its comment, its
    // registry tables' rows and its triggers on the tables.
    sh(
        &managed,
        "admin",
        "pg_restore -l native.dump \
           | grep -v -e ' EXTENSION - snowflake_id ' -e ' COMMENT - EXTENSION snowflake_id ' \
                     -e ' TABLE DATA public snowflake_registry_' -e ' TRIGGER .* snowflake_id_received ' > native.list
         pg_restore --no-owner --exit-on-error -L native.list -d app native.dump",
    );
    let mut admin = connect(&managed, "admin", "app");
    continues_above(&mut admin, max, 7, "SELECT snowflake_id_internal.snowflake_advance_past(max(id)) FROM public.t");
}

/// docs/managed.md, "From the managed edition to the native one".
#[test]
fn a_managed_database_restored_into_the_native_edition_continues_above() {
    let managed = managed_server();
    let mut admin = connect(&managed, "admin", "app");
    admin
        .batch_execute("CREATE EXTENSION snowflake_id; SELECT snowflake_id_internal.snowflake_set_worker_id(9);")
        .unwrap();
    let max = store_rows_ahead(&mut admin, "snowflake_id_internal.snowflake_advance_past");
    drop(admin);
    sh(&managed, "admin", "pg_dump -Fc -d app -f managed.dump");

    // The source's worker id, in postgresql.conf: the source issues no more IDs.
    let native = Cluster::preloaded_without_extension(&["snowflake_id.worker_id = 9"]);
    carry(&managed, &native, "managed.dump");
    sh(&native, "postgres", "psql -X -v ON_ERROR_STOP=1 -d postgres -c 'CREATE EXTENSION snowflake_id'");
    // Everything but pg_tle, the managed edition and its internal schemas.
    sh(
        &native,
        "postgres",
        "pg_restore -l managed.dump \
           | grep -v -e ' pgtle ' -e ' pg_tle ' -e ' snowflake_id_private ' -e ' snowflake_id_state ' \
                     -e ' EXTENSION - snowflake_id ' \
                     -e ' COMMENT - EXTENSION snowflake_id ' > managed.list
         pg_restore --no-owner --exit-on-error -L managed.list -d postgres managed.dump",
    );
    let mut client = native.connect();
    // The native edition's logical guard, put on the restored tables by the
    // documented call.
    sh(
        &native,
        "postgres",
        "psql -X -v ON_ERROR_STOP=1 -d postgres -c 'SELECT * FROM snowflake_id_internal.snowflake_logical_guard()'",
    );
    let guarded = one(
        &mut client,
        "SELECT count(*) FROM pg_trigger WHERE tgrelid = 'public.t'::regclass AND tgname = 'snowflake_id_received'",
    );
    assert_eq!(guarded, 1, "the restored table has no snowflake_id_received trigger");
    continues_above(&mut client, max, 9, "SELECT snowflake_advance_past(max(id)) FROM public.t");
}
