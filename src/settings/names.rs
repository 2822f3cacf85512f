//! The settings' names, the order their problems are listed in, and the
//! defaults other layers need to know.

pub const WORKER_ID: &str = "snowflake_id.worker_id";
pub const WORKER_BITS: &str = "snowflake_id.worker_bits";
pub const SEQUENCE_BITS: &str = "snowflake_id.sequence_bits";
pub const EPOCH: &str = "snowflake_id.epoch";
pub const ALLOW_LAYOUT_CHANGE: &str = "snowflake_id.allow_layout_change";
pub const MAX_DRIFT: &str = "snowflake_id.max_drift";
pub const WAL_RMGR_ID: &str = "snowflake_id.wal_rmgr_id";
pub const REGISTRY: &str = "snowflake_id.registry";

/// Bursts may run the logical clock this far (ms) ahead of the wall clock
/// before callers wait: finite by default, so that no role that may draw IDs
/// can push every later ID's decoded time arbitrarily far into the future.
pub const DEFAULT_MAX_DRIFT_MS: i32 = 1000;

/// Not on PostgreSQL's list of taken custom resource manager ids (128-140
/// and 241 when this was chosen); a setting so that a clash can be resolved.
pub const DEFAULT_WAL_RMGR_ID: i32 = 187;

/// The settings in the order their problems are listed.
pub const NAMES: [&str; 6] = [WORKER_ID, WORKER_BITS, SEQUENCE_BITS, EPOCH, MAX_DRIFT, WAL_RMGR_ID];

/// Where `name` is in [`NAMES`].
pub fn index(name: &str) -> usize {
    NAMES.iter().position(|n| *n == name).unwrap_or(0)
}
