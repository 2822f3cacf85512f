//! The `snowflake_id.*` settings.
//!
//! They are checked the way PostgreSQL checks its own: `worker_bits` and
//! `sequence_bits` are integer settings with their range (0 to 22, shown in
//! `pg_settings.min_val`/`max_val`), and check hooks (`guc_check`) refuse a
//! bad `worker_id`, `epoch` or `wal_rmgr_id` when `ALTER SYSTEM` writes it
//! or a reload reads it. What a hook accepts is kept as written.
//!
//! At start PostgreSQL would answer a bad value from the configuration
//! files with a WARNING and then quietly use the default, which for
//! `worker_bits` would mean IDs in the wrong layout. So the text written is
//! read before each setting is defined (`guc_origin`) and checked again
//! after: every bad value, and every combination that does not fit (worker
//! id and worker bits, the sum of the bits), is listed at start, each with
//! the file it came from, and `snowflake_nextval()` refuses, naming all of
//! them, until they are fixed; a bad value never becomes the default in
//! silence.
//!
//! `worker_id` stays a string: it has no default (unset means "refuse"),
//! and an integer setting would need a made-up one that `SHOW` would show
//! as if it were this server's id.
//!
//! The layout settings are `PGC_POSTMASTER`: a layout that changed while the
//! server runs would break the ordering of IDs and the decoding of stored
//! ones, so they are read at start, shown by `SHOW`, and `SET` is refused
//! for everybody. `max_drift` does not touch the layout and can be changed
//! with a reload.

use std::ffi::CString;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use pgrx::{pg_sys, GucContext, GucFlags, GucRegistry, GucSetting};
use snowflake_id_core::{epoch, Error, Layout};

use crate::guc_check;
use crate::guc_origin::{self, Origin, Refusal, Written};

pub const WORKER_ID: &str = "snowflake_id.worker_id";
pub const WORKER_BITS: &str = "snowflake_id.worker_bits";
pub const SEQUENCE_BITS: &str = "snowflake_id.sequence_bits";
pub const EPOCH: &str = "snowflake_id.epoch";
pub const ALLOW_LAYOUT_CHANGE: &str = "snowflake_id.allow_layout_change";

static WORKER_ID_SETTING: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(None);
static WORKER_BITS_SETTING: GucSetting<i32> = GucSetting::<i32>::new(10);
static SEQUENCE_BITS_SETTING: GucSetting<i32> = GucSetting::<i32>::new(12);
static EPOCH_SETTING: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(Some(c"2025-01-01 00:00:00+00"));
static MAX_DRIFT_SETTING: GucSetting<i32> = GucSetting::<i32>::new(DEFAULT_MAX_DRIFT_MS);
static WAL_RMGR_ID_SETTING: GucSetting<i32> = GucSetting::<i32>::new(DEFAULT_WAL_RMGR_ID);
static ALLOW_LAYOUT_CHANGE_SETTING: GucSetting<bool> = GucSetting::<bool>::new(false);

pub const MAX_DRIFT: &str = "snowflake_id.max_drift";
pub const WAL_RMGR_ID: &str = "snowflake_id.wal_rmgr_id";

/// Bursts may run the logical clock this far (ms) ahead of the wall clock
/// before callers wait: finite by default, so that no role that may draw IDs
/// can push every later ID's decoded time arbitrarily far into the future.
pub const DEFAULT_MAX_DRIFT_MS: i32 = 1000;

/// Not on PostgreSQL's list of taken custom resource manager ids (128-140
/// and 241 when this was chosen); a setting so that a clash can be resolved.
pub const DEFAULT_WAL_RMGR_ID: i32 = 187;

/// The settings in the order their problems are listed.
const NAMES: [&str; 6] = [WORKER_ID, WORKER_BITS, SEQUENCE_BITS, EPOCH, MAX_DRIFT, WAL_RMGR_ID];

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

fn index(name: &str) -> usize {
    NAMES.iter().position(|n| *n == name).unwrap_or(0)
}

fn cname(name: &'static str) -> CString {
    CString::new(name).unwrap_or_default()
}

