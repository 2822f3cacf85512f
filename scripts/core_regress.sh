#!/usr/bin/env bash
# PostgreSQL's own regression suite as a guard for everything the library
# changes in a server that loads it: the library hooks the planner
# and runs a background process (the mark keeper) beside every server, so a
# mistake there shows in whatever PostgreSQL does, not in our own tests: a
# DROP DATABASE that waits for ever on the keeper, an error that loses its
# CONTEXT line on its way through the planner hook.
#
#   bash scripts/core_regress.sh 18
#
# Runs the parallel schedule of that major's source (`make installcheck-parallel`
# in the tree `scripts/pg_servers.sh --regress-tree` builds; 17 and 18 only)
# twice, against two throwaway clusters of the installed server:
#   plain    without the library
#   library  shared_preload_libraries = 'snowflake_id', the extension created
#            in the regression database (pg_regress --load-extension), and in
#            `postgres` one ID drawn so that the keeper has a mark to keep
# and compares the two: the same tests must pass and fail, with the same diffs
# against the expected output. It hard-codes no failure of the suite itself:
# whatever fails without the library must fail the same way with it. A test
# whose output differs is allowed only where ALLOWED (below) names it, and
# only when every line that differs is one of the extension's own catalog
# entries by design; anything else fails the run. Exits 0 when nothing
# unexplained differs.
#
# Needs the library installed into that major (cargo pgrx install
# --pg-config "$(bash scripts/pg_servers.sh --pg-config 18)"). Runs as root;
# the servers run as `postgres`, on private sockets with no TCP.
#
#   CORE_REGRESS_OUT=dir     each run's output (results/, regression.out and
#                            .diffs, server log), the comparison and the
#                            differing tests' deltas; emptied first
#                            (default target/core-regress/pgNN)
#   CORE_REGRESS_ENCODING=UTF8   the regression database's and client's encoding
#   CORE_REGRESS_TIMEOUT=900     seconds one run of the suite may take (it
#                            takes 1 to 2 minutes here)
#   CORE_REGRESS_STUCK_AFTER=60  a watchdog (one extra session per server, in
#                            database postgres) cancels any statement of the
#                            suite still running after this many seconds and
#                            says so: a statement that waits for ever (DROP
#                            DATABASE on a keeper that ignores barriers) fails
#                            its own test instead of hanging the run. The
#                            suite's slowest test takes about 4 s here; a
#                            statement_timeout would do the same but shows in
#                            the suite's output (psql_pipeline prints it).
#   CORE_REGRESS_SEQUENTIAL=1    run the two suites one after the other (by
#                            default they run at the same time: faster here)
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "core_regress: $*" >&2; }
die() {
    say "$*"
    exit 1
}

# The differences that are the extension's own catalog entries, by design:
# test name -> an extended regular expression that each line of the test's
# output that differs between the two runs must match (whitespace ignored;
# psql's row counts and the dashed line under a header, which change with
# those rows, are accepted with them). Each with its reason.
declare -A ALLOWED=() ALLOWED_WHY=()
# "Functions that are SECURITY DEFINER": PostgreSQL has none, so the query
# lists exactly the functions of the extension that are. The registry's five
# functions called by nodes must be: nodes call them with EXECUTE on them alone
# and they write the lease and history tables the nodes may not touch
# (sql/install/registry_functions.sql).
# And "conflicting proc definitions (same names and input datatypes)", which
# ignores schemas: since 0.9.0 the implementations live in
# snowflake_id_internal (what nodes call over libpq, the guard, convert,
# the cluster check, the C functions the SQL bodies call), and the
# extension's schema has entry points of the same names and argument types
# bound to them, by design (docs/security.md).
ALLOWED[opr_sanity]='^ *[0-9]+ \| snowflake_registry_(acquire|renew|release|history_of|record_history) *$|^ *[0-9]+ \| snowflake_[a-z_]+ *\| *[0-9]+ \| snowflake_[a-z_]+ *$'
ALLOWED_WHY[opr_sanity]="lists the registry's SECURITY DEFINER functions snowflake_registry_acquire, _renew, _release, _history_of and _record_history (by design: nodes may only EXECUTE them), and the implementations in snowflake_id_internal beside the entry points of the same names and argument types in the extension's schema (by design: what the extension runs is where no other role creates)"
# event_trigger lists every event trigger of the database: the extension's
# one (the logical replication guard's, sql/install/logical.sql) is there with the
# extension created. That it changes nothing else the suite checks (its
# own event triggers, every CREATE and ALTER TABLE) is what the rest of the
# comparison shows.
ALLOWED[event_trigger]='^ *snowflake_id_logical_guard *\| event trigger snowflake_id_logical_guard *\|'
ALLOWED_WHY[event_trigger]="lists the extension's event trigger snowflake_id_logical_guard (the logical replication guard's, by design)"

