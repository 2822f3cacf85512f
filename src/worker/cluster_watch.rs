//! The cluster watch: with Citus preloaded, a background worker that runs
//! `snowflake_cluster_check()` every `snowflake_id.cluster_check_interval`
//! (10 s by default) in each database that has both Citus and snowflake_id,
//! where this server is the coordinator, and logs a WARNING naming each node
//! with a problem: a worker id unset or shared, another layout, no answer.
//!
//! Why a process of its own: on Citus the workers evaluate the DEFAULT too
//! (`INSERT ... SELECT`, delegated calls, statements sent to a worker), so
//! two nodes given one worker id by hand repeat each other's IDs without any
//! error; only a look at every node at once shows it, and nobody runs a
//! check by hand after each change of nodes. Nothing on the path of an ID
//! changes: `snowflake_nextval()` costs what it did.
//!
//! How it reaches the databases: like a local `psql`, through libpq over the
//! server's own Unix socket (as the server's operating system user, the
//! default libpq user), one short connection per database and check. A
//! background worker can join only one database for life, and a process
//! connected to a database for good would make `DROP DATABASE` fail; a
//! connection per check holds a database only while the check runs. What
//! the check costs a coordinator: a connection per database with
//! snowflake_id, and one per node from `run_command_on_all_nodes`, every
//! interval. On a worker (Citus group other than 0) it looks and stops
//! there. A warning repeats every ten minutes while its problem lasts.
//!
//! It connects as the server's bootstrap superuser, into databases where
//! any role may have created functions in `public`: every statement here
//! names `pg_catalog` (the session's search_path is pinned besides, by
//! `pg/libpq.rs`), and `snowflake_cluster_check()`'s body is written the
//! same way (`sql/install/cluster.sql`). An unqualified `quote_ident(...)` made an
//! ordinary role a superuser within ten seconds (before 0.5.0).

use std::collections::{HashMap, HashSet};
use std::ffi::CStr;
use std::time::{Duration, Instant};

use pgrx::bgworkers::{BackgroundWorker, BackgroundWorkerBuilder, BgWorkerStartTime, SignalWakeFlags};
use pgrx::prelude::*;
use pgrx::{PgLogLevel, PgSqlErrorCode};

use super::mark_keeper::{keep_going, wait};
use crate::pg::libpq::{Connection, Failure};
use crate::pg::report;
use crate::settings::citus::interval;

/// How often the watch wakes to see whether a check is due (and answers
/// SIGHUP, SIGTERM and barriers).
const POLL: Duration = Duration::from_secs(1);

/// How long one connection or one query may take: a node that does not
/// answer is reported by Citus within its own timeouts.
const CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// A warning repeats this often while its problem lasts; a problem that
/// goes and comes back is warned of at once.
const REPEAT: Duration = Duration::from_secs(600);

/// Whether `shared_preload_libraries` names Citus (read in the postmaster,
/// from `_PG_init`): the watch runs only there.
pub fn citus_preloaded() -> bool {
    // SAFETY: a built-in setting read as text; the string is PostgreSQL's.
    let value = unsafe { pg_sys::GetConfigOption(c"shared_preload_libraries".as_ptr(), true, false) };
    if value.is_null() {
        return false;
    }
    // SAFETY: NUL-terminated when not NULL.
    let list = unsafe { CStr::from_ptr(value) }.to_string_lossy();
    list.split(',').any(snowflake_id_core::preload::names_library("citus"))
}

/// Registers the watch; called from `_PG_init` in the postmaster.
pub fn register() {
    BackgroundWorkerBuilder::new("snowflake_id cluster check")
        .set_type("snowflake_id cluster check")
        .set_library("snowflake_id")
        .set_function("snowflake_id_cluster_watch_main")
        .enable_spi_access()
        // Not on a standby: nothing issues IDs there, and a promoted
        // coordinator starts it then.
        .set_start_time(BgWorkerStartTime::RecoveryFinished)
        .set_restart_time(Some(Duration::from_secs(10)))
        .load();
}

