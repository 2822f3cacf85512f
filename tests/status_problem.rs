//! `snowflake_id_status.problem` is the truth: for every reason
//! `snowflake_nextval()` refuses, the view shows the SQLSTATE and the message
//! the call raises, read before any call has failed (except for a mark that
//! could not be written, which is known only once a write was tried). An
//! alert on `problem IS NOT NULL` catches each of these outages.

mod common;

use std::thread;
use std::time::Duration;

use common::{draw_in_order, draw_until_error, Cluster, DbError};

fn problem(cluster: &Cluster) -> Option<String> {
    cluster.connect().query_one("SELECT problem FROM snowflake_id_status", &[]).expect("the status view").get(0)
}

/// Reads `problem` first, then calls `snowflake_nextval()`: the view must have
/// said, word for word, what the call raises.
fn assert_problem_is_the_error(cluster: &Cluster, code: &str) -> DbError {
    let problem = problem(cluster);
    let e = cluster.sql_error("SELECT snowflake_nextval()");
    assert_eq!(e.code, code, "{e:?}");
    assert_eq!(problem, Some(format!("{}: {}", e.code, e.message)), "the view and the call disagree");
    // Asking again changes nothing: the view computes, it does not remember.
    assert_eq!(self::problem(cluster), problem);
    e
}

#[test]
fn a_standby_says_it_does_not_issue_ids() {
    let primary = Cluster::preloaded(&["snowflake_id.worker_id = 1"]);
    draw_in_order(&mut primary.connect(), 100);
    assert_eq!(problem(&primary), None, "a healthy primary");
    let mut standby = Cluster::standby_of(&primary, &[]);
    standby.start();
    let e = assert_problem_is_the_error(&standby, "25006");
    assert!(e.message.contains("during recovery"), "{e:?}");
}

#[test]
fn a_layout_change_refused_at_start_is_the_problem_before_any_call() {
    let mut cluster = Cluster::preloaded(&["snowflake_id.worker_id = 1"]);
    draw_in_order(&mut cluster.connect(), 100);
    cluster.stop();
    cluster.append_conf(&["snowflake_id.epoch = '2024-01-01'"]);
    cluster.start();
    let e = assert_problem_is_the_error(&cluster, "55000");
    assert!(e.message.contains("another layout would change what every stored ID decodes to"), "{e:?}");
}

#[test]
fn a_damaged_state_file_is_the_problem_before_any_call() {
    let mut cluster = Cluster::preloaded(&["snowflake_id.worker_id = 1"]);
    draw_in_order(&mut cluster.connect(), 100);
    cluster.stop();
    let state = cluster.data().join("snowflake_id.state");
    std::fs::write(&state, "version=2\nlease_until_tick=garbage\n").expect("damage the state file");
    cluster.start();
    let e = assert_problem_is_the_error(&cluster, "XX001");
    assert!(e.message.contains("state file is unreadable"), "{e:?}");
}

#[test]
fn an_unwritable_data_directory_is_the_problem_once_a_write_failed() {
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 1"]);
    let mut client = cluster.connect();
    draw_in_order(&mut client, 100);
    cluster.chmod_data("0500");
    let failed = draw_until_error(&mut client).is_some();
    let outcome = std::panic::catch_unwind(|| {
        assert!(failed, "IDs kept flowing with an unwritable data directory");
        let e = assert_problem_is_the_error(&cluster, "58030");
        assert!(e.message.contains("snowflake_id.state.tmp\""), "{e:?}");
    });
    cluster.chmod_data("0700");
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
    // Writable again: the next write succeeds and the problem is gone.
    draw_in_order(&mut client, 1_000);
    assert_eq!(problem(&cluster), None);
}

#[test]
fn an_exhausted_timestamp_field_is_the_problem_also_after_a_restart() {
    // sequence_bits = 0: one ID per millisecond, so the layout's last
    // milliseconds are used up by a few thousand IDs.
    let mut cluster = Cluster::preloaded(&[
        "snowflake_id.worker_id = 1",
        "snowflake_id.worker_bits = 22",
        "snowflake_id.sequence_bits = 0",
    ]);
    let last_tick: i64 = i64::MAX >> 22;
    // A forced move to 3000 ms before the layout's end (the typo the guard
    // on snowflake_advance_past exists for).
    cluster.sql(&format!("SELECT snowflake_advance_past({}, force => true)", (last_tick - 3000) << 22));
    let mut client = cluster.connect();
    let drawn = client.query("SELECT snowflake_nextval() FROM generate_series(1, 5000)", &[]);
    assert!(drawn.is_err(), "5000 IDs from the last 3000 ms of the layout");
    let e = assert_problem_is_the_error(&cluster, "54000");
    assert!(e.hint.contains("snowflake_advance_past() with a wrong ID"), "{e:?}");
    cluster.restart();
    assert_problem_is_the_error(&cluster, "54000");
}

/// `problem` after an unwritable data directory recovers while
/// the server is idle: the recorded write failure is cleared only by a
/// successful write, and nothing writes on an idle server (the keeper stops
/// renewing 10 s after the last ID). The keeper retries a failed write while idle,
/// so the alert clears once the disk is fixed (it kept firing before).
#[test]
fn problem_clears_once_the_data_directory_is_writable_again_without_a_call() {
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 1"]);
    let mut client = cluster.connect();
    draw_in_order(&mut client, 100);
    cluster.chmod_data("0500");
    let failed = draw_until_error(&mut client).is_some();
    let seen = problem(&cluster);
    // Idle past the keeper's activity window, then the disk recovers.
    thread::sleep(Duration::from_secs(15));
    cluster.chmod_data("0700");
    assert!(failed, "IDs kept flowing with an unwritable data directory");
    assert!(seen.as_deref().is_some_and(|p| p.starts_with("58030")), "{seen:?}");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let mut now = problem(&cluster);
    while now.is_some() && std::time::Instant::now() < deadline {
        thread::sleep(Duration::from_millis(500));
        now = problem(&cluster);
    }
    assert_eq!(now, None, "problem still reports the old write failure; snowflake_nextval() would succeed");
}
