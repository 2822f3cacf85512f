//! The durable mark's storage: the state file in the data directory and the
//! WAL record that carries each new mark to crash recovery and standbys.
//! What a mark says and when one is due is the core's (`state_file`,
//! `mark_record`, `GeneratorState::mark_target`); writing one in the right
//! order is the generator service's (`service/generator/writer.rs`).

pub mod file;
pub mod past_instants_file;
pub mod wal;
