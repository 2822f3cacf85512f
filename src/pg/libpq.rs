//! A connection to the worker id registry: libpq, non-blocking, every wait
//! on this process's latch and the connection's socket.
//!
//! PostgreSQL 15 has no `libpq-be-fe-helpers.h`, so this is the pattern
//! dblink and postgres_fdw follow by hand: `PQconnectStartParams` and
//! `PQconnectPoll`, `PQsendQueryParams`, `PQconsumeInput` and `PQisBusy`,
//! and in between `WaitLatchOrSocket`, so that a signal (SIGTERM for the
//! mark keeper, a cancel for a backend) or postmaster death ends any wait at
//! once, and every call has a deadline. No thread is started; nothing blocks
//! the process in libpq. libpq itself (not a Rust client) so that the
//! registry's connection string means what it means to every PostgreSQL
//! tool: several hosts with `target_session_attrs=read-write`, service
//! files, `.pgpass`, TLS settings.

//
// libpq is opened at run time (`dlopen`, private to the process that uses
// it: the mark keeper), not linked. A preloaded library linked to libpq
// would load it into the postmaster, and every process it starts would then
// resolve `libpq.so.5` to that copy: a server whose own libpq is newer than
// the system's (its walreceiver passing `sslcertmode` from a PostgreSQL 16
// `primary_conninfo`, say) would lose streaming replication.

use std::ffi::{c_char, c_int, CStr, CString};
use std::ptr;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use pgrx::pg_sys;

/// libpq's C API, the part used here, with its constants (libpq-fe.h).
mod pq {
    use std::ffi::{c_char, c_int, c_uint};

    #[repr(C)]
    pub struct PGconn {
        _private: [u8; 0],
    }
    #[repr(C)]
    pub struct PGresult {
        _private: [u8; 0],
    }
    pub const CONNECTION_BAD: c_int = 1;
    pub const PGRES_POLLING_READING: c_int = 1;
    pub const PGRES_POLLING_WRITING: c_int = 2;
    pub const PGRES_POLLING_OK: c_int = 3;
    pub const PGRES_COMMAND_OK: c_int = 1;
    pub const PGRES_TUPLES_OK: c_int = 2;
    pub const PGRES_FATAL_ERROR: c_int = 7;
    pub const PG_DIAG_SQLSTATE: c_int = b'C' as c_int;
    pub const PG_DIAG_MESSAGE_PRIMARY: c_int = b'M' as c_int;
    pub const PG_DIAG_MESSAGE_DETAIL: c_int = b'D' as c_int;
    pub const PG_DIAG_MESSAGE_HINT: c_int = b'H' as c_int;

    /// The entry points, resolved once per process.
    pub struct Api {
        pub connect_start_params:
            unsafe extern "C" fn(*const *const c_char, *const *const c_char, c_int) -> *mut PGconn,
        pub status: unsafe extern "C" fn(*const PGconn) -> c_int,
        pub connect_poll: unsafe extern "C" fn(*mut PGconn) -> c_int,
        pub set_nonblocking: unsafe extern "C" fn(*mut PGconn, c_int) -> c_int,
        pub socket: unsafe extern "C" fn(*const PGconn) -> c_int,
        pub error_message: unsafe extern "C" fn(*const PGconn) -> *mut c_char,
        pub finish: unsafe extern "C" fn(*mut PGconn),
        #[allow(clippy::type_complexity)]
        pub send_query_params: unsafe extern "C" fn(
            *mut PGconn,
            *const c_char,
            c_int,
            *const c_uint,
            *const *const c_char,
            *const c_int,
            *const c_int,
            c_int,
        ) -> c_int,
        pub flush: unsafe extern "C" fn(*mut PGconn) -> c_int,
        pub consume_input: unsafe extern "C" fn(*mut PGconn) -> c_int,
        pub is_busy: unsafe extern "C" fn(*mut PGconn) -> c_int,
        pub get_result: unsafe extern "C" fn(*mut PGconn) -> *mut PGresult,
        pub clear: unsafe extern "C" fn(*mut PGresult),
        pub result_status: unsafe extern "C" fn(*const PGresult) -> c_int,
        pub result_error_field: unsafe extern "C" fn(*const PGresult, c_int) -> *mut c_char,
        pub ntuples: unsafe extern "C" fn(*const PGresult) -> c_int,
        pub nfields: unsafe extern "C" fn(*const PGresult) -> c_int,
        pub get_is_null: unsafe extern "C" fn(*const PGresult, c_int, c_int) -> c_int,
        pub get_value: unsafe extern "C" fn(*const PGresult, c_int, c_int) -> *mut c_char,
    }
}

