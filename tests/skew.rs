//! Version skew in a fleet: during a rolling update, nodes of the previous
//! release lease worker ids from a registry of the new one, and nodes of the
//! new release from a registry of the previous one, side by side in one
//! namespace. Each kind must take, renew and release its lease and issue
//! IDs no other node issues.
//!
//! Two installations of the major under test: the server under test, with
//! the new library (`SNOWFLAKE_PG_BIN`), and a copy with the previous
//! release's (`SNOWFLAKE_PREVIOUS_PG_BIN`, which scripts/test.sh sets to what
//! `bash scripts/previous_release.sh 15` builds and caches; that script names
//! the previous release). Each registry is set up as its release's
//! docs/fleets.md says (the grants of the node role above all, read from
//! the page), and the nodes connect as that role, with a 3 s lease so
//! that renewals come every few tenths of a second. Those run on 15 alone; on every major, a
//! registry of the new release is checked to serve each call the previous
//! release's nodes make, read from that release's source.

mod common;

use std::collections::HashSet;
use std::fs;
use std::path::Path;
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use common::{assert_all_above, assert_no_duplicates, assert_strictly_increasing, id_unix_ms, Cluster};

/// The one major scripts/test.sh builds the previous release for (its
/// PREVIOUS_RELEASE_MAJOR): building it for every major would cost minutes
/// each.
const PREVIOUS_MAJOR: u32 = 15;

const LEASE: &str = "snowflake_id.registry_lease = '3s'";

/// One release's installation: its bin directory, and its commit (None:
/// this checkout's).
struct Release {
    bin: String,
    commit: Option<String>,
}

/// This checkout's release: the server under test.
fn this_release() -> Release {
    Release { bin: common::bin().to_string(), commit: None }
}

/// The two installations: (previous release, new release), or None when
/// the test is not to run here (said through the common helpers).
fn installations() -> Option<(Release, Release)> {
    if !common::only_on_major(PREVIOUS_MAJOR, "the previous release is built for one major (scripts/test.sh)") {
        return None;
    }
    let previous = match std::env::var("SNOWFLAKE_PREVIOUS_PG_BIN") {
        Ok(dir) if !dir.is_empty() => dir.trim_end_matches('/').to_string(),
        _ => {
            common::cannot_run(
                "SNOWFLAKE_PREVIOUS_PG_BIN names no installation of the previous release \
                 (bash scripts/previous_release.sh 15 builds one and prints its bin directory)",
            );
            return None;
        }
    };
    assert!(Path::new(&previous).join("pg_ctl").exists(), "SNOWFLAKE_PREVIOUS_PG_BIN={previous} has no pg_ctl");
    assert_ne!(previous, common::bin(), "the previous release must be another installation than the one under test");
    let version = |bin: &str| {
        let out = Command::new(format!("{bin}/pg_config")).arg("--version").output().expect("pg_config");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    assert_eq!(version(&previous), version(common::bin()), "the two installations must be of one PostgreSQL");
    Some((Release { bin: previous, commit: Some(previous_release_commit()) }, this_release()))
}

/// The extension's version in `cluster`'s postgres database.
fn extversion(cluster: &Cluster) -> String {
    cluster.query_text("SELECT extversion FROM pg_extension WHERE extname = 'snowflake_id'")
}

/// The statements docs/fleets.md gives to set up a registry (its first
/// `sql` block after "Set up the registry"), as the page reads at `commit`
/// (None: in this checkout), without the password placeholder.
fn registry_setup(commit: Option<&str>) -> String {
    let page = match commit {
        None => fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/fleets.md")).expect("docs/fleets.md"),
        Some(commit) => git_show(commit, "docs/fleets.md"),
    };
    let block = page
        .split_once("**Set up the registry**")
        .and_then(|(_, rest)| rest.split_once("```sql\n"))
        .and_then(|(_, rest)| rest.split_once("```"))
        .map(|(block, _)| block)
        .unwrap_or_else(|| panic!("docs/fleets.md ({commit:?}) has no sql block to set up the registry"));
    assert!(block.contains("CREATE ROLE snowflake_node"), "docs/fleets.md ({commit:?}) names another role:\n{block}");
    block.replace(" PASSWORD '...'", "")
}

/// A registry of `release`, set up as that release's docs/fleets.md says:
/// the extension, and a node role that may call what a node calls.
fn registry_on(release: &Release) -> Cluster {
    let mut registry = Cluster::init_with_bin(&release.bin, &[], &[]);
    registry.start();
    registry.sql(&registry_setup(release.commit.as_deref()));
    registry
}

/// A node of `release`, named `name`, leasing from
/// `registry` as the node role, with a short lease and `conf` on top;
/// started, extension created.
fn node_on(release: &Release, registry: &Cluster, name: &str, conf: &[&str]) -> Cluster {
    let registry_line = format!(
        "snowflake_id.registry = 'host={} port={} dbname=postgres user=snowflake_node'",
        registry.socket_dir().display(),
        registry.port
    );
    let name_line = format!("snowflake_id.node_name = '{name}'");
    let mut lines =
        vec!["shared_preload_libraries = 'snowflake_id'", registry_line.as_str(), name_line.as_str(), LEASE];
    lines.extend_from_slice(conf);
    let mut node = Cluster::init_with_bin(&release.bin, &[], &lines);
    node.start();
    node.sql("CREATE EXTENSION snowflake_id");
    node
}

/// Draws `n` IDs as soon as the node has a lease (within 30 s).
fn draw_when_leased(node: &Cluster, n: i64) -> Vec<i64> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut client = node.connect();
    loop {
        match client.query("SELECT snowflake_nextval() FROM generate_series(1, $1::bigint)", &[&n]) {
            Ok(rows) => return rows.iter().map(|r| r.get(0)).collect(),
            Err(e) => {
                assert!(Instant::now() < deadline, "no lease after 30 s: {e:?}\n{}", node.log());
                thread::sleep(Duration::from_millis(200));
            }
        }
    }
}

