//! The worker id registry's SQL side, on a real server: grants, renewals,
//! releases and takeovers, each one transaction, and the fence they keep:
//! every new lease of a worker id starts above every ceiling granted before,
//! and a replaced lease can no longer be renewed.
//! Last, what a node says of the registry's schema: the names another role
//! chose there reach its WARNING escaped.

mod common;

use std::thread;
use std::time::{Duration, Instant};

use common::{Cluster, DEFAULT_EPOCH_MS as EPOCH_MS};
use postgres::Client;

/// A lease as the registry grants it.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Lease {
    worker_id: i32,
    epoch: i64,
    token: i64,
    floor: i64,
    ceiling: i64,
}

impl Lease {
    /// The lease's range and epoch, without its random token.
    fn shape(&self) -> (i32, i64, i64, i64) {
        (self.worker_id, self.epoch, self.floor, self.ceiling)
    }
}

struct Node<'a> {
    system: &'a str,
    timeline: i32,
    name: &'a str,
}

const A: Node = Node { system: "7000000000000000001", timeline: 1, name: "a" };
const B: Node = Node { system: "7000000000000000002", timeline: 1, name: "b" };

/// SQLSTATE and message of a failed call.
type Refused = (String, String);

fn refused(e: postgres::Error) -> Refused {
    let db = e.as_db_error().unwrap_or_else(|| panic!("not a database error: {e}"));
    (db.code().code().to_string(), format!("{} | {}", db.message(), db.detail().unwrap_or_default()))
}

fn acquire(
    c: &mut Client,
    node: &Node,
    wanted: Option<i32>,
    tick: i64,
    resume: Option<&Lease>,
) -> Result<Lease, Refused> {
    acquire_layout(c, node, wanted, tick, resume, 10)
}

fn acquire_layout(
    c: &mut Client,
    node: &Node,
    wanted: Option<i32>,
    tick: i64,
    resume: Option<&Lease>,
    worker_bits: i32,
) -> Result<Lease, Refused> {
    let (resume_epoch, resume_token) = (resume.map(|l| l.epoch), resume.map(|l| l.token));
    c.query_one(
        // As a node calls it: the implementation, in snowflake_id_internal.
        "SELECT * FROM snowflake_id_internal.snowflake_registry_acquire('default', $1, 12, $2, $3, $4, $5, $6, $7,
                                                                          30000, $8, $9)",
        &[
            &worker_bits,
            &EPOCH_MS,
            &wanted,
            &node.system,
            &node.timeline,
            &node.name,
            &tick,
            &resume_epoch,
            &resume_token,
        ],
    )
    .map(|r| Lease { worker_id: r.get(0), epoch: r.get(1), token: r.get(2), floor: r.get(3), ceiling: r.get(4) })
    .map_err(refused)
}

fn renew(c: &mut Client, l: &Lease, tick: i64) -> Result<i64, Refused> {
    c.query_one(
        "SELECT snowflake_registry_renew('default', $1, $2, $3, $4, 30000)",
        &[&l.worker_id, &l.epoch, &l.token, &tick],
    )
    .map(|r| r.get(0))
    .map_err(refused)
}

fn release(c: &mut Client, l: &Lease, last_tick: i64) -> bool {
    c.query_one(
        "SELECT snowflake_registry_release('default', $1, $2, $3, $4)",
        &[&l.worker_id, &l.epoch, &l.token, &last_tick],
    )
    .expect("release")
    .get(0)
}

/// Makes every lease of the namespace stale at once (the margin is the
/// namespace's; the horizon is 30 s, so 'renewed a minute ago' is stale).
fn age_all(c: &mut Client) {
    c.batch_execute("UPDATE snowflake_registry_leases SET renewed_at = renewed_at - interval '1 minute'").unwrap();
}

