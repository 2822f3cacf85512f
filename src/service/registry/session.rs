//! A session with the worker id registry, opened the one way both of its
//! callers need (the mark keeper's lease, a backend's past-instant claims):
//! commits durable, the search path pinned (`pg/libpq.rs`), and every call
//! naming the schema the registry's extension lives in and the exact type of
//! every argument.
//!
//! The registry's database is one an ordinary role may reach: its `public`
//! schema, where the extension usually lives, may be open to CREATE (the
//! default before PostgreSQL 15, and after an upgrade that kept it). An
//! unqualified `snowflake_registry_renew($1, ...)` with untyped parameters
//! resolves to whichever overload matches best, and an all-`text` one that
//! role planted matches better than the registry's: it ran with the node's
//! rights, read its holder token and answered a ceiling ten years ahead
//! (before 0.5.0: 882,727 duplicates of 900,000 in a test of the
//! attack). Named and typed, a call can only reach the extension's own
//! function; but one more function of that name with a defaulted or
//! variadic argument still makes the call "not unique", so since 0.7.0
//! the calls go to the registry's schema `snowflake_id_internal`, where no
//! other role can create, and look-alikes beside the registry's functions
//! are named in a WARNING, never a reason to stop renewing.

use std::sync::Mutex;
use std::time::Duration;

use pgrx::{PgLogLevel, PgSqlErrorCode};

use crate::pg::libpq::{Connection, Failure, KeepGoing};
use crate::pg::report::emit;
use crate::settings::names::REGISTRY;
use crate::settings::registry::conninfo;

/// The SQLSTATE of a registry database without the extension (not created
/// yet, as on a Citus coordinator being set up).
pub const NO_EXTENSION: &str = "42704";

/// An open session, with where the registry's objects are.
pub struct RegistrySession {
    connection: Connection,
    /// The extension's schema, quoted as an identifier.
    schema: String,
    /// The registry's extension is older than 0.4.0: its leases table has no
    /// `instance` column, so it fences no copy.
    pub before_instances: bool,
}

impl RegistrySession {
    /// Opens a session to the registry `snowflake_id.registry` names.
    /// `instance` (the keeper's: this postmaster start) is named in every
    /// call through the setting the registry reads (`sql/install/registry_functions.sql`).
    /// `connected` runs once the registry server accepted the connection,
    /// before the session's first statements.
    pub fn open(
        application_name: &str,
        instance: Option<i64>,
        timeout: Duration,
        keep_going: KeepGoing,
        connected: impl FnOnce(),
    ) -> Result<(String, RegistrySession), Failure> {
        let conninfo = conninfo().ok_or_else(|| Failure::Unreachable(format!("{REGISTRY} is empty")))?;
        let mut connection = Connection::open(&conninfo, application_name, timeout, keep_going)?;
        connected();
        // A grant, renewal or claim the registry could lose in a crash would
        // let it hand the same range to another node: commits must be
        // durable before the node acts on them, whatever the registry's default.
        connection.query("SET synchronous_commit = on", &[], timeout, keep_going)?;
        let rows = connection.query(
            "SELECT pg_catalog.quote_ident(n.nspname),
                    c.oid IS NOT NULL AND NOT EXISTS (SELECT FROM pg_catalog.pg_attribute a
                        WHERE a.attrelid = c.oid AND a.attname = 'instance' AND NOT a.attisdropped),
                    pg_catalog.set_config('snowflake_registry.instance', $1::pg_catalog.text, false),
                    (SELECT pg_catalog.quote_ident(i.nspname)
                       FROM pg_catalog.pg_namespace i
                       JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_namespace'::pg_catalog.regclass
                                                  AND d.objid = i.oid
                                                  AND d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass
                                                  AND d.refobjid = e.oid AND d.deptype = 'e'
                      WHERE i.nspname = 'snowflake_id_internal')
               FROM pg_catalog.pg_extension e
               JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
               LEFT JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = 'snowflake_registry_leases'
              WHERE e.extname = 'snowflake_id'",
            &[Some(instance.map_or(String::new(), |i| i.to_string()))],
            timeout,
            keep_going,
        )?;
        let Some(row) = rows.into_iter().next() else {
            return Err(Failure::Refused {
                sqlstate: NO_EXTENSION.into(),
                message: "the registry's database has no extension snowflake_id".into(),
                detail: None,
                hint: Some(format!("Run CREATE EXTENSION snowflake_id in the database {REGISTRY} names.")),
            });
        };
        let mut fields = row.into_iter();
        let extension_schema = fields.next().flatten().unwrap_or_default();
        let before_instances = fields.next().flatten().as_deref() == Some("t");
        let internal = fields.nth(1).flatten();
        // A registry of 0.7.0 or later has its own schema for these calls,
        // which no other role can create in; an older one is called where
        // its functions are, by name and exact types, as its nodes did.
        let schema = internal.clone().unwrap_or_else(|| extension_schema.clone());
        let intruders = find_intruders(&mut connection, timeout, keep_going)?;
        if intruders.functions > 0 || intruders.writers > 0 {
            name_intruders(&extension_schema, &intruders, internal.is_some());
        }
        Ok((conninfo, RegistrySession { connection, schema, before_instances }))
    }