/// Draws IDs in small batches for `how_long` without a single refusal: past
/// the first lease's ceiling only if the node's renewals are granted.
fn draw_for(node: &Cluster, how_long: Duration) -> Vec<i64> {
    let until = Instant::now() + how_long;
    let mut client = node.connect();
    let mut ids = vec![];
    while Instant::now() < until {
        let rows = client
            .query("SELECT snowflake_nextval() FROM generate_series(1, 200)", &[])
            .unwrap_or_else(|e| panic!("a leased node refused: {}\n{}", common::describe(&e), node.log()));
        ids.extend(rows.iter().map(|r| r.get::<_, i64>(0)));
        thread::sleep(Duration::from_millis(50));
    }
    ids
}

fn worker_of(id: i64) -> i32 {
    ((id >> 12) & 1023) as i32
}

/// The one worker id of `ids`.
fn worker_of_all(ids: &[i64], who: &str) -> i32 {
    let workers: HashSet<i32> = ids.iter().map(|id| worker_of(*id)).collect();
    assert_eq!(workers.len(), 1, "{who}: IDs of one worker id, not {workers:?}");
    *workers.iter().next().unwrap()
}

/// A node's lease as the registry's view shows it.
#[derive(Debug, PartialEq)]
struct Row {
    worker_id: i32,
    lease_epoch: i64,
    ceiling_ms: i64,
    state: String,
}

fn lease_of(registry: &Cluster, node_name: &str) -> Row {
    let row = registry
        .connect()
        .query_one(
            "SELECT worker_id, lease_epoch, (extract(epoch FROM ceiling) * 1000)::bigint, state
               FROM snowflake_registry WHERE node_name = $1",
            &[&node_name],
        )
        .unwrap_or_else(|e| panic!("the registry's lease of {node_name}: {}", common::describe(&e)));
    Row { worker_id: row.get(0), lease_epoch: row.get(1), ceiling_ms: row.get(2), state: row.get(3) }
}