/// libpq, opened on first use in this process and kept open for its lifetime.
fn api() -> Result<&'static pq::Api, Failure> {
    static API: OnceLock<Result<pq::Api, String>> = OnceLock::new();
    API.get_or_init(|| {
        // SAFETY: loading libpq runs its initialisers, which touch nothing of ours.
        let library = unsafe { libloading::Library::new("libpq.so.5") }
            .map_err(|e| format!("could not load libpq (libpq.so.5): {e}"))?;
        let library: &'static libloading::Library = Box::leak(Box::new(library));
        macro_rules! entry {
            ($name:literal) => {
                // SAFETY: the symbol has the C signature the field declares (libpq-fe.h).
                *unsafe { library.get(concat!($name, "\0").as_bytes()) }
                    .map_err(|e| format!("libpq has no {}: {e}", $name))?
            };
        }
        Ok(pq::Api {
            connect_start_params: entry!("PQconnectStartParams"),
            status: entry!("PQstatus"),
            connect_poll: entry!("PQconnectPoll"),
            set_nonblocking: entry!("PQsetnonblocking"),
            socket: entry!("PQsocket"),
            error_message: entry!("PQerrorMessage"),
            finish: entry!("PQfinish"),
            send_query_params: entry!("PQsendQueryParams"),
            flush: entry!("PQflush"),
            consume_input: entry!("PQconsumeInput"),
            is_busy: entry!("PQisBusy"),
            get_result: entry!("PQgetResult"),
            clear: entry!("PQclear"),
            result_status: entry!("PQresultStatus"),
            result_error_field: entry!("PQresultErrorField"),
            ntuples: entry!("PQntuples"),
            nfields: entry!("PQnfields"),
            get_is_null: entry!("PQgetisnull"),
            get_value: entry!("PQgetvalue"),
        })
    })
    .as_ref()
    .map_err(|e| Failure::Unreachable(e.clone()))
}

/// Why a call to the registry did not return rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The registry answered with an error: a refusal to act on (a lost
    /// lease, a worker id held by another node) or a problem to report.
    Refused { sqlstate: String, message: String, detail: Option<String>, hint: Option<String> },
    /// No answer, in this library's own words: the deadline passed, the
    /// answer had no rows, the setting is empty. Safe to show any role.
    Unreachable(String),
    /// No answer, in libpq's words: cannot connect, or the connection broke.
    /// libpq quotes the connection string when it cannot parse it (a
    /// password with a bad `%` escape, a URI with a malformed host) and names
    /// the host, port and user when it cannot connect: a secret of the DBA's,
    /// for the server log only ([`Failure::public`] leaves it out).
    Connection(String),
    /// The caller was asked to stop (SIGTERM, say) while waiting.
    Stopped,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Refused { sqlstate, message, .. } => write!(f, "{sqlstate}: {message}"),
            Failure::Unreachable(why) | Failure::Connection(why) => write!(f, "the registry is unreachable: {why}"),
            Failure::Stopped => write!(f, "stopped while waiting for the registry"),
        }
    }
}

impl Failure {
    /// Whether the registry gave no answer (as opposed to an answer that
    /// refuses, or a stop).
    pub fn unanswered(&self) -> bool {
        matches!(self, Failure::Unreachable(_) | Failure::Connection(_))
    }

    /// The failure as a role without access to the registry's settings may
    /// read it (the status view, an ERROR's DETAIL sent to a client): libpq's
    /// own message is replaced by a pointer to the server log, where
    /// [`Display`](std::fmt::Display)'s full text goes.
    pub fn public(&self) -> String {
        match self {
            Failure::Connection(_) => {
                "the registry is unreachable: could not connect (libpq's message is in the server log)".into()
            }
            other => other.to_string(),
        }
    }
}

pub use super::KeepGoing;

/// An open connection; closed when dropped.
pub struct Connection {
    api: &'static pq::Api,
    conn: *mut pq::PGconn,
}

impl Drop for Connection {
    fn drop(&mut self) {
        // SAFETY: conn came from PQconnectStartParams and is finished once.
        unsafe { (self.api.finish)(self.conn) };
    }
}

