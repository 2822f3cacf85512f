//! `scripts/setup.sh` stops at once, with a message naming what is needed,
//! on a host whose Rust toolchain is missing or too old (Debian 12's own
//! rustc is 1.63; pgrx 0.18 needs 1.95). Fake toolchains on PATH stand in.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::process::Command;

/// Runs setup.sh with only `fakes` (name, script) and the system directories on PATH.
fn setup_with(fakes: &[(&str, &str)]) -> (bool, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, body) in fakes {
        let path = dir.path().join(name);
        fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write fake");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/setup.sh");
    let out = Command::new("bash")
        .arg(script)
        .env("PATH", format!("{}:/usr/bin:/bin", dir.path().display()))
        .output()
        .expect("run setup.sh");
    (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn setup_names_the_toolchain_it_needs_when_there_is_none() {
    let (ok, stderr) = setup_with(&[]);
    assert!(!ok);
    assert!(stderr.contains("cargo was not found"), "{stderr}");
    assert!(stderr.contains("rustc 1.95 or newer") && stderr.contains("rustup"), "{stderr}");
    assert!(stderr.contains("Install from the package"), "{stderr}");
}

#[test]
fn setup_refuses_debians_old_rustc() {
    let (ok, stderr) = setup_with(&[("cargo", "exit 0"), ("rustc", "echo 'rustc 1.63.0'")]);
    assert!(!ok);
    assert!(stderr.contains("rustc 1.63.0 is too old"), "{stderr}");
}