/// A node of release `node_release` against a registry of `registry_release`:
/// it takes a lease, renews it for more than two leases' time while issuing,
/// and releases it when stopped cleanly.
fn lease_renew_issue_release(registry_release: &Release, node_release: &Release) {
    let registry = registry_on(registry_release);
    let mut node = node_on(node_release, &registry, "skewed", &[]);
    println!("registry {}, node {}", extversion(&registry), extversion(&node));
    assert_ne!(extversion(&registry), extversion(&node), "the registry and the node must be of two releases");

    let first = draw_when_leased(&node, 1_000);
    let granted = lease_of(&registry, "skewed");
    assert_eq!(granted.state, "live", "{granted:?}");
    assert_eq!(worker_of_all(&first, "the node"), granted.worker_id, "{granted:?}");
    assert_eq!(
        node.query_text("SELECT lease_state || ' ' || worker_id || ' ' || lease_epoch FROM snowflake_id_status"),
        format!("held {} {}", granted.worker_id, granted.lease_epoch)
    );

    // 7 s of IDs under a 3 s lease: only renewals carry them past the first
    // ceiling (without them the node refuses, "the registry has not renewed it").
    let later = draw_for(&node, Duration::from_secs(7));
    let renewed = lease_of(&registry, "skewed");
    assert_eq!((renewed.worker_id, renewed.lease_epoch), (granted.worker_id, granted.lease_epoch), "{renewed:?}");
    assert!(renewed.ceiling_ms > granted.ceiling_ms, "never renewed: {granted:?}, then {renewed:?}");
    let last_ms = later.iter().map(|id| id_unix_ms(*id)).max().unwrap();
    assert!(last_ms > granted.ceiling_ms, "no ID past the first ceiling {granted:?}: last at {last_ms}");
    assert!(last_ms <= renewed.ceiling_ms, "an ID at {last_ms} past the granted ceiling {renewed:?}");
    let all: Vec<i64> = first.iter().chain(&later).copied().collect();
    assert_eq!(worker_of_all(&all, "the node"), granted.worker_id);
    assert_strictly_increasing(&all, "one session's IDs");

    // A clean stop releases the worker id at once.
    node.stop();
    let released = lease_of(&registry, "skewed");
    assert_eq!(released.state, "free", "{released:?}\n{}", node.log());
    assert!(!node.log().contains("WARNING"), "{}", node.log());
}

#[test]
fn a_node_of_the_previous_release_leases_from_a_registry_of_the_new_one() {
    let Some((previous, new)) = installations() else { return };
    lease_renew_issue_release(&new, &previous);
}

#[test]
fn a_node_of_the_new_release_leases_from_a_registry_of_the_previous_one() {
    let Some((previous, new)) = installations() else { return };
    lease_renew_issue_release(&previous, &new);
}

