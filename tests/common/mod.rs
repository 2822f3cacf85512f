//! Throwaway PostgreSQL clusters for the integration tests.
//!
//! The server under test is the one whose `bin` directory `SNOWFLAKE_PG_BIN`
//! names (default: Debian's 15, `/usr/lib/postgresql/15/bin`); `scripts/test.sh`
//! sets it for each major it tests. Each cluster has its own data directory and socket directory under a
//! temporary directory, runs as the `postgres` user (PostgreSQL refuses
//! root), listens on no TCP address, and is stopped when the `Cluster` is
//! dropped, which also happens when a test panics. The extension must be
//! installed in that server first (`scripts/test.sh` does it).

#![allow(dead_code)]

use std::collections::HashSet;
use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use postgres::{Client, NoTls};

mod initdb;
pub mod soak;
pub mod upgrade;
pub mod waits;

/// What every logical replication node needs, on top of the preload.
pub const LOGICAL: &[&str] = &["wal_level = logical", "max_replication_slots = 10", "max_wal_senders = 10"];

/// A connection string to `node`'s postgres database, for a subscription.
pub fn conninfo(node: &Cluster) -> String {
    format!("host={} port={} dbname=postgres user=postgres", node.socket_dir().display(), node.port)
}

/// The bin directory of Debian's PostgreSQL 15, used when `SNOWFLAKE_PG_BIN` is not set.
pub const DEFAULT_BIN: &str = "/usr/lib/postgresql/15/bin";
pub const LIBFAKETIME: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";

static NEXT_PORT: AtomicU16 = AtomicU16::new(0);

/// The bin directory of the server under test: the one place that says
/// which PostgreSQL the tests run against.
pub fn bin() -> &'static str {
    static BIN: OnceLock<String> = OnceLock::new();
    BIN.get_or_init(|| match std::env::var("SNOWFLAKE_PG_BIN") {
        Ok(dir) if !dir.is_empty() => {
            let dir = dir.trim_end_matches('/').to_string();
            assert!(
                Path::new(&dir).join("pg_ctl").exists(),
                "SNOWFLAKE_PG_BIN={dir} has no pg_ctl (bash scripts/pg_servers.sh --bindir NN prints a major's)"
            );
            dir
        }
        _ => DEFAULT_BIN.to_string(),
    })
}

/// The path of one of the server's programs (`initdb`, `pg_ctl`, `pg_dump` ...).
pub fn tool(name: &str) -> String {
    format!("{}/{name}", bin())
}

/// The major version of the server under test, as its pg_config reports it.
pub fn pg_major() -> u32 {
    static MAJOR: OnceLock<u32> = OnceLock::new();
    *MAJOR.get_or_init(|| {
        let out =
            check("pg_config --version", Command::new(tool("pg_config")).arg("--version").output().expect("pg_config"));
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        // "PostgreSQL 15.14 (Debian 15.14-0+deb12u1)", "PostgreSQL 18.6"
        text.split_whitespace()
            .nth(1)
            .and_then(|v| v.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|m| m.parse().ok())
            .unwrap_or_else(|| panic!("no major version in {:?} of {}", text.trim(), tool("pg_config")))
    })
}

/// True when the server under test is PostgreSQL `major`; otherwise says
/// that the calling test is skipped and why, so that a run on another major
/// shows what it did not cover. Usage: `if !common::only_on_major(15, "...") { return; }`
pub fn only_on_major(major: u32, why: &str) -> bool {
    let running = pg_major();
    if running != major {
        record_skip("major", &format!("{why} (not on {running})"));
    }
    running == major
}

/// Says that the calling test does not run on this major by design (a
/// feature the major lacks, `origin = none` before 16, say) and records the
/// skip for scripts/test.sh, as [`only_on_major`] does; the caller returns.
pub fn not_on_this_major(why: &str) {
    record_skip("major", &format!("{why} (not on {})", pg_major()));
}

/// The calling test as `binary::test`, the name `SNOWFLAKE_SKIP` takes:
/// libtest runs each test in a thread named after it (`module::test`).
pub fn test_name() -> String {
    let thread = std::thread::current();
    let test = thread.name().filter(|n| *n != "main").unwrap_or("?");
    format!("{}::{test}", env!("CARGO_CRATE_NAME"))
}

