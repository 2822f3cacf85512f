//! The waits a process shows in `pg_stat_activity`, as a DBA's monitoring
//! sees them (tests/monitoring.rs, tests/barriers.rs), and waits on events
//! seen there instead of fixed sleeps (tests/past_instants.rs).

use std::thread;
use std::time::{Duration, Instant};

use super::{describe, pg_major, Cluster};

/// Polls `ok` every 100 ms until it holds; fails naming `what` after `limit`.
pub fn wait_until(what: &str, limit: Duration, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        thread::sleep(Duration::from_millis(100));
    }
}

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

/// Waits until a commit on `cluster` waits for synchronous standbys, as the
/// generator's claims then do: both go by the checkpointer's reading of
/// `synchronous_standby_names`, which follows a reload some time after a new
/// session sees the setting (a fixed sleep only guessed it had). The probe:
/// a commit in a session of its own, seen waiting in `pg_stat_activity`
/// (`IPC`/`SyncRep`, on every major), then cancelled (it has committed
/// locally, with a WARNING). Fails after 60 s (a WAL flush on a busy
/// machine has taken 130 s here: the message says what the probe was doing).
pub fn wait_until_commits_wait_for_standbys(cluster: &Cluster) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut monitor = cluster.connect();
    let mut probes = 0;
    loop {
        probes += 1;
        let mut probe = cluster.connect();
        let pid: i32 = probe.query_one("SELECT pg_backend_pid()", &[]).expect("pg_backend_pid()").get(0);
        // A transactional message: WAL written under an xid, so its commit
        // waits for the standbys (txid_current() alone writes no WAL and its
        // commit never waits).
        // The session comes back with the result, so that it is still there
        // for pg_stat_activity while the thread ends.
        let commit = thread::spawn(move || {
            let done = probe
                .batch_execute("SELECT pg_logical_emit_message(true, 'snowflake_id_test', 'probe')")
                .map_err(|e| describe(&e));
            (done, probe)
        });
        while !commit.is_finished() {
            let waiting = monitor
                .query_opt("SELECT wait_event = 'SyncRep' FROM pg_stat_activity WHERE pid = $1", &[&pid])
                .unwrap_or_else(|e| panic!("pg_stat_activity: {}", describe(&e)))
                .and_then(|row| row.get::<_, Option<bool>>(0))
                .unwrap_or(false);
            if waiting {
                monitor.execute("SELECT pg_cancel_backend($1)", &[&pid]).expect("pg_cancel_backend");
                let (done, _) = commit.join().expect("the probe's thread");
                assert!(done.is_ok(), "the cancelled commit wait failed instead of warning: {done:?}");
                return;
            }
            if Instant::now() >= deadline {
                let seen = monitor
                    .query_opt(
                        "SELECT concat_ws(' ', state, wait_event_type, wait_event, query) FROM pg_stat_activity \
                         WHERE pid = $1",
                        &[&pid],
                    )
                    .ok()
                    .flatten()
                    .map(|row| row.get::<_, Option<String>>(0));
                panic!("a commit on port {} neither waited for standbys nor ended in 60 s: {seen:?}", cluster.port);
            }
            thread::sleep(Duration::from_millis(10));
        }
        // It committed without waiting: not published yet.
        commit.join().expect("the probe's thread").0.expect("the probe's commit");
        assert!(
            Instant::now() < deadline,
            "commits on port {} still do not wait for standbys 60 s after synchronous_standby_names was set \
             ({probes} probes)\n{}",
            cluster.port,
            cluster.log()
        );
        thread::sleep(Duration::from_millis(20));
    }
}
