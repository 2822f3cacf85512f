//! What each kind of misconfiguration and bad input gets, on real servers:
//! the mission's bad-input table, row by row.

mod common;

use common::{Cluster, DbError};

fn assert_error(e: &DbError, code: &str, message_part: &str, hint_part: &str) {
    assert_eq!(e.code, code, "{e:?}");
    assert!(e.message.contains(message_part), "message {:?} lacks {message_part:?}", e.message);
    assert!(e.hint.contains(hint_part), "hint {:?} lacks {hint_part:?}", e.hint);
}

/// A preloaded server whose settings are wrong: it starts, CREATE EXTENSION
/// works, and snowflake_nextval() refuses with the given error.
fn refuses(conf: &[&str], code: &str, message_part: &str, hint_part: &str) -> Cluster {
    let cluster = Cluster::preloaded(conf);
    let e = cluster.sql_error("SELECT snowflake_nextval()");
    assert_error(&e, code, message_part, hint_part);
    // The log said so at start, before anyone asked for an ID.
    assert!(cluster.log().contains("snowflake_nextval() will refuse"), "no start-up warning in:\n{}", cluster.log());
    cluster
}

#[test]
fn not_preloaded_creates_but_refuses_with_a_hint() {
    let mut cluster = Cluster::init(&["snowflake_id.worker_id = 1"]);
    cluster.start();
    cluster.sql("CREATE EXTENSION snowflake_id");
    let e = cluster.sql_error("SELECT snowflake_nextval()");
    assert_error(&e, "55000", "shared_preload_libraries", "shared_preload_libraries");
    // Decoding needs no generator and still works.
    assert_eq!(cluster.query_i64("SELECT (snowflake_decode(4194304)).sequence::bigint"), 0);
}

#[test]
fn worker_id_unset() {
    refuses(&[], "55000", "snowflake_id.worker_id", "Set snowflake_id.worker_id");
}

#[test]
fn worker_id_out_of_range_for_worker_bits() {
    refuses(
        &["snowflake_id.worker_bits = 4", "snowflake_id.worker_id = 16"],
        "22023",
        "out of range 0..15",
        "between 0 and 15",
    );
    refuses(&["snowflake_id.worker_id = -3"], "22023", "-3", "between 0 and 1023");
}

#[test]
fn worker_id_not_a_number() {
    refuses(&["snowflake_id.worker_id = 'seven'"], "22023", "\"seven\" is not an integer", "whole number");
}

#[test]
fn bits_too_wide() {
    let c = refuses(
        &["snowflake_id.worker_id = 1", "snowflake_id.worker_bits = 12", "snowflake_id.sequence_bits = 12"],
        "22023",
        "invalid snowflake_id.worker_bits = '12', snowflake_id.sequence_bits = '12': worker_bits (12) + sequence_bits (12) must be at most 22",
        "sum of at most 22",
    );
    // The server itself is fine.
    assert_eq!(c.query_i64("SELECT 1::bigint"), 1);
}

#[test]
fn epoch_in_the_future() {
    refuses(
        &["snowflake_id.worker_id = 1", "snowflake_id.epoch = '2999-01-01 00:00:00+00'"],
        "22023",
        "in the future",
        "in the past",
    );
}

#[test]
fn epoch_the_timestamp_bits_cannot_reach_past_today() {
    // 22 node bits leave 41 timestamp bits, about 69.7 years: 1950 ran out in 2019.
    refuses(
        &["snowflake_id.worker_id = 1", "snowflake_id.epoch = '1950-01-01'"],
        "22023",
        "too far in the past",
        "Move snowflake_id.epoch later",
    );
}

#[test]
fn epoch_that_is_not_a_timestamp() {
    refuses(
        &["snowflake_id.worker_id = 1", "snowflake_id.epoch = 'last tuesday'"],
        "22007",
        "is not a timestamp",
        "ISO 8601",
    );
}