/// Whether the test command named the calling test in `SNOWFLAKE_SKIP`
/// (names separated by spaces or commas).
pub fn skipped_by_name() -> bool {
    let me = test_name();
    std::env::var("SNOWFLAKE_SKIP").is_ok_and(|list| list.split([' ', ',', '\n']).any(|n| n == me))
}

/// The calling test cannot run its subject here (a server, Citus or
/// pglogical missing): a test that passed then would hide a broken setup,
/// so it fails, unless the test command said to skip it by name
/// (`SNOWFLAKE_SKIP="binary::test ..."`); then it records the skip and
/// returns, and the caller returns. Usage: `return common::cannot_run("...");`
pub fn cannot_run(why: &str) {
    let me = test_name();
    if !skipped_by_name() {
        panic!(
            "CANNOT RUN {me} on PostgreSQL {} ({}): {why}. Install what it needs, or skip it by name: \
             SNOWFLAKE_SKIP=\"{me}\"",
            pg_major(),
            bin()
        );
    }
    record_skip("by-name", why);
}

/// Says on stderr that the calling test is skipped, and appends
/// `kind<TAB>binary::test<TAB>why` to the file `SNOWFLAKE_SKIP_LOG` names
/// (scripts/test.sh sets one per binary and counts skipped tests from it:
/// libtest counts them as passed). `kind`: `major` (not on this major by
/// design) or `by-name` (`SNOWFLAKE_SKIP` named it).
fn record_skip(kind: &str, why: &str) {
    let me = test_name();
    let why = why.replace(['\t', '\n'], " ");
    // One write each, so that lines of tests running at once do not mix;
    // straight to stderr: libtest swallows eprintln! of a passing test.
    let line = format!("SKIPPED on PostgreSQL {} ({}): {me}: {why}\n", pg_major(), bin());
    let _ = std::io::stderr().write_all(line.as_bytes());
    if let Some(path) = std::env::var_os("SNOWFLAKE_SKIP_LOG").filter(|p| !p.is_empty()) {
        let record = format!("{kind}\t{me}\t{why}\n");
        let mut file = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .unwrap_or_else(|e| panic!("SNOWFLAKE_SKIP_LOG={}: {e}", Path::new(&path).display()));
        file.write_all(record.as_bytes()).expect("write SNOWFLAKE_SKIP_LOG");
    }
}

pub struct Cluster {
    dir: tempfile::TempDir,
    /// The bin directory of this cluster's PostgreSQL: [`bin()`] unless
    /// made by [`Cluster::init_with_bin`] (the old cluster of pg_upgrade).
    bin: String,
    pub port: u16,
    /// Extra environment for the server process (libfaketime).
    env: Vec<(String, String)>,
    running: bool,
}

pub fn run_as_postgres(args: &[&str], env: &[(String, String)]) -> Output {
    let mut cmd = Command::new("runuser");
    cmd.args(["-u", "postgres", "--", "env"]);
    for (k, v) in env {
        cmd.arg(format!("{k}={v}"));
    }
    cmd.args(args);
    cmd.output().expect("runuser failed to start")
}

