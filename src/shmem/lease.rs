//! The registry lease in shared memory: what the mark keeper last learnt
//! from the registry, for the generator (its worker id and ceiling), the
//! status view, and a restart of the keeper.

use snowflake_id_core::state_file::RegistryLease;

use super::short_text::ShortText;

/// Where the lease stands, as the status view shows it.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseState {
    /// No registry is configured.
    None,
    /// Waiting for the registry to grant a worker id.
    Acquiring,
    /// Waiting for the registry to answer whether the lease on disk goes on
    /// under this start (it may be a copy's): not in force until it does.
    Confirming,
    /// A lease is held and renewed.
    Held,
    /// Another node took the worker id (or the lease was released): no ID
    /// past the ceiling, ever, under this lease.
    Lost,
    /// The ceiling is reached and the registry has not renewed it.
    Expired,
}

impl LeaseState {
    pub fn name(self) -> &'static str {
        match self {
            LeaseState::None => "none",
            LeaseState::Acquiring => "acquiring",
            LeaseState::Confirming => "confirming",
            LeaseState::Held => "held",
            LeaseState::Lost => "lost",
            LeaseState::Expired => "expired",
        }
    }
}

/// The lease in shared memory: what the keeper last learnt from the
/// registry, for the status view and for a restart of the keeper.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct RegistryShared {
    pub state: LeaseState,
    pub worker_id: i64,
    pub lease: Option<RegistryLease>,
    /// When the registry last granted or renewed it (Unix ms, our clock).
    pub renewed_unix_ms: i64,
    /// The last failure talking to the registry, until a call succeeds.
    pub error: Option<ShortText>,
    pub error_since_unix_ms: i64,
}

impl RegistryShared {
    pub const fn new() -> RegistryShared {
        RegistryShared {
            state: LeaseState::None,
            worker_id: -1,
            lease: None,
            renewed_unix_ms: 0,
            error: None,
            error_since_unix_ms: 0,
        }
    }
}