/// libpq's message for the connection, trimmed.
fn connection_error(api: &pq::Api, conn: *const pq::PGconn) -> String {
    // SAFETY: PQerrorMessage returns a string owned by the connection, or NULL.
    let text = unsafe { (api.error_message)(conn) };
    if text.is_null() {
        return "unknown error".into();
    }
    // SAFETY: a NUL-terminated string that lives as long as the connection.
    unsafe { CStr::from_ptr(text) }.to_string_lossy().trim().to_string()
}

/// Waits until the connection's socket is ready (readable, or writable with
/// `write`), the latch is set, or the deadline passes.
fn wait_socket(
    api: &pq::Api,
    conn: *const pq::PGconn,
    write: bool,
    deadline: Instant,
    keep_going: KeepGoing,
) -> Result<(), Failure> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Failure::Unreachable("timed out".into()));
        }
        // SAFETY: PQsocket of a live connection.
        let socket = unsafe { (api.socket)(conn) };
        if socket < 0 {
            return Err(Failure::Connection(connection_error(api, conn)));
        }
        let ready = if write { pg_sys::WL_SOCKET_WRITEABLE } else { pg_sys::WL_SOCKET_READABLE };
        let events = pg_sys::WL_LATCH_SET | pg_sys::WL_TIMEOUT | pg_sys::WL_EXIT_ON_PM_DEATH | ready;
        // SAFETY: MyLatch is this process's latch; socket is libpq's open socket.
        let fired = unsafe {
            pg_sys::WaitLatchOrSocket(
                pg_sys::MyLatch,
                events as c_int,
                socket as _,
                left.as_millis().clamp(1, i32::MAX as u128) as _,
                pg_sys::PG_WAIT_EXTENSION,
            )
        } as u32;
        if fired & pg_sys::WL_LATCH_SET != 0 {
            // SAFETY: resetting our own latch after it fired.
            unsafe { pg_sys::ResetLatch(pg_sys::MyLatch) };
            if !keep_going() {
                return Err(Failure::Stopped);
            }
        }
        if fired & ready != 0 {
            return Ok(());
        }
    }
}

impl Connection {
    /// Connects to `conninfo` (a connection string or URI, as libpq takes
    /// it) within `timeout`. `application_name` is what the registry's
    /// `pg_stat_activity` shows, unless the string sets one.
    pub fn open(
        conninfo: &str,
        application_name: &str,
        timeout: Duration,
        keep_going: KeepGoing,
    ) -> Result<Connection, Failure> {
        let api = api()?;
        let deadline = Instant::now() + timeout;
        let text = |s: &str| CString::new(s).map_err(|_| Failure::Unreachable("a NUL byte in the settings".into()));
        let (dbname, app) = (text(conninfo)?, text(application_name)?);
        let keys = [c"dbname".as_ptr(), c"fallback_application_name".as_ptr(), ptr::null()];
        let values = [dbname.as_ptr(), app.as_ptr(), ptr::null()];
        // SAFETY: NULL-terminated arrays of NUL-terminated strings that outlive
        // the call; expand_dbname = 1 reads `dbname` as a connection string.
        let conn = unsafe { (api.connect_start_params)(keys.as_ptr(), values.as_ptr(), 1) };
        if conn.is_null() {
            return Err(Failure::Unreachable("out of memory".into()));
        }
        let connection = Connection { api, conn };
        // SAFETY: conn is live until `connection` drops.
        if unsafe { (api.status)(conn) } == pq::CONNECTION_BAD {
            return Err(Failure::Connection(connection_error(api, conn)));
        }
        loop {
            // SAFETY: polling a connection started above.
            match unsafe { (api.connect_poll)(conn) } {
                pq::PGRES_POLLING_OK => break,
                pq::PGRES_POLLING_READING => wait_socket(api, conn, false, deadline, keep_going)?,
                pq::PGRES_POLLING_WRITING => wait_socket(api, conn, true, deadline, keep_going)?,
                _ => return Err(Failure::Connection(connection_error(api, conn))),
            }
        }
        // SAFETY: a connected connection; nonblocking mode makes PQsendQuery
        // and PQflush never wait on the socket themselves.
        if unsafe { (api.set_nonblocking)(conn, 1) } != 0 {
            return Err(Failure::Connection(connection_error(api, conn)));
        }
        // Every statement sent on this connection names its schema and its
        // argument types; the session's search_path is pinned too, so that
        // what a statement leaves unqualified (an operator) can only be
        // PostgreSQL's own. A role that may CREATE in a schema on the
        // server's default search_path (the registry's `public`, say) would
        // otherwise offer a better-matching function or operator that this
        // library's role, a superuser for the cluster watch, then runs
        // (CVE-2018-1058's class).
        let mut connection = connection;
        connection.query(
            "SELECT pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', false)",
            &[],
            deadline.saturating_duration_since(Instant::now()),
            keep_going,
        )?;
        Ok(connection)
    }

