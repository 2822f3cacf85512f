#!/usr/bin/env bash
# Runs every test: style and the core's unit and property tests (no
# PostgreSQL) once, then for each PostgreSQL major the integration tests in
# tests/ (real servers started by the tests, real client connections; the
# SQL basics of tests/sql_basics.rs on every major), and on the newest major
# PostgreSQL's own regression suite with the library loaded, compared with a
# run without it. Installs what is missing first (scripts/setup.sh); the
# servers of 16-18 build in the background meanwhile (log:
# target/pg_servers.log). Prints each step's time at the end.
#
#   bash scripts/test.sh                  everything, on 15, 16, 17 and 18
#   PG_MAJORS=15 bash scripts/test.sh     the quick loop: one major (15 needs no
#                                         server build; any single major works)
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
# On 16 and 17: the SQL basics, generation, restarts and crashes, replication
# and failover, the upgrade from 0.1.0, how close IDs stay to the clock, what
# monitoring sees (wait events differ by major), commands that wait for every
# process, planning errors, and pg_upgrade and removing the library.
SUBSET_TESTS=(sql_basics concurrency durability replication upgrade clock_accuracy monitoring barriers planning server_lifecycle)
export PG_MAJORS

in_list() { [[ " $2 " == *" $1 "* ]]; }

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

pgdata_parent=""
servers_pid=""
cleanup() {
    # Stopped early: the background server build goes with this run.
    [ -z "$servers_pid" ] || kill -- "-$servers_pid" 2>/dev/null || true
    [ -z "$pgdata_parent" ] || rm -rf "$pgdata_parent"
}
trap cleanup EXIT

block "setup: Debian packages"
bash scripts/setup.sh --packages

# The servers of 16-18 (and the source tree of the core suite's major) build
# in the background while cargo-pgrx installs and the tests compile: on 2
# cores the two fill each other's idle time (configure, links, bindgen).
mkdir -p target
servers_log=$PWD/target/pg_servers.log
servers_majors=""
regress_majors=""
for major in $PG_MAJORS; do
    [ "$major" = 15 ] || servers_majors+=" $major"
    ! in_list "$major" "$CORE_REGRESS_MAJORS" || regress_majors+=" $major"
done
if [ -n "$servers_majors" ]; then
    # Its own session, so that a run stopped early stops the build with it.
    PG_MAJORS="${servers_majors# }" PG_REGRESS_MAJORS="${regress_majors# }" \
        setsid bash scripts/pg_servers.sh --no-register >"$servers_log" 2>&1 &
    servers_pid=$!
    servers_started=$SECONDS
fi
# Waits for the background build; fails when it did.
servers_ready=""
wait_for_servers() {
    [ -n "$servers_pid" ] || return "${servers_ready:-0}"
    local rc=0
    wait "$servers_pid" || rc=$?
    servers_pid=""
    echo "== (the servers of$servers_majors took $((SECONDS - servers_started))s in the background; log: $servers_log)"
    if ((rc != 0)); then
        tail -n 30 "$servers_log" >&2
        echo "== building the servers of$servers_majors failed (log: $servers_log)" >&2
        servers_ready=1
        return 1
    fi
    # Registers them with pgrx (no build: they are there).
    bash scripts/pg_servers.sh >/dev/null || { servers_ready=1 && return 1; }
    servers_ready=0
}

block "setup: toolchain (servers of${servers_majors:- none} building in the background)"
bash scripts/setup.sh --no-servers

block "style: cargo fmt, cargo clippy, the import graph (no loop, no use of a higher layer), the docs' links"
cargo fmt --all -- --check
cargo clippy --all-targets -- -D warnings
python3 scripts/import_graph.py
python3 scripts/check_doc_links.py

block "core: unit and property tests, no PostgreSQL"
cargo test -p snowflake_id_core

block "client test dependency: psycopg 3 in a virtualenv (target/test-venv)"
venv=target/test-venv
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check 'psycopg[binary]==3.3.9'
export SNOWFLAKE_TEST_PYTHON="$PWD/$venv/bin/python"

if in_list 15 "$PG_MAJORS"; then
    block "PostgreSQL 15: the Debian package (tests/package.rs installs and removes it)"
    PG_MAJOR=15 bash scripts/package.sh
fi

# The integration tests are clients: they talk to whichever server
# SNOWFLAKE_PG_BIN names, so they are built once (with the default pg15
# library beside them, which they never load).
block "integration tests: build once for every major"
cargo test -p snowflake_id --test '*' --no-run

pgdata_parent=$(mktemp -d /tmp/snowflake_id_pgtest.XXXXXX)
chown postgres "$pgdata_parent"

# A major that fails does not stop the others: the end says which failed.
# (set -e does not apply inside a function called from `if`: every step
# says `|| return 1`.)
failed=()
test_major() {
    local major=$1 pg_config bindir version tests t
    if [ "$major" != 15 ]; then
        # Named, so that a failed build is reported as that, not as the step before.
        block "PostgreSQL $major: the server built in the background"
        wait_for_servers || return 1
    fi
    pg_config=$(bash scripts/pg_servers.sh --pg-config "$major") || return 1
    bindir=$(bash scripts/pg_servers.sh --bindir "$major") || return 1
    version=$("$pg_config" --version)

    block "$version: build and install the extension, and 0.1.0's script for the upgrade test"
    # One build per major: cargo-pgrx builds with --no-default-features
    # --features pg$major by itself.
    cargo pgrx install --pg-config "$pg_config" >/dev/null || return 1
    # The released 0.1.0 install script, for the upgrade test (pgrx copies only
    # upgrade scripts, named extension--from--to.sql).
    install -m 644 sql/snowflake_id--0.1.0.sql "$("$pg_config" --sharedir)/extension/" || return 1

    if in_list "$major" "$CORE_REGRESS_MAJORS"; then
        block "$version: PostgreSQL's own regression suite, with the library as without it (scripts/core_regress.sh)"
        bash scripts/core_regress.sh "$major" || return 1
    fi

    if in_list "$major" "$FULL_MAJORS"; then
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
