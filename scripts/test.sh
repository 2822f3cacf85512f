#!/usr/bin/env bash
# Runs every test: style and the core's unit and property tests (no
# PostgreSQL) once, then for each PostgreSQL major the integration tests in
# tests/ (real servers started by the tests, real client connections; the
# SQL basics of tests/sql_basics.rs on every major), and on the newest major
# PostgreSQL's own regression suite with the library loaded, compared with a
# run without it. Installs what is missing first (scripts/setup.sh); the
# servers of 16-18 build in the background meanwhile (log:
# target/pg_servers.log). Each major's tests start as soon as its server is
# there and the library installed, and run beside the other majors' (each
# major's binaries in LANES lanes; logs in target/test-logs/, printed at the
# end): they mostly wait on leases, timeouts and soaks, so on 2 cores this
# takes about as long as the slowest major alone. Prints each step's time,
# and per major how many test binaries ran and how many tests passed: a major
# that ran none (or fewer binaries than it was handed) fails.
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
#   LANES=2                   test binaries of one major that run at once
#                             (LANES=1: one after another)
#   SNOWFLAKE_CHAOS_SECS=600  soak tests/chaos.rs longer (default 60 s);
#   SNOWFLAKE_CHAOS_SEED=<seed printed by a run> replays that run's choices.
#
# The Debian package (scripts/package.sh, tests/package.rs), pg_partman,
# pglogical (postgresql-15-pglogical) and Citus are tested on 15 only: Debian 12 has PostgreSQL 15 alone, pg_partman
# for it alone, and ../shared/citus a build of Citus for it (installed by
# scripts/setup.sh when that directory is there). On other majors, or without
# Citus, those tests print "SKIPPED on PostgreSQL NN" and pass.
set -euo pipefail
cd "$(dirname "$0")/.."

ALL_MAJORS="15 16 17 18"
PG_MAJORS=${PG_MAJORS:-$ALL_MAJORS}
FULL_MAJORS=${FULL_MAJORS:-"15 18"}
CORE_REGRESS_MAJORS=${CORE_REGRESS_MAJORS:-18}
# On 16 and 17: the SQL basics, generation, restarts and crashes, replication
# and failover, the upgrade from 0.1.0, how close IDs stay to the clock, what
# monitoring sees (wait events differ by major), commands that wait for every
# process, planning errors, pg_upgrade and removing the library, and logical
# replication (two-way with origin = none from 16 on: 16 is its first major).
SUBSET_TESTS=(sql_basics concurrency durability replication upgrade clock_accuracy monitoring barriers planning server_lifecycle logical)
export PG_MAJORS

