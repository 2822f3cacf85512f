//! The generator service: everything that changes the shared generator,
//! one folder per feature (docs/architecture.md, "Each feature across the
//! layers"):
//!
//! - `generator`: drawing an ID (`draw`), starting above the durable mark
//!   (`start`, from what `resume` finds), making the mark durable
//!   (`writer`), moving past an ID from elsewhere (`advance`);
//! - `registry`: the node's side of the registry lease (`lease`), and the
//!   session with the registry (`session`) the lease and past-instant
//!   claims both use;
//! - `past_instants`: an ID for a past instant (`snowflake_nextval_at`), its
//!   claims recorded in the registry under a leased worker id (`leased`);
//! - `logical_guard`: the logical replication guard, and the logical peers
//!   `snowflake_cluster_check()` asks for their status (`peers`).
//!
//! The folders are features, not layers: the generator reads the lease's
//! ceiling and the lease is made durable by the generator's writer, while
//! no module uses another that uses it back (`scripts/import_graph.py`
//! checks). The background workers and the SQL functions call in; nothing
//! here calls up to them (a wait is handed what to ask between polls as a
//! [`crate::pg::KeepGoing`]).

pub mod generator;
pub mod logical_guard;
pub mod past_instants;
pub mod registry;
