//! The background worker: the mark keeper, which renews the durable mark
//! ahead of need and, with a registry, holds the worker id's lease through
//! the registry keeper. It calls the generator service; the service never
//! calls back (the keeper hands its interrupt handling down as a callback).
//! With Citus preloaded, the cluster watch checks the cluster's worker ids
//! from the coordinator.

pub mod cluster_watch;
pub mod mark_keeper;
pub mod registry_keeper;
