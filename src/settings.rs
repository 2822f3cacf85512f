//! The `snowflake_id.*` settings.
//!
//! They are checked the way PostgreSQL checks its own: `worker_bits` and
//! `sequence_bits` are integer settings with their range (0 to 22, shown in
//! `pg_settings.min_val`/`max_val`), and check hooks (`check.rs`) refuse a
//! bad `worker_id`, `epoch` or `wal_rmgr_id` when `ALTER SYSTEM` writes it
//! or a reload reads it. What a hook accepts is kept as written.
//!
//! At start PostgreSQL would answer a bad value from the configuration
//! files with a WARNING and then quietly use the default, which for
//! `worker_bits` would mean IDs in the wrong layout. So the text written is
//! read before each setting is defined (`pg::guc_origin`, in `define.rs`) and checked again
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

mod check;
pub mod citus;
mod define;
mod error;
pub mod names;
pub mod registry;

use std::sync::OnceLock;

use snowflake_id_core::{epoch, Error, Layout};

pub use define::{allow_layout_change, max_drift_ms, max_drift_refused, register, reserve_prefix, wal_rmgr_id};
pub use error::{lines, raise_setting, setting_error_code_and_hint, setting_refusal, Fault, SettingError};
use names::{index, EPOCH, MAX_DRIFT, SEQUENCE_BITS, WAL_RMGR_ID, WORKER_BITS, WORKER_ID};

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
/// while the server runs (`max_drift` aside, see `define::max_drift_refused`).
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

impl Settings {
    fn read() -> Settings {
        let refused = |name: &'static str| {
            let fault = define::refused(name)?;
            Some(SettingError {
                fault,
                setting: name,
                shown: shown(name, &define::written(name).unwrap_or_default()),
                fix: define::fix_phrase(&[name]),
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
        let worker_id_text = value(WORKER_ID, define::worker_id_text());
        let worker_bits = value(WORKER_BITS, Some(define::worker_bits().to_string()));
        let sequence_bits = value(SEQUENCE_BITS, Some(define::sequence_bits().to_string()));
        let epoch_text = value(EPOCH, define::epoch_text());
        let max_drift = refused(MAX_DRIFT);
        let wal_rmgr_id = refused(WAL_RMGR_ID);

        let worker_id = worker_id_text.map(|t| check::worker_id(t.as_deref().unwrap_or_default()));
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
                fix: define::fix_phrase(&[WORKER_BITS, SEQUENCE_BITS]),
            })),
            _ => None,
        };
        if let Some(Err(e)) = &layout {
            errors.push(e.clone());
        }
        let worker_error = |error| SettingError {
            fault: Fault::Core(error),
            setting: WORKER_ID,
            shown: shown(WORKER_ID, &define::worker_id_text().unwrap_or_default()),
            fix: define::fix_phrase(&[WORKER_ID, WORKER_BITS]),
        };
        match (&worker_id, &layout) {
            // Not readable: listed above.
            (None, _) | (Some(Err(_)), _) => {}
            // Unset or `auto`: the registry's to give, if there is one.
            (Some(Ok(None)), _) if registry::used() => {}
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
                    e.fix = define::fix_phrase(&[WORKER_ID, WORKER_BITS]);
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
        if define::max_drift_refused() {
            all.extend(self.max_drift.clone());
        }
        all.sort_by_key(|e| index(e.setting));
        all
    }

    /// The layout and worker id to issue IDs with, or every reason not to.
    pub fn for_ids(&self) -> Result<(Layout, i64), Vec<SettingError>> {
        match (&self.layout, &self.worker_id) {
            (Ok(l), Ok(w)) if !define::max_drift_refused() => Ok((*l, *w)),
            _ => Err(self.errors()),
        }
    }

    /// The layout to issue IDs with when the worker id comes from a
    /// registry (unset or `auto`, or a number to claim), or every reason not to.
    /// Read for every ID: it answers from what was read at start and the
    /// one flag a reload may set, as [`Self::for_ids`] does; the list of
    /// problems (a copy, sorted) is made only when there is one to report.
    pub fn for_registry(&self) -> Result<Layout, Vec<SettingError>> {
        let max_drift_refused = || self.max_drift.is_some() && define::max_drift_refused();
        match &self.layout {
            Ok(l) if self.errors.is_empty() && !max_drift_refused() => Ok(*l),
            _ => Err(self.errors()),
        }
    }

    /// What in the settings stops IDs being issued, in the words of the
    /// error `snowflake_nextval()` raises; `None` when they are usable now.
    pub fn problem(&self, now_ms: i64) -> Option<String> {
        let layout = match registry::used() {
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
