//! The SQL edge of the core's errors: each becomes an `ereport(ERROR)` with
//! a SQLSTATE a client can test for and a hint a DBA can act on.

use pgrx::pg_sys::panic::ErrorReport;
use pgrx::{PgLogLevel, PgSqlErrorCode as Code};
use snowflake_id_core::{epoch, Error};

use crate::guc::{self, Fault, SettingError};

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
/// here; `snowflake_nextval()` raises it and the status view's `problem`
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

const RESTART: &str = "in postgresql.conf and restart the server";

/// The SQLSTATE and hint for a setting's own error; `fix` ends the hint's
/// sentence with where to fix it (` in /data/postgresql.conf (line 3) and
/// restart the server`), or is empty where the value is being written
/// (a check hook refusing `ALTER SYSTEM`).
pub fn setting_code_and_hint(e: &Error, setting: &str, fix: &str) -> (Code, String) {
    match e {
        Error::WorkerIdUnset => (
            Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!(
                "Set {} to a number unique among the servers that share IDs{fix}, or lease one from a registry (snowflake_id.registry, worker_id = auto).",
                guc::WORKER_ID
            ),
        ),
        Error::WorkerIdOutOfRange { max, .. } => (
            Code::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("Set {} between 0 and {max}, or give {} more bits{fix}.", guc::WORKER_ID, guc::WORKER_BITS),
        ),
        Error::LayoutTooWide { .. } => (
            Code::ERRCODE_INVALID_PARAMETER_VALUE,
            format!(
                "{} and {} must each be 0..22 with a sum of at most 22 (the default is 10 + 12); fix them{fix}.",
                guc::WORKER_BITS,
                guc::SEQUENCE_BITS
            ),
        ),
        Error::EpochSyntax { .. } => (
            Code::ERRCODE_INVALID_DATETIME_FORMAT,
            format!(
                "Write {} as '2025-01-01 00:00:00+00' (ISO 8601, UTC unless an offset is given) or as Unix milliseconds{fix}.",
                guc::EPOCH
            ),
        ),
        Error::EpochAmbiguous { text, as_ms, as_s } => (
            Code::ERRCODE_INVALID_DATETIME_FORMAT,
            format!(
                "Give {} a unit: '{t} s' means {}, '{t} ms' means {}; or write the instant in ISO 8601{fix}.",
                guc::EPOCH,
                epoch::format_unix_ms(*as_s),
                epoch::format_unix_ms(*as_ms),
                t = text.trim(),
            ),
        ),
        Error::EpochInFuture { .. } => (
            Code::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("Set {} to an instant in the past{fix}, or fix the system clock.", guc::EPOCH),
        ),
        Error::NotAnInteger { .. } => {
            (Code::ERRCODE_INVALID_PARAMETER_VALUE, format!("Give {setting} a whole number{fix}."))
        }
        other => (Code::ERRCODE_INVALID_PARAMETER_VALUE, format!("{other}; fix {setting}{fix}.")),
    }
}

/// The SQLSTATE and hint of one setting problem, with where to fix it.
pub fn setting_error_code_and_hint(e: &SettingError) -> (Code, String) {
    match &e.fault {
        Fault::Core(error) => setting_code_and_hint(error, e.setting, &e.fix),
        Fault::Refused(r) => {
            let theirs = r.hint.as_deref().map(|h| format!("{h} ")).unwrap_or_default();
            (r.code, format!("{theirs}Fix {}{}.", e.setting, e.fix))
        }
    }
}

/// Settings that stop IDs being issued: the first one's SQLSTATE, message
/// and hint, and every other one in the DETAIL with its own hint, so that
/// one restart can fix them all.
#[track_caller]
pub fn raise_setting(errors: &[SettingError]) -> ! {
    setting_refusal(errors).raise()
}

pub fn setting_refusal(errors: &[SettingError]) -> Refusal {
    let Some(first) = errors.first() else {
        return Refusal::new(
            Code::ERRCODE_INTERNAL_ERROR,
            "snowflake_id: settings refused without a reason".into(),
            None,
            None,
        );
    };
    let (code, hint) = setting_error_code_and_hint(first);
    let others: Vec<String> =
        errors[1..].iter().map(|e| format!("Also {}. {}", e.line(), setting_error_code_and_hint(e).1)).collect();
    let detail = (!others.is_empty()).then(|| others.join("\n"));
    let more =
        errors[1..].iter().map(|e| format!("{}: {}", sqlstate(setting_error_code_and_hint(e).0), e.line())).collect();
    Refusal { more, ..Refusal::new(code, first.line(), detail.as_deref(), Some(hint)) }
}

/// "Restore the settings in force": the layout a state file was written under.
fn restore_layout(stored: &snowflake_id_core::StoredLayout) -> String {
    format!(
        "Restore {} = {}, {} = {}, {} = '{}' {RESTART}",
        guc::WORKER_BITS,
        stored.worker_bits,
        guc::SEQUENCE_BITS,
        stored.sequence_bits,
        guc::EPOCH,
        epoch::format_unix_ms(stored.epoch_ms),
    )
}

/// An error from the core that is not tied to one setting.
#[track_caller]
pub fn raise_core(e: &Error) -> ! {
    core_refusal(e).raise()
}