[ $# -eq 1 ] || die "usage: $0 <major>   (17 or 18: the majors whose source is built here)"
major=$1
[ "$(id -u)" = 0 ] || die "run as root: the servers run as the postgres user (runuser)"
id postgres >/dev/null 2>&1 || die "there is no postgres user (scripts/setup.sh installs postgresql-15, which creates it)"
ENCODING=${CORE_REGRESS_ENCODING:-UTF8}
TIMEOUT=${CORE_REGRESS_TIMEOUT:-900}
STUCK_AFTER=${CORE_REGRESS_STUCK_AFTER:-60}
OUT=${CORE_REGRESS_OUT:-$PWD/target/core-regress/pg$major}

bindir=$(bash scripts/pg_servers.sh --bindir "$major")
tree=$(bash scripts/pg_servers.sh --regress-tree "$major")
version=$("$bindir/pg_config" --version)
library="$("$bindir/pg_config" --pkglibdir)/snowflake_id.so"
for f in "$library" "$("$bindir/pg_config" --sharedir)/extension/snowflake_id.control"; do
    [ -f "$f" ] || die "the library is not installed into $version ($f is missing): cargo pgrx install --pg-config $bindir/pg_config"
done
# Which build the servers load: a library installed again while they run
# (another run's `cargo pgrx install`) changes code under running processes
# and voids the comparison.
library_id() { echo "$(stat -c '%i %Y %s' "$library") $(sha256sum <"$library")"; }
library_before=$(library_id)
# The version, and which build of it (one version has many builds while it is worked on).
library_version="$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$("$bindir/pg_config" --sharedir)/extension/snowflake_id.control")"
library_version+=" (build $(echo "$library_before" | awk '{ print substr($4, 1, 12) }'))"