#[test]
fn auto_gives_concurrent_nodes_distinct_ids() {
    let cluster = Cluster::registry();
    let cfg = cluster.config();
    let leases: Vec<Lease> = thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let cfg = cfg.clone();
                s.spawn(move || {
                    let mut c = cfg.connect(postgres::NoTls).expect("connect");
                    let system = format!("70000000000000001{i:02}");
                    let name = format!("node{i}");
                    let node = Node { system: &system, timeline: 1, name: &name };
                    acquire(&mut c, &node, None, 1_000, None).expect("auto acquire")
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut ids: Vec<i32> = leases.iter().map(|l| l.worker_id).collect();
    ids.sort();
    assert_eq!(ids, (0..8).collect::<Vec<_>>(), "{leases:?}");
    for l in &leases {
        assert_eq!((l.epoch, l.floor, l.ceiling), (1, 0, 31_000), "{l:?}");
        assert_ne!(l.token, 0, "{l:?}");
    }
    let live = cluster.query_i64("SELECT count(*) FROM snowflake_registry WHERE state = 'live'");
    assert_eq!(live, 8);
}

#[test]
fn a_live_id_is_refused_to_others_and_a_takeover_starts_above_every_ceiling() {
    let cluster = Cluster::registry();
    let mut c = cluster.connect();
    let a = acquire(&mut c, &A, Some(5), 10_000, None).unwrap();
    assert_eq!(a.shape(), (5, 1, 0, 40_000));
    // Renewals raise the ceiling, never lower it.
    assert_eq!(renew(&mut c, &a, 20_000), Ok(50_000));
    assert_eq!(renew(&mut c, &a, 15_000), Ok(50_000));

    let (code, message) = acquire(&mut c, &B, Some(5), 20_000, None).unwrap_err();
    assert_eq!(code, "SFL02", "{message}");
    assert!(message.contains("held by node \"a\"") && message.contains("epoch 1 reaches"), "{message}");
    // auto passes it by.
    assert_eq!(acquire(&mut c, &B, None, 20_000, None).unwrap().worker_id, 0);

    // Stale (not renewed for horizon + margin): B takes id 5 above A's ceiling.
    age_all(&mut c);
    let b = acquire(&mut c, &B, Some(5), 20_000, None).unwrap();
    // Its tick is below the floor: a quarter lease of room past it, not a
    // whole lease (takeovers in a row would add up).
    assert_eq!(b.shape(), (5, 2, 50_001, 57_501));
    // A's renewal now fails, whatever it asks for: it stops at 50,000.
    let (code, message) = renew(&mut c, &a, 60_000).unwrap_err();
    assert_eq!(code, "SFL01", "{message}");
    assert!(message.contains("Node \"b\""), "{message}");
    // A releasing its old lease changes nothing.
    assert!(!release(&mut c, &a, 45_000));
    // B renews from its tick, below its floor: the ceiling stays put.
    assert_eq!(renew(&mut c, &b, 20_000), Ok(57_501));
    assert_eq!(renew(&mut c, &b, 40_000), Ok(70_000));
}

#[test]
fn a_restart_and_a_promotion_take_their_own_id_at_once_above_the_old_ceiling() {
    let cluster = Cluster::registry();
    let mut c = cluster.connect();
    let a = acquire(&mut c, &A, None, 10_000, None).unwrap();
    // The same node restarting with its lease on disk: at once, above it.
    // (It names no instance, as a 0.3.0 node: see tests/fleet.rs for copies.)
    let again = acquire(&mut c, &A, None, 12_000, Some(&a)).unwrap();
    assert_eq!(again.shape(), (a.worker_id, 2, 40_001, 47_501));
    // The same node with a stale idea of its lease (a copy of an old data
    // directory) is another holder: refused while the lease is live.
    let (code, _) = acquire(&mut c, &A, Some(a.worker_id), 12_000, Some(&a)).unwrap_err();
    assert_eq!(code, "SFL02");
    // And so is one with no lease on disk at all (0.3.0 let it take the
    // lease at once: a NULL in the test skipped the refusal).
    let (code, _) = acquire(&mut c, &A, Some(a.worker_id), 12_000, None).unwrap_err();
    assert_eq!(code, "SFL02");
    // Its promoted standby (same system, next timeline) takes over at once.
    let standby = Node { timeline: 2, name: "a-standby", ..A };
    let promoted = acquire(&mut c, &standby, Some(a.worker_id), 13_000, None).unwrap();
    assert_eq!((promoted.epoch, promoted.floor), (3, 47_502));
    // The old primary, still running (split brain), cannot renew.
    assert_eq!(renew(&mut c, &again, 14_000).unwrap_err().0, "SFL01");
    // Nor can an older timeline take it back.
    assert_eq!(acquire(&mut c, &A, Some(a.worker_id), 14_000, Some(&again)).unwrap_err().0, "SFL02");
}

#[test]
fn a_clean_release_frees_the_id_at_once_right_above_the_last_tick() {
    let cluster = Cluster::registry();
    let mut c = cluster.connect();
    let a = acquire(&mut c, &A, Some(3), 10_000, None).unwrap();
    assert!(release(&mut c, &a, 12_345));
    assert!(!release(&mut c, &a, 12_345), "released twice");
    assert_eq!(renew(&mut c, &a, 13_000).unwrap_err().0, "SFL01");
    assert_eq!(
        cluster.query_text("SELECT state || ' ' || (ceiling = to_timestamp((1735689600000 + 12345) / 1000.0))::text FROM snowflake_registry"),
        "free true"
    );
    let b = acquire(&mut c, &B, Some(3), 13_000, None).unwrap();
    assert_eq!((b.epoch, b.floor, b.ceiling), (2, 12_346, 43_000));
    // A release never lowers the ceiling below the floor: nothing issued yet.
    assert!(release(&mut c, &b, 0));
    assert_eq!(acquire(&mut c, &A, Some(3), 13_000, None).unwrap().floor, 12_346);
}

#[test]
fn layouts_are_fixed_per_namespace_and_a_full_namespace_says_so() {
    let cluster = Cluster::registry();
    let mut c = cluster.connect();
    acquire(&mut c, &A, None, 1_000, None).unwrap();
    let (code, message) = acquire_layout(&mut c, &B, None, 1_000, None, 8).unwrap_err();
    assert_eq!(code, "SFL03", "{message}");
    assert!(message.contains("uses worker_bits=10") && message.contains("has worker_bits=8"), "{message}");

    // worker_bits = 1 in its own namespace: two ids, then none free.
    for (i, system) in ["1", "2", "3"].iter().enumerate() {
        let r = c.query_one(
            "SELECT worker_id FROM snowflake_registry_acquire('tiny', 1, 12, $1, NULL, $2, 1, 'n', 1000, 30000)",
            &[&EPOCH_MS, system],
        );
        match i {
            0 | 1 => assert_eq!(r.expect("a free id").get::<_, i32>(0), i as i32),
            _ => assert_eq!(refused(r.unwrap_err()).0, "SFL04"),
        }
    }
    // Out of range and NULL arguments are plain errors.
    assert_eq!(acquire(&mut c, &A, Some(1024), 1_000, None).unwrap_err().0, "22023");
    let e = c.query_one("SELECT snowflake_registry_acquire('default', 10, 12, NULL, 1, 'x', 1, 'n', 1, 1)", &[]);
    assert_eq!(refused(e.unwrap_err()).0, "22004");
}

#[test]
fn only_roles_granted_execute_may_call_the_registry_functions() {
    let cluster = Cluster::registry();
    cluster.sql("CREATE ROLE node LOGIN; CREATE ROLE other LOGIN; CREATE ROLE habit LOGIN;");
    // The grants docs/fleets.md gives: on the implementations, which nodes
    // since 0.7.0 call, with exact argument types.
    cluster.sql(
        "GRANT EXECUTE ON FUNCTION
               snowflake_id_internal.snowflake_registry_acquire(text, integer, integer, bigint, integer, text, integer,
                                                                text, bigint, bigint, bigint, bigint),
               snowflake_id_internal.snowflake_registry_renew(text, integer, bigint, bigint, bigint, bigint),
               snowflake_id_internal.snowflake_registry_release(text, integer, bigint, bigint, bigint),
               snowflake_id_internal.snowflake_registry_history_of(text, integer, bigint, bigint),
               snowflake_id_internal.snowflake_registry_record_history(text, integer, bigint, bigint, bigint, bigint,
                                                                       integer)
           TO node",
    );
    // 0.8.0's lines, by bare name: since 0.9.0 they reach the public entry
    // points only, which add no privilege, so they grant nothing.
    cluster.sql(
        "GRANT EXECUTE ON FUNCTION snowflake_registry_acquire, snowflake_registry_renew, snowflake_registry_release,
               snowflake_registry_history_of, snowflake_registry_record_history TO habit",
    );
    for (role, allowed) in [("node", true), ("other", false), ("habit", false)] {
        let mut cfg = cluster.config();
        cfg.user(role);
        let mut c = cfg.connect(postgres::NoTls).unwrap();
        let got = acquire(&mut c, &A, None, 1_000, None);
        match allowed {
            true => assert!(got.is_ok(), "{role}: {got:?}"),
            false => assert_eq!(got.unwrap_err().0, "42501", "{role}"),
        }
        // The public entry points are revoked from PUBLIC like the
        // implementations and check both: the docs' grants (on the
        // implementations) do not reach them, 0.8.0's bare-name grants
        // reach only them. A node of 0.6.0, which calls them, needs both.
        let history = c.query("SELECT * FROM snowflake_registry_history_of('default', 0, 1, 1)", &[]);
        let code = history.map_err(refused).err().map(|e| e.0);
        assert_eq!(code.as_deref(), Some("42501"), "{role}");
        let expected = if allowed { "SFL01" } else { "42501" }; // node: allowed, but holds no such lease
                                                                // What nodes call since 0.7.0: the implementations, where the
                                                                // grants are.
        for call in [
            "SELECT * FROM snowflake_id_internal.snowflake_registry_history_of('default', 0, 1::bigint, 1::bigint)",
            "SELECT snowflake_id_internal.snowflake_registry_renew('default', 0, 1::bigint, 1::bigint, 1::bigint,
                                                                   1000::bigint)",
            "SELECT snowflake_id_internal.snowflake_registry_record_history('default', 0, 1::bigint, 1::bigint,
                                                                            1::bigint, 2::bigint, 1)",
        ] {
            let code = c.query(call, &[]).map_err(refused).err().map(|e| e.0);
            assert_eq!(code.as_deref(), Some(expected), "{role}: {call}");
        }
        let released = c.query_one(
            "SELECT snowflake_id_internal.snowflake_registry_release('default', 0, 1::bigint, 1::bigint, 1::bigint)",
            &[],
        );
        match allowed {
            true => assert!(!released.unwrap().get::<_, bool>(0), "{role}: a release by a wrong token"),
            false => assert_eq!(refused(released.unwrap_err()).0, "42501", "{role}"),
        }
        // And no role but the owner may create where nodes call.
        let e =
            c.batch_execute("CREATE FUNCTION snowflake_id_internal.f() RETURNS int LANGUAGE sql RETURN 1").unwrap_err();
        assert_eq!(refused(e).0, "42501", "{role}");
        // Nobody but the functions writes the tables.
        let e = c.batch_execute("UPDATE snowflake_registry_leases SET ceiling_tick = 0").unwrap_err();
        assert_eq!(refused(e).0, "42501", "{role}");
        let e = c.batch_execute("DELETE FROM snowflake_registry_history").unwrap_err();
        assert_eq!(refused(e).0, "42501", "{role}");
    }
}

