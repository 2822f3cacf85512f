//! A setting that cannot be used, and how that is told: one line naming the
//! value, a SQLSTATE, and a hint that says where to fix it. The settings'
//! own error type, so that a check hook and a refused `snowflake_nextval()`
//! word a problem the same way.

use pgrx::PgSqlErrorCode as Code;
use snowflake_id_core::{epoch, Error};

use super::names::{self, MAX_DRIFT, WAL_RMGR_ID};
use crate::pg::guc_origin::Refusal as Rejected;
use crate::pg::report::{sqlstate, Refusal};

/// Why a value cannot be used.
#[derive(Debug, Clone)]
pub enum Fault {
    /// Our own check (a string setting, or settings that do not fit together).
    Core(Error),
    /// PostgreSQL's check of an integer setting, in its words.
    Refused(Rejected),
}

/// A setting that could not be used, with what was set for the message and
/// where to fix it for the hint.
#[derive(Debug, Clone)]
pub struct SettingError {
    pub fault: Fault,
    /// The setting the hint should name.
    pub setting: &'static str,
    /// The offending setting(s) as written: `snowflake_id.worker_id = '7'`.
    pub shown: String,
    /// Where to fix it, completing "Set it ...": ` in /data/postgresql.conf
    /// (line 3) and restart the server`.
    pub fix: String,
}

impl SettingError {
    /// One line naming the value and what is wrong with it.
    pub fn line(&self) -> String {
        match &self.fault {
            Fault::Core(e) => format!("invalid {}: {e}", self.shown),
            Fault::Refused(r) => {
                let why = match (&r.detail, r.message.starts_with("invalid value for parameter")) {
                    (Some(detail), _) => detail.clone(),
                    // PostgreSQL's message only repeats the name and value.
                    (None, true) => format!("not {}", expected(self.setting)),
                    (None, false) => r.message.clone(),
                };
                format!("invalid {}: {why}", self.shown)
            }
        }
    }
}

/// What an integer setting takes, for a value PostgreSQL could not parse.
fn expected(setting: &str) -> &'static str {
    match setting {
        MAX_DRIFT => "a duration such as '1s' or '500ms' (0: never wait)",
        WAL_RMGR_ID => "an integer from 128 to 255",
        _ => "an integer from 0 to 22",
    }
}

/// Every setting problem, in one line for the status view's `problem`.
pub fn lines(errors: &[SettingError]) -> String {
    errors.iter().map(SettingError::line).collect::<Vec<_>>().join("; ")
}

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
                names::WORKER_ID
            ),
        ),
        Error::WorkerIdOutOfRange { max, .. } => (
            Code::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("Set {} between 0 and {max}, or give {} more bits{fix}.", names::WORKER_ID, names::WORKER_BITS),
        ),
        Error::LayoutTooWide { .. } => (
            Code::ERRCODE_INVALID_PARAMETER_VALUE,
            format!(
                "{} and {} must each be 0..22 with a sum of at most 22 (the default is 10 + 12); fix them{fix}.",
                names::WORKER_BITS,
                names::SEQUENCE_BITS
            ),
        ),
        Error::EpochSyntax { .. } => (
            Code::ERRCODE_INVALID_DATETIME_FORMAT,
            format!(
                "Write {} as '2025-01-01 00:00:00+00' (ISO 8601, UTC unless an offset is given) or as Unix milliseconds{fix}.",
                names::EPOCH
            ),
        ),
        Error::EpochAmbiguous { text, as_ms, as_s } => (
            Code::ERRCODE_INVALID_DATETIME_FORMAT,
            format!(
                "Give {} a unit: '{t} s' means {}, '{t} ms' means {}; or write the instant in ISO 8601{fix}.",
                names::EPOCH,
                epoch::format_unix_ms(*as_s),
                epoch::format_unix_ms(*as_ms),
                t = text.trim(),
            ),
        ),
        Error::EpochInFuture { .. } => (
            Code::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("Set {} to an instant in the past{fix}, or fix the system clock.", names::EPOCH),
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
