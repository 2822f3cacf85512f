//! `snowflake_logical_peers()`: what `snowflake_cluster_check()`
//! (sql/install/cluster.sql) learns about the publishers of this database's
//! subscriptions. Whom it connects to, and with whose connection string, is
//! `service/logical_guard/peers.rs`'s rule: only a superuser's call, only strings
//! a superuser chose; every other subscription is a row saying why it was
//! not checked.

use pgrx::prelude::*;

use crate::service::logical_guard::peers;

/// One row per subscription of this database (native and pglogical's):
/// `node` names its publisher (never its connection string), `status` is
/// the publisher's `snowflake_id_status` as JSON when it answered, else
/// `trouble` says what to report instead.
#[pg_extern(volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
fn snowflake_logical_peers(
) -> TableIterator<'static, (name!(node, String), name!(status, Option<String>), name!(trouble, Option<String>))> {
    TableIterator::new(peers::peers().into_iter().map(|p| (p.node, p.status, p.trouble)))
}
