//! pg_upgrade for the tests that run it (tests/server_lifecycle.rs,
//! tests/plants.rs): which majors it is tested to, where the old major's
//! binaries with the library are, and the run itself with what its logs say
//! when it fails.

use std::path::Path;

use super::{bin, cannot_run, not_on_this_major, pg_major, Cluster};

/// The majors pg_upgrade is tested to, each from the one before it: 17 to
/// 18 (both built here from Debian's source packages), 18 to 19 (Debian's
/// experimental binaries). Not from Debian 12's 15.20: that minor stores an
/// attribute option (`pg_attver`) on every column that 18.6 does not know,
/// so on this machine pg_upgrade from it fails for any cluster with a
/// table, with or without the library ("unrecognized parameter").
pub const UPGRADED_TO: [u32; 2] = [18, 19];

/// The bin directory of an installed major, as scripts/pg_servers.sh knows it.
fn bindir_of(major: u32) -> Option<String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/pg_servers.sh");
    let out = std::process::Command::new("bash").arg(script).args(["--bindir", &major.to_string()]).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The bin directory of the old major pg_upgrade starts from, the one
/// before the major under test: `SNOWFLAKE_OLD_PG_BIN` when set
/// (scripts/test.sh sets it to the old major it installed the library into
/// in this run, and to nothing when that major is not part of the run, so
/// that a library left from an earlier run is never what is upgraded), else
/// the installed one; `Err` says why there is none.
fn old_bindir() -> Result<String, String> {
    let (old, new) = (pg_major() - 1, pg_major());
    match std::env::var("SNOWFLAKE_OLD_PG_BIN") {
        Ok(dir) if dir.is_empty() => Err(format!(
            "PostgreSQL {old} is not part of this run (PG_MAJORS=\"{old} {new}\" bash scripts/test.sh tests both)"
        )),
        Ok(dir) => Ok(dir),
        Err(_) => bindir_of(old).ok_or_else(|| {
            format!("PostgreSQL {old} is not installed (PG_MAJORS=\"{old} {new}\" bash scripts/pg_servers.sh)")
        }),
    }
}

/// The old major's bin directory with the library installed in it, for a
/// test of pg_upgrade to the major under test; `None` when the test does not
/// run on this major (recorded as a skip) or cannot run here (a failure,
/// unless skipped by name: a pass that upgraded nothing would hide the gap).
pub fn old_bin_with_the_library() -> Option<String> {
    if !UPGRADED_TO.contains(&pg_major()) {
        not_on_this_major("pg_upgrade is tested to 18 (from 17) and to 19 (from 18)");
        return None;
    }
    let old_bin = match old_bindir() {
        Ok(dir) => dir,
        Err(why) => {
            cannot_run(&why);
            return None;
        }
    };
    let pkglibdir = std::process::Command::new(Path::new(&old_bin).join("pg_config")).arg("--pkglibdir").output();
    let pkglibdir = pkglibdir.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string()).unwrap_or_default();
    let old_lib = Path::new(&pkglibdir).join("snowflake_id.so");
    if !old_lib.exists() {
        cannot_run(&format!("the library is not installed into PostgreSQL {} ({})", pg_major() - 1, old_lib.display()));
        return None;
    }
    Some(old_bin)
}

/// Runs pg_upgrade from the stopped `old` cluster (of `old_bin`) into the
/// stopped, freshly made `new` one (of the major under test), as the
/// `postgres` user, bounded; panics with its output and logs when it fails.
pub fn pg_upgrade(old: &Cluster, old_bin: &str, new: &Cluster) {
    let (old_data, new_data) = (old.data(), new.data());
    let (old_port, new_port) = (old.port.to_string(), new.port.to_string());
    let socket = old.socket_dir().display().to_string();
    let upgrade = new.tool("pg_upgrade");
    // Bounded: a hang fails the test instead of stopping the suite.
    let args = [
        "timeout",
        "600",
        &upgrade,
        "-b",
        old_bin,
        "-B",
        bin(),
        "-d",
        old_data.to_str().unwrap(),
        "-D",
        new_data.to_str().unwrap(),
        "-p",
        &old_port,
        "-P",
        &new_port,
        "-s",
        &socket,
        "-U",
        "postgres",
    ];
    let out = std::process::Command::new("runuser")
        .args(["-u", "postgres", "--"])
        .args(args)
        .current_dir(old.socket_dir())
        .output()
        .expect("pg_upgrade");
    assert!(
        out.status.success(),
        "pg_upgrade failed (exit {:?}; 124 is the 10-minute timeout):\n{}\n{}\n--- its logs ---\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        upgrade_logs(&new_data)
    );
}

/// Each of pg_upgrade's logs under the new data directory: its errors, each
/// with the lines after it (the statement it reports), then its last lines.
fn upgrade_logs(new_data: &Path) -> String {
    let mut text = String::new();
    let Ok(runs) = std::fs::read_dir(new_data.join("pg_upgrade_output.d")) else { return text };
    for run in runs.flatten() {
        for log in std::fs::read_dir(run.path().join("log")).into_iter().flatten().flatten() {
            let body = std::fs::read_to_string(log.path()).unwrap_or_default();
            let lines: Vec<&str> = body.lines().collect();
            text += &format!("== {}\n", log.path().display());
            for (i, line) in lines.iter().enumerate() {
                if line.contains("ERROR") || line.contains("FATAL") || line.contains("error:") {
                    text += &format!("{}\n", lines[i..(i + 4).min(lines.len())].join("\n"));
                }
            }
            text += &format!("...\n{}\n", lines[lines.len().saturating_sub(8)..].join("\n"));
        }
    }
    text
}

/// docs/operations.md's step after pg_upgrade: the old data directory's
/// state file into the new one before its first start (pg_upgrade copies
/// no file of ours), owner and mode kept.
pub fn carry_state_file(old: &Cluster, new: &Cluster) {
    super::check(
        "copy snowflake_id.state",
        super::run_as_postgres(
            &["cp", "-p", old.data().join("snowflake_id.state").to_str().unwrap(), new.data().to_str().unwrap()],
            &[],
        ),
    );
}