#[pg_guard]
#[no_mangle]
pub extern "C-unwind" fn snowflake_id_cluster_watch_main(_arg: pg_sys::Datum) {
    BackgroundWorker::attach_signal_handlers(SignalWakeFlags::SIGHUP | SignalWakeFlags::SIGTERM);
    // Connected to no database, as the mark keeper: it has a row in
    // pg_stat_activity and pg_terminate_backend() reaches it.
    BackgroundWorker::connect_worker_to_spi(None, None);
    report::name_the_node_in_this_process();
    let mut warned: HashMap<String, Instant> = HashMap::new();
    let mut last: Option<Instant> = None;
    while wait(POLL) && keep_going() {
        let Some(every) = interval() else { continue };
        if last.is_some_and(|at| at.elapsed() < every) {
            continue;
        }
        last = Some(Instant::now());
        check_every_database(&mut warned);
    }
}

/// One check of every database of this server; `warned` holds when each
/// problem (or trouble running the check) was last logged.
fn check_every_database(warned: &mut HashMap<String, Instant>) {
    let mut seen = HashSet::new();
    let mut say = |key: String, message: String, detail: &str, hint: &str| {
        if warned.get(&key).is_none_or(|at| at.elapsed() >= REPEAT) {
            report::emit(
                PgLogLevel::WARNING,
                PgSqlErrorCode::ERRCODE_WARNING,
                message,
                Some(detail.into()),
                Some(hint.into()),
            );
            warned.insert(key.clone(), Instant::now());
        }
        seen.insert(key);
    };
    let databases = match databases() {
        Ok(names) => names,
        Err(why) => {
            let message = format!("snowflake_id: the Citus cluster check cannot list the databases: {why}");
            say(message.clone(), message, TROUBLE_DETAIL, TROUBLE_HINT);
            vec![]
        }
    };
    for db in databases {
        let shown = escaped(&db);
        match problems_in(&db) {
            Ok(rows) => {
                for (node, problem) in rows {
                    let message =
                        format!("snowflake_id: node {node} of the Citus cluster of database \"{shown}\": {problem}");
                    say(message.clone(), message, PROBLEM_DETAIL, PROBLEM_HINT);
                }
            }
            Err(None) => return, // asked to stop
            Err(Some(why)) => {
                let why = escaped(&why);
                let message = format!("snowflake_id: the Citus cluster check failed in database \"{shown}\": {why}");
                say(message.clone(), message, TROUBLE_DETAIL, TROUBLE_HINT);
            }
        }
    }
    warned.retain(|key, _| seen.contains(key));
}

const PROBLEM_DETAIL: &str = "Nodes on one worker id repeat each other's IDs, and a node on another layout issues IDs \
     that decode wrongly elsewhere, without any error. Found by snowflake_cluster_check(), which this coordinator \
     runs every snowflake_id.cluster_check_interval; repeated every 10 minutes while it lasts.";
const PROBLEM_HINT: &str = "Give every node its own snowflake_id.worker_id and the coordinator's layout, or lease \
     worker ids from a registry (docs/citus.md). SELECT * FROM snowflake_id_internal.snowflake_cluster_check() shows what is wrong now.";
const TROUBLE_DETAIL: &str = "The check connects to each database of this server over its Unix socket, as the \
     server's operating system user; until it can, a shared worker id on a Citus node goes unreported. Repeated \
     every 10 minutes while it lasts.";
const TROUBLE_HINT: &str = "Let that user in locally (pg_hba.conf), or set snowflake_id.cluster_check_interval = 0 \
     and run SELECT * FROM snowflake_id_internal.snowflake_cluster_check() from a scheduler (docs/citus.md).";

/// A libpq connection string to this server's database `db`: its first
/// Unix socket directory and its port.
fn local_conninfo(db: &str) -> String {
    let setting = |name: &CStr| {
        // SAFETY: built-in settings read as text; the strings are PostgreSQL's.
        let value = unsafe { pg_sys::GetConfigOption(name.as_ptr(), true, false) };
        // SAFETY: NUL-terminated when not NULL.
        (!value.is_null()).then(|| unsafe { CStr::from_ptr(value) }.to_string_lossy().into_owned())
    };
    let sockets = setting(c"unix_socket_directories").unwrap_or_default();
    let host = sockets.split(',').map(|d| d.trim().trim_matches('"')).find(|d| !d.is_empty()).unwrap_or("localhost");
    let port = setting(c"port").unwrap_or_else(|| "5432".into());
    let quote = |v: &str| format!("'{}'", v.replace('\\', "\\\\").replace('\'', "\\'"));
    format!("host={} port={} dbname={}", quote(host), quote(&port), quote(db))
}