rm -rf "$OUT"
work=$(mktemp -d /tmp/snowflake_id_core_regress.XXXXXX)
chown postgres "$work"
chmod 755 "$work"
running=() watchdogs=() kept=""
cleanup() {
    local name pid f
    for name in "${running[@]}"; do stop_server "$name"; done
    for pid in "${watchdogs[@]}"; do kill "$pid" 2>/dev/null || true; done
    # Stopped early: keep the logs there are.
    if [ -z "$kept" ]; then
        for f in "$work"/*/*.log; do
            [ -f "$f" ] || continue
            name=$(basename "$(dirname "$f")")
            mkdir -p "$OUT/$name" && cp "$f" "$OUT/$name/"
        done
        [ ! -d "$OUT" ] || say "logs: $OUT"
    fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# As the postgres user, from a directory it may enter.
as_postgres() { (cd "$work" && runuser -u postgres -- "$@"); }

# $1: plain or library; $2: its port (the socket lives in $work/$1).
start_server() {
    local name=$1 port=$2 dir="$work/$1"
    as_postgres mkdir -p "$dir"
    as_postgres "$bindir/initdb" -D "$dir/data" -A trust --no-sync --no-instructions \
        --locale=C --encoding=UTF8 >"$dir/initdb.log" 2>&1 ||
        die "initdb of the $name cluster failed: $(tail -n 5 "$dir/initdb.log")"
    cat >>"$dir/data/postgresql.conf" <<CONF
# scripts/core_regress.sh, the same in both clusters
listen_addresses = ''
port = $port
unix_socket_directories = '$dir'
# prepared_xacts runs its real test rather than its variant for 0 slots
max_prepared_transactions = 2
CONF
    if [ "$name" = library ]; then
        cat >>"$dir/data/postgresql.conf" <<CONF
shared_preload_libraries = 'snowflake_id'
snowflake_id.worker_id = 42
CONF
    fi
    running+=("$name")
    as_postgres "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 120 start >/dev/null ||
        die "the $name server did not start: $(tail -n 5 "$dir/server.log")"
}

stop_server() {
    local dir="$work/$1"
    [ -f "$dir/data/postmaster.pid" ] || return 0
    as_postgres "$bindir/pg_ctl" -D "$dir/data" -m fast -w -t 60 stop >/dev/null 2>&1 ||
        as_postgres "$bindir/pg_ctl" -D "$dir/data" -m immediate -w -t 60 stop >/dev/null 2>&1 ||
        say "could not stop the $1 server (data directory $dir/data)"
}

psql_in() {
    local name=$1 port=$2
    shift 2
    as_postgres "$bindir/psql" -X -q -v ON_ERROR_STOP=1 -h "$work/$name" -p "$port" -d postgres "$@"
}

# Cancels, every 5 s, each statement of a client that has run longer than
# STUCK_AFTER seconds in server $1 and writes one line about it to
# $work/$1/cancelled. One session for the whole run, which ends when its
# server stops.
start_watchdog() {
    local name=$1 port=$2
    psql_in "$name" "$port" -At -v stuck="$STUCK_AFTER" >"$work/$name/cancelled" 2>"$work/$name/watchdog.log" <<'SQL' &
WITH stuck AS MATERIALIZED (
    SELECT pid, wait_event_type, wait_event, now() - query_start AS running, query
    FROM pg_stat_activity
    WHERE backend_type = 'client backend' AND state = 'active' AND pid <> pg_backend_pid()
      AND now() - query_start > make_interval(secs => :stuck))
SELECT format('cancelled after %s (waiting on %s): %s', date_trunc('second', running),
              coalesce(wait_event_type || ' ' || wait_event, 'nothing'), left(regexp_replace(query, '\s+', ' ', 'g'), 200))
FROM stuck
WHERE pg_cancel_backend(pid);
\watch 5
SQL
    watchdogs+=($!)
}

# The parallel schedule against one server; its output goes to $work/$1/out,
# make's to $work/$1/make.log, the exit status to $work/$1/rc.
run_suite() {
    local name=$1 port=$2 opts rc=0 start=$SECONDS
    opts="--outputdir=$work/$name/out"
    [ "$name" = plain ] || opts+=" --load-extension=snowflake_id"
    # As postgres: the server writes files that psql made (\o, then COPY TO),
    # and psql reads what the server wrote. The tree is only read: it is built.
    as_postgres mkdir -p "$work/$name/out"
    # pg_regress reads the connection from the environment; nothing else of
    # the caller's libpq environment may reach it.
    as_postgres env -u PGOPTIONS -u PGDATABASE -u PGSERVICE -u PGSERVICEFILE -u PGSSLMODE -u PGPASSWORD \
        -u PGCLIENTENCODING PGHOST="$work/$name" PGPORT="$port" PGUSER=postgres \
        timeout -k 30 "$TIMEOUT" make -s -C "$tree/src/test/regress" installcheck-parallel \
        ENCODING="$ENCODING" EXTRA_REGRESS_OPTS="$opts" >"$work/$name/make.log" 2>&1 || rc=$?
    echo "$rc" >"$work/$name/rc"
    echo $((SECONDS - start)) >"$work/$name/seconds"
}

# "<test> ok|FAILED", one a line, from pg_regress's TAP output (make's
# output: pg_regress deletes regression.out when every test passed).
statuses() {
    sed -nE 's/^(not )?ok +[0-9]+ +[-+] +([^ ]+) .*/\2 \1/p' "$1" |
        awk '{ print $1, ($2 == "not" ? "FAILED" : "ok") }' | sort
}

