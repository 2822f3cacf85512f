//! An ERROR as data, and raising one: the generic edge between Rust and
//! PostgreSQL's error reporting, with nothing of the generator in it.

use pgrx::pg_sys::panic::ErrorReport;
use pgrx::{PgLogLevel, PgSqlErrorCode as Code};

/// Raises `message` as an ERROR; never returns. Every `raise*` function is
/// `#[track_caller]`, so the error's LOCATION is the line that raised it,
/// not this one.
#[track_caller]
pub fn raise(code: Code, message: String, detail: Option<String>, hint: Option<String>) -> ! {
    let mut report = ErrorReport::new(code, message, "snowflake_id");
    if let Some(d) = detail {
        report = report.set_detail(d);
    }
    if let Some(h) = hint {
        report = report.set_hint(h);
    }
    report.report(PgLogLevel::ERROR);
    unreachable!("ereport(ERROR) returned")
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