/// Nodes of both releases in one namespace of a registry of release
/// `registry_release`: `auto` gives them distinct worker ids, their IDs never
/// collide, and a worker id one kind releases on a clean stop is taken by
/// the other kind at once, right above the last ID issued under it.
fn both_kinds_in_one_namespace(registry_release: &Release, previous: &Release, new: &Release) {
    let registry = registry_on(registry_release);
    let mut old_node = node_on(previous, &registry, "old", &[]);
    let mut new_node = node_on(new, &registry, "new", &[]);
    assert_ne!(extversion(&old_node), extversion(&new_node));
    draw_when_leased(&old_node, 1);
    draw_when_leased(&new_node, 1);
    // Both at once, over more than a lease.
    let (old_ids, new_ids) = thread::scope(|s| {
        let old = s.spawn(|| draw_for(&old_node, Duration::from_secs(5)));
        let new = s.spawn(|| draw_for(&new_node, Duration::from_secs(5)));
        (old.join().unwrap(), new.join().unwrap())
    });
    let (old_worker, new_worker) = (worker_of_all(&old_ids, "old"), worker_of_all(&new_ids, "new"));
    assert_ne!(old_worker, new_worker, "two live nodes on one worker id");
    assert_eq!(lease_of(&registry, "old").worker_id, old_worker);
    assert_eq!(lease_of(&registry, "new").worker_id, new_worker);
    assert_no_duplicates([&old_ids, &new_ids]);

    // The new node stops cleanly; a node of the previous release asks for
    // exactly its worker id and gets it at once, above the new node's IDs.
    new_node.stop();
    assert_eq!(lease_of(&registry, "new").state, "free", "{}", new_node.log());
    let wanted = format!("snowflake_id.worker_id = {new_worker}");
    let old_after = node_on(previous, &registry, "old-after", &[&wanted]);
    let old_after_ids = draw_when_leased(&old_after, 1_000);
    assert_eq!(worker_of_all(&old_after_ids, "old-after"), new_worker);
    assert_all_above(&new_ids, &old_after_ids, "a node of the previous release after one of the new");

    // And the reverse.
    old_node.stop();
    assert_eq!(lease_of(&registry, "old").state, "free", "{}", old_node.log());
    let wanted = format!("snowflake_id.worker_id = {old_worker}");
    let new_after = node_on(new, &registry, "new-after", &[&wanted]);
    let new_after_ids = draw_when_leased(&new_after, 1_000);
    assert_eq!(worker_of_all(&new_after_ids, "new-after"), old_worker);
    assert_all_above(&old_ids, &new_after_ids, "a node of the new release after one of the previous");

    assert_no_duplicates([&old_ids, &new_ids, &old_after_ids, &new_after_ids]);
    let live = registry.query_i64("SELECT count(*) FROM snowflake_registry WHERE state = 'live'");
    assert_eq!(live, 2, "old-after and new-after");
}

#[test]
fn nodes_of_both_releases_share_a_namespace_of_a_new_registry() {
    let Some((previous, new)) = installations() else { return };
    both_kinds_in_one_namespace(&new, &previous, &new);
}

#[test]
fn nodes_of_both_releases_share_a_namespace_of_a_previous_registry() {
    let Some((previous, new)) = installations() else { return };
    both_kinds_in_one_namespace(&previous, &previous, &new);
}

/// The rolling update's first step: a registry of the previous release,
/// set up as its docs said, is updated in place (the new library, a
/// restart, `ALTER EXTENSION snowflake_id UPDATE`) while a node of the
/// previous release holds a lease from it. The node renews through the
/// update with the grants its role was given before, and releases on a
/// clean stop; a node of the new release then leases as the same role.
#[test]
fn a_node_of_the_previous_release_renews_through_its_registrys_update() {
    let Some((previous, new)) = installations() else { return };
    let mut registry = registry_on(&previous);
    let before = extversion(&registry);
    // A lease long enough to ride out the registry's restart.
    let mut node = node_on(&previous, &registry, "old", &["snowflake_id.registry_lease = '10s'"]);
    let first = draw_when_leased(&node, 1_000);
    let granted = lease_of(&registry, "old");

    registry.stop();
    registry.use_bin(&new.bin);
    registry.start();
    registry.sql("ALTER EXTENSION snowflake_id UPDATE");
    assert_ne!(extversion(&registry), before, "the registry was not updated");
    // Renewed by the updated registry: the ceiling moves on, same epoch.
    let deadline = Instant::now() + Duration::from_secs(20);
    let before_update = lease_of(&registry, "old").ceiling_ms;
    let later = loop {
        let ids = draw_for(&node, Duration::from_secs(1));
        let now = lease_of(&registry, "old");
        if now.ceiling_ms > before_update {
            assert_eq!((now.worker_id, now.lease_epoch), (granted.worker_id, granted.lease_epoch), "{now:?}");
            break ids;
        }
        assert!(Instant::now() < deadline, "no renewal by the updated registry: {now:?}\n{}", node.log());
    };
    assert_strictly_increasing(&first.iter().chain(&later).copied().collect::<Vec<_>>(), "the node's IDs");
    node.stop();
    assert_eq!(lease_of(&registry, "old").state, "free", "{}", node.log());

    let new_node = node_on(&new, &registry, "new", &[]);
    let new_ids = draw_when_leased(&new_node, 1_000);
    assert_no_duplicates([&first, &later, &new_ids]);
}