# Splits regression.diffs ($1) into one file per test under $2, naming the
# expected file compared with and dropping the paths and times.
split_diffs() {
    mkdir -p "$2"
    [ -f "$1" ] || return 0
    awk -v dir="$2" '
        /^diff / && $NF ~ /\/results\/[^\/]+\.out$/ {
            if (f != "") close(f)
            n = split($NF, a, "/"); t = a[n]; sub(/\.out$/, "", t)
            m = split($(NF - 1), b, "/")
            f = dir "/" t ".diff"
            print "against expected/" b[m] > f
            header = 2
            next
        }
        header > 0 && (/^--- / || /^\+\+\+ /) { header--; next }
        { header = 0; if (f != "") print > f }
    ' "$1"
}

# Is the delta of test $1 (diff -w -U0 of plain's and library's output, file
# $2) made only of what ALLOWED names for it? At least one line must be.
allowed() {
    local test=$1 delta=$2 pattern
    pattern=${ALLOWED[$test]:-}
    [ -n "$pattern" ] || return 1
    # Through the environment: awk -v would interpret the backslashes.
    PATTERN=$pattern awk '
        /^(\+\+\+|---) / && NR <= 2 { next }
        /^@@/ { next }
        /^[-+]/ {
            line = substr($0, 2)
            if (line ~ ENVIRON["PATTERN"]) { seen = 1; next }
            if (line ~ /^\([0-9]+ rows?\)$/ || line ~ /^-+(\+-+)*$/) next
            bad = 1
        }
        END { exit !(seen && !bad) }
    ' "$delta"
}

say "$version, snowflake_id $library_version; suite: $tree; output: $OUT"
start_server plain 54601
start_server library 54602
psql_in library 54602 -c 'CREATE EXTENSION snowflake_id' -c 'SELECT snowflake_nextval()' >/dev/null ||
    die "creating the extension in the library cluster failed"

start_watchdog plain 54601
start_watchdog library 54602
started=$SECONDS
if [ -n "${CORE_REGRESS_SEQUENTIAL:-}" ]; then
    say "running the parallel schedule without the library, then with it (each at most ${TIMEOUT}s)"
    run_suite plain 54601
    run_suite library 54602
else
    say "running the parallel schedule without and with the library at once (each at most ${TIMEOUT}s)"
    run_suite plain 54601 &
    plain_job=$!
    run_suite library 54602 &
    library_job=$!
    wait "$plain_job" "$library_job"
fi
elapsed=$((SECONDS - started))

# What was still running when a run timed out, before the servers stop.
for name in plain library; do
    if [ "$(cat "$work/$name/rc")" = 124 ] || [ "$(cat "$work/$name/rc")" = 137 ]; then
        port=54601
        [ "$name" = plain ] || port=54602
        psql_in "$name" "$port" -c "SELECT pid, backend_type, state, wait_event_type, wait_event, left(query, 60) AS query FROM pg_stat_activity WHERE pid <> pg_backend_pid()" \
            >"$work/$name/activity-at-timeout.txt" 2>&1 || true
    fi
done
for name in library plain; do stop_server "$name"; done
running=()
# The watchdogs end with their servers.
for pid in "${watchdogs[@]}"; do wait "$pid" 2>/dev/null || true; done
watchdogs=()

rm -rf "$OUT"
mkdir -p "$OUT"
kept=1
for name in plain library; do
    mkdir -p "$OUT/$name"
    cp -r "$work/$name/out/." "$OUT/$name/"
    cp "$work/$name/make.log" "$work/$name/server.log" "$work/$name/cancelled" "$OUT/$name/"
    [ ! -f "$work/$name/activity-at-timeout.txt" ] || cp "$work/$name/activity-at-timeout.txt" "$OUT/$name/"
    statuses "$OUT/$name/make.log" >"$OUT/$name/statuses"
    split_diffs "$OUT/$name/regression.diffs" "$OUT/$name/diffs"
done

[ "$(library_id)" = "$library_before" ] ||
    die "$library was replaced while the servers ran (another cargo pgrx install?): the comparison is void; run again"

