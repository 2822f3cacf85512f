//! Defining the settings with PostgreSQL, and what the configuration said
//! for each when the library loaded (`pg::guc_origin` reads it before the
//! definition can replace a bad value by the default).

use std::ffi::CString;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use pgrx::{pg_sys, GucContext, GucFlags, GucRegistry, GucSetting};
use snowflake_id_core::epoch;

use super::check;
use super::error::Fault;
use super::names::{index, DEFAULT_MAX_DRIFT_MS, DEFAULT_WAL_RMGR_ID, EPOCH, MAX_DRIFT, NAMES, WAL_RMGR_ID, WORKER_ID};
use crate::pg::guc_origin::{self, Origin, Written};

static WORKER_ID_SETTING: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(None);
static WORKER_BITS_SETTING: GucSetting<i32> = GucSetting::<i32>::new(10);
static SEQUENCE_BITS_SETTING: GucSetting<i32> = GucSetting::<i32>::new(12);
static EPOCH_SETTING: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(Some(c"2025-01-01 00:00:00+00"));
static MAX_DRIFT_SETTING: GucSetting<i32> = GucSetting::<i32>::new(DEFAULT_MAX_DRIFT_MS);
static WAL_RMGR_ID_SETTING: GucSetting<i32> = GucSetting::<i32>::new(DEFAULT_WAL_RMGR_ID);
static ALLOW_LAYOUT_CHANGE_SETTING: GucSetting<bool> = GucSetting::<bool>::new(false);

/// What the configuration said for each setting when the library loaded,
/// and why a value was refused. Set once in the process that loads the
/// library (the postmaster, for a preload) and inherited by every backend.
struct Start {
    written: [Option<Written>; NAMES.len()],
    refused: [Option<Fault>; NAMES.len()],
}

static START: OnceLock<Start> = OnceLock::new();

/// `max_drift` refused at start and not replaced by a reload since. Unlike
/// the others it is reloadable: a reload with a good value (which runs the
/// assign hook in each process) ends the refusal without a restart.
static MAX_DRIFT_REFUSED: AtomicBool = AtomicBool::new(false);

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn assign_max_drift(_newval: std::ffi::c_int, _extra: *mut std::ffi::c_void) {
    MAX_DRIFT_REFUSED.store(false, Ordering::Relaxed);
}

fn cname(name: &'static str) -> CString {
    CString::new(name).unwrap_or_default()
}