pub fn check(what: &str, out: Output) -> Output {
    assert!(
        out.status.success(),
        "{what} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

impl Cluster {
    /// A private directory and port for a cluster not made yet.
    fn empty() -> Cluster {
        let dir = tempfile::Builder::new().prefix("snowflake_id_test.").tempdir().expect("tempdir");
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o777)).expect("chmod");
        // Room for several clusters per test process (primaries and standbys).
        let port = 56000 + (std::process::id() % 250) as u16 * 32 + NEXT_PORT.fetch_add(1, Ordering::Relaxed) % 32;
        Cluster { dir, bin: bin().to_string(), port, env: vec![], running: false }
    }

    /// Where this cluster listens, and `conf` after it, in postgresql.conf.
    fn configure(&self, conf: &[&str]) {
        let socket = self.dir.path().display().to_string();
        let mut lines = vec![
            format!("port = {}", self.port),
            format!("unix_socket_directories = '{socket}'"),
            "listen_addresses = ''".into(),
            "fsync = on".into(),
            "max_connections = 40".into(),
            "shared_buffers = 32MB".into(),
        ];
        lines.extend(conf.iter().map(|s| s.to_string()));
        self.append_conf(&lines.iter().map(String::as_str).collect::<Vec<_>>());
    }

    /// One of this cluster's programs.
    pub fn tool(&self, name: &str) -> String {
        format!("{}/{name}", self.bin)
    }

    /// psql as `user` in `db` through this cluster's socket, run as the docs
    /// give every command (`-X -q -v ON_ERROR_STOP=1`: a failing statement
    /// fails the run); the caller adds `-f FILE` or other options.
    pub fn psql(&self, user: &str, db: &str) -> Command {
        let mut psql = Command::new(self.tool("psql"));
        psql.args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-h"]).arg(self.socket_dir()).args([
            "-p",
            &self.port.to_string(),
            "-U",
            user,
            "-d",
            db,
        ]);
        psql
    }

    /// initdb a new cluster with `conf` appended to postgresql.conf. Not started.
    pub fn init(conf: &[&str]) -> Cluster {
        Cluster::init_with_bin(bin(), &[], conf)
    }

    /// [`Cluster::init`] with the PostgreSQL of `bin_dir` rather than the
    /// server under test, and `initdb_args` added to initdb's.
    pub fn init_with_bin(bin_dir: &str, initdb_args: &[&str], conf: &[&str]) -> Cluster {
        let mut c = Cluster::empty();
        c.bin = bin_dir.to_string();
        initdb::copy_of_template(bin_dir, initdb_args, &c.data());
        c.configure(conf);
        c
    }

    /// A streaming standby of the running `primary`, made as a DBA makes one
    /// (`pg_basebackup -R -X stream`), with its own port and socket and
    /// `conf` appended. Not started.
    pub fn standby_of(primary: &Cluster, conf: &[&str]) -> Cluster {
        Cluster::base_backup_of(primary, &["-R"], conf)
    }

    /// A copy of the running `primary`'s data directory that starts as a
    /// primary on the same timeline (`pg_basebackup` without `-R`, as a VM
    /// snapshot would be): same system identifier, same state file. Its own
    /// port and socket, `conf` appended. Not started.
    pub fn copy_of(primary: &Cluster, conf: &[&str]) -> Cluster {
        Cluster::base_backup_of(primary, &[], conf)
    }

    fn base_backup_of(primary: &Cluster, extra: &[&str], conf: &[&str]) -> Cluster {
        let mut c = Cluster::empty();
        c.bin = primary.bin.clone();
        let (socket, port) = (primary.socket_dir().display().to_string(), primary.port.to_string());
        check(
            "pg_basebackup",
            run_as_postgres(
                &[
                    &primary.tool("pg_basebackup"),
                    "-h",
                    &socket,
                    "-p",
                    &port,
                    "-U",
                    "postgres",
                    "-D",
                    c.data().to_str().unwrap(),
                    "-X",
                    "stream",
                    "-c",
                    "fast",
                ]
                .iter()
                .chain(extra)
                .copied()
                .collect::<Vec<_>>(),
                &[],
            ),
        );
        c.configure(conf);
        c
    }

    /// `pg_ctl promote`, waiting until the server accepts writes.
    pub fn promote(&self) {
        let data = self.data();
        check(
            "pg_ctl promote",
            run_as_postgres(&[&self.tool("pg_ctl"), "-D", data.to_str().unwrap(), "-w", "-t", "60", "promote"], &[]),
        );
    }

    /// Waits until this standby has replayed WAL up to `lsn` (text, as
    /// `pg_lsn` prints it).
    pub fn wait_replayed(&self, lsn: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut client = self.connect();
        loop {
            let done: bool = client
                .query_one("SELECT pg_last_wal_replay_lsn() >= $1::text::pg_lsn", &[&lsn])
                .expect("replay position")
                .get(0);
            if done {
                return;
            }
            assert!(Instant::now() < deadline, "standby did not replay up to {lsn}:\n{}", self.log());
            thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until a new connection shows `value` for setting `name`: the
    /// postmaster has processed a reload, so every backend started from now
    /// on has it (a fixed sleep only guesses that it has).
    pub fn wait_for_setting(&self, name: &str, value: &str) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let now = self.query_text(&format!("SHOW {name}"));
            if now == value {
                return;
            }
            assert!(Instant::now() < deadline, "{name} is still {now:?} after a reload to {value:?}");
            thread::sleep(Duration::from_millis(50));
        }
    }

    /// One text value of a query.
    pub fn query_text(&self, sql: &str) -> String {
        self.connect().query_one(sql, &[]).unwrap_or_else(|e| panic!("{sql}: {}", describe(&e))).get(0)
    }

    /// The usual test cluster: preloaded, started, extension created.
    pub fn preloaded(conf: &[&str]) -> Cluster {
        let c = Cluster::preloaded_without_extension(conf);
        c.sql("CREATE EXTENSION snowflake_id");
        c
    }

    /// A worker id registry for nodes to lease from: a plain server with the
    /// extension, started; a registry needs no preload.
    pub fn registry() -> Cluster {
        let mut cluster = Cluster::init(&[]);
        cluster.start();
        cluster.sql("CREATE EXTENSION snowflake_id");
        cluster
    }

    /// The line that makes a node lease its worker id from `registry`.
    pub fn registry_line(&self) -> String {
        format!(
            "snowflake_id.registry = 'host={} port={} dbname=postgres user=postgres'",
            self.socket_dir().display(),
            self.port
        )
    }

    /// A node leasing its worker id from `registry` (see [`Cluster::registry`]),
    /// named `name`, with `conf` on top; started, extension created.
    pub fn leased_node(registry: &Cluster, name: &str, conf: &[&str]) -> Cluster {
        let registry_line = registry.registry_line();
        let name_line = format!("snowflake_id.node_name = '{name}'");
        let mut lines = vec!["shared_preload_libraries = 'snowflake_id'", registry_line.as_str(), name_line.as_str()];
        lines.extend_from_slice(conf);
        let mut cluster = Cluster::init(&lines);
        cluster.start();
        cluster.sql("CREATE EXTENSION snowflake_id");
        cluster
    }

    /// Preloaded and started, with no extension created in any database.
    pub fn preloaded_without_extension(conf: &[&str]) -> Cluster {
        let mut lines = vec!["shared_preload_libraries = 'snowflake_id'"];
        lines.extend_from_slice(conf);
        let mut c = Cluster::init(&lines);
        c.start();
        c
    }

    pub fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }
    pub fn socket_dir(&self) -> &Path {
        self.dir.path()
    }
    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("server.log")
    }
    pub fn log(&self) -> String {
        fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// Later lines win in postgresql.conf, so appending is enough to change a setting.
    pub fn append_conf(&self, lines: &[&str]) {
        let path = self.data().join("postgresql.conf");
        let mut text = fs::read_to_string(&path).expect("read postgresql.conf");
        for l in lines {
            text.push_str(l);
            text.push('\n');
        }
        fs::write(&path, text).expect("write postgresql.conf");
    }

    /// The PostgreSQL installation in `bin_dir` runs this data directory
    /// from the next start on: a new build of the library installed in
    /// place (tests/skew.rs updates a registry of the previous release so).
    pub fn use_bin(&mut self, bin_dir: &str) {
        self.bin = bin_dir.to_string();
    }

    /// Environment for the server from the next start on.
    pub fn set_env(&mut self, env: Vec<(&str, String)>) {
        self.env = env.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    }

    pub fn start(&mut self) {
        if let Err(stderr) = self.try_start() {
            panic!("pg_ctl start failed: {stderr}\n--- server log ---\n{}", self.log());
        }
    }

    /// Starts the server; on failure returns pg_ctl's message (the server
    /// log says why).
    pub fn try_start(&mut self) -> Result<(), String> {
        let out = run_as_postgres(
            &[
                &self.tool("pg_ctl"),
                "-D",
                self.data().to_str().unwrap(),
                "-l",
                self.log_path().to_str().unwrap(),
                "-w",
                "-t",
                "60",
                "start",
            ],
            &self.env,
        );
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).into_owned());
        }
        self.running = true;
        Ok(())
    }

    pub fn stop(&mut self) {
        if self.running {
            let data = self.data();
            let out =
                run_as_postgres(&[&self.tool("pg_ctl"), "-D", data.to_str().unwrap(), "-m", "fast", "-w", "stop"], &[]);
            check("pg_ctl stop", out);
            self.running = false;
        }
    }

    /// `pg_ctl stop -m immediate`: no shutdown checkpoint, no clean exit of
    /// the background workers (a crash, as far as the server's files go).
    pub fn stop_immediate(&mut self) {
        if self.running {
            let data = self.data();
            let out = run_as_postgres(
                &[&self.tool("pg_ctl"), "-D", data.to_str().unwrap(), "-m", "immediate", "-w", "stop"],
                &[],
            );
            check("pg_ctl stop -m immediate", out);
            self.running = false;
        }
    }

    /// Another program (pg_upgrade) may start this cluster's server: stop
    /// whatever runs there when the cluster is dropped, also on failure.
    pub fn stop_on_drop(&mut self) {
        self.running = true;
    }

    /// Waits up to a minute until the server accepts connections and
    /// answers a query: after a crash, while it recovers.
    pub fn wait_accepting(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(mut c) = self.config().connect(NoTls) {
                if c.simple_query("SELECT 1").is_ok() {
                    return;
                }
            }
            assert!(
                Instant::now() < deadline,
                "the server on port {} does not accept connections:\n{}",
                self.port,
                self.log()
            );
            thread::sleep(Duration::from_millis(100));
        }
    }

    /// `chmod` of the data directory: "0500" makes it refuse new files (the
    /// state file is written through a new temporary file), "0700" is
    /// PostgreSQL's own again.
    pub fn chmod_data(&self, mode: &str) {
        let ok = Command::new("chmod").args([mode, self.data().to_str().unwrap()]).status().expect("chmod");
        assert!(ok.success());
    }

    pub fn restart(&mut self) {
        self.stop();
        self.start();
    }

    pub fn postmaster_pid(&self) -> i32 {
        let pidfile = fs::read_to_string(self.data().join("postmaster.pid")).expect("postmaster.pid");
        pidfile.lines().next().and_then(|l| l.trim().parse().ok()).expect("pid in postmaster.pid")
    }

    /// How many mark keepers run under this cluster's postmaster, found by
    /// process title as `ps` shows them (not through a connection).
    pub fn keeper_processes(&self) -> usize {
        let keepers = Command::new("pgrep")
            .args(["-P", &self.postmaster_pid().to_string(), "-f", "snowflake_id mark keeper"])
            .output()
            .expect("pgrep");
        String::from_utf8_lossy(&keepers.stdout).lines().count()
    }

    /// Sends `signal` ("STOP", "CONT"...) to the postmaster and every process
    /// it started, with one `kill`, and returns kill's status: not a success
    /// when one of them was gone by then (a backend that just exited).
    pub fn try_signal_all(&self, signal: &str) -> std::io::Result<ExitStatus> {
        let pid = self.postmaster_pid().to_string();
        let children = Command::new("pgrep").args(["-P", &pid]).output().expect("pgrep");
        let mut pids: Vec<String> =
            String::from_utf8_lossy(&children.stdout).split_whitespace().map(String::from).collect();
        pids.push(pid);
        Command::new("kill").arg(format!("-{signal}")).args(&pids).status()
    }

    /// [`Cluster::try_signal_all`], which must reach every process.
    pub fn signal_all(&self, signal: &str) {
        let ok = self.try_signal_all(signal).expect("kill");
        assert!(ok.success());
    }

    /// `kill -9` the postmaster, then wait until it and its children are
    /// gone (a zombie postmaster keeps the lock file busy for a moment).
    pub fn crash(&mut self) {
        let pid = self.postmaster_pid();
        let children = Command::new("pgrep").args(["-P", &pid.to_string()]).output().expect("pgrep");
        let children: Vec<i32> =
            String::from_utf8_lossy(&children.stdout).lines().filter_map(|l| l.trim().parse().ok()).collect();
        assert!(Command::new("kill").args(["-9", &pid.to_string()]).status().expect("kill").success());
        let deadline = Instant::now() + Duration::from_secs(60);
        let alive = |p: i32| Path::new(&format!("/proc/{p}")).exists() && !is_zombie(p);
        while alive(pid) || children.iter().any(|c| alive(*c)) || Path::new(&format!("/proc/{pid}")).exists() {
            assert!(Instant::now() < deadline, "postmaster {pid} did not go away after kill -9");
            thread::sleep(Duration::from_millis(100));
        }
        // The children notice the postmaster's death on their own and exit.
        while children.iter().any(|c| Path::new(&format!("/proc/{c}")).exists()) {
            assert!(Instant::now() < deadline, "backends of {pid} did not exit");
            thread::sleep(Duration::from_millis(100));
        }
        self.running = false;
    }

    pub fn config(&self) -> postgres::Config {
        let mut cfg = postgres::Config::new();
        cfg.host_path(self.socket_dir()).port(self.port).user("postgres").dbname("postgres");
        cfg
    }

    pub fn connect(&self) -> Client {
        self.config().connect(NoTls).unwrap_or_else(|e| panic!("connect: {e}\n--- server log ---\n{}", self.log()))
    }

    /// A connection whose NOTICEs and WARNINGs are collected in the returned list.
    pub fn connect_collecting_notices(&self) -> (Client, Arc<Mutex<Vec<String>>>) {
        let notices = Arc::new(Mutex::new(Vec::new()));
        let sink = notices.clone();
        let mut cfg = self.config();
        cfg.notice_callback(move |n| sink.lock().push(format!("{}: {}", n.severity(), n.message())));
        (cfg.connect(NoTls).expect("connect"), notices)
    }

    pub fn sql(&self, sql: &str) {
        self.connect().batch_execute(sql).unwrap_or_else(|e| panic!("{sql}: {}", describe(&e)));
    }

    pub fn query_i64(&self, sql: &str) -> i64 {
        self.connect().query_one(sql, &[]).unwrap_or_else(|e| panic!("{sql}: {}", describe(&e))).get(0)
    }

    /// The error a statement fails with: SQLSTATE, message and hint.
    pub fn sql_error(&self, sql: &str) -> DbError {
        sql_error(&mut self.connect(), sql)
    }
}

