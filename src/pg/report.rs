//! An ERROR as data, and raising one: the generic edge between Rust and
//! PostgreSQL's error reporting, with nothing of the generator in it.
//!
//! Every ERROR and WARNING raised here carries a CONTEXT line naming the
//! server, `snowflake_id on node "worker-a:5432"`: on Citus a worker's
//! error reaches the client through the coordinator (message, DETAIL, HINT
//! and CONTEXT relayed), and a log collected from many servers mixes them.
//! The name comes from a function the settings layer hands over at start
//! ([`name_the_node`]), so this layer imports no setting.

use std::ffi::{c_char, c_int, c_void, CString};
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::OnceLock;

use pgrx::pg_sys;
use pgrx::pg_sys::panic::ErrorReport;
use pgrx::{PgLogLevel, PgSqlErrorCode as Code};

/// Raises `message` as an ERROR; never returns. Every `raise*` function is
/// `#[track_caller]`, so the error's LOCATION is the line that raised it,
/// not this one.
#[track_caller]
pub fn raise(code: Code, message: String, detail: Option<String>, hint: Option<String>) -> ! {
    let report = build(code, message, detail, hint);
    // pgrx turns the ERROR into a Rust panic and reports it at the guard of
    // the SQL-callable function, after unwinding: the context line must be
    // on PostgreSQL's stack of error context callbacks by then. It is left
    // there, as C code leaves its callback when it raises an ERROR: the
    // PG_CATCH (or the top level) the error longjmps to restores the stack.
    // This crate catches none of its own ERRORs in Rust (the only
    // PgTryBuilder, in guc_origin.rs, wraps a call into PostgreSQL), so the
    // callback never outlives the error it was pushed for.
    push_node_context();
    report.report(PgLogLevel::ERROR);
    unreachable!("ereport(ERROR) returned")
}

/// Reports a WARNING (or any level below ERROR) with the node's context
/// line: every WARNING of the library goes through here.
#[track_caller]
pub fn emit(level: PgLogLevel, code: Code, message: String, detail: Option<String>, hint: Option<String>) {
    let report = build(code, message, detail, hint);
    let pushed = push_node_context();
    report.report(level);
    if pushed {
        pop_node_context();
    }
}

#[track_caller]
fn build(code: Code, message: String, detail: Option<String>, hint: Option<String>) -> ErrorReport {
    let mut report = ErrorReport::new(code, message, "snowflake_id");
    if let Some(d) = detail {
        report = report.set_detail(d);
    }
    if let Some(h) = hint {
        report = report.set_hint(h);
    }
    report
}

/// What names this server in messages (`snowflake_id.node_name`, else
/// `cluster_name`, else host:port): set once in `_PG_init`, called when a
/// message is made, so a reload of the name shows at once.
static NODE_NAME: OnceLock<fn() -> String> = OnceLock::new();

pub fn name_the_node(name: fn() -> String) {
    let _ = NODE_NAME.set(name);
}

/// Names the node in every message this process sends from now on, not
/// only the library's own: for the library's own long-lived processes (the
/// mark keeper), whose every line is about snowflake_id. Never removed: the
/// process ends with it.
pub fn name_the_node_in_this_process() {
    push_node_context();
}

unsafe extern "C-unwind" {
    // errcontext() is a macro around this; pgrx does not bind it.
    fn errcontext_msg(fmt: *const c_char, ...) -> c_int;
}

/// The context line. Runs inside PostgreSQL's error reporting: nothing in
/// it may raise, and a panic stops at `catch_unwind`.
unsafe extern "C-unwind" fn node_context(_arg: *mut c_void) {
    let Some(name) = NODE_NAME.get() else { return };
    let Ok(name) = std::panic::catch_unwind(name) else { return };
    let Ok(line) = CString::new(format!("snowflake_id on node \"{name}\"")) else { return };
    // SAFETY: called by errfinish() with an error being reported; "%s" and a
    // NUL-terminated string, copied by PostgreSQL.
    unsafe { errcontext_msg(c"%s".as_ptr(), line.as_ptr()) };
}

/// This process's one callback record (allocated once, never freed).
static CALLBACK: AtomicPtr<pg_sys::ErrorContextCallback> = AtomicPtr::new(std::ptr::null_mut());

fn callback() -> *mut pg_sys::ErrorContextCallback {
    let mut cb = CALLBACK.load(Ordering::Relaxed);
    if cb.is_null() {
        cb = Box::into_raw(Box::new(pg_sys::ErrorContextCallback {
            previous: std::ptr::null_mut(),
            callback: Some(node_context),
            arg: std::ptr::null_mut(),
        }));
        CALLBACK.store(cb, Ordering::Relaxed);
    }
    cb
}