    /// Calls the registry's function `function` (a name of
    /// `sql/install/registry_functions.sql`) with `params`, each cast to its type in `types`
    /// (the function's exact signature), and returns the columns `columns`
    /// of its result.
    pub fn call(
        &mut self,
        columns: &str,
        function: &str,
        types: &[&str],
        params: &[Option<String>],
        timeout: Duration,
        keep_going: KeepGoing,
    ) -> Result<Vec<Vec<Option<String>>>, Failure> {
        debug_assert_eq!(types.len(), params.len());
        let arguments: Vec<String> = types.iter().enumerate().map(|(i, t)| format!("${}::{t}", i + 1)).collect();
        let sql = format!("SELECT {columns} FROM {}.{function}({})", self.schema, arguments.join(", "));
        self.connection.query(&sql, params, timeout, keep_going)
    }
}

/// How long the registry may take to list look-alikes and writers: far
/// below the call's own timeout, so that a catalog made huge on purpose
/// costs a reconnect this much and never the lease (the server cancels the
/// statement; the connection stays usable).
const NAMING_TIMEOUT_MS: u32 = 500;

/// How many names, and how many characters of each, a WARNING carries: a
/// role that plants 70,000 functions of 100 long-typed arguments must not
/// get a line of megabytes into every node's log.
const NAMES_SHOWN: u32 = 5;
const NAME_CHARS: u32 = 200;

/// What [`find_intruders`] saw: counts, and the first few names.
#[derive(Default)]
struct Intruders {
    functions: i64,
    function_names: Option<String>,
    writers: i64,
    writer_names: Option<String>,
}

/// Counts the functions of another role under the registry's names beside
/// its extension, and the roles besides its owner that may create there,
/// naming a few of each. Only a report: it runs after the session's
/// required setup, in its own transaction with a short `statement_timeout`,
/// and a refusal (the timeout, say) is logged in one short line and
/// ignored. A broken connection is not ignored: the session is unusable.
fn find_intruders(connection: &mut Connection, timeout: Duration, keep_going: KeepGoing) -> Result<Intruders, Failure> {
    let mut run = |sql: &str| connection.query(sql, &[], timeout, keep_going);
    let listed = run("BEGIN").and_then(|_| {
        run(&format!("SET LOCAL statement_timeout = {NAMING_TIMEOUT_MS}"))?;
        run(&format!(
            "WITH x AS (SELECT e.oid AS ext, n.oid AS nsp, n.nspowner AS owner
                          FROM pg_catalog.pg_extension e
                          JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
                         WHERE e.extname = 'snowflake_id'),
                  f AS (SELECT p.oid, p.proowner
                          FROM x JOIN pg_catalog.pg_proc p ON p.pronamespace = x.nsp
                         WHERE p.proname LIKE 'snowflake\\_registry\\_%'
                           AND NOT EXISTS (SELECT FROM pg_catalog.pg_depend d
                                WHERE d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND d.objid = p.oid
                                  AND d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass
                                  AND d.refobjid = x.ext AND d.deptype = 'e')),
                  w AS (SELECT r.rolname
                          FROM x JOIN pg_catalog.pg_roles r ON NOT r.rolsuper
                         WHERE NOT pg_catalog.pg_has_role(r.oid, x.owner, 'USAGE') AND r.rolname !~ '^pg_'
                           AND pg_catalog.has_schema_privilege(r.oid, x.nsp, 'CREATE'))
             SELECT (SELECT pg_catalog.count(*) FROM f),
                    (SELECT pg_catalog.string_agg(pg_catalog.format('function %s%s, owned by role %s',
                                   pg_catalog.left(s.oid::pg_catalog.regprocedure::pg_catalog.text, {NAME_CHARS}),
                                   CASE WHEN pg_catalog.length(s.oid::pg_catalog.regprocedure::pg_catalog.text)
                                             OPERATOR(pg_catalog.>) {NAME_CHARS} THEN '...' ELSE '' END,
                                   s.proowner::pg_catalog.regrole), '; ' ORDER BY s.oid)
                       FROM (SELECT * FROM f ORDER BY f.oid LIMIT {NAMES_SHOWN}) s),
                    (SELECT pg_catalog.count(*) FROM w),
                    (SELECT pg_catalog.string_agg(pg_catalog.left(pg_catalog.quote_ident(s.rolname), {NAME_CHARS}),
                                   ', ' ORDER BY s.rolname)
                       FROM (SELECT * FROM w ORDER BY w.rolname LIMIT {NAMES_SHOWN}) s)"
        ))
    });
    let outcome = match listed {
        Ok(rows) => {
            let mut fields = rows.into_iter().next().unwrap_or_default().into_iter().map(Option::unwrap_or_default);
            let mut next = || fields.next().unwrap_or_default();
            let count = |t: String| t.parse::<i64>().unwrap_or(0);
            let named = |t: String| (!t.is_empty()).then_some(t);
            Ok(Intruders {
                functions: count(next()),
                function_names: named(next()),
                writers: count(next()),
                writer_names: named(next()),
            })
        }
        Err(Failure::Refused { sqlstate, message, .. }) => {
            pgrx::log!("snowflake_id: could not list look-alikes in the registry's schema ({sqlstate}: {message})");
            Ok(Intruders::default())
        }
        Err(other) => Err(other),
    };
    // Ends the transaction whatever happened in it (a refused statement
    // left it aborted); the session's own settings are untouched.
    run("ROLLBACK")?;
    outcome
}

