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

echo "== client test dependency: psycopg 3 in a virtualenv (target/test-venv)"
venv=target/test-venv
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv" 2>/dev/null || {
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
        python3 -m venv "$venv"
    }
fi
"$venv/bin/pip" install -q --disable-pip-version-check 'psycopg[binary]==3.3.9'
export SNOWFLAKE_TEST_PYTHON="$PWD/$venv/bin/python"

echo "== the Debian package (tests/package.rs installs and removes it)"
bash scripts/package.sh

echo "== integration: real servers through real connections"
# cargo pgrx test installed a build with the test schema; put the plain one back.
cargo pgrx install --pg-config "$PG_CONFIG" >/dev/null
# The released 0.1.0 install script, for the upgrade test (pgrx copies only
# upgrade scripts, named extension--from--to.sql).
install -m 644 sql/snowflake_id--0.1.0.sql "$("$PG_CONFIG" --sharedir)/extension/"
# tests/chaos.rs soaks for about 60 s (failovers and clock steps under load);
# SNOWFLAKE_CHAOS_SECS=600 bash scripts/test.sh soaks longer, and
# SNOWFLAKE_CHAOS_SEED=<seed printed by a run> replays that run's random choices.
cargo test -p snowflake_id --test '*'