/// Puts the context line on top of PostgreSQL's error context stack unless
/// it is on it already (pushing the one record twice would make a loop);
/// whether it pushed.
fn push_node_context() -> bool {
    let cb = callback();
    // SAFETY: the backend's own error context stack, in its only thread; a
    // list of valid records ending in NULL, which this walks and extends.
    unsafe {
        let mut at = pg_sys::error_context_stack;
        while !at.is_null() {
            if at == cb {
                return false;
            }
            at = (*at).previous;
        }
        (*cb).previous = pg_sys::error_context_stack;
        pg_sys::error_context_stack = cb;
    }
    true
}

fn pop_node_context() {
    let cb = callback();
    // SAFETY: as in push_node_context; only our own record is taken off.
    unsafe {
        if pg_sys::error_context_stack == cb {
            pg_sys::error_context_stack = (*cb).previous;
        }
    }
}

/// An ERROR as data. Each reason `snowflake_nextval()` refuses is built once,
/// in `refusal.rs` or by the settings; `snowflake_nextval()` raises it and the status view's `problem`
/// shows it, so the two cannot say different things.
#[derive(Debug, Clone)]
pub struct Refusal {
    pub code: Code,
    pub message: String,
    pub detail: Option<String>,
    pub hint: Option<String>,
    /// Further reasons of the same kind (every other bad setting), shown
    /// in `problem` after the first line; the ERROR has them in its DETAIL.
    pub more: Vec<String>,
}

impl Refusal {
    pub fn new(code: Code, message: String, detail: Option<&str>, hint: Option<String>) -> Refusal {
        Refusal { code, message, detail: detail.map(str::to_string), hint, more: vec![] }
    }

    #[track_caller]
    pub fn raise(self) -> ! {
        raise(self.code, self.message, self.detail, self.hint)
    }

    /// `SQLSTATE: message`, as psql's VERBOSE mode shows an error: what an
    /// alert on the status view can match on, and a DBA can read.
    pub fn summary(&self) -> String {
        let mut text = format!("{}: {}", sqlstate(self.code), self.message);
        for line in &self.more {
            text.push('\n');
            text.push_str(line);
        }
        text
    }
}

/// The five characters of a SQLSTATE, unpacked from PostgreSQL's encoding
/// (six bits a character, the first in the lowest bits).
pub fn sqlstate(code: Code) -> String {
    let packed = code as i32;
    (0..5).map(|i| char::from(b'0' + ((packed >> (6 * i)) & 0x3F) as u8)).collect()
}

/// Keeps Rust backtraces out of the errors clients receive. pgrx turns an
/// ERROR that PostgreSQL raises below one of our guarded calls into it (a
/// statement_timeout in a wait, say; the planner hook has no guard) into a
/// Rust panic and back, and attaches the backtrace captured on
/// the way as the error's DETAIL whenever `RUST_BACKTRACE` is set in the
/// server's environment: 30 lines of Rust frames in place of PostgreSQL's own
/// error. PostgreSQL itself never sends a backtrace to a client.
///
/// `std::backtrace::Backtrace` decides once per library copy of std whether
/// capturing is on, from `RUST_LIB_BACKTRACE` (then `RUST_BACKTRACE`), and
/// keeps the answer. So this sets `RUST_LIB_BACKTRACE=0` for one capture,
/// which fixes the answer for this library alone, and puts the environment
/// back as it was: other Rust libraries in the server see what the DBA set.
/// Called from `_PG_init`, while the process is single-threaded (the
/// postmaster at preload, or a backend loading the library), before any
/// error could be caught. The error itself keeps everything PostgreSQL gave
/// it (message, detail, context, location).
pub fn no_rust_backtraces_for_clients() {
    const VAR: &str = "RUST_LIB_BACKTRACE";
    let before = std::env::var_os(VAR);
    std::env::set_var(VAR, "0");
    let _ = std::backtrace::Backtrace::capture();
    match before {
        Some(value) => std::env::set_var(VAR, value),
        None => std::env::remove_var(VAR),
    }
}

/// `CHECK_FOR_INTERRUPTS()`: a cancel or termination reaches the client as
/// PostgreSQL raised it (see [`no_rust_backtraces_for_clients`]).
pub fn check_for_interrupts() {
    pgrx::check_for_interrupts!();
}
