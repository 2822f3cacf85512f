//! The logical peers `snowflake_cluster_check()` looks at: the
//! publisher of each subscription of the current database, native
//! (`pg_subscription`) and pglogical's (`pglogical.subscription`), asked
//! over libpq for its `snowflake_id_status` the way the check asks a Citus
//! node. The plpgsql body (sql/install/cluster.sql) compares the answers.
//!
//! Who is connected to, with whose credentials. A subscription's connection
//! string is a secret (`pg_subscription.subconninfo` is hidden from
//! ordinary roles), and a connection made from this server's backend may
//! authenticate with the server's own credentials (its `.pgpass`, peer or
//! certificate authentication, a Kerberos ticket) wherever that string
//! points. So a publisher is connected to only when
//! - the caller is a superuser (who may read the string anyway), and
//! - the string was chosen by a superuser: the subscription's owner is one
//!   now (from 16, a role with `pg_create_subscription` owns subscriptions
//!   of its own, with strings it chose: connecting with them from a
//!   superuser's session would lend that role the server's credentials on a
//!   host of its choice); for pglogical, its catalog tables belong to the
//!   `pglogical` extension and to a superuser (pglogical's functions are
//!   superusers'; a look-alike schema an ordinary role made is not read).
//!
//! Every other subscription is a row that says it was not checked and why,
//! and nothing is connected to. The connection string is never shown: a
//! failure to connect is reported in this library's words
//! ([`Failure::public`]), not libpq's, which may quote the string.

use std::time::{Duration, Instant};

use pgrx::prelude::*;
use pgrx::{PgLogLevel, PgSqlErrorCode};

use crate::pg::libpq::{Connection, Failure};
use crate::pg::report::emit;
use crate::service::generator::writer::query_keeps_going;

/// How long all publishers together may take, per call: the cluster watch
/// gives the whole check 60 s, Citus nodes included, and a few publishers
/// that do not answer (or a role on one holding a lock the status needs)
/// must not take it all. Publishers are asked one after another (the libpq
/// glue waits on one socket at a time), enabled subscriptions' first; those
/// left when it is spent are reported "not checked: out of time".
const TOTAL_BUDGET: Duration = Duration::from_secs(6);

/// How long one publisher of an enabled subscription may take, connecting
/// and its three queries together.
const PEER_BUDGET: Duration = Duration::from_secs(3);

/// The same for a disabled subscription's publisher (`connect = false`, or
/// stopped by hand): often down or not yet there, asked after every enabled
/// one, briefly.
const DISABLED_PEER_BUDGET: Duration = Duration::from_secs(1);

/// sql/install/cluster.sql, whose `snowflake_cluster_check()` asks each Citus node
/// the same two questions this module asks each publisher: its texts are
/// the one place they are written, read from it here, so that the two
/// cannot drift apart.
const CLUSTER_SQL: &str = include_str!("../../../sql/install/cluster.sql");

/// The text of the PL/pgSQL variable `name` in sql/install/cluster.sql: what
/// follows `<name> text := $q$` up to the next `$q$`.
fn cluster_sql_text(name: &str) -> &'static str {
    let start = format!("{name} text := $q$");
    let from = CLUSTER_SQL.find(&start).map(|i| i + start.len());
    let text = from.and_then(|from| CLUSTER_SQL[from..].find("$q$").map(|len| &CLUSTER_SQL[from..from + len]));
    // A build whose sql/install/cluster.sql lost the variable fails every test of
    // the peers at once, rather than querying with an empty text.
    text.unwrap_or_else(|| panic!("sql/install/cluster.sql has no {name}"))
}

/// Asked of each publisher first: the schema its snowflake_id lives in, if
/// its snowflake_id_status is the extension's view (quoted; empty
/// otherwise): sql/install/cluster.sql's `probe_query`. A view of that name an
/// ordinary role created on the publisher would run its functions as the
/// connecting role, so it is never queried. The session's search_path is
/// pinned by `Connection::open`; every name is qualified besides.
fn probe() -> &'static str {
    cluster_sql_text("probe_query")
}