    /// Runs one statement with text parameters within `timeout`; returns its
    /// rows as text. A statement of several results (none here) keeps the last.
    pub fn query(
        &mut self,
        sql: &str,
        params: &[Option<String>],
        timeout: Duration,
        keep_going: KeepGoing,
    ) -> Result<Vec<Vec<Option<String>>>, Failure> {
        let deadline = Instant::now() + timeout;
        let (api, conn) = (self.api, self.conn);
        let sql = CString::new(sql).map_err(|_| Failure::Unreachable("a NUL byte in the statement".into()))?;
        let owned: Vec<Option<CString>> = params
            .iter()
            .map(|p| p.as_deref().map(CString::new).transpose())
            .collect::<Result<_, _>>()
            .map_err(|_| Failure::Unreachable("a NUL byte in a parameter".into()))?;
        let values: Vec<*const c_char> = owned.iter().map(|p| p.as_ref().map_or(ptr::null(), |c| c.as_ptr())).collect();
        // SAFETY: sql and values live until the call returns; NULL types,
        // lengths and formats mean text parameters and a text result.
        let sent = unsafe {
            (api.send_query_params)(
                conn,
                sql.as_ptr(),
                values.len() as c_int,
                ptr::null(),
                values.as_ptr(),
                ptr::null(),
                ptr::null(),
                0,
            )
        };
        if sent == 0 {
            return Err(Failure::Connection(connection_error(api, conn)));
        }
        loop {
            // SAFETY: flushing the query just sent; 1 means "call again when writable".
            match unsafe { (api.flush)(conn) } {
                0 => break,
                1 => wait_socket(api, conn, true, deadline, keep_going)?,
                _ => return Err(Failure::Connection(connection_error(api, conn))),
            }
        }
        let mut outcome = Err(Failure::Unreachable("no result".into()));
        loop {
            // SAFETY: reading what has arrived; PQisBusy says whether
            // PQgetResult would block.
            unsafe {
                if (api.consume_input)(conn) == 0 {
                    return Err(Failure::Connection(connection_error(api, conn)));
                }
                if (api.is_busy)(conn) != 0 {
                    wait_socket(api, conn, false, deadline, keep_going)?;
                    continue;
                }
                let result = (api.get_result)(conn);
                if result.is_null() {
                    return outcome;
                }
                outcome = read_result(api, result);
                (api.clear)(result);
            }
        }
    }
}

/// The rows of a result, or the error it carries.
///
/// # Safety
/// `result` is a live result of this module's connection.
unsafe fn read_result(api: &pq::Api, result: *mut pq::PGresult) -> Result<Vec<Vec<Option<String>>>, Failure> {
    let field = |code: c_int| {
        // SAFETY: a field of a live result, or NULL.
        let text = unsafe { (api.result_error_field)(result, code) };
        // SAFETY: NUL-terminated, owned by the result.
        (!text.is_null()).then(|| unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned())
    };
    match (api.result_status)(result) {
        pq::PGRES_TUPLES_OK | pq::PGRES_COMMAND_OK => {
            let (rows, columns) = ((api.ntuples)(result), (api.nfields)(result));
            Ok((0..rows)
                .map(|r| {
                    (0..columns)
                        .map(|c| {
                            ((api.get_is_null)(result, r, c) == 0)
                                .then(|| CStr::from_ptr((api.get_value)(result, r, c)).to_string_lossy().into_owned())
                        })
                        .collect()
                })
                .collect())
        }
        pq::PGRES_FATAL_ERROR => Err(Failure::Refused {
            sqlstate: field(pq::PG_DIAG_SQLSTATE).unwrap_or_else(|| "XX000".into()),
            message: field(pq::PG_DIAG_MESSAGE_PRIMARY).unwrap_or_default(),
            detail: field(pq::PG_DIAG_MESSAGE_DETAIL),
            hint: field(pq::PG_DIAG_MESSAGE_HINT),
        }),
        other => Err(Failure::Unreachable(format!("unexpected result status {other:?}"))),
    }
}