fn record_history(c: &mut Client, l: &Lease, from: i64, to: i64, level: i32) -> Result<(), Refused> {
    c.execute(
        "SELECT snowflake_registry_record_history('default', $1, $2, $3, $4, $5, $6)",
        &[&l.worker_id, &l.epoch, &l.token, &from, &to, &level],
    )
    .map(|_| ())
    .map_err(refused)
}

fn history_of(c: &mut Client, l: &Lease) -> Result<Vec<(i64, i64, i64, i32)>, Refused> {
    c.query("SELECT * FROM snowflake_registry_history_of('default', $1, $2, $3)", &[&l.worker_id, &l.epoch, &l.token])
        .map(|rows| rows.iter().map(|r| (r.get(0), r.get(1), r.get(2), r.get(3))).collect())
        .map_err(refused)
}

/// Past-instant claims are recorded and read only by the lease's holder,
/// with the lease epoch they were made under, and survive the lease moving
/// on; a holder's own wider claim at a higher level replaces its narrower.
#[test]
fn history_claims_are_recorded_for_the_holder_and_outlive_its_lease() {
    let cluster = Cluster::registry();
    let mut c = cluster.connect();
    let a = acquire(&mut c, &A, Some(3), 1_000, None).unwrap();
    record_history(&mut c, &a, 100, 200, 1).unwrap();
    record_history(&mut c, &a, 100, 300, 2).unwrap(); // covers the first
    record_history(&mut c, &a, 500, 600, 1).unwrap();
    assert_eq!(history_of(&mut c, &a).unwrap(), vec![(a.epoch, 100, 300, 2), (a.epoch, 500, 600, 1)]);
    let forged = Lease { token: a.token ^ 1, ..a };
    assert_eq!(record_history(&mut c, &forged, 0, 10, 1).unwrap_err().0, "SFL01");
    assert_eq!(history_of(&mut c, &forged).unwrap_err().0, "SFL01");
    let e = record_history(&mut c, &a, 10, 10, 1).unwrap_err();
    assert_eq!(e.0, "23514", "an empty interval: {e:?}");

    // b takes 3 over: a's claims stay, and a can record no more.
    age_all(&mut c);
    let b = acquire(&mut c, &B, Some(3), 2_000, None).unwrap();
    assert_eq!(record_history(&mut c, &a, 700, 800, 1).unwrap_err().0, "SFL01");
    record_history(&mut c, &b, 100, 150, 3).unwrap();
    assert_eq!(
        history_of(&mut c, &b).unwrap(),
        vec![(b.epoch, 100, 150, 3), (a.epoch, 100, 300, 2), (a.epoch, 500, 600, 1)]
    );
    // Released: no more records under it either.
    assert!(release(&mut c, &b, 2_000));
    assert_eq!(record_history(&mut c, &b, 900, 901, 1).unwrap_err().0, "SFL01");
}