/// The rows of `sql` in database `db`; `Err(None)` when asked to stop.
fn query(connection: &mut Connection, sql: &str) -> Result<Vec<Vec<Option<String>>>, Option<String>> {
    connection.query(sql, &[], CALL_TIMEOUT, keep_going).map_err(why)
}

fn connect(db: &str) -> Result<Connection, Option<String>> {
    Connection::open(&local_conninfo(db), "snowflake_id cluster check", CALL_TIMEOUT, keep_going).map_err(why)
}

fn why(failure: Failure) -> Option<String> {
    match failure {
        Failure::Refused { sqlstate, message, .. } => Some(format!("{sqlstate}: {message}")),
        // This server's own socket, in its own log: nothing secret in it.
        Failure::Unreachable(why) | Failure::Connection(why) => Some(why),
        Failure::Stopped => None,
    }
}

/// The databases a check may look in (`postgres`, else `template1`, lists them).
fn databases() -> Result<Vec<String>, String> {
    let list = "SELECT datname FROM pg_catalog.pg_database WHERE datallowconn AND NOT datistemplate ORDER BY datname";
    let mut last = String::new();
    for db in ["postgres", "template1"] {
        match connect(db).and_then(|mut c| query(&mut c, list)) {
            Ok(rows) => return Ok(rows.into_iter().filter_map(|r| r.into_iter().next().flatten()).collect()),
            Err(None) => return Ok(vec![]),
            Err(Some(why)) => last = why,
        }
    }
    Err(last)
}

/// (node, problem) of each node `snowflake_cluster_check()` names in `db`,
/// when `db` has Citus and snowflake_id and this server is its coordinator.
fn problems_in(db: &str) -> Result<Vec<(String, String)>, Option<String>> {
    let mut connection = connect(db)?;
    // What to read: the extension's view snowflake_cluster_problems (0.6.0
    // on), bound to the check function when it was created; an overload of
    // snowflake_cluster_check() with a defaulted argument, which a role that
    // may create in the extension's schema can add, makes a call by name
    // ambiguous. The view is taken only when it is the extension's own;
    // 0.5.0's SQL (the library updated, not yet the extension) has none.
    let source = query(
        &mut connection,
        "SELECT pg_catalog.quote_ident(n.nspname) OPERATOR(pg_catalog.||) CASE WHEN EXISTS (
                   SELECT FROM pg_catalog.pg_class c JOIN pg_catalog.pg_depend d
                       ON d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.objid = c.oid
                      AND d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass AND d.refobjid = e.oid
                      AND d.deptype = 'e'
                    WHERE c.relnamespace = n.oid AND c.relname = 'snowflake_cluster_problems' AND c.relkind = 'v')
               THEN '.snowflake_cluster_problems' ELSE '.snowflake_cluster_check()' END
           FROM pg_catalog.pg_extension e
           JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
          WHERE e.extname = 'snowflake_id' AND EXISTS (SELECT FROM pg_catalog.pg_extension WHERE extname = 'citus')",
    )?;
    let Some(source) = source.into_iter().next().and_then(|r| r.into_iter().next().flatten()) else {
        return Ok(vec![]);
    };
    let group = query(&mut connection, "SELECT groupid FROM pg_catalog.pg_dist_local_group")?;
    if group.first().and_then(|r| r.first().cloned().flatten()).as_deref() != Some("0") {
        return Ok(vec![]); // a worker: the coordinator checks
    }
    let rows = query(&mut connection, &format!("SELECT c.node, c.problem FROM {source} c"))?;
    Ok(rows
        .into_iter()
        .map(|r| {
            let mut fields = r.into_iter().map(Option::unwrap_or_default);
            (escaped(&fields.next().unwrap_or_default()), escaped(&fields.next().unwrap_or_default()))
        })
        .collect())
}

/// `text` with its control characters escaped (`\n`, `\u{1b}`), for a log
/// line: a node's name holds a subscription's name, chosen by its owner
/// (from 16, not always a superuser), and a problem may quote a publisher's
/// error message; a newline in either would forge a line of the log.
fn escaped(text: &str) -> String {
    text.chars().map(|c| if c.is_control() { c.escape_default().to_string() } else { c.to_string() }).collect()
}
