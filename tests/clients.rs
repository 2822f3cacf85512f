//! Application clients against a real server, each doing what the README
//! and docs/applications.md tell its users: psycopg 3, SQLAlchemy 2 and
//! Django 5.2 (from PyPI, in the test virtualenv that scripts/test.sh makes,
//! versions pinned in tests/clients/requirements.txt), node-postgres and
//! Knex (from npm, `npm ci` of tests/clients/node/package-lock.json into
//! target/test-node).

mod common;

use std::process::Command;

use common::Cluster;

fn python() -> String {
    let python = std::env::var("SNOWFLAKE_TEST_PYTHON")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/target/test-venv/bin/python").to_string());
    assert!(std::path::Path::new(&python).exists(), "{python} is missing: run scripts/test.sh, which makes it");
    python
}

/// Runs `program` with the server's socket directory and port as its
/// arguments, on a fresh server with worker id 7; asserts it succeeded and
/// printed `ok_line`.
fn run_client(mut program: Command, ok_line: &str) {
    let cluster = Cluster::preloaded(&["snowflake_id.worker_id = 7"]);
    let out = program.arg(cluster.socket_dir()).arg(cluster.port.to_string()).output().expect("run the client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "client failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains(ok_line), "{stdout}");
}

/// `script` under `python -O`, as an application may run in production: -O
/// drops every `assert` statement, so the scripts check with
/// tests/clients/expect.py, which it keeps.
fn python_client(script: &str) -> Command {
    let mut command = Command::new(python());
    command.arg("-O").arg(format!("{}/tests/clients/{script}", env!("CARGO_MANIFEST_DIR")));
    command
}

/// A check written as `assert` in a client script vanishes under -O and the
/// script still prints its ok line: every check is an `expect(...)` call.
#[test]
fn the_client_scripts_check_without_assert_statements() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients");
    // Python's own parser finds them (an `assert` in a string or a comment is none).
    let finder = "import ast, pathlib, sys\n\
                  scripts = sorted(pathlib.Path(sys.argv[1]).glob('*.py'))\n\
                  print(len(scripts))\n\
                  for p in scripts:\n\
                  \x20   for n in ast.walk(ast.parse(p.read_text(), str(p))):\n\
                  \x20       if isinstance(n, ast.Assert): print(f'{p.name}:{n.lineno}')\n";
    let out = Command::new(python()).args(["-c", finder, dir]).output().expect("run python");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut lines = stdout.lines();
    let scripts: usize = lines.next().and_then(|n| n.parse().ok()).expect("the number of scripts");
    assert!(scripts >= 4, "found {scripts} scripts in {dir}");
    let asserts: Vec<&str> = lines.collect();
    assert!(asserts.is_empty(), "assert statements, which python -O removes (use expect()): {asserts:?}");
}

#[test]
fn psycopg_inserts_decodes_and_round_trips_ids() {
    run_client(python_client("psycopg_roundtrip.py"), "round trip: ok");
}

#[test]
fn sqlalchemy_batches_orm_inserts_and_keys_a_parent_and_children_from_a_block() {
    run_client(python_client("sqlalchemy_orm.py"), "sqlalchemy: ok");
}

#[test]
fn django_bulk_create_returns_every_key() {
    run_client(python_client("django_bulk.py"), "django: ok");
}

#[test]
fn node_postgres_and_knex_keep_ids_exact() {
    let modules = std::env::var("SNOWFLAKE_TEST_NODE_MODULES")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/target/test-node/node_modules").to_string());
    assert!(std::path::Path::new(&modules).join("knex").exists(), "{modules} lacks knex: run scripts/test.sh");
    let mut node = Command::new("node");
    node.env("NODE_PATH", &modules).arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/node/pg_and_knex.js"));
    run_client(node, "node-postgres and knex: ok");
}
