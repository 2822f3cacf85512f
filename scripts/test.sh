#!/usr/bin/env bash
# Runs every test: style and the core's unit and property tests (no
# PostgreSQL) once, then for each PostgreSQL major the integration tests in
# tests/ (real servers started by the tests, real client connections; the
# SQL basics of tests/sql_basics.rs on every major), and on the newest major
# PostgreSQL's own regression suite with the library loaded, compared with a
# run without it. Installs what is missing first (scripts/setup.sh); the
# servers of 16-19 are installed in the background meanwhile (log:
# target/pg_servers.log). Each major's tests start as soon as its server is
# there and the library installed, and run beside the other majors' (each
# major's binaries in LANES lanes; logs in target/test-logs/, printed at the
# end): they mostly wait on leases, timeouts and soaks, so on 2 cores this
# takes about as long as the slowest major alone. Prints each step's time,
# and per major a table of what each test binary ran (passed, failed,
# skipped, skipped by name): a binary that ran no test (none listed, or
# every one skipped) fails, and so does a major that ran fewer binaries than
# it was handed. A test that cannot run its subject (17 missing for
# pg_upgrade, Citus or pglogical missing on 15) fails, unless SNOWFLAKE_SKIP
# names it. The guard tests of tests/logical.rs also run once without the
# guard (SNOWFLAKE_LOGICAL_NO_GUARD=1), where each must fail.
#
#   bash scripts/test.sh                  everything, on 15, 16, 17, 18 and 19
#   PG_MAJORS=15 bash scripts/test.sh     the quick loop: one major (15 needs no
#                                         server build; any single major works)
#   PG_MAJORS="15 19" SNOWFLAKE_SKIP="server_lifecycle::pg_upgrade_to_the_next_major_with_the_library_preloaded_in_both_clusters \
#       server_lifecycle::pg_upgrade_of_a_publisher_keeps_its_slot_and_the_subscriber_receives_ids_above_the_earlier_ones \
#       plants::pg_upgrade_with_look_alikes_planted" \
#       bash scripts/test.sh              15 and 19 without 18, which pg_upgrade to 19 starts from
#
#   PG_MAJORS="15 16 17 18 19"  the majors to test (default: all five)
#   FULL_MAJORS="15 19"       the majors that run every integration test; the
#                             others run SUBSET_TESTS. 15 and 19 are the oldest
#                             and the newest supported.
#   CORE_REGRESS_MAJORS="18"  the majors whose own regression suite (make
#                             installcheck of its source) runs with the library
#                             and without it, compared (scripts/core_regress.sh;
#                             17 or 18: the majors built from source here; 19
#                             comes as binary packages, without the suite).
#   LANES=2                   test binaries of one major that run at once
#                             (LANES=1: one after another)
#   SNOWFLAKE_SKIP="binary::test ..."  tests that cannot run their subject
#                             here and are to be skipped, not failed (they
#                             show as skipped by name in the table)
#   NO_GUARD_MAJORS           the majors whose logical guard tests run again
#                             without the guard, expected to fail (default:
#                             the first of PG_MAJORS; "" for none)
#   SNOWFLAKE_MODEL_CASES=N   histories tests/registry_model.rs plays (default
#                             600 on the first of FULL_MAJORS, 200 on the others)
#   SNOWFLAKE_CHAOS_SECS=600  soak tests/chaos.rs longer (default 60 s);
#   SNOWFLAKE_CHAOS_SEED=<seed printed by a run> replays that run's choices.
#
# The Debian package (scripts/package.sh, tests/package.rs), pg_partman,
# pglogical (postgresql-15-pglogical) and Citus are tested on 15 only: Debian 12 has PostgreSQL 15 alone, pg_partman
# for it alone, and ../shared/citus a build of Citus for it (installed by
# scripts/setup.sh when that directory is there). On other majors those
# tests print "SKIPPED on PostgreSQL NN" and count as skipped; without
# Citus or pglogical on 15 they fail (unless SNOWFLAKE_SKIP names them).
# The version-skew tests of tests/skew.rs that run two releases' servers
# run on 15 only, against the previous release built once and cached
# (scripts/previous_release.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