pub fn core_refusal(e: &Error) -> Refusal {
    let message = format!("snowflake_id: {e}");
    let (code, hint) = match e {
        Error::EpochInFuture { .. } => (
            Code::ERRCODE_INVALID_PARAMETER_VALUE,
            Some(format!("Set {} to an instant in the past {RESTART}, or fix the system clock.", guc::EPOCH)),
        ),
        Error::EpochUnreachable { .. } => (
            Code::ERRCODE_INVALID_PARAMETER_VALUE,
            Some(format!(
                "Move {} later or give the timestamp more bits (fewer {} + {}) {RESTART}.",
                guc::EPOCH,
                guc::WORKER_BITS,
                guc::SEQUENCE_BITS
            )),
        ),
        Error::Exhausted { last_ms } => (Code::ERRCODE_PROGRAM_LIMIT_EXCEEDED, Some(exhausted_hint(*last_ms))),
        Error::NegativeId { .. } => (
            Code::ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE,
            Some("Snowflake IDs always have the sign bit 0; a negative bigint was not made by a snowflake generator.".into()),
        ),
        Error::TimestampOutOfRange { .. } => (
            Code::ERRCODE_DATETIME_FIELD_OVERFLOW,
            Some(format!("Instants past the layout's end have no ID; a later {} moves the end.", guc::EPOCH)),
        ),
        Error::LayoutTooWide { .. } => (
            Code::ERRCODE_INVALID_PARAMETER_VALUE,
            Some("worker_bits and sequence_bits must each be 0..22 with a sum of at most 22.".into()),
        ),
        Error::SpanOutOfRange { .. } => (
            Code::ERRCODE_INVALID_PARAMETER_VALUE,
            Some("Give a positive span such as '1 day', shorter than the layout's whole range.".into()),
        ),
        Error::CeilingReached { .. } => (
            Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            Some("The registry has not renewed this server's lease on its worker id; snowflake_id_status shows the lease and the last registry error.".into()),
        ),
        Error::LayoutWouldGoBack { stored, .. } => (
            Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            Some(format!(
                "{}. IDs of another layout can only follow once the clock is past the old ones.",
                restore_layout(stored)
            )),
        ),
        Error::LayoutChanged { stored } => (
            Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            Some(format!(
                "{}. To change the layout on purpose (stored IDs will decode differently), set {} = on for one restart; see the README.",
                restore_layout(stored),
                guc::ALLOW_LAYOUT_CHANGE
            )),
        ),
        Error::StateCorrupt { .. } => (
            Code::ERRCODE_DATA_CORRUPTED,
            Some(format!(
                "The file {} records the highest ID reserved; an older copy from a backup is as unsafe as none. Before clients draw IDs, move it aside and, as a superuser, run SELECT snowflake_advance_past(max(id)) over every table whose IDs this server made.",
                snowflake_id_core::state_file::FILE_NAME
            )),
        ),
        Error::WorkerIdUnset
        | Error::WorkerIdOutOfRange { .. }
        | Error::EpochSyntax { .. }
        | Error::EpochAmbiguous { .. }
        | Error::NotAnInteger { .. } => {
            (Code::ERRCODE_INVALID_PARAMETER_VALUE, None)
        }
    };
    Refusal::new(code, message, None, hint)
}

/// The hint for a timestamp field used up. Not "a later epoch": a layout
/// change that would issue IDs below the reserved ones is refused. When the
/// clock is far from the layout's end, the mark was moved there (a mistyped
/// `snowflake_advance_past` forced through), which has a way back.
fn exhausted_hint(last_ms: i64) -> String {
    let now_ms = crate::clock::now_unix_ms();
    let far = "The README section \"When the durable mark is far ahead\" says how to bring it back near the clock.";
    if last_ms.saturating_sub(now_ms) > 86_400_000 {
        format!(
            "The clock reads {}, long before that: the durable mark was moved to the layout's end, most likely by \
             snowflake_advance_past() with a wrong ID. {far}",
            epoch::format_unix_ms(now_ms)
        )
    } else {
        format!("The layout's timestamp field has run out. {far}")
    }
}

const NOT_PRELOADED: &str = "snowflake_id must be loaded via shared_preload_libraries";

/// The library was loaded by CREATE EXTENSION or LOAD, not at server start,
/// so there is no shared generator to draw from.
pub fn not_preloaded_refusal() -> Refusal {
    Refusal::new(
        Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        NOT_PRELOADED.into(),
        Some("The generator lives in shared memory, which is set up only at server start."),
        Some("Add 'snowflake_id' to shared_preload_libraries in postgresql.conf and restart the server.".into()),
    )
}

/// Reading or writing the durable state file failed.
#[track_caller]
pub fn raise_io(what: String) -> ! {
    io_refusal(what).raise()
}

pub fn io_refusal(what: String) -> Refusal {
    Refusal::new(
        Code::ERRCODE_IO_ERROR,
        format!("snowflake_id: {what}"),
        Some("No ID is issued past the durable mark until it can be written."),
        Some("Check the permissions and free space of the data directory.".into()),
    )
}

/// `snowflake_nextval()` where nothing may be written: on a standby (it would
/// repeat the primary's IDs) or in a READ ONLY transaction. SQLSTATE 25006,
/// as `nextval()` gives.
pub fn read_only_refusal(function: &str, when: &str, recovery: bool) -> Refusal {
    let (detail, hint) = if recovery {
        (
            "Only the primary issues IDs; a standby's mark follows the primary's through WAL.",
            "Connect to the primary to draw IDs. snowflake_decode() and snowflake_id_status work here.",
        )
    } else {
        (
            "Drawing an ID advances the generator's durable mark, which a read-only transaction may not do.",
            "Draw IDs in a read-write transaction.",
        )
    };
    Refusal::new(
        Code::ERRCODE_READ_ONLY_SQL_TRANSACTION,
        format!("cannot execute {function} {when}"),
        Some(detail),
        Some(hint.into()),
    )
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
