//! The waits a process shows in `pg_stat_activity`, as a DBA's monitoring
//! sees them (tests/monitoring.rs, tests/barriers.rs).

use std::thread;
use std::time::{Duration, Instant};

use super::{describe, pg_major};

/// `(wait_event_type, wait_event)` of a wait: the custom event on 17 and
/// later, PostgreSQL's own event that means the same on 15 and 16.
pub fn expected_event(custom: &str, before_17: (&str, &str)) -> (String, String) {
    if pg_major() >= 17 {
        ("Extension".into(), custom.into())
    } else {
        (before_17.0.into(), before_17.1.into())
    }
}

/// Polls `pg_stat_activity` until process `pid` shows `expected`; a wait is
/// sampled, so it is looked at every 10 ms for up to a minute.
pub fn wait_until_seen(monitor: &mut postgres::Client, pid: i32, expected: &(String, String), what: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut seen = Vec::new();
    loop {
        let row = monitor
            .query_opt(
                "SELECT coalesce(wait_event_type, '-'), coalesce(wait_event, '-') FROM pg_stat_activity WHERE pid = $1",
                &[&pid],
            )
            .unwrap_or_else(|e| panic!("pg_stat_activity: {}", describe(&e)));
        let now: Option<(String, String)> = row.map(|r| (r.get(0), r.get(1)));
        if now.as_ref() == Some(expected) {
            return;
        }
        if seen.last() != Some(&now) {
            seen.push(now);
        }
        assert!(Instant::now() < deadline, "{what}: pid {pid} never showed {expected:?}; it showed {seen:?}");
        thread::sleep(Duration::from_millis(10));
    }
}
