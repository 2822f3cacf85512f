//! The Citus cluster check's setting: how often a server with Citus
//! preloaded checks, as coordinator, that its nodes' worker ids and layouts
//! cannot make equal IDs (`worker/cluster_watch.rs`).

use std::time::Duration;

use pgrx::{GucContext, GucFlags, GucRegistry, GucSetting};

static INTERVAL_SETTING: GucSetting<i32> = GucSetting::<i32>::new(10_000);

pub fn define() {
    GucRegistry::define_int_guc(
        c"snowflake_id.cluster_check_interval",
        c"How often a Citus coordinator checks every node's worker id and layout (0: never).",
        c"With Citus preloaded, a background worker runs snowflake_cluster_check() in each database that has Citus and snowflake_id, on the coordinator, and logs a WARNING for each node with a problem.",
        &INTERVAL_SETTING,
        0,
        86_400_000,
        GucContext::Sighup,
        GucFlags::UNIT_MS,
    );
}

/// The interval in force, `None` when the check is off.
pub fn interval() -> Option<Duration> {
    u64::try_from(INTERVAL_SETTING.get()).ok().filter(|ms| *ms > 0).map(Duration::from_millis)
}
