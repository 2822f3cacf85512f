//! The SQL surface: the functions application developers call, the status
//! view DBAs watch, the entry points older versions' SQL still names, and
//! the planner hook that keeps decoding in FROM inlined.

pub mod cluster;
pub mod compat;
pub mod functions;
pub mod id_text;
pub mod logical_guard;
pub mod planner;
pub mod status;