/// The server's own words for an error, not just "db error".
pub fn describe(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} {}: {} (hint: {:?})", db.severity(), db.code().code(), db.message(), db.hint()),
        None => e.to_string(),
    }
}

fn is_zombie(pid: i32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| s.rsplit(')').next().map(|rest| rest.trim_start().starts_with('Z')).unwrap_or(false))
        .unwrap_or(false)
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if self.running {
            let data = self.data();
            let _ = run_as_postgres(
                &[&self.tool("pg_ctl"), "-D", data.to_str().unwrap(), "-m", "immediate", "-w", "stop"],
                &[],
            );
        }
    }
}

#[derive(Debug)]
pub struct DbError {
    pub code: String,
    pub message: String,
    pub hint: String,
    pub detail: String,
}

impl DbError {
    /// The fields of an error the server sent.
    pub fn of(db: &postgres::error::DbError) -> DbError {
        DbError {
            code: db.code().code().to_string(),
            message: db.message().to_string(),
            hint: db.hint().unwrap_or_default().to_string(),
            detail: db.detail().unwrap_or_default().to_string(),
        }
    }
}

pub fn sql_error(client: &mut Client, sql: &str) -> DbError {
    match client.batch_execute(sql) {
        Ok(()) => panic!("expected an error from {sql}"),
        Err(e) => DbError::of(e.as_db_error().unwrap_or_else(|| panic!("{sql}: not a database error: {e}"))),
    }
}