/// Names another role chose, as they go into a WARNING the node's log and
/// its clients see: a control character (a newline above all) is written
/// escaped by the project's rule (core's `quote`), so that a name cannot
/// forge a line of the log (logical peers' names are escaped the same way).
fn printable(names: &str) -> String {
    snowflake_id_core::quote::controls_escaped(names)
}

/// Says once per process (the keeper reconnects, a backend claims history
/// slots again and again) which roles besides the owner may create in the
/// registry's schema, and which functions of another role sit there under
/// a registry function's name. Since 0.7.0 neither changes what a node
/// does, but such a role can make other roles' own calls of the
/// extension's names ambiguous (docs/security.md); against an older
/// registry a look-alike with a defaulted or variadic argument makes the
/// node's own calls "not unique" (42725), and this line is what says why.
fn name_intruders(schema: &str, intruders: &Intruders, bypassed: bool) {
    static NAMED: Mutex<Option<String>> = Mutex::new(None);
    let more = |count: i64| match count - i64::from(NAMES_SHOWN) {
        beyond if beyond > 0 => format!("; and {beyond} more"),
        _ => String::new(),
    };
    let mut message = format!("the registry's schema {schema}");
    if intruders.writers > 0 {
        message.push_str(&format!(
            " lets {} role(s) other than its owner create in it ({}{})",
            intruders.writers,
            printable(intruders.writer_names.as_deref().unwrap_or("")),
            more(intruders.writers)
        ));
    }
    if intruders.functions > 0 {
        if intruders.writers > 0 {
            message.push_str(" and");
        }
        message.push_str(&format!(
            " has {} function(s) of another role under the registry's names: {}{}",
            intruders.functions,
            printable(intruders.function_names.as_deref().unwrap_or("")),
            more(intruders.functions)
        ));
    }
    let Ok(mut named) = NAMED.lock() else { return };
    if named.as_deref() == Some(message.as_str()) {
        return;
    }
    *named = Some(message.clone());
    drop(named);
    let effect = if bypassed {
        "This node calls the registry through its schema snowflake_id_internal, where only the extension's owner \
         creates: nothing there changes what it runs. Other roles' own unqualified calls of the extension's \
         functions can be made ambiguous or be taken over."
    } else {
        "The registry's extension is older than 0.7.0: a function there of one of the registry's names with a \
         defaulted or variadic argument makes this node's calls \"not unique\" (42725). Update it (ALTER \
         EXTENSION snowflake_id UPDATE)."
    };
    emit(
        PgLogLevel::WARNING,
        PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
        message,
        Some(effect.into()),
        Some(
            "Drop or move functions that are not the extension's, and revoke CREATE on the registry's schema from \
             every role but its owner (docs/security.md)."
                .into(),
        ),
    );
}

/// The exact argument types of the registry's functions, as
/// `sql/install/registry_functions.sql` declares them (`pg_catalog.`-qualified: a type named
/// `text` in another schema on the path must not stand in). Each is named
/// for its function without `snowflake_registry_` (tests/skew.rs reads the
/// names so); past-instant claims keep the SQL names, `history_of` and
/// `record_history`.
pub mod signature {
    const TEXT: &str = "pg_catalog.text";
    const INT: &str = "pg_catalog.int4";
    const BIGINT: &str = "pg_catalog.int8";

    pub const ACQUIRE: [&str; 12] = [TEXT, INT, INT, BIGINT, INT, TEXT, INT, TEXT, BIGINT, BIGINT, BIGINT, BIGINT];
    pub const RENEW: [&str; 6] = [TEXT, INT, BIGINT, BIGINT, BIGINT, BIGINT];
    pub const RELEASE: [&str; 5] = [TEXT, INT, BIGINT, BIGINT, BIGINT];
    pub const HISTORY_OF: [&str; 4] = [TEXT, INT, BIGINT, BIGINT];
    pub const RECORD_HISTORY: [&str; 7] = [TEXT, INT, BIGINT, BIGINT, BIGINT, BIGINT, INT];
}