#[test]
fn ordinary_user_cannot_change_settings() {
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 1"]);
    cluster.sql("CREATE ROLE app LOGIN");
    let mut cfg = cluster.config();
    cfg.user("app");
    let mut app = cfg.connect(postgres::NoTls).unwrap();
    for setting in ["worker_id", "worker_bits", "sequence_bits", "epoch"] {
        let e = common::sql_error(&mut app, &format!("SET snowflake_id.{setting} = '3'"));
        assert_eq!(e.code, "55P02", "{setting}: {e:?}");
        let e = common::sql_error(&mut app, &format!("SET snowflake_id.{setting} = DEFAULT"));
        assert_eq!(e.code, "55P02", "{setting}: {e:?}");
        // But anybody can read them.
        app.query_one(&format!("SHOW snowflake_id.{setting}"), &[]).unwrap();
    }
    let e = common::sql_error(&mut app, "SET snowflake_id.max_drift = '5ms'");
    assert_eq!(e.code, "55P02", "{e:?}");
    let shown: String = app.query_one("SHOW snowflake_id.worker_id", &[]).unwrap().get(0);
    assert_eq!(shown, "1");
    // And the app role can draw IDs.
    app.query_one("SELECT snowflake_nextval()", &[]).unwrap();
}

#[test]
fn decode_null_and_negative() {
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 1"]);
    let mut client = cluster.connect();
    let row = client
        .query_one("SELECT snowflake_decode(NULL) IS NULL, snowflake_decode(NULL, now(), 10, 12) IS NULL", &[])
        .unwrap();
    assert!(row.get::<_, bool>(0) && row.get::<_, bool>(1));
    let e = common::sql_error(&mut client, "SELECT snowflake_decode(-42)");
    assert_error(&e, "22003", "-42 is negative", "");
    // LOCATION names the line that raised the error (api/functions.rs), not the error helper's.
    let raw = client.batch_execute("SELECT snowflake_decode(-42)").expect_err("a negative ID");
    let file = raw.as_db_error().and_then(|db| db.file().map(str::to_string)).unwrap_or_default();
    assert!(file.ends_with("functions.rs"), "LOCATION file is {file:?}, not where the error was raised");
    let e = common::sql_error(&mut client, "SELECT snowflake_decode(1, now(), 13, 10)");
    assert_error(&e, "22023", "must be at most 22", "at most 22");
    let e = common::sql_error(&mut client, "SELECT snowflake_from_timestamp('3000-01-01')");
    assert_error(&e, "22008", "past the last one this layout can encode", "");
    let e = common::sql_error(&mut client, "SELECT snowflake_from_timestamp('infinity')");
    assert_error(&e, "22008", "timestamp infinity has no ID", "MAXVALUE");
    assert_eq!(client.query_one("SELECT snowflake_from_timestamp('-infinity')", &[]).unwrap().get::<_, i64>(0), 0);
}

/// 6 worker bits + 6 sequence bits with a recent epoch: IDs stay below
/// 2^53, so JavaScript numbers hold them exactly.
#[test]
fn js_safe_layout_issues_ids_below_2_pow_53_that_decode_back() {
    let cluster = Cluster::preloaded(&[
        "snowflake_id.worker_id = 63",
        "snowflake_id.worker_bits = 6",
        "snowflake_id.sequence_bits = 6",
        "snowflake_id.epoch = '2025-06-01T00:00:00Z'",
    ]);
    let mut client = cluster.connect();
    let row = client
        .query_one(
            "SELECT max(id) < 2^53, count(DISTINCT id), bool_and((snowflake_decode(id)).worker_id = 63),
                    bool_and((snowflake_decode(id)).sequence < 64),
                    bool_and(snowflake_decode(id) = snowflake_decode(id, '2025-06-01T00:00:00Z', 6, 6)),
                    bool_and(abs(extract(epoch FROM (snowflake_decode(id)).ts - clock_timestamp())) < 60),
                    min(id) > 0
               FROM (SELECT snowflake_nextval() AS id FROM generate_series(1, 50000)) s",
            &[],
        )
        .unwrap();
    assert!(row.get::<_, bool>(0), "an ID reached 2^53");
    assert_eq!(row.get::<_, i64>(1), 50_000);
    for i in 2..=6 {
        assert!(row.get::<_, bool>(i), "column {i}");
    }
    let (wb, sb): (i32, i32) = {
        let r = client.query_one("SELECT worker_bits, sequence_bits FROM snowflake_id_status", &[]).unwrap();
        (r.get(0), r.get(1))
    };
    assert_eq!((wb, sb), (6, 6));
}