/// A registry that lost a grant (a crash without durable commits) may hand
/// the same worker id and epoch to another node; the old holder's renewal
/// must still fail: the token, not the epoch, fences.
#[test]
fn a_lost_grant_handed_out_again_does_not_let_the_old_holder_renew() {
    let cluster = Cluster::registry();
    let mut c = cluster.connect();
    let a = acquire(&mut c, &A, Some(2), 10_000, None).unwrap();
    c.batch_execute("DELETE FROM snowflake_registry_leases").unwrap(); // the grant lost in a crash
    let b = acquire(&mut c, &B, Some(2), 10_000, None).unwrap();
    assert_eq!((b.epoch, b.floor), (a.epoch, a.floor), "the same epoch and range again");
    let (code, message) = renew(&mut c, &a, 11_000).unwrap_err();
    assert_eq!(code, "SFL01", "{message}");
    assert!(!release(&mut c, &a, 0), "a's release changed b's lease");
    assert!(renew(&mut c, &b, 11_000).is_ok());
}

/// A node's tick is taken at most a day past the registry's clock: one node
/// with a clock far ahead cannot push the ceilings far into the future.
#[test]
fn a_node_clock_far_ahead_does_not_push_the_ceiling_far_ahead() {
    let cluster = Cluster::registry();
    let mut c = cluster.connect();
    let now: i64 =
        c.query_one("SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint - $1", &[&EPOCH_MS]).unwrap().get(0);
    let year = 365 * 86_400_000i64;
    let a = acquire(&mut c, &A, None, now + year, None).unwrap();
    assert!(a.ceiling <= now + 86_400_000 + 30_000 + 60_000, "ceiling {} ms ahead", a.ceiling - now);
    let ceiling = renew(&mut c, &a, now + year).unwrap();
    assert!(ceiling <= now + 86_400_000 + 30_000 + 60_000, "ceiling {} ms ahead", ceiling - now);
}

