//! The `snowflake_id.*` settings.
//!
//! The four layout settings are strings that we parse ourselves, not integer
//! GUCs: PostgreSQL answers a bad value for an extension's integer setting in
//! `postgresql.conf` with a WARNING in the log and then quietly uses the
//! default, which for `worker_bits` would mean IDs in the wrong layout. As
//! strings every value reaches our parser, and a bad one makes
//! `snowflake_nextval()` fail loudly instead.
//!
//! They are `PGC_POSTMASTER`: a layout that changed while the server runs
//! would break the ordering of IDs and the decoding of stored ones, so they
//! are read from `postgresql.conf` at start, shown by `SHOW`, and `SET` is
//! refused for everybody. `max_drift` does not touch the layout and can be
//! changed with a reload.

use std::ffi::{CStr, CString};
use std::sync::OnceLock;

use pgrx::{GucContext, GucFlags, GucRegistry, GucSetting};
use snowflake_id_core::{epoch, Error, Layout};

pub const WORKER_ID: &str = "snowflake_id.worker_id";
pub const WORKER_BITS: &str = "snowflake_id.worker_bits";
pub const SEQUENCE_BITS: &str = "snowflake_id.sequence_bits";
pub const EPOCH: &str = "snowflake_id.epoch";
pub const ALLOW_LAYOUT_CHANGE: &str = "snowflake_id.allow_layout_change";

static WORKER_ID_SETTING: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(None);
static WORKER_BITS_SETTING: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(Some(c"10"));
static SEQUENCE_BITS_SETTING: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(Some(c"12"));
static EPOCH_SETTING: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(Some(c"2025-01-01 00:00:00+00"));
static MAX_DRIFT_SETTING: GucSetting<i32> = GucSetting::<i32>::new(DEFAULT_MAX_DRIFT_MS);
static WAL_RMGR_ID_SETTING: GucSetting<i32> = GucSetting::<i32>::new(DEFAULT_WAL_RMGR_ID);
static ALLOW_LAYOUT_CHANGE_SETTING: GucSetting<bool> = GucSetting::<bool>::new(false);

/// Bursts may run the logical clock this far (ms) ahead of the wall clock
/// before callers wait: finite by default, so that no role that may draw IDs
/// can push every later ID's decoded time arbitrarily far into the future.
pub const DEFAULT_MAX_DRIFT_MS: i32 = 1000;

/// Not on PostgreSQL's list of taken custom resource manager ids (128-140
/// and 241 when this was chosen); a setting so that a clash can be resolved.
pub const DEFAULT_WAL_RMGR_ID: i32 = 187;

/// Defines the settings. PostgreSQL allows `PGC_POSTMASTER` settings only
/// while preload libraries load (later it is a FATAL error), so a library
/// loaded by `CREATE EXTENSION` alone defines them as `PGC_SIGHUP`: still
/// closed to `SET`, and used only for decoding since there is no generator.
pub fn register(preloaded: bool) {
    let string = |name: &'static CStr, short: &'static CStr, long: &'static CStr, setting| {
        let context = if preloaded { GucContext::Postmaster } else { GucContext::Sighup };
        GucRegistry::define_string_guc(name, short, long, setting, context, GucFlags::default())
    };
    string(
        c"snowflake_id.worker_id",
        c"This server's worker id, unique among the servers that share IDs.",
        c"An integer from 0 to 2^worker_bits - 1. No default: snowflake_nextval() refuses to run until it is set.",
        &WORKER_ID_SETTING,
    );
    string(
        c"snowflake_id.worker_bits",
        c"Bits of each ID that hold the worker id.",
        c"An integer from 0 to 22; worker_bits + sequence_bits must be at most 22.",
        &WORKER_BITS_SETTING,
    );
    string(
        c"snowflake_id.sequence_bits",
        c"Bits of each ID that count IDs within one millisecond.",
        c"An integer from 0 to 22; 2^sequence_bits IDs per millisecond before the next millisecond is borrowed.",
        &SEQUENCE_BITS_SETTING,
    );
    string(
        c"snowflake_id.epoch",
        c"The instant that timestamp 0 of an ID stands for.",
        c"ISO 8601 (UTC unless an offset is given), or Unix milliseconds. Must not be in the future.",
        &EPOCH_SETTING,
    );
    GucRegistry::define_int_guc(
        c"snowflake_id.max_drift",
        c"How far bursts may push the logical clock ahead of the wall clock before callers wait.",
        c"Default 1s; 0 means never wait. Clock steps backwards do not count towards it.",
        &MAX_DRIFT_SETTING,
        0,
        i32::MAX,
        GucContext::Sighup,
        GucFlags::UNIT_MS,
    );
    if preloaded {
        GucRegistry::define_int_guc(
            c"snowflake_id.wal_rmgr_id",
            c"Id of the custom WAL resource manager that carries the durable mark.",
            c"128 to 255, unique among the extensions loaded. Must be the same on a primary and its standbys.",
            &WAL_RMGR_ID_SETTING,
            128,
            255,
            GucContext::Postmaster,
            GucFlags::default(),
        );
        GucRegistry::define_bool_guc(
            c"snowflake_id.allow_layout_change",
            c"Lets the generator start under a layout other than the one its IDs were issued under.",
            c"Off: a changed epoch or bit split is refused, since every stored ID would decode differently. Turn on for one restart to change it on purpose.",
            &ALLOW_LAYOUT_CHANGE_SETTING,
            GucContext::Postmaster,
            GucFlags::default(),
        );
    }
}

