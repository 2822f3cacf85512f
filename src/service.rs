//! The generator service: everything that changes the shared generator.
//! From the bottom: what a start resumes from (`resume`), making the mark
//! durable (`writer`), the node's side of the registry lease (`lease`),
//! starting (`start`), drawing an ID (`draw`), an ID for a past instant
//! (`past_instants`), and moving past an ID from elsewhere (`advance`). The background worker and the SQL functions call
//! in; nothing here calls up to them (a wait is handed what to ask between
//! polls as a [`writer::KeepGoing`]).

pub mod advance;
pub mod draw;
pub mod lease;
pub mod logical_guard;
pub mod logical_peers;
pub mod past_instants;
pub mod registry_session;
pub mod resume;
pub mod start;
pub mod writer;
