//! The state file in the data directory that makes the high-water mark
//! survive restarts and crashes.
//!
//! It is replaced, never edited: write a temporary file, fsync it, rename it
//! over the old one, fsync the directory. A crash at any point leaves either
//! the old mark or the new one, and every ID issued is at or below whichever
//! survives, because an ID is issued only after the mark covering it was made
//! durable.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use pgrx::{PgLogLevel, PgSqlErrorCode};
use snowflake_id_core::state_file::Stored;
use snowflake_id_core::Error;

use crate::pg::report::Refusal;
use crate::pg::wait_event::{self, Wait};
use crate::refusal::{io_refusal, raise_io};
use crate::shmem;

pub use snowflake_id_core::state_file::FILE_NAME;

pub fn data_dir() -> PathBuf {
    // SAFETY: DataDir is set before any backend runs SQL and never changes after.
    let dir = unsafe { std::ffi::CStr::from_ptr(pgrx::pg_sys::DataDir) };
    PathBuf::from(dir.to_string_lossy().into_owned())
}

pub fn path() -> PathBuf {
    data_dir().join(FILE_NAME)
}

/// Why the generator could not start: the file, or what it (or the clock) says.
pub enum ReadError {
    Io(io::Error),
    Invalid(Error),
}

/// Raises the ERROR for a state file that exists but cannot be read.
#[track_caller]
pub fn raise_read_failure(e: &io::Error) -> ! {
    read_failure_refusal(e).raise()
}

pub fn read_failure_refusal(e: &io::Error) -> Refusal {
    io_refusal(format!("could not read \"{}\": {e}", path().display()))
}

/// The stored mark, or `None` when the generator never ran in this cluster.
pub fn read() -> Result<Option<Stored>, ReadError> {
    match fs::read_to_string(path()) {
        Ok(text) => Stored::parse(&text).map(Some).map_err(ReadError::Invalid),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ReadError::Io(e)),
    }
}

/// A failed write of the state file, naming the step and the file it failed on
/// (often the temporary file, not the state file itself).
#[derive(Debug)]
pub struct WriteError {
    action: &'static str,
    path: PathBuf,
    source: io::Error,
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "could not {} \"{}\": {}", self.action, self.path.display(), self.source)
    }
}

/// Replaces the state file durably. Called with the state LWLock held, never
/// with the spinlock.
pub fn write(stored: &Stored) -> Result<(), WriteError> {
    replace_durably(FILE_NAME, &stored.render())
}

/// Replaces file `name` of the data directory with `text` so that a crash
/// at any point leaves the old text or the new one (see the top of this
/// file); the history file is written the same way.
pub fn replace_durably(name: &str, text: &str) -> Result<(), WriteError> {
    // The fsyncs are what a DBA would see this call wait on.
    let _wait = wait_event::report(Wait::MarkSync);
    let dir = data_dir();
    let tmp = dir.join(format!("{name}.tmp"));
    fn fail<'a>(action: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> WriteError + 'a {
        move |source| WriteError { action, path: path.to_path_buf(), source }
    }
    {
        let mut f = File::create(&tmp).map_err(fail("create", &tmp))?;
        f.write_all(text.as_bytes()).map_err(fail("write", &tmp))?;
        f.sync_all().map_err(fail("fsync", &tmp))?;
    }
    let target = dir.join(name);
    fs::rename(&tmp, &target).map_err(fail("rename the temporary file to", &target))?;
    File::open(&dir).and_then(|d| d.sync_all()).map_err(fail("fsync the directory", &dir))
}

/// Redo of a mark record (crash recovery, a standby's startup process):
/// the file and shared memory keep the later of what they had and the
/// record. Writing the file here is what lets a restartpoint or checkpoint
/// move the redo pointer past the record without losing the mark. A file
/// that cannot be written stops recovery, as a data file would.
pub fn replay(record: &Stored, lsn: u64) {
    let _io = shmem::state_io();
    let on_disk = match read() {
        Ok(stored) => stored,
        Err(ReadError::Io(e)) => raise_read_failure(&e),
        Err(ReadError::Invalid(e)) => {
            // The primary wrote its file before this record, so no mark in a
            // damaged file can be above the record except one that no ID used.
            crate::pg::report::emit(
                PgLogLevel::WARNING,
                PgSqlErrorCode::ERRCODE_DATA_CORRUPTED,
                format!("snowflake_id: {e}; replacing it with the mark replayed from WAL"),
                None,
                None,
            );
            None
        }
    };
    let newest = Stored::later(on_disk, Some(*record));
    if newest != on_disk {
        if let Some(newest) = newest {
            write(&newest).unwrap_or_else(|e| raise_io(e.to_string()));
        }
    }
    let mut shared = shmem::lock();
    shared.replayed = Stored::later(shared.replayed, Some(*record));
    shared.mark_lsn = shared.mark_lsn.max(lsn);
}