plain_rc=$(cat "$work/plain/rc")
library_rc=$(cat "$work/library/rc")
if [ "$plain_rc" = 124 ] || [ "$plain_rc" = 137 ] || [ ! -s "$OUT/plain/statuses" ]; then
    tail -n 20 "$OUT/plain/make.log" >&2
    die "the run without the library did not complete (exit $plain_rc; $OUT/plain/make.log): nothing to compare with"
fi

# Test by test: same status and same diff, else the delta between the two
# outputs, allowed or not.
mkdir -p "$OUT/delta"
same=0 allowed_tests=() unexplained=() failed_alike=()
while read -r test; do
    p=$(awk -v t="$test" '$1 == t { print $2 }' "$OUT/plain/statuses")
    l=$(awk -v t="$test" '$1 == t { print $2 }' "$OUT/library/statuses")
    pd="$OUT/plain/diffs/$test.diff" ld="$OUT/library/diffs/$test.diff"
    if [ "$p" = "$l" ] && { { [ ! -e "$pd" ] && [ ! -e "$ld" ]; } || cmp -s "$pd" "$ld"; }; then
        same=$((same + 1))
        [ "$p" != FAILED ] || failed_alike+=("$test")
        continue
    fi
    delta="$OUT/delta/$test.diff"
    pr="$OUT/plain/results/$test.out" lr="$OUT/library/results/$test.out"
    if [ -f "$pr" ] && [ -f "$lr" ]; then
        diff -w -U0 --label "without the library: $test.out" --label "with the library: $test.out" "$pr" "$lr" >"$delta" || true
    else
        echo "no output: without the library ${p:-not run}, with it ${l:-not run}" >"$delta"
    fi
    if [ -n "$p" ] && [ -n "$l" ] && allowed "$test" "$delta"; then
        allowed_tests+=("$test ($p/$l)")
    else
        unexplained+=("$test (${p:-not run} without the library, ${l:-not run} with it)")
    fi
done < <(cat "$OUT/plain/statuses" "$OUT/library/statuses" | awk '{ print $1 }' | sort -u)

{
    echo "$version, snowflake_id $library_version, encoding $ENCODING; both runs took ${elapsed}s"
    echo "without the library: $(grep -c ' ok$' "$OUT/plain/statuses") ok, $(grep -c ' FAILED$' "$OUT/plain/statuses") failed (make exit $plain_rc, $(cat "$work/plain/seconds")s)"
    echo "with the library:    $(grep -c ' ok$' "$OUT/library/statuses") ok, $(grep -c ' FAILED$' "$OUT/library/statuses") failed (make exit $library_rc, $(cat "$work/library/seconds")s)"
    echo "identical: $same tests${failed_alike[*]:+, of which failed alike in both runs: ${failed_alike[*]}}"
    for name in plain library; do
        [ ! -s "$OUT/$name/cancelled" ] || sed "s/^/watchdog in the $name run: /" "$OUT/$name/cancelled"
    done
    for t in "${allowed_tests[@]}"; do echo "allowed:     $t: ${ALLOWED_WHY[${t%% *}]}"; done
    for t in "${unexplained[@]}"; do echo "UNEXPLAINED: $t: $OUT/delta/${t%% *}.diff"; done
} | tee "$OUT/comparison.txt" | sed 's/^/core_regress: /' >&2

if [ "$library_rc" = 124 ] || [ "$library_rc" = 137 ]; then
    say "the run with the library timed out after ${TIMEOUT}s; what was running: $OUT/library/activity-at-timeout.txt"
    unexplained+=("(timeout)")
fi
if ((${#unexplained[@]})); then
    for t in "${unexplained[@]}"; do
        f="$OUT/delta/${t%% *}.diff"
        [ -f "$f" ] || continue
        say "--- ${t%% *}: the first lines of $f"
        head -n 40 "$f" >&2
    done
    die "FAILED: ${#unexplained[@]} test(s) differ with the library in ways no allowance explains (all deltas: $OUT/delta/, both runs: $OUT/plain, $OUT/library)"
fi
say "passed: PostgreSQL's regression suite runs the same with the library as without it (${#allowed_tests[@]} allowed difference(s); $OUT/comparison.txt)"
