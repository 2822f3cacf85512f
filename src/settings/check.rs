//! Check hooks: PostgreSQL calls them for every value it is about to accept
//! (`ALTER SYSTEM SET`, a reload, the value from the configuration file
//! when the library loads), so a bad value is refused where it is written,
//! with PostgreSQL's own message (`invalid value for parameter ...`) and our
//! reason as DETAIL, as core settings are. The value is never rewritten: a
//! hook that accepts leaves the text as the DBA wrote it.
//!
//! What one value alone cannot tell (worker_id against worker_bits, the sum
//! of the bits) is checked at start, where all of them are known.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::atomic::{AtomicBool, Ordering};

use pgrx::pg_sys;
use pgrx::prelude::*;
use snowflake_id_core::{epoch, Error};

use super::error::setting_code_and_hint;
use super::names;
use crate::pg::clock;

/// The widest worker field (22 bits) holds ids up to this; which width is
/// in force is checked at start.
pub const MAX_WORKER_ID: i64 = (1 << 22) - 1;

/// Custom WAL resource manager ids on PostgreSQL's published list of ids
/// taken by other extensions (128, `RM_EXPERIMENTAL_ID`, is for
/// development): <https://wiki.postgresql.org/wiki/CustomWALResourceManagers>.
/// A server loading two extensions with one id fails to start; a standby
/// would replay one's records with the other's code.
pub const TAKEN_RMGR_IDS: [std::ops::RangeInclusive<i32>; 2] = [128..=140, 241..=241];

/// The worker id as written: `None` when unset (no value, or an empty one,
/// as before check hooks existed) or `auto` (any free one from the
/// registry), else a whole number that fits the widest worker field.
pub fn worker_id(text: &str) -> Result<Option<i64>, Error> {
    let t = text.trim();
    if t.is_empty() || t.eq_ignore_ascii_case("auto") {
        return Ok(None);
    }
    let id = t.parse::<i64>().map_err(|_| Error::NotAnInteger { text: t.to_string() })?;
    if !(0..=MAX_WORKER_ID).contains(&id) {
        return Err(Error::WorkerIdOutOfRange { worker_id: id, max: MAX_WORKER_ID });
    }
    Ok(Some(id))
}

/// Why `id` is not a resource manager id to use, if it is not.
pub fn wal_rmgr_id(id: i32) -> Result<(), String> {
    if !(128..=255).contains(&id) {
        return Err(format!("{id} is not a custom resource manager id (128 to 255)"));
    }
    if TAKEN_RMGR_IDS.iter().any(|r| r.contains(&id)) {
        return Err(format!(
            "{id} is on PostgreSQL's list of custom WAL resource manager ids taken by other extensions (128-140 and 241)"
        ));
    }
    Ok(())
}

/// Set while the library defines its settings. The epoch's "not in the
/// future" depends on the clock: at start it is checked when IDs are asked
/// for (an epoch a few seconds ahead becomes valid by itself), so the hook
/// does not refuse it then and the value written stays in force.
static DEFINING: AtomicBool = AtomicBool::new(false);

pub fn defining(on: bool) {
    DEFINING.store(on, Ordering::Relaxed);
}

/// Hands PostgreSQL the reason and hint of a refusal; it raises them at the
/// level the caller asked for (ERROR for ALTER SYSTEM, LOG at reload), with
/// its own message naming the value.
fn refuse(detail: &str, hint: &str) -> bool {
    // SAFETY: the documented way for a check hook to word its refusal
    // (GUC_check_errdetail/errhint); the strings live in ErrorContext,
    // which PostgreSQL flushes after reporting them.
    unsafe {
        pg_sys::GUC_check_errdetail_string = in_error_context(detail);
        pg_sys::GUC_check_errhint_string = in_error_context(hint);
    }
    false
}

unsafe fn in_error_context(text: &str) -> *mut c_char {
    let c = CString::new(text.replace('\0', "")).unwrap_or_default();
    // SAFETY: ErrorContext always exists; MemoryContextStrdup copies.
    unsafe { pg_sys::MemoryContextStrdup(pg_sys::ErrorContext, c.as_ptr()) }
}

/// Refused with 22023, the SQLSTATE of every refused setting in
/// PostgreSQL, whatever code the same problem gets when IDs are refused.
fn refuse_error(e: &Error, setting: &str) -> bool {
    let (_, hint) = setting_code_and_hint(e, setting, "");
    refuse(&e.to_string(), &hint)
}

/// The text a string hook is offered, `None` for "unset".
unsafe fn offered(newval: *mut *mut c_char) -> Option<String> {
    // SAFETY: PostgreSQL passes a valid pointer to a (possibly NULL) string.
    unsafe {
        if newval.is_null() || (*newval).is_null() {
            return None;
        }
        Some(CStr::from_ptr(*newval).to_string_lossy().into_owned())
    }
}

#[pg_guard]
pub unsafe extern "C-unwind" fn check_worker_id(
    newval: *mut *mut c_char,
    _extra: *mut *mut c_void,
    _source: pg_sys::GucSource::Type,
) -> bool {
    // SAFETY: as PostgreSQL calls a string check hook.
    match unsafe { offered(newval) }.map(|t| worker_id(&t)) {
        None | Some(Ok(_)) => true,
        Some(Err(e)) => refuse_error(&e, names::WORKER_ID),
    }
}

#[pg_guard]
pub unsafe extern "C-unwind" fn check_epoch(
    newval: *mut *mut c_char,
    _extra: *mut *mut c_void,
    _source: pg_sys::GucSource::Type,
) -> bool {
    // SAFETY: as PostgreSQL calls a string check hook.
    let Some(text) = (unsafe { offered(newval) }) else {
        return true; // the default; never NULL in practice
    };
    let checked = epoch::parse_epoch(&text).and_then(|epoch_ms| {
        let now_ms = clock::now_unix_ms();
        match epoch_ms > now_ms && !DEFINING.load(Ordering::Relaxed) {
            true => Err(Error::EpochInFuture { epoch_ms, now_ms }),
            false => Ok(()),
        }
    });
    match checked {
        Ok(()) => true,
        Err(e) => refuse_error(&e, names::EPOCH),
    }
}

#[pg_guard]
pub unsafe extern "C-unwind" fn check_wal_rmgr_id(
    newval: *mut c_int,
    _extra: *mut *mut c_void,
    _source: pg_sys::GucSource::Type,
) -> bool {
    // SAFETY: PostgreSQL passes a valid pointer to the parsed integer.
    let id = unsafe { *newval };
    match wal_rmgr_id(id) {
        Ok(()) => true,
        Err(why) => refuse(
            &why,
            "Pick an id from 141 to 240 or 242 to 255 that no other loaded extension uses (the default is 187), the same on the primary and every standby.",
        ),
    }
}