/// The publisher's status as one JSON object, as sql/install/cluster.sql's
/// `status_template` asks a Citus node, in the publisher's schema of the
/// extension (quoted, as the probe answered it).
fn status(schema: &str) -> String {
    cluster_sql_text("status_template").replace("%s", schema)
}

/// Set first in each publisher's session: a statement there (a status view
/// whose lock another role holds, say) ends on the publisher's side too
/// when this check stops waiting for it. `$1`: milliseconds.
const SESSION_LIMITS: &str = "SELECT pg_catalog.set_config('statement_timeout', $1, false),
        pg_catalog.set_config('lock_timeout', $1, false)";

/// One subscription's publisher: `status` (the JSON of [`status`]) when it
/// answered, else `trouble`, the problem to report in its place.
pub struct Peer {
    pub node: String,
    pub status: Option<String>,
    pub trouble: Option<String>,
}

/// A subscription found in the catalogs: its publisher's label, and either
/// the connection string to use or why it is not checked.
struct Found {
    node: String,
    target: Result<String, String>,
    enabled: bool,
}

const NOT_SUPERUSER_CALLER: &str = "not checked: only a superuser's call connects to a subscription's publisher \
     (its connection string is the superuser's to use)";

/// Every subscription of this database, each publisher asked (or not, and
/// why). Empty when the database has none.
pub fn peers() -> Vec<Peer> {
    // SAFETY: plain reads of this backend's state.
    let caller_is_superuser = unsafe { pg_sys::superuser() };
    let found = Spi::connect(|client| {
        let mut found = native(client, caller_is_superuser);
        found.extend(pglogical(client, caller_is_superuser));
        found
    });
    let mut found = found;
    // Enabled subscriptions first: a disabled one's dead publisher never
    // takes their time. Within each, a different one first at each call
    // (the second of the clock): two dead publishers asked first every time
    // would spend the budget at every round, and the others would never be
    // checked. The check sorts its rows by node.
    found.sort_by(|a, b| (!a.enabled, &a.node).cmp(&(!b.enabled, &b.node)));
    let enabled = found.iter().filter(|f| f.enabled).count();
    let turn = usize::try_from(crate::pg::clock::now_unix_ms() / 1000).unwrap_or(0);
    if enabled > 1 {
        found[..enabled].rotate_left(turn % enabled);
    }
    let disabled = found.len() - enabled;
    if disabled > 1 {
        found[enabled..].rotate_left(turn % disabled);
    }
    let end = Instant::now() + TOTAL_BUDGET;
    found
        .into_iter()
        .map(|f| match f.target {
            Err(why) => Peer { node: f.node, status: None, trouble: Some(why) },
            Ok(conninfo) => {
                let budget = if f.enabled { PEER_BUDGET } else { DISABLED_PEER_BUDGET };
                let left = end.saturating_duration_since(Instant::now());
                if left < Duration::from_millis(100) {
                    let why = format!(
                        "not checked: out of time (the check gives all publishers {} s in all)",
                        TOTAL_BUDGET.as_secs()
                    );
                    return Peer { node: f.node, status: None, trouble: Some(why) };
                }
                match ask(&conninfo, Instant::now() + budget.min(left)) {
                    Ok(status) => Peer { node: f.node, status: Some(status), trouble: None },
                    Err(why) => Peer { node: f.node, status: None, trouble: Some(why) },
                }
            }
        })
        .collect()
}

/// A name in double quotes, as `quote_ident` would always quote it, with
/// every control character escaped by the project's rule (core's `quote`:
/// `\n`, `\u{1b}`): a subscription's name
/// is chosen by its owner (from 16, not always a superuser) and ends up in
/// the cluster watch's WARNING lines, where a newline would forge a line.
fn quoted(name: &str) -> String {
    format!("\"{}\"", snowflake_id_core::quote::controls_escaped(&name.replace('"', "\"\"")))
}

