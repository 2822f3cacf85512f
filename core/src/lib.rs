//! The part of snowflake_id that needs no PostgreSQL: the ID layout, the
//! epoch setting, the next-ID state machine, the durable mark's format and
//! the registry's lease rule.
//! Everything here is plain data and pure functions, unit-tested with
//! synthetic clocks; the extension crate wraps it in GUCs, shared memory and
//! SQL functions.

pub mod epoch;
mod error;
pub mod generator;
pub mod id_text;
pub mod layout;
pub mod lease;
pub mod logical_guard;
pub mod mark_record;
pub mod minors;
pub mod past_instants;
pub mod preload;
pub mod quote;
pub mod state_file;
mod utc;

pub use error::{Error, StoredLayout};
pub use generator::run::Run;
pub use generator::{Clocks, Counters, Decision, GeneratorState, Policy, Step};
pub use layout::{Layout, Parts};