/// A NULL names no lease: a renewal with a NULL epoch or token is refused
/// (`22004`), and the history functions say the lease is not held (`SFL01`),
/// where a NULL comparison would have passed for a match (it kept any live
/// lease renewed, and read any worker id's claims).
#[test]
fn a_null_names_no_lease() {
    let cluster = Cluster::registry();
    let mut c = cluster.connect();
    let a = acquire(&mut c, &A, Some(4), 10_000, None).unwrap();
    let renewal = c
        .query_one("SELECT snowflake_registry_renew('default', $1, NULL, NULL, 10000, 30000)", &[&a.worker_id])
        .map_err(refused);
    assert_eq!(renewal.unwrap_err().0, "22004");
    let read = c
        .query("SELECT * FROM snowflake_registry_history_of('default', $1, NULL, NULL)", &[&a.worker_id])
        .map_err(refused);
    assert_eq!(read.unwrap_err().0, "SFL01");
    let read = c
        .query("SELECT * FROM snowflake_registry_history_of('default', $1, $2, NULL)", &[&a.worker_id, &a.epoch])
        .map_err(refused);
    assert_eq!(read.unwrap_err().0, "SFL01");
}

/// `name` as a quoted SQL identifier.
fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A role that may create in the registry's schema chooses the names a
/// node puts into its WARNING about look-alikes: its own, and those of the
/// functions it plants under the registry's names. Their control characters
/// (a newline, a tab, ESC, C1 controls) are written escaped as
/// docs/text-forms.md says (`\n`, `\t`, `\u{1b}`, `\u{85}`), so that no
/// name forges a line of the node's log or a terminal's colours; the rest
/// of each name is kept, so the WARNING still says which. (The newline is
/// in the function's name: PostgreSQL 19 refuses one in a role's.)
#[test]
fn look_alike_names_in_a_nodes_warning_have_their_control_characters_escaped() {
    let registry = Cluster::registry();
    let role = "app\tforged by a role\u{1b}[31m\u{85}";
    let function = "snowflake_registry_x\nWARNING:  forged\t\u{1b}[2J\u{9b}\u{7f}";
    registry.sql(&format!(
        "CREATE ROLE {role} LOGIN;
         GRANT CREATE ON SCHEMA public TO {role};
         SET ROLE {role};
         CREATE FUNCTION public.{function}(integer) RETURNS integer LANGUAGE sql RETURN 1;
         RESET ROLE;",
        role = quoted(role),
        function = quoted(function)
    ));
    let node = Cluster::leased_node(&registry, "n", &[]);
    let deadline = Instant::now() + Duration::from_secs(30);
    let warning = loop {
        let log = node.log();
        if let Some(at) = log.find("under the registry's names") {
            // The WARNING's line, from its start.
            let start = log[..at].rfind('\n').map_or(0, |i| i + 1);
            break log[start..].lines().next().unwrap_or_default().to_string();
        }
        assert!(Instant::now() < deadline, "no WARNING about the look-alike:\n{log}");
        thread::sleep(Duration::from_millis(200));
    };
    for part in [
        r"lets 1 role(s) other than its owner create in it",
        r#"("app\tforged by a role\u{1b}[31m\u{85}")"#,
        r#"function public."snowflake_registry_x\nWARNING:  forged\t\u{1b}[2J\u{9b}\u{7f}"(integer)"#,
        r#", owned by role "app\tforged by a role\u{1b}[31m\u{85}""#,
    ] {
        assert!(warning.contains(part), "the WARNING does not show {part}:\n{warning}");
    }
    // Nowhere in the log as they are (a tab aside: PostgreSQL writes one
    // itself before each further line of a message).
    let log = node.log();
    for control in ['\u{1b}', '\u{85}', '\u{9b}', '\u{7f}'] {
        assert!(!log.contains(control), "the node's log has {:?} as it is:\n{log}", control);
    }
    // Nor a line a name forged (indented by that tab: a reader that trims
    // lines would see it).
    assert!(
        !log.lines().any(|l| l.trim_start().starts_with("WARNING:  forged")),
        "a line of the log forged by a name:\n{log}"
    );
}