/// The previous release's commit, as scripts/previous_release.sh names it.
fn previous_release_commit() -> String {
    let script = fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/previous_release.sh"))
        .expect("scripts/previous_release.sh");
    let commit = script.lines().find_map(|l| l.strip_prefix("PREVIOUS_RELEASE="));
    commit.expect("no PREVIOUS_RELEASE= line in scripts/previous_release.sh").trim().to_string()
}

/// The file `path` as it is at `commit`, from the repository's history.
fn git_show(commit: &str, path: &str) -> String {
    let out = Command::new("git")
        .args(["-C", env!("CARGO_MANIFEST_DIR"), "show", &format!("{commit}:{path}")])
        .output()
        .expect("git");
    assert!(out.status.success(), "git show {commit}:{path}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// The registry's functions a node of `commit` calls, each with the exact
/// argument types it names: its `registry_session::signature` module, read
/// from the repository's history.
fn calls_of(commit: &str) -> Vec<(String, Vec<String>)> {
    // Where that release kept it: 0.9.0 grouped src/service/ by feature.
    let file = ["src/service/registry/session.rs", "src/service/registry_session.rs"]
        .into_iter()
        .find(|f| {
            Command::new("git")
                .args(["-C", env!("CARGO_MANIFEST_DIR"), "cat-file", "-e", &format!("{commit}:{f}")])
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })
        .unwrap_or_else(|| panic!("{commit} has no registry session module at either known path"));
    let text = git_show(commit, file);
    let module = text.split_once("pub mod signature {").map(|(_, m)| m).unwrap_or_else(|| {
        panic!("{commit}:{file} has no signature module: where does that release name its calls' types?")
    });
    let mut types = std::collections::HashMap::new();
    let mut calls = vec![];
    for line in module.lines().map(str::trim).take_while(|l| *l != "}") {
        let Some((name, value)) = line.split_once(':') else { continue };
        let name = name.trim_start_matches("pub ").trim_start_matches("const ").trim();
        let value = value.split_once('=').map(|(_, v)| v.trim().trim_end_matches(';')).unwrap_or_default();
        if let Some(quoted) = value.strip_prefix('"') {
            types.insert(name.to_string(), quoted.trim_end_matches('"').to_string());
        } else if let Some(list) = value.strip_prefix('[') {
            let names = list.trim_end_matches(']').split(',').map(str::trim);
            let args = names.map(|t| types.get(t).cloned().unwrap_or_else(|| panic!("type {t} of {name}"))).collect();
            calls.push((format!("snowflake_registry_{}", name.to_lowercase()), args));
        }
    }
    calls
}

/// What the tests above play end to end, checked on every major without
/// the previous release's build: each call its nodes make, with its exact
/// argument types, names a function of a registry of this release in
/// `snowflake_id_internal` (where 0.7.0 and later nodes call), and the role
/// docs/fleets.md grants may execute it.
#[test]
fn a_registry_of_this_release_serves_every_call_of_the_previous_releases_nodes() {
    let commit = previous_release_commit();
    let calls = calls_of(&commit);
    let names: Vec<&str> = calls.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(
        names,
        [
            "snowflake_registry_acquire",
            "snowflake_registry_renew",
            "snowflake_registry_release",
            "snowflake_registry_history_of",
            "snowflake_registry_record_history"
        ],
        "the calls of {commit}"
    );
    let registry = registry_on(&this_release());
    let mut c = registry.connect();
    for (function, types) in &calls {
        let signature = format!("snowflake_id_internal.{function}({})", types.join(", "));
        let row = c
            .query_one(
                "SELECT pg_catalog.has_function_privilege('snowflake_node', f, 'EXECUTE')
                   FROM (SELECT pg_catalog.to_regprocedure($1) AS f) s",
                &[&signature],
            )
            .unwrap_or_else(|e| panic!("{signature}: {}", common::describe(&e)));
        let allowed: Option<bool> = row.get(0);
        assert_eq!(
            allowed,
            Some(true),
            "{signature}, called by nodes of {commit} (None: no such function; false: the node role may not call it)"
        );
    }
}