/// Like `nextval()`: drawing an ID writes the generator's durable state,
/// which a READ ONLY transaction promised not to do.
#[test]
fn read_only_transaction_refuses_like_nextval() {
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 1"]);
    let mut client = cluster.connect();
    client.batch_execute("BEGIN READ ONLY").unwrap();
    let e = common::sql_error(&mut client, "SELECT snowflake_nextval()");
    assert_error(&e, "25006", "cannot execute snowflake_nextval() in a read-only transaction", "read-write");
    client.batch_execute("ROLLBACK; SET default_transaction_read_only = on").unwrap();
    assert_eq!(common::sql_error(&mut client, "SELECT snowflake_nextval()").code, "25006");
    client.batch_execute("RESET default_transaction_read_only").unwrap();
    client.query_one("SELECT snowflake_nextval()", &[]).unwrap();
}

/// A misspelled `snowflake_id.*` name is reported at start, not kept as a
/// silent placeholder, and SET of an unknown one is refused.
#[test]
fn misspelled_settings_are_reported_and_unknown_ones_refused() {
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 1", "snowflake_id.sequence_bit = 6"]);
    assert!(
        cluster.log().contains("invalid configuration parameter name \"snowflake_id.sequence_bit\""),
        "no start-up report of the misspelled setting in:\n{}",
        cluster.log()
    );
    let e = cluster.sql_error("SET snowflake_id.anything = 1");
    assert_eq!(e.code, "42602", "{e:?}");
    // In PGOPTIONS (the connection's startup packet) it is a FATAL error:
    // the connection is refused, not warned about.
    let mut cfg = cluster.config();
    cfg.options("-c snowflake_id.sequence_bit=6");
    let refused = cfg.connect(postgres::NoTls).err().expect("a connection with a misspelled setting");
    let db = refused.as_db_error().expect("a server error");
    assert_eq!((db.severity(), db.code().code()), ("FATAL", "42602"), "{db:?}");
    // The real setting is untouched: the typo did not change the layout.
    assert_eq!(cluster.query_i64("SELECT sequence_bits::bigint FROM snowflake_id_status"), 12);
}

/// A bare number that may be seconds is refused with both readings; with a
/// unit it is unambiguous.
#[test]
fn epoch_in_seconds_needs_a_unit() {
    refuses(
        &["snowflake_id.worker_id = 1", "snowflake_id.epoch = '1735689600'"],
        "22007",
        "is ambiguous: as milliseconds it is 1970-01-21T02:08:09.600Z, as seconds 2025-01-01T00:00:00.000Z",
        "'1735689600 s' means 2025-01-01T00:00:00.000Z, '1735689600 ms' means 1970-01-21",
    );
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 1", "snowflake_id.epoch = '1735689600 s'"]);
    let epoch: String = cluster.query_text("SELECT (epoch AT TIME ZONE 'UTC')::text FROM snowflake_id_status");
    assert_eq!(epoch, "2025-01-01 00:00:00");
    cluster.query_i64("SELECT snowflake_nextval()");
}