/// The default layout's epoch, 2025-01-01 00:00:00+00, in Unix milliseconds.
pub const DEFAULT_EPOCH_MS: i64 = 1_735_689_600_000;

/// The Unix time in milliseconds of an ID's time part, in the default
/// layout (10 worker and 12 sequence bits under the time).
pub fn id_unix_ms(id: i64) -> i64 {
    (id >> 22) + DEFAULT_EPOCH_MS
}

/// The mark (`lease_until_tick`, a tick of the layout) in the cluster's
/// state file, read from the file itself; None when there is no file.
pub fn state_file_mark(cluster: &Cluster) -> Option<i64> {
    let text = fs::read_to_string(cluster.data().join("snowflake_id.state")).ok()?;
    let mark = text.lines().find_map(|l| l.strip_prefix("lease_until_tick="));
    Some(mark.and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("no mark in the state file:\n{text}")))
}

/// The first column of every row of `sql`, as IDs.
pub fn ids(client: &mut Client, sql: &str) -> Vec<i64> {
    client.query(sql, &[]).unwrap_or_else(|e| panic!("{sql}: {}", describe(&e))).iter().map(|r| r.get(0)).collect()
}

/// Draws `n` IDs in one statement on `client`, in the order they were made
/// (not sorted: tests of order read this order).
pub fn draw_in_order(client: &mut Client, n: i64) -> Vec<i64> {
    client
        .query("SELECT snowflake_nextval() FROM generate_series(1, $1::bigint)", &[&n])
        .expect("draw")
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// Bulk draws (200,000 IDs a call, 20 ms apart, at most 200 calls) until one
/// fails, and its error; None if none failed. With the data directory
/// unwritable, one fails once the durable mark (about a second of IDs) is
/// used up.
pub fn draw_until_error(client: &mut Client) -> Option<postgres::Error> {
    for _ in 0..200 {
        match client.query("SELECT snowflake_nextval() FROM generate_series(1, 200000)", &[]) {
            Ok(_) => thread::sleep(Duration::from_millis(20)),
            Err(e) => return Some(e),
        }
    }
    None
}

pub fn assert_strictly_increasing(ids: &[i64], what: &str) {
    if let Some(w) = ids.windows(2).position(|w| w[0] >= w[1]) {
        panic!("{what}: IDs not strictly increasing at {w}: {} then {}", ids[w], ids[w + 1]);
    }
}

/// Panics unless every ID of `new` is above every ID of `old`.
pub fn assert_all_above(old: &[i64], new: &[i64], what: &str) {
    let max_old = old.iter().max().expect("old IDs");
    let min_new = new.iter().min().expect("new IDs");
    assert!(min_new > max_old, "{what}: new ID {min_new} is not above old ID {max_old}");
}

/// Panics on the first ID seen twice across all of `groups`.
pub fn assert_no_duplicates<'a>(groups: impl IntoIterator<Item = &'a Vec<i64>>) -> usize {
    let mut seen = HashSet::new();
    for ids in groups {
        for id in ids {
            assert!(seen.insert(*id), "duplicate ID {id}");
        }
    }
    seen.len()
}

