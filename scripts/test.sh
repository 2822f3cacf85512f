#!/usr/bin/env bash
# Runs every test: the core's unit and property tests (no PostgreSQL), the
# #[pg_test] functions inside a server, and the integration tests in tests/
# that start their own servers. Installs what is missing first.
set -euo pipefail
cd "$(dirname "$0")/.."

PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config
bash scripts/setup.sh

echo "== style: cargo fmt and cargo clippy"
cargo fmt --all -- --check
cargo clippy --all-targets -- -D warnings

echo "== core: unit and property tests, no PostgreSQL"
cargo test -p snowflake_id_core

echo "== #[pg_test]: SQL functions inside a preloaded PostgreSQL 15"
pgdata_parent=$(mktemp -d /tmp/snowflake_id_pgtest.XXXXXX)
trap 'rm -rf "$pgdata_parent"' EXIT
chown postgres "$pgdata_parent"
# The filter keeps the integration tests for the step below.
cargo pgrx test pg15 --runas postgres --pgdata "$pgdata_parent/data" "tests::pg_"

echo "== integration: real servers through real connections"
# cargo pgrx test installed a build with the test schema; put the plain one back.
cargo pgrx install --pg-config "$PG_CONFIG" >/dev/null
# The released 0.1.0 install script, for the upgrade test (pgrx copies only
# upgrade scripts, named extension--from--to.sql).
install -m 644 sql/snowflake_id--0.1.0.sql "$("$PG_CONFIG" --sharedir)/extension/"
cargo test -p snowflake_id --test '*'