/// The status view is for monitoring roles too, and answers with a row
/// saying what is wrong exactly when something is.
#[test]
fn status_is_readable_by_every_role_and_explains_what_is_wrong() {
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 1"]);
    cluster.sql("CREATE ROLE app LOGIN; CREATE ROLE watcher LOGIN IN ROLE pg_monitor;");
    for role in ["app", "watcher"] {
        let mut cfg = cluster.config();
        cfg.user(role);
        let row = cfg
            .connect(postgres::NoTls)
            .unwrap()
            .query_one("SELECT worker_id, problem IS NULL, keeper_pid IS NOT NULL FROM snowflake_id_status", &[])
            .unwrap_or_else(|e| panic!("{role}: {}", common::describe(&e)));
        assert_eq!(row.get::<_, Option<i64>>(0), Some(1), "{role}");
        assert!(row.get::<_, bool>(1) && row.get::<_, bool>(2), "{role}");
    }

    // worker_id unset: a row with the problem and the layout it would use.
    let unset = Cluster::preloaded(&[]);
    let row = unset
        .connect()
        .query_one("SELECT problem, worker_id, worker_bits, sequence_bits FROM snowflake_id_status", &[])
        .unwrap();
    assert!(row.get::<_, String>(0).contains("the worker id is not set"), "{:?}", row.get::<_, String>(0));
    assert_eq!(row.get::<_, Option<i64>>(1), None);
    assert_eq!((row.get::<_, Option<i32>>(2), row.get::<_, Option<i32>>(3)), (Some(10), Some(12)));

    // Not preloaded: the same, naming the setting to fix.
    let mut plain = Cluster::init(&["snowflake_id.worker_id = 1"]);
    plain.start();
    plain.sql("CREATE EXTENSION snowflake_id");
    let problem: String = plain.query_text("SELECT problem FROM snowflake_id_status");
    assert!(problem.contains("shared_preload_libraries"), "{problem}");
}

/// `ALTER SYSTEM` refuses a bad value at once, as for PostgreSQL's own
/// settings, layout values included: nothing reaches postgresql.auto.conf
/// to be found only at the next restart.
#[test]
fn alter_system_refuses_bad_values_at_once() {
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 1"]);
    let mut client = cluster.connect();
    for (setting, value, part) in [
        ("worker_id", "'abc'", "\"abc\" is not an integer"),
        ("worker_id", "'-1'", "worker id -1 is out of range"),
        ("worker_bits", "30", "30 is outside the valid range"),
        ("worker_bits", "'ten'", "\"ten\""),
        ("sequence_bits", "23", "23 is outside the valid range"),
        ("epoch", "'garbage'", "epoch \"garbage\" is not a timestamp"),
        ("epoch", "'1735689600'", "is ambiguous"),
        ("epoch", "'2999-01-01'", "is in the future"),
        ("max_drift", "'abc'", "\"abc\""),
        ("wal_rmgr_id", "100", "100 is outside the valid range"),
        ("wal_rmgr_id", "128", "128 is on PostgreSQL's list"),
        ("wal_rmgr_id", "241", "241 is on PostgreSQL's list"),
    ] {
        let e = common::sql_error(&mut client, &format!("ALTER SYSTEM SET snowflake_id.{setting} = {value}"));
        assert_eq!(e.code, "22023", "{setting} = {value}: {e:?}");
        let said = format!("{} {}", e.message, e.detail);
        assert!(said.contains(part), "{setting} = {value}: {said:?} lacks {part:?}");
    }
    let auto = std::fs::read_to_string(cluster.data().join("postgresql.auto.conf")).unwrap();
    assert!(!auto.contains("snowflake_id"), "a refused value was written:\n{auto}");
    // A good value is accepted and kept as written, not rewritten.
    client.batch_execute("ALTER SYSTEM SET snowflake_id.epoch = '2025-06-01T00:00:00Z'").unwrap();
    client.batch_execute("ALTER SYSTEM SET snowflake_id.wal_rmgr_id = 190").unwrap();
    let auto = std::fs::read_to_string(cluster.data().join("postgresql.auto.conf")).unwrap();
    assert!(auto.contains("snowflake_id.epoch = '2025-06-01T00:00:00Z'"), "{auto}");
}