/// A libfaketime offset file the server reads on every clock call, so a
/// test can step the server's clock while it runs without touching the
/// machine's clock.
pub struct FakeClock {
    path: PathBuf,
}

impl FakeClock {
    pub fn new(cluster: &Cluster, offset: &str) -> FakeClock {
        let fc = FakeClock { path: cluster.socket_dir().join("faketime.rc") };
        fc.set(offset);
        fc
    }

    /// An offset as libfaketime reads it: "+0", "-1h", "-30s"...
    pub fn set(&self, offset: &str) {
        let tmp = self.path.with_extension("tmp");
        fs::write(&tmp, format!("{offset}\n")).expect("write faketime file");
        fs::set_permissions(&tmp, fs::Permissions::from_mode(0o644)).expect("chmod");
        fs::rename(&tmp, &self.path).expect("rename faketime file");
    }

    /// The environment that makes a server follow this file.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("LD_PRELOAD", LIBFAKETIME.to_string()),
            ("FAKETIME_TIMESTAMP_FILE", self.path.display().to_string()),
            ("FAKETIME_NO_CACHE", "1".to_string()),
            // Only the wall clock steps; PostgreSQL's timeouts keep real time.
            ("FAKETIME_DONT_FAKE_MONOTONIC", "1".to_string()),
        ]
    }
}