/// Defines the settings, the registry's too. PostgreSQL allows `PGC_POSTMASTER` settings only
/// while preload libraries load (later it is a FATAL error), so a library
/// loaded by `CREATE EXTENSION` alone defines them as `PGC_SIGHUP`: still
/// closed to `SET`, and used only for decoding since there is no generator.
pub fn register(preloaded: bool) {
    let written = NAMES.map(|name| guc_origin::placeholder(&cname(name)));
    let layout_context = if preloaded { GucContext::Postmaster } else { GucContext::Sighup };
    check::defining(true);
    // SAFETY: the hooks are #[pg_guard] functions with the signatures PostgreSQL calls.
    unsafe {
        GucRegistry::define_string_guc_with_hooks(
            c"snowflake_id.worker_id",
            c"This server's worker id, unique among the servers that share IDs.",
            c"An integer from 0 to 2^worker_bits - 1. No default: snowflake_nextval() refuses to run until it is set.",
            &WORKER_ID_SETTING,
            layout_context,
            GucFlags::default(),
            Some(check::check_worker_id),
            None,
            None,
        );
    }
    let bits = |name, short, long, setting| {
        let context = if preloaded { GucContext::Postmaster } else { GucContext::Sighup };
        GucRegistry::define_int_guc(name, short, long, setting, 0, 22, context, GucFlags::default())
    };
    bits(
        c"snowflake_id.worker_bits",
        c"Bits of each ID that hold the worker id.",
        c"An integer from 0 to 22; worker_bits + sequence_bits must be at most 22.",
        &WORKER_BITS_SETTING,
    );
    bits(
        c"snowflake_id.sequence_bits",
        c"Bits of each ID that count IDs within one millisecond.",
        c"An integer from 0 to 22; 2^sequence_bits IDs per millisecond before the next millisecond is borrowed.",
        &SEQUENCE_BITS_SETTING,
    );
    let layout_context = if preloaded { GucContext::Postmaster } else { GucContext::Sighup };
    // SAFETY: as above.
    unsafe {
        GucRegistry::define_string_guc_with_hooks(
            c"snowflake_id.epoch",
            c"The instant that timestamp 0 of an ID stands for.",
            c"ISO 8601 (UTC unless an offset is given), or Unix milliseconds. Must not be in the future.",
            &EPOCH_SETTING,
            layout_context,
            GucFlags::default(),
            Some(check::check_epoch),
            None,
            None,
        );
        GucRegistry::define_int_guc_with_hooks(
            c"snowflake_id.max_drift",
            c"How far bursts may push the logical clock ahead of the wall clock before callers wait.",
            c"Default 1s; 0 means never wait. Clock steps backwards do not count towards it.",
            &MAX_DRIFT_SETTING,
            0,
            i32::MAX,
            GucContext::Sighup,
            GucFlags::UNIT_MS,
            None,
            Some(assign_max_drift),
            None,
        );
    }
    if preloaded {
        // SAFETY: as above.
        unsafe {
            GucRegistry::define_int_guc_with_hooks(
                c"snowflake_id.wal_rmgr_id",
                c"Id of the custom WAL resource manager that carries the durable mark.",
                c"128 to 255, not on PostgreSQL's list of taken ids (128-140, 241), unique among the extensions loaded. Must be the same on a primary and its standbys.",
                &WAL_RMGR_ID_SETTING,
                128,
                255,
                GucContext::Postmaster,
                GucFlags::default(),
                Some(check::check_wal_rmgr_id),
                None,
                None,
            );
        }
        GucRegistry::define_bool_guc(
            c"snowflake_id.allow_layout_change",
            c"Lets the generator start under a layout other than the one its IDs were issued under.",
            c"Off: a changed epoch or bit split is refused, since every stored ID would decode differently. Turn on for one restart to change it on purpose.",
            &ALLOW_LAYOUT_CHANGE_SETTING,
            GucContext::Postmaster,
            GucFlags::default(),
        );
    }
    check::defining(false);
    let refused = std::array::from_fn(|i| {
        let name = NAMES[i];
        // wal_rmgr_id exists only with the preload.
        written[i].as_ref().filter(|_| preloaded || name != WAL_RMGR_ID).and_then(|w| refusal(name, &w.text))
    });
    MAX_DRIFT_REFUSED.store(refused[index(MAX_DRIFT)].is_some(), Ordering::Relaxed);
    let _ = START.set(Start { written, refused });
    super::registry::define(preloaded);
    super::citus::define();
    super::registry::decide_at_start(preloaded);
}

/// Why the value written for `name` cannot be used, in the words of the
/// check PostgreSQL applied when the library loaded: our parsers for the
/// string settings, PostgreSQL's own for the integers.
fn refusal(name: &'static str, text: &str) -> Option<Fault> {
    match name {
        WORKER_ID => check::worker_id(text).err().map(Fault::Core),
        // "In the future" is a matter of the clock, checked when IDs are asked for.
        EPOCH => epoch::parse_epoch(text).err().map(Fault::Core),
        _ => guc_origin::refusal(&cname(name), text).map(Fault::Refused),
    }
}

/// Whether a layout change was allowed for this start.
pub fn allow_layout_change() -> bool {
    ALLOW_LAYOUT_CHANGE_SETTING.get()
}

/// Reserves the `snowflake_id.` prefix once the real settings exist: a
/// misspelled name in a configuration file (`snowflake_id.sequence_bit`) is
/// reported with a WARNING at start and at each reload instead of being kept
/// silently as a placeholder while the default applies; in `PGOPTIONS` it is
/// a FATAL error at connect, and `SET snowflake_id.anything` for an unknown
/// name fails.
pub fn reserve_prefix() {
    // SAFETY: called from _PG_init after the settings are defined.
    unsafe { pg_sys::MarkGUCPrefixReserved(c"snowflake_id".as_ptr()) };
}

