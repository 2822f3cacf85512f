//! What a start resumes from: the newest mark (the state file's, or one
//! replayed from WAL that is later), and the registry lease stored with it.
//! Nothing here changes shared state.

use snowflake_id_core::state_file::{resume_clocks, resume_floor, RegistryLease, Stored};
use snowflake_id_core::{GeneratorState, Layout, StoredLayout};

use crate::mark::file::{self, ReadError};
use crate::pg::recovery::current_timeline;
use crate::pg::report::Refusal;
use crate::refusal::core_refusal;
use crate::{settings, shmem};

/// The generator a start at `now_ms` would resume, read from the state file
/// and the replayed mark; nothing is changed.
pub fn resumed(layout: &Layout, worker_id: i64, now_ms: i64) -> Result<GeneratorState, ReadError> {
    layout.check_clock(now_ms).map_err(ReadError::Invalid)?;
    let stored = stored_mark()?;
    let now = now_ms - layout.epoch_ms();
    let floor = resume_floor(stored.as_ref(), layout, worker_id, now, settings::allow_layout_change())
        .map_err(ReadError::Invalid)?;
    Ok(GeneratorState::resume(layout, floor, resume_clocks(stored.as_ref(), layout), now))
}

/// The newest mark: the state file's, or one replayed from WAL that is later.
fn stored_mark() -> Result<Option<Stored>, ReadError> {
    Ok(Stored::later(file::read()?, shmem::lock().replayed))
}

/// The registry lease on disk, with its worker id, if it is of this layout.
/// One held on another timeline (the old primary's, replayed here before a
/// promotion) is for asking the registry to hand it over, never for issuing.
pub fn stored_lease(layout: &Layout) -> Option<(i64, RegistryLease)> {
    let stored = stored_mark().ok().flatten()?;
    (stored.layout.layout() == *layout).then_some(())?;
    stored.registry.map(|lease| (stored.layout.worker_id, lease))
}

/// The lease on disk that this very server holds (same timeline, not
/// released at a clean stop): a restart within it goes on without the registry.
pub fn own_stored_lease(layout: &Layout) -> Option<(i64, RegistryLease)> {
    stored_lease(layout).filter(|(_, lease)| snowflake_id_core::lease::resumes_own(lease, current_timeline()))
}

/// The tick of the last ID issued since start, if any.
pub fn last_tick() -> Option<i64> {
    let shift = settings::Settings::get().layout.as_ref().ok()?.sequence_bits();
    let last = shmem::lock().generator?.last_counter();
    Some(last >> shift).filter(|t| *t >= 0)
}

pub fn read_refusal(e: ReadError) -> Refusal {
    match e {
        ReadError::Invalid(e) => core_refusal(&e),
        ReadError::Io(e) => file::read_failure_refusal(&e),
    }
}

pub fn stored_layout(layout: &Layout, worker_id: i64) -> StoredLayout {
    StoredLayout {
        worker_bits: layout.worker_bits(),
        sequence_bits: layout.sequence_bits(),
        epoch_ms: layout.epoch_ms(),
        worker_id,
    }
}
