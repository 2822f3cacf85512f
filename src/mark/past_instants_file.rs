//! `snowflake_id.history` in the data directory (the history file): the
//! level map of the history slots, written before the WAL record of each
//! claim and rewritten by redo, the way the state file is for the mark (see
//! `file.rs`). The file keeps its name: data directories and their backups
//! carry it, and the docs tell DBAs to copy it.

use std::fs;
use std::io;

use pgrx::{PgLogLevel, PgSqlErrorCode};
use snowflake_id_core::past_instants::{history_slots, Claimed, LevelMap, StoredMap, FILE_NAME};

use super::file::{self, WriteError};
use crate::refusal::raise_io;
use crate::shmem;
use crate::shmem::past_instants::MAX_INTERVALS;

/// The stored map, `None` when no claim was ever made here; a file that
/// cannot be read or understood is an error: a map lost is slots reused.
pub fn read() -> Result<Option<StoredMap>, String> {
    let path = file::data_dir().join(FILE_NAME);
    match fs::read_to_string(&path) {
        Ok(text) => StoredMap::parse(&text).map(Some).map_err(|e| e.to_string()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("could not read \"{}\": {e}", path.display())),
    }
}

pub fn write(stored: &StoredMap) -> Result<(), WriteError> {
    file::replace_durably(FILE_NAME, &stored.render())
}

/// Redo of a claim (crash recovery, a standby's startup process): the file
/// keeps what it had, raised to the claim's level over its interval; the
/// copy in shared memory is dropped so that the next claim reads the file.
/// A file that cannot be read or written stops recovery, as a data file would.
pub fn replay(claimed: &Claimed) {
    let mut shared = shmem::past_instants::lock();
    let (on_disk, mut map) = match read() {
        Ok(stored) => (stored.clone(), StoredMap::for_layout(stored.as_ref(), claimed.layout)),
        Err(e) => {
            // What the damaged file said is lost, and with it which slots
            // were used: take them all as used (no past-instant ID of this
            // worker id until the file is restored), never a reuse.
            crate::pg::report::emit(
                PgLogLevel::WARNING,
                PgSqlErrorCode::ERRCODE_DATA_CORRUPTED,
                format!(
                    "snowflake_id: {e}; taking every history slot of worker id {} as used",
                    claimed.layout.worker_id
                ),
                Some(RESTORE_HINT.into()),
                None,
            );
            (None, LevelMap::from_parts(history_slots(&claimed.layout.layout()), vec![]))
        }
    };
    map.raise(claimed.from, claimed.to, claimed.level);
    map.coarsen(MAX_INTERVALS);
    let stored = StoredMap { layout: claimed.layout, map };
    if on_disk.as_ref() != Some(&stored) {
        write(&stored).unwrap_or_else(|e| raise_io(e.to_string()));
    }
    shared.loaded = false;
}

/// What to do about a damaged or lost history file. Not "restore any
/// backup": a copy older than the last claim makes its slots look free.
const RESTORE_HINT: &str = "Past-instant IDs of this worker id are refused until the file is replaced by a copy made \
     after the last snowflake_nextval_at() call (an older copy lets used history slots be used again); with a worker \
     id leased from a registry, remove the file instead: the registry's record of the claims takes its place.";

/// The ERROR for a history file that cannot be used. Live IDs are not
/// affected: they never take a history slot.
pub fn raise_unreadable(e: String) -> ! {
    crate::pg::report::raise(
        PgSqlErrorCode::ERRCODE_IO_ERROR,
        format!("snowflake_id: {e}"),
        Some("snowflake_nextval() is not affected.".into()),
        Some(RESTORE_HINT.into()),
    )
}