/// The resource manager id, read once in the postmaster at preload.
///
/// A value refused at start that is no id at all (not an integer in
/// 128..255) leaves the setting at its default, 187, and that is what is
/// registered: the records this server wrote before (under the default,
/// unless the id was changed on purpose) can still be replayed, so crash
/// recovery and standbys keep working, while
/// `snowflake_nextval()` refuses, naming the bad value, so that no new
/// record is written under an id the DBA did not choose. Registering
/// nothing instead would make every WAL record of ours unreadable and
/// stop the server at its next recovery.
pub fn wal_rmgr_id() -> u8 {
    // An id on PostgreSQL's list of taken ids, refused by the check hook, is
    // still the one this server's earlier WAL was written under (0.2.0
    // accepted it): registered as written so that WAL replays, while IDs are
    // refused until it is changed. Only a value that is no id at all
    // (not an integer in 128..255) falls back to the default.
    let written = START
        .get()
        .and_then(|s| s.written[index(WAL_RMGR_ID)].as_ref())
        .and_then(|w| w.text.trim().parse::<i32>().ok())
        .filter(|id| (128..=255).contains(id));
    let id = written.unwrap_or_else(|| WAL_RMGR_ID_SETTING.get());
    u8::try_from(id).unwrap_or(DEFAULT_WAL_RMGR_ID as u8)
}

/// Where the value of `name` came from at start, if anywhere.
fn origin(name: &str) -> Option<&'static Origin> {
    START.get().and_then(|s| s.written[index(name)].as_ref()).map(|w| &w.origin)
}

/// Where a DBA fixes `names`, as the end of a hint sentence: the file the
/// (first set) value came from, with ALTER SYSTEM for postgresql.auto.conf,
/// which is written by it and not meant to be edited by hand.
pub fn fix_phrase(names: &[&str]) -> String {
    let then =
        if names == [MAX_DRIFT] { "reload the configuration (SELECT pg_reload_conf())" } else { "restart the server" };
    let found = names.iter().find_map(|n| origin(n).map(|o| (*n, o)));
    match found {
        Some((name, Origin { file: Some(file), .. })) if file.ends_with("postgresql.auto.conf") => format!(
            " with ALTER SYSTEM SET {name} = ... or ALTER SYSTEM RESET {name} (the value is in {file}, which ALTER SYSTEM writes) and {then}"
        ),
        Some((_, Origin { file: Some(file), line, .. })) => format!(" in {file} (line {line}) and {then}"),
        Some((_, Origin { source, .. })) if *source == pg_sys::GucSource::PGC_S_ARGV => {
            format!(" on the server's command line (postgres -c) and {then}")
        }
        _ => format!(" in postgresql.conf (or with ALTER SYSTEM SET) and {then}"),
    }
}

fn text(setting: &GucSetting<Option<CString>>) -> Option<String> {
    setting.get().map(|s| s.to_string_lossy().into_owned())
}

/// The text written for `name` at start, if any.
pub fn written(name: &str) -> Option<String> {
    START.get().and_then(|s| s.written[index(name)].as_ref()).map(|w| w.text.clone())
}

/// Why the value written for `name` at start was refused, if it was.
pub fn refused(name: &str) -> Option<Fault> {
    START.get().and_then(|s| s.refused[index(name)].clone())
}

/// The values in force (a refused one is at its default).
pub fn worker_id_text() -> Option<String> {
    text(&WORKER_ID_SETTING)
}

pub fn worker_bits() -> i32 {
    WORKER_BITS_SETTING.get()
}

pub fn sequence_bits() -> i32 {
    SEQUENCE_BITS_SETTING.get()
}

pub fn epoch_text() -> Option<String> {
    text(&EPOCH_SETTING)
}

/// Whether `max_drift` is refused now (see [`MAX_DRIFT_REFUSED`]).
pub fn max_drift_refused() -> bool {
    MAX_DRIFT_REFUSED.load(Ordering::Relaxed)
}

/// Read on every call: it may change on reload. Read from the variable
/// PostgreSQL assigns, without `GucSetting::get`'s check that this is the
/// thread that loaded the library (a thread-local lookup per ID): a backend
/// runs our code on its one thread only.
#[inline]
pub fn max_drift_ms() -> i64 {
    // pgrx's own read checks the thread first (11 instructions per ID); a
    // debug build keeps that check, so a thread of ours would be caught.
    #[cfg(debug_assertions)]
    pgrx::pg_sys::submodules::thread_check::check_active_thread();
    // SAFETY: the setting's own storage, registered with PostgreSQL and
    // written by it only on this thread (at a reload, between statements).
    unsafe { *MAX_DRIFT_SETTING.as_ptr() }.into()
}