impl Cluster {
    /// Starts the server with its clock following a new [`FakeClock`] set
    /// to `offset`, which the test then steps.
    pub fn start_with_fake_clock(&mut self, offset: &str) -> FakeClock {
        let clock = FakeClock::new(self, offset);
        self.set_env(clock.env());
        self.start();
        clock
    }

    /// [`Cluster::preloaded`] with the server's clock following a
    /// [`FakeClock`], at the machine's time ("+0") to begin with.
    pub fn preloaded_with_fake_clock(conf: &[&str]) -> (Cluster, FakeClock) {
        let mut lines = vec!["shared_preload_libraries = 'snowflake_id'"];
        lines.extend_from_slice(conf);
        let mut cluster = Cluster::init(&lines);
        let clock = cluster.start_with_fake_clock("+0");
        cluster.sql("CREATE EXTENSION snowflake_id");
        (cluster, clock)
    }
}

// Accuracy: how far IDs and the durable mark are ahead of the clock. The
// server's clock is the machine's (or a FakeClock's shift of it), so the
// figures are measured on the server, where no client round trip blurs them.

/// Draws one ID and says how far its time part is ahead of the server's
/// clock right after it was made, in seconds (negative: behind).
pub fn draw_one_ahead(client: &mut Client) -> (i64, f64) {
    // The target list is evaluated left to right: the clock is read after the ID.
    let row = client
        .query_one(
            "SELECT id, extract(epoch FROM snowflake_timestamp(id) - at)::float8
               FROM (SELECT snowflake_nextval() AS id, clock_timestamp() AS at OFFSET 0) d",
            &[],
        )
        .unwrap_or_else(|e| panic!("draw one: {}", describe(&e)));
    (row.get(0), row.get(1))
}