ALL_MAJORS="15 16 17 18 19"
PG_MAJORS=${PG_MAJORS:-$ALL_MAJORS}
FULL_MAJORS=${FULL_MAJORS:-"15 19"}
CORE_REGRESS_MAJORS=${CORE_REGRESS_MAJORS:-18}
# On 16, 17 and 18: the SQL basics, generation, restarts and crashes, replication
# and failover, the upgrade from 0.1.0, how close IDs stay to the clock, what
# monitoring sees (wait events differ by major), commands that wait for every
# process, planning errors, pg_upgrade and removing the library, and logical
# replication (two-way with origin = none from 16 on: 16 is its first major).
SUBSET_TESTS=(sql_basics concurrency durability replication upgrade clock_accuracy monitoring barriers planning server_lifecycle logical)
export PG_MAJORS
export SNOWFLAKE_SKIP=${SNOWFLAKE_SKIP:-}
read -r first_major _ <<<"$PG_MAJORS"
NO_GUARD_MAJORS=${NO_GUARD_MAJORS-$first_major}
# The guard tests of tests/logical.rs (a successor issuing above what it
# received, a shared worker id named, an implausible ID reported, an apply
# moving the generator past IDs ahead) are the ones named guard_*: with the
# guard's trigger disabled (SNOWFLAKE_LOGICAL_NO_GUARD=1) each must fail;
# those with pglogical in their name on 15 only (pglogical is packaged for
# 15 only). Each was seen failing so.

in_list() { [[ " $2 " == *" $1 "* ]]; }
# A misspelt major would otherwise test nothing and pass.
for major in $PG_MAJORS $FULL_MAJORS $CORE_REGRESS_MAJORS $NO_GUARD_MAJORS; do
    in_list "$major" "$ALL_MAJORS" || {
        echo "test.sh: unknown PostgreSQL major '$major' (PG_MAJORS, FULL_MAJORS, CORE_REGRESS_MAJORS, NO_GUARD_MAJORS: of $ALL_MAJORS)" >&2
        exit 2
    }
done