/// The native subscriptions of this database. `pg_subscription` is readable
/// by every role but for `subconninfo`, read only for a superuser caller.
fn native(client: &pgrx::spi::SpiClient<'_>, caller_is_superuser: bool) -> Vec<Found> {
    // SAFETY: this backend's database.
    let db = unsafe { pg_sys::MyDatabaseId }.to_u32();
    let conninfo = if caller_is_superuser { "s.subconninfo" } else { "NULL::pg_catalog.text" };
    // Since 19 a subscription may connect through a foreign server (CREATE
    // SUBSCRIPTION ... SERVER): no connection string of its own, and the one
    // its user mapping makes is built by the foreign data wrapper's C code,
    // which SQL cannot call. Its name says why such a publisher is not asked.
    #[cfg(feature = "pg19")]
    let server = "(SELECT f.srvname::pg_catalog.text FROM pg_catalog.pg_foreign_server f
                    WHERE f.oid OPERATOR(pg_catalog.=) s.subserver)";
    #[cfg(not(feature = "pg19"))]
    let server = "NULL::pg_catalog.text";
    let sql = format!(
        "SELECT s.subname::pg_catalog.text, {conninfo}, r.rolname::pg_catalog.text, r.rolsuper, s.subenabled,
                {server}
           FROM pg_catalog.pg_subscription s
           JOIN pg_catalog.pg_roles r ON r.oid OPERATOR(pg_catalog.=) s.subowner
          WHERE s.subdbid OPERATOR(pg_catalog.=) '{db}'::pg_catalog.oid
          ORDER BY 1"
    );
    let Ok(rows) = client.select(sql.as_str(), None, &[]) else {
        return vec![];
    };
    rows.filter_map(|row| {
        let name: String = row.get(1).ok().flatten()?;
        let conninfo: Option<String> = row.get(2).ok().flatten();
        let owner: String = row.get(3).ok().flatten().unwrap_or_default();
        let owner_is_superuser: bool = row.get(4).ok().flatten().unwrap_or(false);
        let enabled: bool = row.get(5).ok().flatten().unwrap_or(true);
        let server: Option<String> = row.get(6).ok().flatten();
        let node = format!("publisher of subscription {}", quoted(&name));
        let target = if !caller_is_superuser {
            Err(NOT_SUPERUSER_CALLER.to_string())
        } else if !owner_is_superuser {
            Err(format!(
                "not checked: owned by role {}, not a superuser (its connection string is never used with this \
                 server's credentials)",
                quoted(&owner)
            ))
        } else {
            conninfo.ok_or_else(|| match server {
                Some(server) => format!(
                    "not checked: connects through foreign server {} (check that publisher's worker id by hand)",
                    quoted(&server)
                ),
                None => "not checked: no connection string".to_string(),
            })
        };
        Some(Found { node, target, enabled })
    })
    .collect()
}