/// Whether a layout change was allowed for this start.
pub fn allow_layout_change() -> bool {
    ALLOW_LAYOUT_CHANGE_SETTING.get()
}

/// Reserves the `snowflake_id.` prefix once the real settings exist: a
/// misspelled name in postgresql.conf or PGOPTIONS (`snowflake_id.sequence_bit`)
/// is reported with a WARNING at start instead of being kept silently as a
/// placeholder while the default applies, and `SET snowflake_id.anything`
/// for an unknown name fails.
pub fn reserve_prefix() {
    // SAFETY: called from _PG_init after the settings are defined.
    unsafe { pgrx::pg_sys::MarkGUCPrefixReserved(c"snowflake_id".as_ptr()) };
}

/// The resource manager id, read once in the postmaster at preload.
pub fn wal_rmgr_id() -> u8 {
    u8::try_from(WAL_RMGR_ID_SETTING.get()).unwrap_or(DEFAULT_WAL_RMGR_ID as u8)
}

/// A setting that could not be used, with what was set for the message.
#[derive(Debug, Clone)]
pub struct SettingError {
    pub error: Error,
    /// The setting the hint should name.
    pub setting: &'static str,
    /// The offending setting(s) as written: `snowflake_id.worker_id = '7'`.
    pub shown: String,
}

fn shown(name: &str, value: &Option<String>) -> String {
    format!("{name} = '{}'", value.as_deref().unwrap_or_default())
}

/// The layout settings as this backend read them once: they cannot change
/// while the server runs.
#[derive(Debug, Clone)]
pub struct Settings {
    pub layout: Result<Layout, SettingError>,
    pub worker_id: Result<i64, SettingError>,
}

fn text(setting: &GucSetting<Option<CString>>) -> Option<String> {
    setting.get().map(|s| s.to_string_lossy().into_owned())
}

fn integer(name: &'static str, value: Option<String>) -> Result<Option<i64>, SettingError> {
    match value.as_deref().map(str::trim) {
        None | Some("") => Ok(None),
        Some(v) => v.parse::<i64>().map(Some).map_err(|_| SettingError {
            error: Error::NotAnInteger { text: v.to_string() },
            setting: name,
            shown: shown(name, &value),
        }),
    }
}

impl Settings {
    fn read() -> Settings {
        let layout = (|| {
            let wb = text(&WORKER_BITS_SETTING);
            let sb = text(&SEQUENCE_BITS_SETTING);
            let worker_bits = integer(WORKER_BITS, wb.clone())?.unwrap_or(-1);
            let sequence_bits = integer(SEQUENCE_BITS, sb.clone())?.unwrap_or(-1);
            let epoch_text = text(&EPOCH_SETTING);
            let epoch_ms = epoch::parse_epoch(epoch_text.as_deref().unwrap_or_default())
                .map_err(|error| SettingError { error, setting: EPOCH, shown: shown(EPOCH, &epoch_text) })?;
            Layout::new(worker_bits, sequence_bits, epoch_ms).map_err(|error| SettingError {
                error,
                setting: WORKER_BITS,
                shown: format!("{}, {}", shown(WORKER_BITS, &wb), shown(SEQUENCE_BITS, &sb)),
            })
        })();
        let worker_id = (|| {
            let raw = text(&WORKER_ID_SETTING);
            let id = integer(WORKER_ID, raw.clone())?;
            match &layout {
                Ok(l) => l.check_worker(id),
                Err(_) => id.ok_or(Error::WorkerIdUnset),
            }
            .map_err(|error| SettingError { error, setting: WORKER_ID, shown: shown(WORKER_ID, &raw) })
        })();
        Settings { layout, worker_id }
    }

    /// What in the settings stops IDs being issued, in the words of the
    /// error `snowflake_nextval()` raises; `None` when they are usable now.
    pub fn problem(&self, now_ms: i64) -> Option<String> {
        match (&self.layout, &self.worker_id) {
            (Err(e), _) | (_, Err(e)) => Some(format!("invalid {}: {}", e.shown, e.error)),
            (Ok(layout), Ok(_)) => layout.check_clock(now_ms).err().map(|e| format!("snowflake_id: {e}")),
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
