#!/usr/bin/env bash
# Runs every test: style and the core's unit and property tests (no
# PostgreSQL) once, then for each PostgreSQL major the #[pg_test] functions
# inside a server and the integration tests in tests/ that start their own
# servers, and on the newest major PostgreSQL's own regression suite with the
# library loaded, compared with a run without it. Installs what is missing
# first (scripts/setup.sh).
#
#   PG_MAJORS="15 16 17 18"   the majors to test (default: all four)
#   FULL_MAJORS="15 18"       the majors that run every integration test; the
#                             others run SUBSET_TESTS. 15 and 18 are the oldest
#                             and the newest supported.
#   CORE_REGRESS_MAJORS="18"  the majors whose own regression suite (make
#                             installcheck of its source) runs with the library
#                             and without it, compared (scripts/core_regress.sh;
#                             17 or 18: the majors built from source here).
#   SNOWFLAKE_CHAOS_SECS=600  soak tests/chaos.rs longer (default 60 s);
#   SNOWFLAKE_CHAOS_SEED=<seed printed by a run> replays that run's choices.
#
# The Debian package (scripts/package.sh, tests/package.rs) and pg_partman are
# tested on 15 only: Debian 12 has PostgreSQL 15 alone, and pg_partman for it
# alone. On other majors those tests print "SKIPPED on PostgreSQL NN" and pass.
set -euo pipefail
cd "$(dirname "$0")/.."

ALL_MAJORS="15 16 17 18"
PG_MAJORS=${PG_MAJORS:-$ALL_MAJORS}
FULL_MAJORS=${FULL_MAJORS:-"15 18"}
CORE_REGRESS_MAJORS=${CORE_REGRESS_MAJORS:-18}
# On 16 and 17: generation, restarts and crashes, replication and failover,
# the upgrade from 0.1.0, how close IDs stay to the clock, what monitoring
# sees (wait events differ by major), commands that wait for every process,
# planning errors, and pg_upgrade and removing the library.
SUBSET_TESTS=(concurrency durability replication upgrade clock_accuracy monitoring barriers planning server_lifecycle)
export PG_MAJORS

started=$SECONDS
timings=()
block_name=""
block_start=0
# Prints a block's heading and closes the previous block's timing.
block() {
    [ -z "$block_name" ] || timings+=("$(printf '%5ds  %s' $((SECONDS - block_start)) "$block_name")")
    block_name=$1
    block_start=$SECONDS
    [ -z "$1" ] || echo "== $1"
}

block "setup: toolchain, PostgreSQL $PG_MAJORS (cached after the first run)"
bash scripts/setup.sh

block "style: cargo fmt, cargo clippy, the import graph (no loop, no use of a higher layer), the docs' links"
cargo fmt --all -- --check
cargo clippy --all-targets -- -D warnings
python3 scripts/import_graph.py
python3 scripts/check_doc_links.py

block "core: unit and property tests, no PostgreSQL"
cargo test -p snowflake_id_core

block "client test dependency: psycopg 3 in a virtualenv (target/test-venv)"
venv=target/test-venv
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv" 2>/dev/null || {
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
        python3 -m venv "$venv"
    }
fi
"$venv/bin/pip" install -q --disable-pip-version-check 'psycopg[binary]==3.3.9'
export SNOWFLAKE_TEST_PYTHON="$PWD/$venv/bin/python"

if [[ " $PG_MAJORS " == *" 15 "* ]]; then
    block "PostgreSQL 15: the Debian package (tests/package.rs installs and removes it)"
    PG_MAJOR=15 bash scripts/package.sh
fi

# The integration tests are clients: they talk to whichever server
# SNOWFLAKE_PG_BIN names, so they are built once (with the default pg15
# library beside them, which they never load).
block "integration tests: build once for every major"
cargo test -p snowflake_id --test '*' --no-run

pgdata_parent=$(mktemp -d /tmp/snowflake_id_pgtest.XXXXXX)
trap 'rm -rf "$pgdata_parent"' EXIT
chown postgres "$pgdata_parent"

# A major that fails does not stop the others: the end says which failed.
# (set -e does not apply inside a function called from `if`: every step
# says `|| return 1`.)
failed=()
test_major() {
    local major=$1 pg_config bindir version tests t
    pg_config=$(bash scripts/pg_servers.sh --pg-config "$major") || return 1
    bindir=$(bash scripts/pg_servers.sh --bindir "$major") || return 1
    version=$("$pg_config" --version)

    block "$version: #[pg_test] functions inside a preloaded server ($bindir)"
    # The filter keeps the integration tests for the step below. cargo-pgrx
    # builds with --no-default-features --features pg$major by itself.
    cargo pgrx test "pg$major" --runas postgres --pgdata "$pgdata_parent/pg$major" "tests::pg_" || return 1

    block "$version: install the extension, and 0.1.0's script for the upgrade test"
    # cargo pgrx test installed a build with the test schema; put the plain one back.
    cargo pgrx install --pg-config "$pg_config" >/dev/null || return 1
    # The released 0.1.0 install script, for the upgrade test (pgrx copies only
    # upgrade scripts, named extension--from--to.sql).
    install -m 644 sql/snowflake_id--0.1.0.sql "$("$pg_config" --sharedir)/extension/" || return 1

    # After the plain install: the #[pg_test] build adds the test schema's functions.
    if [[ " $CORE_REGRESS_MAJORS " == *" $major "* ]]; then
        block "$version: PostgreSQL's own regression suite, with the library as without it (scripts/core_regress.sh)"
        bash scripts/core_regress.sh "$major" || return 1
    fi

    if [[ " $FULL_MAJORS " == *" $major "* ]]; then
        block "$version: every integration test, real servers through real connections"
        tests=(--test '*')
    else
        block "$version: integration tests ${SUBSET_TESTS[*]}"
        tests=()
        for t in "${SUBSET_TESTS[@]}"; do tests+=(--test "$t"); done
    fi
    # --no-fail-fast: every failing test of this major, not just the first.
    SNOWFLAKE_PG_BIN="$bindir" cargo test -p snowflake_id --no-fail-fast "${tests[@]}" || return 1
}
for major in $PG_MAJORS; do
    if ! test_major "$major"; then
        echo "== FAILED on PostgreSQL $major: $block_name"
        failed+=("$major ($block_name)")
    fi
done
block ""

elapsed="$(((SECONDS - started) / 60)) min $(((SECONDS - started) % 60)) s"
printf '%s\n' "${timings[@]}"
if ((${#failed[@]})); then
    echo "== FAILED after $elapsed on PostgreSQL: ${failed[*]}"
    exit 1
fi
echo "== passed on PostgreSQL $PG_MAJORS in $elapsed"