started=$SECONDS
main_pid=$$
# The console, for the one line each test binary prints when it ends (its
# own output goes to its major's log, printed whole at the end).
exec 3>&1
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
major_groups=()
logs=""
cleanup() {
    # Stopped early: the background server build and every major's tests go
    # with this run (each runs in a session of its own), then any cluster a
    # killed test left running (they all live under $pgdata_parent).
    [ -z "$servers_pid" ] || kill -- "-$servers_pid" 2>/dev/null || true
    local group pidfile
    for group in "${major_groups[@]}"; do kill -- "-$group" 2>/dev/null || true; done
    if [ -n "$pgdata_parent" ]; then
        for pidfile in "$pgdata_parent"/*/*/postmaster.pid; do
            if [ -f "$pidfile" ]; then kill -QUIT "$(head -n 1 "$pidfile")" 2>/dev/null || true; fi
        done
        rm -rf "$pgdata_parent"
    fi
    # What had not finished, so that a run stopped by a time limit shows where.
    if [ -n "$logs" ] && ((${#major_groups[@]})); then
        local log
        for log in "$logs"/pg*.lane*.log; do
            [ -f "$log" ] && ! grep -q "^== lane done" "$log" && { echo "---- unfinished: $log" && tail -n 40 "$log"; }
        done
    fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

block "setup: Debian packages"
bash scripts/setup.sh --packages

# The servers of 16-19 (and the source tree of the core suite's major) are
# installed in the background while cargo-pgrx installs and the tests
# compile: on 2 cores the two fill each other's idle time (configure, links,
# bindgen). 19 first: it runs every test, so it is the longest to test, and
# it is a download (Debian's packages in a sid root); then 18, whose core
# regression suite is the longest single job; 16, a download (PyPI's
# pgserver) and one small module; 17, built from source, last. Each major
# is announced in target/pg_servers.ready/ as soon as it is
# there, and its tests start while the next one builds.
mkdir -p target
servers_log=$PWD/target/pg_servers.log
ready_dir=$PWD/target/pg_servers.ready
rm -rf "$ready_dir"
mkdir -p "$ready_dir"
servers_majors=""
regress_majors=""
for major in 19 18 16 17; do
    ! in_list "$major" "$PG_MAJORS" || servers_majors+=" $major"
done
for major in $PG_MAJORS; do
    ! in_list "$major" "$CORE_REGRESS_MAJORS" || regress_majors+=" $major"
done
if [ -n "$servers_majors" ]; then
    # Its own session, so that a run stopped early stops the build with it.
    PG_MAJORS="${servers_majors# }" PG_REGRESS_MAJORS="${regress_majors# }" PG_SERVERS_READY_DIR="$ready_dir" \
        setsid bash scripts/pg_servers.sh --no-register >"$servers_log" 2>&1 &
    servers_pid=$!
fi

block "setup: toolchain (servers of${servers_majors:- none} building in the background)"
bash scripts/setup.sh --no-servers

block "style: cargo fmt, cargo clippy, the import graph (no loop, no use of a higher layer), the docs' links, dist/, the README's size"
cargo fmt --all -- --check
bash scripts/cargo.sh clippy --all-targets -- -D warnings
python3 scripts/import_graph.py
python3 scripts/check_doc_links.py
# dist/ is committed but generated: it must be what scripts/managed.sh
# writes from sql/ now (run it and commit dist/ when this fails).
bash scripts/managed.sh --check
# The README is the way in for three audiences and leads to docs/ for the
# detail: at most 36 KB, so that detail goes where it belongs.
readme_bytes=$(wc -c <README.md)
if ((readme_bytes > 36864)); then
    echo "== FAILED: README.md is $readme_bytes bytes, over its 36,864 (36 KB): move detail to docs/" >&2
    exit 1
fi

block "core: unit and property tests, no PostgreSQL"
bash scripts/cargo.sh test -p snowflake_id_core

block "client test dependencies: psycopg, SQLAlchemy, Django (target/test-venv); pg, knex (target/test-node)"
venv=target/test-venv
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
# Exact versions, dependencies included: pip does nothing when they are there.
"$venv/bin/pip" install -q --disable-pip-version-check -r tests/clients/requirements.txt
export SNOWFLAKE_TEST_PYTHON="$PWD/$venv/bin/python"
# npm ci of the committed lock file; again only when the lock file changed
# (npm ci always starts from an empty node_modules).
node_dir=target/test-node
if ! cmp -s tests/clients/node/package-lock.json "$node_dir/package-lock.json" || [ ! -d "$node_dir/node_modules/knex" ]; then
    mkdir -p "$node_dir"
    cp tests/clients/node/package.json tests/clients/node/package-lock.json "$node_dir/"
    (cd "$node_dir" && npm ci --no-audit --no-fund --loglevel=error)
fi
export SNOWFLAKE_TEST_NODE_MODULES="$PWD/$node_dir/node_modules"

if in_list 15 "$PG_MAJORS"; then
    block "PostgreSQL 15: the Debian package (tests/package.rs installs and removes it)"
    # The dev profile, which the install into 15 and the tests' build then
    # reuse (see scripts/package.sh).
    PACKAGE_PROFILE=dev PG_MAJOR=15 bash scripts/package.sh
fi

# The integration tests are clients: they talk to whichever server
# SNOWFLAKE_PG_BIN names, so they are built once (with the default pg15
# library beside them, which they never load), and their binaries run
# straight, not through cargo: cargo would hold the build directory's lock
# while they run, and the next major's install needs it.
block "integration tests: build once for every major"
test_bins=$PWD/target/test-binaries
bash scripts/cargo.sh test -p snowflake_id --test '*' --no-run --message-format=json-render-diagnostics |
    python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and "test" in m["target"]["kind"]:
        print(m["target"]["name"], m["executable"])
' >"$test_bins"
# Without names, the majors that run every test would run none and pass.
if [ ! -s "$test_bins" ]; then
    echo "== FAILED: cargo listed no integration test binaries (target/test-binaries is empty)" >&2
    exit 1
fi

# A name in SNOWFLAKE_SKIP that names no test would skip nothing and hide
# its typo until that test fails for want of its subject: each must be
# binary::test of a listed test.
for skip in ${SNOWFLAKE_SKIP//,/ }; do
    exe=$(awk -v n="${skip%%::*}" '$1 == n { print $2 }' "$test_bins")
    if [ -z "$exe" ] || ! "$exe" --list --format terse 2>/dev/null | grep -qxF "${skip#*::}: test"; then
        echo "== FAILED: SNOWFLAKE_SKIP names $skip, which is no test (binary::test, as the table prints them)" >&2
        exit 1
    fi
done

# Every test cluster lives under one directory (tempfile honours TMPDIR), so
# that the end of this run stops and removes whatever a killed test left.
pgdata_parent=$(mktemp -d /tmp/snowflake_id_pgtest.XXXXXX)
chmod 755 "$pgdata_parent"
logs=$PWD/target/test-logs
# Seconds each test binary took when it last ran, per major: the last field
# of the last run's target/test-logs/pgNN.results/NAME, kept across runs in
# target/test-timings ("major name seconds" lines; a run of some majors
# keeps the others' figures). How a major's binaries are dealt out to its
# lanes (lane_weight), read before the last run's logs go.
test_timings=$PWD/target/test-timings
declare -A last_secs=()
if [ -f "$test_timings" ]; then
    while read -r t_major t_name t_secs; do last_secs["$t_major $t_name"]=$t_secs; done <"$test_timings"
fi
for result in "$logs"/pg*.results/*; do
    [ -f "$result" ] || continue
    t_major=${result#"$logs"/pg}
    t_major=${t_major%%.results/*}
    t_secs=$(awk '{ print $NF }' "$result")
    if [[ "$t_secs" =~ ^[0-9]+$ ]]; then last_secs["$t_major ${result##*/}"]=$t_secs; fi
done
for key in "${!last_secs[@]}"; do echo "$key ${last_secs[$key]}"; done | sort >"$test_timings"
rm -rf "$logs"
mkdir -p "$logs"
# A test binary that runs longer than this is stopped and counts as failed
# (the slowest takes about 2 minutes alone, 4 beside the others).
BINARY_TIMEOUT=${BINARY_TIMEOUT:-1200}

# How one major's binaries are dealt out to lanes, run, counted and
# tabled: scripts/test/lanes.sh.
# shellcheck source=scripts/test/lanes.sh
source scripts/test/lanes.sh

# Waits until the background build announces major $1; fails when the
# build ended without it.
wait_for_server() {
    while [ ! -e "$ready_dir/$1" ]; do
        if ! kill -0 "$servers_pid" 2>/dev/null; then
            [ -e "$ready_dir/$1" ] && return 0
            tail -n 30 "$servers_log" >&2
            echo "== building the server of $1 failed (log: $servers_log)" >&2
            return 1
        fi
        sleep 2
    done
}

# Installs the library into major $1 (one build per major: cargo-pgrx builds
# with --no-default-features --features pg$1 by itself), and the released
# 0.1.0 install script for the upgrade test (pgrx copies only upgrade
# scripts). Then starts its tests in the background: core's regression suite
# where asked, and the integration tests.
failed=()
declare -A major_pid major_started
install_and_start() {
    local major=$1 pg_config bindir version tests
    if [ "$major" != 15 ]; then
        block "PostgreSQL $major: the server built in the background"
        wait_for_server "$major" || return 1
        # Registers it with pgrx (no build: it is there; without
        # PG_REGRESS_MAJORS, so that it never waits for the cache's lock).
        PG_MAJORS=$major env -u PG_REGRESS_MAJORS bash scripts/pg_servers.sh >/dev/null || return 1
    fi
    pg_config=$(bash scripts/pg_servers.sh --pg-config "$major") || return 1
    bindir=$(bash scripts/pg_servers.sh --bindir "$major") || return 1
    version=$("$pg_config" --version)
    block "$version: build and install the extension, and 0.1.0's script for the upgrade test"
    bash scripts/cargo.sh pgrx install --pg-config "$pg_config" >/dev/null || return 1
    install -m 644 sql/snowflake_id--0.1.0.sql "$("$pg_config" --sharedir)/extension/" || return 1
    touch "$logs/installed-$major"
    # The managed edition's tests (tests/managed.rs) need a server that does
    # not load the library and has pg_tle (pg_tle refuses a name a file-based
    # extension has): a private copy of this major without the native files.
    if in_list "$major" "$FULL_MAJORS"; then
        block "PostgreSQL $major: a copy without snowflake_id's files, with pg_tle 1.5.3, for the managed edition"
        SNOWFLAKE_MANAGED_PG_BIN=$(bash scripts/pg_tle_server.sh "$major") || return 1
        export SNOWFLAKE_MANAGED_PG_BIN
    fi
    # The version-skew tests (tests/skew.rs) run nodes and registries of the
    # previous release (scripts/previous_release.sh names it) beside this
    # build's, on 15 only (their PREVIOUS_MAJOR; elsewhere those say they
    # skip): built from the repository's history once, minutes on a fresh
    # machine, then cached (a tenth of a second).
    if [ "$major" = 15 ]; then
        block "PostgreSQL $major: the previous release, built once and cached, for tests/skew.rs"
        SNOWFLAKE_PREVIOUS_PG_BIN=$(bash scripts/previous_release.sh "$major") || return 1
        export SNOWFLAKE_PREVIOUS_PG_BIN
    fi

    if in_list "$major" "$FULL_MAJORS"; then
        tests=$(awk '{ print $1 }' "$test_bins" | xargs)
    else
        tests="${SUBSET_TESTS[*]}"
    fi
    [ -n "$tests" ] || { echo "== no integration tests to run on PostgreSQL $major" && return 1; }
    if in_list "$major" "$NO_GUARD_MAJORS" && in_list logical "$tests"; then
        tests+=" logical_no_guard"
    fi
    # shellcheck disable=SC2086 # a list of names
    echo $tests >"$logs/pg$major.handed"
    # A process group of its own (job control on for this one fork), so
    # that the end of this run can stop it with everything it started.
    set -m
    (
        set +e
        rc=0
        regress_pid=""
        # The registry's model test plays 600 random histories against the
        # SQL registry on the first full major; the same PL/pgSQL on the
        # other one gets 200 fresh ones a run (a third of its CPU, on two
        # cores every major shares). A value set by the caller wins.
        read -r first_full _ <<<"$FULL_MAJORS"
        [ "$major" = "$first_full" ] || export SNOWFLAKE_MODEL_CASES=${SNOWFLAKE_MODEL_CASES:-200}
        if in_list "$major" "$CORE_REGRESS_MAJORS"; then
            # Beside the lanes: it computes while they mostly wait.
            (
                t0=$SECONDS
                bash scripts/core_regress.sh "$major"
                rc=$?
                echo "== core's regression suite: $((SECONDS - t0))s"
                printf '   %-6s PostgreSQL %s core regression suite (%ss)\n' "$( ((rc == 0)) && echo ok || echo FAILED)" \
                    "$major" $((SECONDS - t0)) >&3
                exit $rc
            ) >"$logs/pg$major.regress.log" 2>&1 &
            regress_pid=$!
        fi
        echo "== $version: integration tests in $LANES lanes: $tests"
        # shellcheck disable=SC2086 # a list of names
        test_major "$major" "$bindir" $tests || rc=1
        if [ -n "$regress_pid" ]; then
            wait "$regress_pid" || rc=1
            echo "---- $version: PostgreSQL's own regression suite, with the library as without it (scripts/core_regress.sh)"
            cat "$logs/pg$major.regress.log"
        fi
        exit $rc
    ) >"$logs/pg$major.log" 2>&1 &
    major_pid[$major]=$!
    set +m
    major_groups+=("$!")
    major_started[$major]=$SECONDS
    echo "== $version: tests started in the background (log: $logs/pg$major.log)"
}

# 15 first (Debian's, there already), then the others in the order they build.
for major in 15 $servers_majors; do
    in_list "$major" "$PG_MAJORS" || continue
    if ! install_and_start "$major"; then
        touch "$logs/install-failed-$major"
        echo "== FAILED on PostgreSQL $major: $block_name"
        failed+=("$major ($block_name)")
    fi
done
block "the tests of every major, at once"
tables=()
for major in $PG_MAJORS; do
    [ -n "${major_pid[$major]:-}" ] || continue
    rc=0
    wait "${major_pid[$major]}" || rc=$?
    major_took="$((SECONDS - major_started[$major]))s from its start, its binaries in $LANES lanes"
    echo "================ PostgreSQL $major ($major_took)"
    cat "$logs/pg$major.log"
    if ((rc != 0)); then
        echo "== FAILED on PostgreSQL $major: tests (log: $logs/pg$major.log)"
        failed+=("$major (tests)")
    fi
    # shellcheck disable=SC2046 # a list of names
    if ! tables+=("$(results_table "$major" $(cat "$logs/pg$major.handed"))"); then
        ((rc != 0)) || failed+=("$major (a binary with no result)")
    fi
done
# All waited for: their process group ids may belong to others by now.
major_groups=()
block ""
if [ -n "$servers_pid" ]; then
    wait "$servers_pid" || true
    servers_pid=""
fi

elapsed="$(((SECONDS - started) / 60)) min $(((SECONDS - started) % 60)) s"
printf '%s\n' "${timings[@]}"
# What each binary ran, per major (the "passed" of the logical guard tests
# without the guard: those that failed, as they must).
((${#tables[@]} == 0)) || printf '%s\n' "${tables[@]}"
if ((${#failed[@]})); then
    echo "== FAILED after $elapsed on PostgreSQL: ${failed[*]}"
    exit 1
fi
echo "== passed on PostgreSQL $PG_MAJORS in $elapsed"
