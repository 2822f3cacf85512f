//! The Debian package that `scripts/package.sh` builds (scripts/test.sh
//! builds it before the integration tests): its metadata and exact contents,
//! then `dpkg -i` on this machine, the demo's checks against a server that
//! loads the packaged library, and `dpkg -r`, putting back whatever files
//! the package replaced, so the machine is left as it was found, also when
//! the test fails. Debian 12 has PostgreSQL 15 only, so the install test
//! runs on 15 alone: with `SNOWFLAKE_PG_BIN` naming another major it says so
//! and passes without testing (the package of another major is built by
//! `PG_MAJOR=NN scripts/package.sh`, not installed here).

mod common;

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::Cluster;

const PACKAGE: &str = "postgresql-15-snowflake-id";

fn deb() -> PathBuf {
    let version = env!("CARGO_PKG_VERSION");
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("target/debian/{PACKAGE}_{version}_amd64.deb"));
    assert!(path.exists(), "{} is missing: run scripts/package.sh (scripts/test.sh does)", path.display());
    path
}

fn output(cmd: &mut Command) -> String {
    let out = cmd.output().expect("run command");
    assert!(out.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Files the package installs, as absolute paths.
fn files(deb: &Path) -> BTreeSet<String> {
    output(Command::new("dpkg-deb").arg("-c").arg(deb))
        .lines()
        .filter(|l| l.starts_with('-'))
        .filter_map(|l| l.split_whitespace().last())
        .map(|p| p.trim_start_matches('.').to_string())
        .collect()
}

/// Removes the package and restores the files it replaced, on drop.
struct Installed {
    _backup: tempfile::TempDir,
    /// (saved copy, original path) of each file the package overwrote.
    replaced: Vec<(PathBuf, String)>,
}

impl Installed {
    fn install(deb: &Path, files: &BTreeSet<String>) -> Installed {
        let backup = tempfile::tempdir().expect("backup dir");
        let mut replaced = Vec::new();
        for (i, f) in files.iter().enumerate() {
            if Path::new(f).exists() {
                let saved = backup.path().join(i.to_string());
                fs::copy(f, &saved).expect("back up a file the package replaces");
                replaced.push((saved, f.clone()));
            }
        }
        let installed = Installed { _backup: backup, replaced };
        output(Command::new("dpkg").arg("-i").arg(deb));
        installed
    }
}

impl Drop for Installed {
    fn drop(&mut self) {
        let _ = Command::new("dpkg").args(["-r", PACKAGE]).output();
        for (saved, original) in &self.replaced {
            let _ = fs::copy(saved, original);
        }
    }
}

#[test]
fn debian_package_installs_exactly_the_extension_and_works() {
    if !common::only_on_major(15, "the package installs into Debian 12's PostgreSQL 15, the only one dpkg knows") {
        return;
    }
    let deb = deb();
    let field = |name: &str| output(Command::new("dpkg-deb").arg("-f").arg(&deb).arg(name)).trim().to_string();
    assert_eq!(field("Package"), PACKAGE);
    assert_eq!(field("Version"), env!("CARGO_PKG_VERSION"));
    assert_eq!(field("Architecture"), "amd64");
    assert!(field("Depends").starts_with("postgresql-15,"), "{}", field("Depends"));
    let version = env!("CARGO_PKG_VERSION");
    let mut expected: BTreeSet<String> = [
        "/usr/lib/postgresql/15/lib/snowflake_id.so".to_string(),
        "/usr/share/postgresql/15/extension/snowflake_id.control".to_string(),
        format!("/usr/share/postgresql/15/extension/snowflake_id--{version}.sql"),
    ]
    .into_iter()
    .collect();
    // Every upgrade script in sql/, so that a database at any released
    // version can update (PostgreSQL chains them): 0.1.0 -> 0.2.0 -> ... -> this one.
    let upgrades: BTreeSet<String> = fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/sql"))
        .expect("sql/")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("snowflake_id--") && n.ends_with(".sql") && n.matches("--").count() == 2)
        .collect();
    assert!(upgrades.contains("snowflake_id--0.1.0--0.2.0.sql"), "{upgrades:?}");
    assert!(upgrades.iter().any(|n| n.ends_with(&format!("--{version}.sql"))), "{upgrades:?}");
    expected.extend(upgrades.iter().map(|n| format!("/usr/share/postgresql/15/extension/{n}")));
    let contents = files(&deb);
    assert_eq!(contents, expected);
    assert!(
        Command::new("dpkg-query").args(["-W", PACKAGE]).output().map(|o| !o.status.success()).unwrap_or(true),
        "{PACKAGE} is already installed on this machine; remove it before running this test"
    );

    let _installed = Installed::install(&deb, &contents);
    let owner = output(Command::new("dpkg").args(["-S", "/usr/lib/postgresql/15/lib/snowflake_id.so"]));
    assert!(owner.starts_with(PACKAGE), "{owner}");

    // The demo's checks, against the packaged library.
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 1"]);
    let mut c = cluster.connect();
    c.batch_execute(
        "CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), item text);
         INSERT INTO orders (item) VALUES ('tea'), ('cake'), ('scones');",
    )
    .unwrap();
    let row = c
        .query_one(
            "SELECT count(*), bool_and(d.worker_id = 1), bool_and(abs(extract(epoch FROM d.ts - now())) < 60),
                    count(*) FILTER (WHERE o.id >= snowflake_from_timestamp(now() - interval '1 minute'))
               FROM orders o, snowflake_decode(o.id) d",
            &[],
        )
        .unwrap();
    assert_eq!(row.get::<_, i64>(0), 3);
    assert!(row.get::<_, bool>(1) && row.get::<_, bool>(2));
    assert_eq!(row.get::<_, i64>(3), 3);
    let distinct: i64 = c
        .query_one(
            "SELECT count(DISTINCT id) FROM (SELECT snowflake_nextval() AS id FROM generate_series(1, 100000)) t",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(distinct, 100_000);
    let version_row: String =
        c.query_one("SELECT extversion FROM pg_extension WHERE extname = 'snowflake_id'", &[]).unwrap().get(0);
    assert_eq!(version_row, version);
    c.query_one("SELECT mark_writes FROM snowflake_id_status", &[]).unwrap();
}

/// PGXN's META.json describes the version the crate builds.
#[test]
fn pgxn_meta_names_this_version() {
    let meta = fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/META.json")).expect("META.json");
    let version = format!("\"version\": \"{}\"", env!("CARGO_PKG_VERSION"));
    assert_eq!(meta.matches(&version).count(), 2, "META.json's release and provides versions: {version}");
    assert!(meta.contains("\"name\": \"snowflake_id\""));
}
