//! PostgreSQL adapters: the pieces of the server this extension leans on,
//! wrapped so that the layers above read like Rust. Nothing here knows what
//! a snowflake ID is.

pub mod clock;
pub mod guc_origin;
pub mod libpq;
pub mod recovery;
pub mod report;
pub mod spinlock;
pub mod wait_event;
