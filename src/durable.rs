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
use std::path::PathBuf;

use snowflake_id_core::state_file::Stored;
use snowflake_id_core::Error;

pub const FILE_NAME: &str = "snowflake_id.state";

fn data_dir() -> PathBuf {
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

/// The stored mark, or `None` when the generator never ran in this cluster.
pub fn read() -> Result<Option<Stored>, ReadError> {
    match fs::read_to_string(path()) {
        Ok(text) => Stored::parse(&text).map(Some).map_err(ReadError::Invalid),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ReadError::Io(e)),
    }
}

/// Replaces the state file durably. Called with the state LWLock held, never
/// with the spinlock.
pub fn write(stored: &Stored) -> io::Result<()> {
    let dir = data_dir();
    let tmp = dir.join(format!("{FILE_NAME}.tmp"));
    {
        let mut f = File::create(&tmp)?;
        f.write_all(stored.render().as_bytes())?;
        f.sync_all()?;
    }
    fs::rename(&tmp, dir.join(FILE_NAME))?;
    File::open(&dir)?.sync_all()
}
