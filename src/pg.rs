//! PostgreSQL adapters: the pieces of the server this extension leans on,
//! wrapped so that the layers above read like Rust. Nothing here knows what
//! a snowflake ID is.

pub mod clock;
pub mod guc_origin;
pub mod instance;
pub mod libpq;
pub mod recovery;
pub mod report;
pub mod spinlock;
pub mod wait_event;

/// Asked whenever a wait (for the registry, for synchronous standbys) wakes:
/// whether to go on waiting. It also answers whatever the waiting process
/// must answer meanwhile: a backend runs CHECK_FOR_INTERRUPTS (which raises
/// on a cancel), the mark keeper absorbs barriers and reloads and stops on
/// SIGTERM. Handed down by the caller, so that no lower layer calls up.
pub type KeepGoing = fn() -> bool;