/// pglogical's subscriptions in this database, when the `pglogical`
/// extension is created here and its catalog tables are its own (members
/// of the extension) and a superuser's.
fn pglogical(client: &pgrx::spi::SpiClient<'_>, caller_is_superuser: bool) -> Vec<Found> {
    let tables = "SELECT pg_catalog.quote_ident(n.nspname)
           FROM pg_catalog.pg_extension e
           JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) e.extnamespace
          WHERE e.extname OPERATOR(pg_catalog.=) 'pglogical'::pg_catalog.name
            AND (SELECT pg_catalog.count(*) FROM pg_catalog.pg_class c
                   JOIN pg_catalog.pg_roles r ON r.oid OPERATOR(pg_catalog.=) c.relowner
                   JOIN pg_catalog.pg_depend d
                     ON d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
                    AND d.objid OPERATOR(pg_catalog.=) c.oid
                    AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
                    AND d.refobjid OPERATOR(pg_catalog.=) e.oid
                    AND d.deptype OPERATOR(pg_catalog.=) 'e'::pg_catalog.\"char\"
                  WHERE c.relnamespace OPERATOR(pg_catalog.=) n.oid AND r.rolsuper
                    AND c.relkind OPERATOR(pg_catalog.=) 'r'::pg_catalog.\"char\"
                    AND c.relname OPERATOR(pg_catalog.=) ANY (ARRAY['subscription', 'node_interface']::pg_catalog.name[]))
                OPERATOR(pg_catalog.=) 2::pg_catalog.int8";
    let schema: Option<String> =
        client.select(tables, None, &[]).ok().and_then(|rows| rows.first().get_one::<String>().ok().flatten());
    let Some(schema) = schema else {
        return vec![];
    };
    if !caller_is_superuser {
        return vec![Found {
            node: "publishers of pglogical subscriptions".into(),
            target: Err(NOT_SUPERUSER_CALLER.into()),
            enabled: true,
        }];
    }
    let sql = format!(
        "SELECT s.sub_name::pg_catalog.text, i.if_dsn::pg_catalog.text, s.sub_enabled
           FROM {schema}.subscription s
           JOIN {schema}.node_interface i ON i.if_id OPERATOR(pg_catalog.=) s.sub_origin_if
          ORDER BY 1"
    );
    let Ok(rows) = client.select(sql.as_str(), None, &[]) else {
        return vec![];
    };
    rows.filter_map(|row| {
        let name: String = row.get(1).ok().flatten()?;
        let dsn: Option<String> = row.get(2).ok().flatten();
        let enabled: bool = row.get(3).ok().flatten().unwrap_or(true);
        Some(Found {
            node: format!("publisher of pglogical subscription {}", quoted(&name)),
            target: dsn.ok_or_else(|| "not checked: no connection string".to_string()),
            enabled,
        })
    })
    .collect()
}

/// The publisher's status JSON, or the problem to report instead, by
/// `deadline` (connecting and every query together).
fn ask(conninfo: &str, deadline: Instant) -> Result<String, String> {
    let no_answer = |f: Failure| match f {
        // libpq's words may quote the connection string: for the server log
        // (and a superuser caller, the only one who connects, with
        // client_min_messages = log), not the row, which the cluster watch
        // logs as a WARNING and a scheduler may mail around.
        Failure::Connection(libpq) => {
            emit(
                PgLogLevel::LOG,
                PgSqlErrorCode::ERRCODE_CONNECTION_FAILURE,
                format!("snowflake_id: {libpq}"),
                None,
                None,
            );
            "no answer: could not connect to the publisher (libpq's message is in the server log)".to_string()
        }
        Failure::Refused { sqlstate, message, .. } => format!("no answer: {sqlstate}: {message}"),
        Failure::Unreachable(why) => format!("no answer: {why}"),
        Failure::Stopped => "no answer: stopped while waiting".to_string(),
    };
    let left = || deadline.saturating_duration_since(Instant::now());
    let mut connection =
        Connection::open(conninfo, "snowflake_id cluster check", left(), query_keeps_going).map_err(no_answer)?;
    let limit = Some(left().as_millis().max(1).to_string());
    connection.query(SESSION_LIMITS, &[limit], left(), query_keeps_going).map_err(no_answer)?;
    let first = |rows: Vec<Vec<Option<String>>>| rows.into_iter().next().and_then(|r| r.into_iter().next().flatten());
    let schema = connection.query(probe(), &[], left(), query_keeps_going).map(first).map_err(no_answer)?;
    let schema = schema.unwrap_or_default();
    if schema.is_empty() {
        return Err("snowflake_id is not created in the publisher's database, or its snowflake_id_status is not \
                    the extension's"
            .into());
    }
    connection
        .query(&status(&schema), &[], left(), query_keeps_going)
        .map(first)
        .map_err(no_answer)?
        .ok_or_else(|| "no answer: the publisher's snowflake_id_status has no row".into())
}