/// Three bad values: all three are reported after one start, in the log
/// and in the error snowflake_nextval() raises, so that one restart fixes
/// them all; the hint names the file and line each came from.
#[test]
fn every_bad_value_is_reported_at_once() {
    let cluster = Cluster::preloaded(&[
        "snowflake_id.worker_id = 'abc'",
        "snowflake_id.worker_bits = 30",
        "snowflake_id.epoch = 'garbage'",
    ]);
    let log = cluster.log();
    for part in [
        "invalid snowflake_id.worker_id = 'abc'",
        "invalid snowflake_id.worker_bits = '30'",
        "invalid snowflake_id.epoch = 'garbage'",
    ] {
        assert!(log.contains(&format!("WARNING:  snowflake_id: {part}")), "no {part:?} WARNING in:\n{log}");
    }
    let e = cluster.sql_error("SELECT snowflake_nextval()");
    assert_eq!(e.code, "22023", "{e:?}");
    assert!(e.message.contains("invalid snowflake_id.worker_id = 'abc'"), "{e:?}");
    assert!(e.detail.contains("snowflake_id.worker_bits = '30'"), "{e:?}");
    assert!(e.detail.contains("snowflake_id.epoch = 'garbage'"), "{e:?}");
    assert!(e.hint.contains("postgresql.conf (line "), "{e:?}");
    let problem = cluster.query_text("SELECT problem FROM snowflake_id_status");
    for part in ["worker_id = 'abc'", "worker_bits = '30'", "epoch = 'garbage'"] {
        assert!(problem.contains(part), "problem {problem:?} lacks {part:?}");
    }
    // Nothing of the layout could be used; sequence_bits was fine and is shown.
    let row = cluster
        .connect()
        .query_one("SELECT worker_id, worker_bits, sequence_bits, epoch IS NULL FROM snowflake_id_status", &[])
        .unwrap();
    assert_eq!(row.get::<_, Option<i64>>(0), None);
    assert_eq!(row.get::<_, Option<i32>>(1), None);
    assert_eq!(row.get::<_, Option<i32>>(2), Some(12));
    assert!(row.get::<_, bool>(3));
}

/// A value in postgresql.auto.conf (written by hand, or by ALTER SYSTEM
/// before the version that checks it): the hint sends the DBA to ALTER
/// SYSTEM, not to postgresql.conf.
#[test]
fn hint_names_postgresql_auto_conf_when_the_value_is_there() {
    let mut cluster = Cluster::preloaded(&["snowflake_id.worker_id = 1"]);
    let auto = cluster.data().join("postgresql.auto.conf");
    let mut text = std::fs::read_to_string(&auto).unwrap();
    text.push_str("snowflake_id.sequence_bits = 'twelve'\n");
    std::fs::write(&auto, text).unwrap();
    cluster.restart();
    let e = cluster.sql_error("SELECT snowflake_nextval()");
    assert_error(
        &e,
        "22023",
        "invalid snowflake_id.sequence_bits = 'twelve'",
        "ALTER SYSTEM RESET snowflake_id.sequence_bits",
    );
    assert!(e.hint.contains("postgresql.auto.conf"), "{e:?}");
    // And ALTER SYSTEM can fix it: one restart later IDs flow.
    cluster.sql("ALTER SYSTEM RESET snowflake_id.sequence_bits");
    cluster.restart();
    cluster.query_i64("SELECT snowflake_nextval()");
}

/// With one bad layout value, the status view still shows the others.
#[test]
fn status_shows_each_layout_value_it_could_read() {
    let cluster = Cluster::preloaded(&[
        "snowflake_id.worker_id = 5",
        "snowflake_id.worker_bits = 8",
        "snowflake_id.sequence_bits = 99",
        "snowflake_id.epoch = '2025-06-01T00:00:00Z'",
    ]);
    let row = cluster
        .connect()
        .query_one(
            "SELECT worker_id, worker_bits, sequence_bits, (epoch AT TIME ZONE 'UTC')::text, problem
               FROM snowflake_id_status",
            &[],
        )
        .unwrap();
    assert_eq!(row.get::<_, Option<i64>>(0), Some(5));
    assert_eq!(row.get::<_, Option<i32>>(1), Some(8));
    assert_eq!(row.get::<_, Option<i32>>(2), None);
    assert_eq!(row.get::<_, Option<String>>(3).as_deref(), Some("2025-06-01 00:00:00"));
    let problem: String = row.get(4);
    assert!(problem.contains("invalid snowflake_id.sequence_bits = '99'"), "{problem}");
}