/// How far the durable mark is ahead of the server's clock, in seconds;
/// None while the server has no mark.
pub fn mark_ahead(client: &mut Client) -> Option<f64> {
    client
        .query_one("SELECT extract(epoch FROM durable_mark - wall_clock)::float8 FROM snowflake_id_status", &[])
        .unwrap_or_else(|e| panic!("status: {}", describe(&e)))
        .get(0)
}

/// How far the server's clock is from the machine's (a FakeClock offset as
/// the server sees it), in seconds.
pub fn server_clock_offset(client: &mut Client) -> f64 {
    let server: f64 = client
        .query_one("SELECT extract(epoch FROM clock_timestamp())::float8", &[])
        .unwrap_or_else(|e| panic!("clock: {}", describe(&e)))
        .get(0);
    let machine = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_secs_f64();
    server - machine
}

/// Waits until the server's clock is within a second of `offset_s` from the
/// machine's: a FakeClock file is read on every clock call, but a test must
/// not measure before the server follows it.
pub fn wait_for_clock_offset(cluster: &Cluster, offset_s: f64) {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut client = cluster.connect();
    loop {
        let seen = server_clock_offset(&mut client);
        if (seen - offset_s).abs() < 1.0 {
            return;
        }
        assert!(Instant::now() < deadline, "the server's clock is {seen:.1} s off, expected {offset_s:.1} s");
        thread::sleep(Duration::from_millis(100));
    }
}

impl Cluster {
    /// Makes this primary wait for its standbys (`synchronous_standby_names
    /// = '*'`, reloaded), then waits until `standby` streams as a
    /// synchronous one.
    pub fn make_synchronous(&self, standby: &Cluster) {
        self.sql("ALTER SYSTEM SET synchronous_standby_names = '*'");
        self.sql("SELECT pg_reload_conf()");
        self.wait_sync_standby(standby);
    }

    /// Waits until `standby` streams from this primary as a synchronous one
    /// (`synchronous_standby_names` set), so that a failover keeps every
    /// mark the primary waited for.
    pub fn wait_sync_standby(&self, standby: &Cluster) {
        let deadline = Instant::now() + Duration::from_secs(90);
        let sql = "SELECT coalesce(string_agg(sync_state, ','), '') FROM pg_stat_replication";
        loop {
            let state = self.query_text(sql);
            if state == "sync" {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "no synchronous standby on port {} (replication: {state:?})\n--- primary log ---\n{}\n--- standby log ---\n{}",
                self.port,
                self.log(),
                standby.log()
            );
            thread::sleep(Duration::from_millis(100));
        }
    }
}

/// strace attached to a process, delaying each of its fsync calls; detached
/// when dropped (the delayed call then completes).
pub struct SlowFsync(Child);

impl SlowFsync {
    pub fn attach(pid: i32, delay_us: u32) -> SlowFsync {
        let child = Command::new("strace")
            .args(["-qq", "-o", "/dev/null", "-e", "trace=fsync"])
            .arg("-e")
            .arg(format!("inject=fsync:delay_enter={delay_us}"))
            .args(["-p", &pid.to_string()])
            .stdin(Stdio::null())
            .spawn()
            .expect("strace (scripts/setup.sh installs it)");
        SlowFsync(child)
    }
}

impl Drop for SlowFsync {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