/// Defines the settings. PostgreSQL allows `PGC_POSTMASTER` settings only
/// while preload libraries load (later it is a FATAL error), so a library
/// loaded by `CREATE EXTENSION` alone defines them as `PGC_SIGHUP`: still
/// closed to `SET`, and used only for decoding since there is no generator.
pub fn register(preloaded: bool) {
    let written = NAMES.map(|name| guc_origin::placeholder(&cname(name)));
    let layout_context = if preloaded { GucContext::Postmaster } else { GucContext::Sighup };
    guc_check::defining(true);
    // SAFETY: the hooks are #[pg_guard] functions with the signatures PostgreSQL calls.
    unsafe {
        GucRegistry::define_string_guc_with_hooks(
            c"snowflake_id.worker_id",
            c"This server's worker id, unique among the servers that share IDs.",
            c"An integer from 0 to 2^worker_bits - 1. No default: snowflake_nextval() refuses to run until it is set.",
            &WORKER_ID_SETTING,
            layout_context,
            GucFlags::default(),
            Some(guc_check::check_worker_id),
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
            Some(guc_check::check_epoch),
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
                Some(guc_check::check_wal_rmgr_id),
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
    guc_check::defining(false);
    let refused = std::array::from_fn(|i| {
        let name = NAMES[i];
        // wal_rmgr_id exists only with the preload.
        written[i].as_ref().filter(|_| preloaded || name != WAL_RMGR_ID).and_then(|w| refusal(name, &w.text))
    });
    MAX_DRIFT_REFUSED.store(refused[index(MAX_DRIFT)].is_some(), Ordering::Relaxed);
    let _ = START.set(Start { written, refused });
}

/// Why the value written for `name` cannot be used, in the words of the
/// check PostgreSQL applied when the library loaded: our parsers for the
/// string settings, PostgreSQL's own for the integers.
fn refusal(name: &'static str, text: &str) -> Option<Fault> {
    match name {
        WORKER_ID => guc_check::worker_id(text).err().map(Fault::Core),
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

/// Why a value cannot be used.
#[derive(Debug, Clone)]
pub enum Fault {
    /// Our own check (a string setting, or settings that do not fit together).
    Core(Error),
    /// PostgreSQL's check of an integer setting, in its words.
    Refused(Refusal),
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

fn shown(name: &str, value: &str) -> String {
    format!("{name} = '{value}'")
}

/// Each layout value as far as it could be read, on its own: `None` only
/// for a value that is bad in itself (or, for the worker id, unset).
#[derive(Debug, Clone, Copy, Default)]
pub struct Values {
    pub worker_id: Option<i64>,
    pub worker_bits: Option<i64>,
    pub sequence_bits: Option<i64>,
    pub epoch_ms: Option<i64>,
}

/// The settings as this backend read them once: they cannot change
/// while the server runs (`max_drift` aside, see `MAX_DRIFT_REFUSED`).
#[derive(Debug, Clone)]
pub struct Settings {
    /// The layout, or every setting problem when it cannot be built.
    pub layout: Result<Layout, Vec<SettingError>>,
    /// The worker id, or every setting problem when there is any.
    pub worker_id: Result<i64, Vec<SettingError>>,
    pub values: Values,
    /// Every problem known at start but a refused `max_drift`.
    errors: Vec<SettingError>,
    max_drift: Option<SettingError>,
}

fn text(setting: &GucSetting<Option<CString>>) -> Option<String> {
    setting.get().map(|s| s.to_string_lossy().into_owned())
}

impl Settings {
    fn read() -> Settings {
        let start = START.get();
        let written = |name: &str| start.and_then(|s| s.written[index(name)].as_ref()).map(|w| w.text.clone());
        let refused = |name: &'static str| {
            let fault = start.and_then(|s| s.refused[index(name)].clone())?;
            Some(SettingError {
                fault,
                setting: name,
                shown: shown(name, &written(name).unwrap_or_default()),
                fix: fix_phrase(&[name]),
            })
        };
        let mut errors: Vec<SettingError> = Vec::new();
        let mut value = |name: &'static str, current: Option<String>| match refused(name) {
            Some(e) => {
                errors.push(e);
                None
            }
            None => Some(current),
        };
        // What is in force is what was written, or the default: a refused
        // value is listed instead.
        let worker_id_text = value(WORKER_ID, text(&WORKER_ID_SETTING));
        let worker_bits = value(WORKER_BITS, Some(WORKER_BITS_SETTING.get().to_string()));
        let sequence_bits = value(SEQUENCE_BITS, Some(SEQUENCE_BITS_SETTING.get().to_string()));
        let epoch_text = value(EPOCH, text(&EPOCH_SETTING));
        let max_drift = refused(MAX_DRIFT);
        let wal_rmgr_id = refused(WAL_RMGR_ID);

        let worker_id = worker_id_text.map(|t| guc_check::worker_id(t.as_deref().unwrap_or_default()));
        let values = Values {
            worker_id: worker_id.clone().and_then(Result::ok).flatten(),
            worker_bits: worker_bits.flatten().and_then(|t| t.parse().ok()),
            sequence_bits: sequence_bits.flatten().and_then(|t| t.parse().ok()),
            epoch_ms: epoch_text.flatten().and_then(|t| epoch::parse_epoch(&t).ok()),
        };
        let layout = match (values.worker_bits, values.sequence_bits, values.epoch_ms) {
            (Some(wb), Some(sb), Some(ms)) => Some(Layout::new(wb, sb, ms).map_err(|error| SettingError {
                fault: Fault::Core(error),
                setting: WORKER_BITS,
                shown: format!("{}, {}", shown(WORKER_BITS, &wb.to_string()), shown(SEQUENCE_BITS, &sb.to_string())),
                fix: fix_phrase(&[WORKER_BITS, SEQUENCE_BITS]),
            })),
            _ => None,
        };
        if let Some(Err(e)) = &layout {
            errors.push(e.clone());
        }
        let worker_error = |error| SettingError {
            fault: Fault::Core(error),
            setting: WORKER_ID,
            shown: shown(WORKER_ID, &text(&WORKER_ID_SETTING).unwrap_or_default()),
            fix: fix_phrase(&[WORKER_ID, WORKER_BITS]),
        };
        match (&worker_id, &layout) {
            // Not readable: listed above.
            (None, _) | (Some(Err(_)), _) => {}
            // Unset or `auto`: the registry's to give, if there is one.
            (Some(Ok(None)), _) if crate::registry::used() => {}
            (Some(Ok(id)), Some(Ok(l))) => {
                if let Err(error) = l.check_worker(*id) {
                    errors.push(worker_error(error));
                }
            }
            (Some(Ok(None)), _) => errors.push(worker_error(Error::WorkerIdUnset)),
            // No layout to check the id against: its own problem is listed.
            (Some(Ok(Some(_))), _) => {}
        }
        // A worker id refused on its own (negative, or too big for any layout)
        // is told the range of the layout in force, as one that only does not
        // fit the worker bits is.
        if let Some(Ok(l)) = &layout {
            for e in errors.iter_mut().filter(|e| e.setting == WORKER_ID) {
                if let Fault::Core(Error::WorkerIdOutOfRange { max, .. }) = &mut e.fault {
                    *max = l.max_worker_id();
                    e.fix = fix_phrase(&[WORKER_ID, WORKER_BITS]);
                }
            }
        }
        errors.extend(wal_rmgr_id);
        // Problems in the order of the settings, whatever found them.
        errors.sort_by_key(|e| index(e.setting));
        let layout = match layout {
            Some(Ok(l)) => Ok(l),
            _ => Err(errors.clone()),
        };
        let worker_id = match values.worker_id {
            Some(id) if errors.is_empty() => Ok(id),
            _ => Err(errors.clone()),
        };
        Settings { layout, worker_id, values, errors, max_drift }
    }

    /// Every setting problem now: those found at start, and a refused
    /// `max_drift` until a reload replaces it.
    pub fn errors(&self) -> Vec<SettingError> {
        let mut all = self.errors.clone();
        if MAX_DRIFT_REFUSED.load(Ordering::Relaxed) {
            all.extend(self.max_drift.clone());
        }
        all.sort_by_key(|e| index(e.setting));
        all
    }

    /// The layout and worker id to issue IDs with, or every reason not to.
    pub fn for_ids(&self) -> Result<(Layout, i64), Vec<SettingError>> {
        match (&self.layout, &self.worker_id) {
            (Ok(l), Ok(w)) if !MAX_DRIFT_REFUSED.load(Ordering::Relaxed) => Ok((*l, *w)),
            _ => Err(self.errors()),
        }
    }

    /// The layout to issue IDs with when the worker id comes from a
    /// registry (unset or `auto`, or a number to claim), or every reason not to.
    pub fn for_registry(&self) -> Result<Layout, Vec<SettingError>> {
        let errors = self.errors();
        match &self.layout {
            Ok(l) if errors.is_empty() => Ok(*l),
            _ => Err(errors),
        }
    }

    /// What in the settings stops IDs being issued, in the words of the
    /// error `snowflake_nextval()` raises; `None` when they are usable now.
    pub fn problem(&self, now_ms: i64) -> Option<String> {
        let layout = match crate::registry::used() {
            true => self.for_registry(),
            false => self.for_ids().map(|(layout, _)| layout),
        };
        match layout {
            Err(errors) => Some(lines(&errors)),
            Ok(layout) => layout.check_clock(now_ms).err().map(|e| format!("snowflake_id: {e}")),
        }
    }

    /// This backend's reading of the settings. Read once: they are fixed
    /// from server start, and parsing the epoch on every call would cost.
    pub fn get() -> &'static Settings {
        static SETTINGS: OnceLock<Settings> = OnceLock::new();
        SETTINGS.get_or_init(Settings::read)
    }
}

/// Read on every call: it may change on reload.
pub fn max_drift_ms() -> i64 {
    MAX_DRIFT_SETTING.get().into()
}