/// A bad non-layout value at start is not replaced by the default in
/// silence: IDs are refused with the reason, as for a layout value.
#[test]
fn bad_max_drift_or_wal_rmgr_id_at_start_refuses_ids() {
    for (line, part, rmgr) in [
        ("snowflake_id.max_drift = 'abc'", "invalid snowflake_id.max_drift = 'abc': not a duration", 187),
        ("snowflake_id.wal_rmgr_id = 100", "invalid snowflake_id.wal_rmgr_id = '100'", 187),
        ("snowflake_id.wal_rmgr_id = 128", "128 is on PostgreSQL's list", 128),
    ] {
        let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 1", line]);
        let e = cluster.sql_error("SELECT snowflake_nextval()");
        assert_error(&e, "22023", part, "postgresql.conf (line ");
        let problem = cluster.query_text("SELECT problem FROM snowflake_id_status");
        assert!(problem.contains(part), "{line}: problem {problem:?}");
        assert!(cluster.log().contains("snowflake_nextval() will refuse"), "{line}: no WARNING in\n{}", cluster.log());
        // The resource manager registered is the one this server's earlier
        // records were written under, so WAL can still be replayed: the id as
        // written when it is one (0.2.0 accepted ids on the taken list), else
        // the default.
        let registered = format!("registered custom resource manager \"snowflake_id\" with ID {rmgr}");
        assert!(cluster.log().contains(&registered), "{line}: no {registered:?} in\n{}", cluster.log());
    }
}

/// max_drift is reloadable: a bad value at start refuses IDs until a reload
/// brings a good one; a bad value at reload is refused and the one in
/// force stays.
#[test]
fn max_drift_fixed_by_a_reload() {
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 1", "snowflake_id.max_drift = 'abc'"]);
    assert_eq!(cluster.sql_error("SELECT snowflake_nextval()").code, "22023");
    cluster.append_conf(&["snowflake_id.max_drift = '2s'"]);
    cluster.sql("SELECT pg_reload_conf()");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        // A new connection has processed the reload.
        let ok = cluster.connect().query_one("SELECT snowflake_nextval()", &[]).is_ok();
        if ok {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "IDs still refused after a reload with a good max_drift");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert_eq!(cluster.query_text("SHOW snowflake_id.max_drift"), "2s");

    // A bad value at reload: refused, and 2s stays in force. work_mem, in
    // the same reload, shows that the reload reached new connections.
    let log_before = cluster.log().len();
    cluster.append_conf(&["snowflake_id.max_drift = '-1s'", "work_mem = '12345kB'"]);
    cluster.sql("SELECT pg_reload_conf()");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while cluster.query_text("SHOW work_mem") != "12345kB" {
        assert!(std::time::Instant::now() < deadline, "the reload never reached a new connection");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let log = cluster.log();
    let refusal = "is outside the valid range for parameter \"snowflake_id.max_drift\"";
    assert!(log[log_before..].contains(refusal), "the refusal was not logged:\n{log}");
    assert_eq!(cluster.query_text("SHOW snowflake_id.max_drift"), "2s", "a bad max_drift at reload was taken");
    cluster.connect().query_one("SELECT snowflake_nextval()", &[]).expect("IDs after a bad max_drift at reload");
}

/// pg_settings shows the range of the bit settings, as for core integers.
#[test]
fn pg_settings_shows_the_range_of_the_bit_settings() {
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 1", "snowflake_id.worker_bits = 6"]);
    let mut client = cluster.connect();
    for (name, setting) in [("snowflake_id.worker_bits", "6"), ("snowflake_id.sequence_bits", "12")] {
        let row = client
            .query_one("SELECT setting, vartype, min_val, max_val FROM pg_settings WHERE name = $1", &[&name])
            .unwrap();
        let got: (String, String, String, String) = (row.get(0), row.get(1), row.get(2), row.get(3));
        assert_eq!(got, (setting.into(), "integer".into(), "0".into(), "22".into()), "{name}");
    }
    assert_eq!(cluster.query_text("SHOW snowflake_id.worker_bits"), "6");
}