in_list() { [[ " $2 " == *" $1 "* ]]; }
# A misspelt major would otherwise test nothing and pass.
for major in $PG_MAJORS $FULL_MAJORS $CORE_REGRESS_MAJORS; do
    in_list "$major" "$ALL_MAJORS" || {
        echo "test.sh: unknown PostgreSQL major '$major' (PG_MAJORS, FULL_MAJORS, CORE_REGRESS_MAJORS: of $ALL_MAJORS)" >&2
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

# The servers of 16-18 (and the source tree of the core suite's major) build
# in the background while cargo-pgrx installs and the tests compile: on 2
# cores the two fill each other's idle time (configure, links, bindgen).
# 18 first: it runs every test, so it is the longest to test; then 16, a
# download (PyPI's pgserver) and one small module; 17, built from source,
# last. Each major is announced in target/pg_servers.ready/ as soon as it is
# there, and its tests start while the next one builds.
mkdir -p target
servers_log=$PWD/target/pg_servers.log
ready_dir=$PWD/target/pg_servers.ready
rm -rf "$ready_dir"
mkdir -p "$ready_dir"
servers_majors=""
regress_majors=""
for major in 18 16 17; do
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

block "style: cargo fmt, cargo clippy, the import graph (no loop, no use of a higher layer), the docs' links"
cargo fmt --all -- --check
cargo clippy --all-targets -- -D warnings
python3 scripts/import_graph.py
python3 scripts/check_doc_links.py

block "core: unit and property tests, no PostgreSQL"
cargo test -p snowflake_id_core

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
cargo test -p snowflake_id --test '*' --no-run --message-format=json-render-diagnostics |
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

# Every test cluster lives under one directory (tempfile honours TMPDIR), so
# that the end of this run stops and removes whatever a killed test left.
pgdata_parent=$(mktemp -d /tmp/snowflake_id_pgtest.XXXXXX)
chmod 755 "$pgdata_parent"
logs=$PWD/target/test-logs
rm -rf "$logs"
mkdir -p "$logs"
# A test binary that runs longer than this is stopped and counts as failed
# (the slowest takes about 2 minutes alone, 4 beside the others).
BINARY_TIMEOUT=${BINARY_TIMEOUT:-1200}

# Seconds each test binary took on 15 (alone, on 2 cores): how the binaries
# of one major are dealt out to its lanes. A new binary counts as 30.
declare -A weight=([fleet]=112 [chaos]=78 [durability]=77 [replication]=71 [fleet_chaos]=69 [settings]=64
    [monitoring]=39 [status_problem]=37 [clock_accuracy]=34 [decoding]=32 [registry]=27 [sql_basics]=24
    [planning]=23 [barriers]=18 [server_lifecycle]=12 [convert]=11 [concurrency]=10 [upgrade]=6 [partman]=5
    [clients]=12 [blocks]=40 [prerequisites]=1 [history]=35 [citus]=65 [hostile]=60 [text_forms]=10
    [registry_model]=60 [logical]=75)

# Runs test binaries $3... one after another against the server of major $1
# (bin dir $2), every one of them (no fail fast); fails when one did. Says
# on the console (fd 3) when each ends.
run_binaries() {
    local major=$1 bindir=$2 name exe rc=0 t0 status
    shift 2
    for name in "$@"; do
        exe=$(awk -v n="$name" '$1 == n { print $2 }' "$test_bins")
        echo "     Running tests/$name.rs"
        t0=$SECONDS
        if [ -z "$exe" ]; then
            echo "no test binary tests/$name.rs (target/test-binaries)"
            rc=1
            continue
        fi
        # pg_upgrade to 18 starts from 17 with the library installed: wait
        # for this run's install of 17 rather than use a stale one (bounded,
        # and not past the end of test.sh itself).
        if [ "$major" = 18 ] && [ "$name" = server_lifecycle ] && in_list 17 "$PG_MAJORS"; then
            while [ ! -e "$logs/installed-17" ] && [ ! -e "$logs/install-failed-17" ] && ((SECONDS - t0 < 3600)); do
                kill -0 "$main_pid" 2>/dev/null || return 1
                sleep 2
            done
        fi
        status=ok
        if ! TMPDIR="$pgdata_parent" SNOWFLAKE_PG_BIN="$bindir" timeout -k 30 "$BINARY_TIMEOUT" "$exe"; then
            status=FAILED
            echo "== FAILED: tests/$name.rs"
            rc=1
        fi
        echo "     tests/$name.rs: $((SECONDS - t0))s"
        printf '   %-6s PostgreSQL %s tests/%s.rs (%ss)\n' "$status" "$major" "$name" $((SECONDS - t0)) >&3
    done
    echo "== lane done"
    return $rc
}

# The tests of one major, in the background beside the others': most of
# their time is spent waiting (leases, timeouts, soaks), not computing, so
# the majors run at once and each one's binaries in LANES lanes, dealt out
# by weight. $1: major, $2: bin dir; the rest: the binaries.
LANES=${LANES:-2}
test_major() {
    local major=$1 bindir=$2 name best i rc=0 pids=()
    shift 2
    local -a load lanes rest=()
    # tests/package.rs replaces and then restores the installed library with
    # dpkg: nothing else may start a server of this major meanwhile.
    for name in "$@"; do
        if [ "$name" = package ]; then
            run_binaries "$major" "$bindir" package >"$logs/pg$major.alone.log" 2>&1 || rc=1
            echo "---- alone: package" && cat "$logs/pg$major.alone.log"
        else
            rest+=("$name")
        fi
    done
    for ((i = 0; i < LANES; i++)); do load[i]=0 lanes[i]=""; done
    # The heaviest first, each to the lane with the least so far.
    for name in $(for n in "${rest[@]}"; do echo "${weight[$n]:-30} $n"; done | sort -rn | awk '{ print $2 }'); do
        best=0
        for ((i = 1; i < LANES; i++)); do ((load[i] >= load[best])) || best=$i; done
        lanes[best]+=" $name"
        load[best]=$((load[best] + ${weight[$name]:-30}))
    done
    for ((i = 0; i < LANES; i++)); do
        [ -n "${lanes[i]}" ] || continue
        # shellcheck disable=SC2086 # a list of names
        run_binaries "$major" "$bindir" ${lanes[i]} >"$logs/pg$major.lane$i.log" 2>&1 &
        pids+=($!)
    done
    for i in "${pids[@]}"; do wait "$i" || rc=1; done
    for ((i = 0; i < LANES; i++)); do
        [ ! -f "$logs/pg$major.lane$i.log" ] || { echo "---- lane $i:${lanes[i]}" && cat "$logs/pg$major.lane$i.log"; }
    done
    # A lane that started nothing, or a list that lost names, would pass.
    local ran
    read -r ran _ < <(major_counts "$major")
    if (($# == 0 || ran != $#)); then
        echo "== FAILED: $ran of the $# test binaries handed to PostgreSQL $major ran"
        rc=1
    fi
    return $rc
}

# What major $1's logs show: "<binaries started> <tests passed> <tests failed>",
# from run_binaries' "Running" lines and libtest's "test result:" lines.
major_counts() {
    local f files=()
    for f in "$logs/pg$1.alone.log" "$logs"/pg"$1".lane*.log; do [ ! -f "$f" ] || files+=("$f"); done
    if ((${#files[@]} == 0)); then
        echo "0 0 0"
        return
    fi
    cat "${files[@]}" | awk '
        /^     Running tests\// { binaries++ }
        /^test result: / {
            for (i = 1; i < NF; i++) {
                if ($(i + 1) ~ /^passed/) passed += $i
                if ($(i + 1) ~ /^failed/) failed += $i
            }
        }
        END { print binaries + 0, passed + 0, failed + 0 }'
}

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
    cargo pgrx install --pg-config "$pg_config" >/dev/null || return 1
    install -m 644 sql/snowflake_id--0.1.0.sql "$("$pg_config" --sharedir)/extension/" || return 1
    touch "$logs/installed-$major"

    if in_list "$major" "$FULL_MAJORS"; then
        tests=$(awk '{ print $1 }' "$test_bins")
    else
        tests="${SUBSET_TESTS[*]}"
    fi
    [ -n "$tests" ] || { echo "== no integration tests to run on PostgreSQL $major" && return 1; }
    # A process group of its own (job control on for this one fork), so
    # that the end of this run can stop it with everything it started.
    set -m
    (
        set +e
        rc=0
        regress_pid=""
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
counts=()
for major in $PG_MAJORS; do
    [ -n "${major_pid[$major]:-}" ] || continue
    rc=0
    wait "${major_pid[$major]}" || rc=$?
    echo "================ PostgreSQL $major ($((SECONDS - major_started[$major]))s from its start)"
    cat "$logs/pg$major.log"
    if ((rc != 0)); then
        echo "== FAILED on PostgreSQL $major: tests (log: $logs/pg$major.log)"
        failed+=("$major (tests)")
    fi
    read -r binaries passed failed_tests < <(major_counts "$major")
    counts+=("$(printf 'PostgreSQL %s: %d test binaries ran, %d tests passed, %d failed' "$major" "$binaries" "$passed" "$failed_tests")")
    if ((rc == 0 && (binaries == 0 || passed == 0))); then
        echo "== FAILED on PostgreSQL $major: no integration test ran"
        failed+=("$major (no tests ran)")
    fi
    # On 15, Citus, pglogical and pg_partman are installed by scripts/setup.sh:
    # a test that skipped because one is missing hid a broken setup.
    if [ "$major" = 15 ] && grep -h "SKIPPED on PostgreSQL 15 .*not installed" "$logs"/pg15.*.log 2>/dev/null; then
        echo "== FAILED on PostgreSQL 15: a test skipped for want of what scripts/setup.sh installs"
        failed+=("15 (skipped tests)")
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
((${#counts[@]} == 0)) || printf '%s\n' "${counts[@]}"
if ((${#failed[@]})); then
    echo "== FAILED after $elapsed on PostgreSQL: ${failed[*]}"
    exit 1
fi
echo "== passed on PostgreSQL $PG_MAJORS in $elapsed"