/// A node whose registry role may not call the registry's functions (a
/// registry set up by 0.8.0's docs, which granted the public names) says
/// in its WARNING's hint the exact GRANT it needs; run as given (for its
/// role), it gets the node its lease.
#[test]
fn a_node_refused_by_privileges_names_the_grant_that_lets_it_in() {
    let registry = Cluster::registry();
    registry.sql(
        "CREATE ROLE snowflake_node LOGIN;
         GRANT EXECUTE ON FUNCTION snowflake_registry_acquire, snowflake_registry_renew, snowflake_registry_release,
               snowflake_registry_history_of, snowflake_registry_record_history TO snowflake_node;",
    );
    let line = format!(
        "snowflake_id.registry = 'host={} port={} dbname=postgres user=snowflake_node'",
        registry.socket_dir().display(),
        registry.port
    );
    let mut node = Cluster::init(&["shared_preload_libraries = 'snowflake_id'", line.as_str()]);
    node.start();
    node.sql("CREATE EXTENSION snowflake_id");
    let deadline = Instant::now() + Duration::from_secs(30);
    let grant = loop {
        let log = node.log();
        if let Some(at) = log.find("GRANT EXECUTE ON FUNCTION snowflake_id_internal.") {
            let end = log[at..].find(';').expect("the GRANT ends with a semicolon") + at + 1;
            break log[at..end].to_string();
        }
        assert!(Instant::now() < deadline, "no hint with a GRANT in the node's log:\n{log}");
        thread::sleep(Duration::from_millis(200));
    };
    assert!(grant.contains("snowflake_registry_acquire(pg_catalog.text, pg_catalog.int4"), "{grant}");
    registry.sql(&grant.replace("<that role>", "snowflake_node"));
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut client = node.connect();
    while client.query_one("SELECT snowflake_nextval()", &[]).is_err() {
        assert!(Instant::now() < deadline, "no lease after the hint's GRANT:\n{}", node.log());
        thread::sleep(Duration::from_millis(200));
    }
}

