//! The worker id registry, the node's side: the lease (`lease`: every change
//! of it in shared memory and on disk) and the session with the registry
//! (`session`) that the registry keeper and a backend's past-instant claims
//! both call its functions through.

pub mod lease;
pub mod session;
