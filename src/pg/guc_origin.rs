//! What the DBA wrote for a setting, and where.
//!
//! When the library loads at start, PostgreSQL hands each value from the
//! configuration files to the setting just defined; one it refuses (not an
//! integer, out of range, refused by a check hook) is reported with a
//! WARNING and the default is quietly used instead. Ignoring the DBA's
//! value is what the generator must never do (for `worker_bits` it means
//! IDs in another layout), so the text is read from PostgreSQL's
//! placeholder before the setting is defined, and checked again after:
//! a value refused then makes `snowflake_nextval()` refuse too.

use std::ffi::{c_int, CStr, CString};

use pgrx::pg_sys::panic::CaughtError;
use pgrx::pg_sys::{self, GucSource};
use pgrx::{PgSqlErrorCode, PgTryBuilder};

/// Where a value came from: the file and line (`pg_settings.sourcefile`,
/// `sourceline`), or only the kind of source (the command line).
#[derive(Debug, Clone, Default)]
pub struct Origin {
    pub file: Option<String>,
    pub line: i32,
    pub source: GucSource::Type,
}

/// A value the server's configuration gave a setting before it was defined.
#[derive(Debug, Clone)]
pub struct Written {
    pub text: String,
    pub origin: Origin,
}

/// PostgreSQL's words when it refuses a value.
#[derive(Debug, Clone)]
pub struct Refusal {
    pub code: PgSqlErrorCode,
    pub message: String,
    pub detail: Option<String>,
    pub hint: Option<String>,
}

/// The server-wide value (configuration file, `postgres -c`) PostgreSQL
/// holds for `name` while no library has defined it. A session's own
/// `SET` of a placeholder (possible before a library loads by
/// `CREATE EXTENSION`) is not the server's setting and is left to
/// PostgreSQL alone.
pub fn placeholder(name: &CStr) -> Option<Written> {
    let record = lookup(name)?;
    // SAFETY: a live entry of the GUC table, read before anything changes it.
    let (flags, source) = unsafe { ((*record).flags, (*record).source) };
    if flags & pg_sys::GUC_CUSTOM_PLACEHOLDER as c_int == 0 || source > GucSource::PGC_S_ARGV {
        return None;
    }
    // SAFETY: a placeholder is a string setting; the text is PostgreSQL's and copied at once.
    let text = unsafe { pg_sys::GetConfigOption(name.as_ptr(), true, false) };
    if text.is_null() {
        return None;
    }
    // SAFETY: non-null C string owned by the GUC machinery.
    let text = unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned();
    Some(Written { text, origin: origin_of(record) })
}

fn origin_of(record: *mut pg_sys::config_generic) -> Origin {
    // SAFETY: a live entry of the GUC table; the file name is copied.
    unsafe {
        let file = (*record).sourcefile;
        Origin {
            file: (!file.is_null()).then(|| CStr::from_ptr(file).to_string_lossy().into_owned()),
            line: (*record).sourceline,
            source: (*record).source,
        }
    }
}

/// The GUC table's entry for `name`. 15 exports only the whole table;
/// 16 and later the lookup PostgreSQL itself uses.
#[cfg(feature = "pg15")]
fn lookup(name: &CStr) -> Option<*mut pg_sys::config_generic> {
    let wanted = name.to_bytes();
    // SAFETY: the table and its length as guc.c keeps them; read only.
    unsafe {
        let table = pg_sys::get_guc_variables();
        let n = usize::try_from(pg_sys::GetNumConfigOptions()).unwrap_or(0);
        (0..n)
            .map(|i| *table.add(i))
            .find(|&record| !record.is_null() && CStr::from_ptr((*record).name).to_bytes().eq_ignore_ascii_case(wanted))
    }
}

#[cfg(not(feature = "pg15"))]
fn lookup(name: &CStr) -> Option<*mut pg_sys::config_generic> {
    // SAFETY: no placeholder is created and a missing name is not an error.
    let record = unsafe { pg_sys::find_option(name.as_ptr(), false, true, pg_sys::DEBUG1 as c_int) };
    (!record.is_null()).then_some(record)
}

/// PostgreSQL's verdict on `text` as the value of `name` from a
/// configuration file: its own parsing (integers with units, the range)
/// and the check hook, exactly as at start, without changing anything.
pub fn refusal(name: &CStr, text: &str) -> Option<Refusal> {
    let value = CString::new(text.replace('\0', "")).unwrap_or_default();
    PgTryBuilder::new(|| {
        // SAFETY: changeVal = false only validates; an invalid value raises
        // ERROR, caught below.
        unsafe {
            pg_sys::set_config_option(
                name.as_ptr(),
                value.as_ptr(),
                pg_sys::GucContext::PGC_POSTMASTER,
                GucSource::PGC_S_FILE,
                pg_sys::GucAction::GUC_ACTION_SET,
                false,
                pg_sys::PGERROR as c_int,
                false,
            )
        };
        None
    })
    .catch_others(|caught| match caught {
        CaughtError::PostgresError(e) => Some(Refusal {
            code: e.sql_error_code(),
            message: e.message().to_string(),
            detail: e.detail().map(str::to_string),
            hint: e.hint().map(str::to_string),
        }),
        other => other.rethrow(),
    })
    .execute()
}