/// Default privileges the installing superuser set for every role it
/// creates objects as (EXECUTE on functions, everything on tables) give
/// another role nothing of the registry's: the install takes back what
/// they granted on its objects, so that role can neither lease a worker id
/// nor write a lease's ceiling.
#[test]
fn the_installers_default_privileges_give_no_role_the_registry() {
    let mut cluster = Cluster::init(&[]);
    cluster.start();
    cluster.sql(
        "CREATE ROLE app LOGIN;
         ALTER DEFAULT PRIVILEGES GRANT EXECUTE ON FUNCTIONS TO app;
         ALTER DEFAULT PRIVILEGES GRANT ALL ON TABLES TO app;
         CREATE EXTENSION snowflake_id;",
    );
    let mut cfg = cluster.config();
    cfg.user("app");
    let mut app = cfg.connect(postgres::NoTls).unwrap();
    let got = acquire(&mut app, &A, None, 1_000, None);
    assert_eq!(got.map(|_| ()).unwrap_err().0, "42501");
    for denied in [
        "UPDATE public.snowflake_registry_leases SET ceiling_tick = 0",
        "SELECT snowflake_nextval_at(now() - interval '1 day')",
        "SELECT snowflake_id_internal.snowflake_advance_past(1::bigint)",
    ] {
        let e = app.batch_execute(denied).map_err(refused).unwrap_err();
        assert_eq!(e.0, "42501", "{denied}: {e:?}");
    }
    // What every role may do stays: the status view, decoding.
    app.batch_execute("SELECT count(*) FROM public.snowflake_id_status; SELECT public.snowflake_decode(1::bigint)")
        .unwrap();
}
