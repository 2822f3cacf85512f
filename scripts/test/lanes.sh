# How one major's test binaries are dealt out to its lanes, run one after
# another in each lane, counted and tabled: sourced by scripts/test.sh,
# whose settings and paths ($logs, $test_bins, $last_secs, BINARY_TIMEOUT,
# SNOWFLAKE_SKIP ...) these functions read. Not a command of its own.

# For a machine that has not timed a run yet: seconds each test binary
# took on 15 (alone, on 2 cores), measured by hand once.
declare -A first_weight=([fleet]=112 [chaos]=78 [durability]=77 [replication]=71 [fleet_chaos]=69 [settings]=64
    [monitoring]=39 [status_problem]=37 [clock_accuracy]=34 [decoding]=32 [registry]=27 [sql_basics]=24
    [planning]=23 [barriers]=18 [server_lifecycle]=12 [convert]=11 [concurrency]=10 [upgrade]=6 [partman]=5
    [clients]=12 [blocks]=40 [prerequisites]=1 [past_instants]=110 [citus]=65 [hostile]=60 [text_forms]=10
    [registry_model]=60 [logical]=75 [logical_no_guard]=60 [docs]=5 [plants]=15 [skew]=50)

# The weight of binary $2 on major $1, by which the binaries of one major
# are dealt out to its lanes: its seconds on that major when it last ran;
# else on another major; else first_weight; else 30 (a new binary).
lane_weight() {
    local key
    if [ -n "${last_secs["$1 $2"]:-}" ]; then
        echo "${last_secs["$1 $2"]}"
        return
    fi
    for key in "${!last_secs[@]}"; do
        if [ "${key#* }" = "$2" ]; then
            echo "${last_secs[$key]}"
            return
        fi
    done
    echo "${first_weight[$2]:-30}"
}

# What one test binary ran, from its output $1 and its skip records $2
# (tests/common/mod.rs appends one per skipped test to SNOWFLAKE_SKIP_LOG;
# libtest counts a skipped test as passed): prints "<tests> <passed>
# <failed> <skipped> <by name> <legacy cannot-run lines>", tests -1 when
# libtest printed no result (killed, crashed).
binary_counts() {
    local out=$1 skips=$2 name=$3 result major_skips by_name legacy legacy_missing passed failed ignored
    result=$(awk '
        /^test result: / {
            seen = 1
            for (i = 1; i < NF; i++) {
                if ($(i + 1) ~ /^passed/) passed += $i
                if ($(i + 1) ~ /^failed/) failed += $i
                if ($(i + 1) ~ /^ignored/) ignored += $i
            }
        }
        END { if (seen) print passed + 0, failed + 0, ignored + 0; else print "-1 0 0" }' "$out")
    read -r passed failed ignored <<<"$result"
    major_skips=0 by_name=0
    if [ -s "$skips" ]; then
        major_skips=$(awk -F '\t' '$1 == "major" { print $2 }' "$skips" | sort -u | wc -l)
        by_name=$(awk -F '\t' '$1 == "by-name" { print $2 }' "$skips" | sort -u | wc -l)
    fi
    # Skips a test prints by itself, not through tests/common/mod.rs (no
    # "binary::test:" in the line): skipped all the same; one that says
    # something is not installed could not run its subject.
    legacy=$(grep -o 'SKIPPED.*' "$out" | grep -c -v "): $name::" || true)
    legacy_missing=$(grep -o 'SKIPPED.*' "$out" | grep -v "): $name::" | grep -c 'not installed' || true)
    if ((passed < 0)); then
        echo "-1 0 0 0 0 $legacy_missing"
        return
    fi
    local skipped=$((major_skips + legacy + ignored))
    echo "$((passed + failed + ignored)) $((passed - major_skips - by_name - legacy)) $failed $skipped $by_name $legacy_missing"
}

# Records binary $2's line for major $1's table: status, then the counts of
# binary_counts and its seconds.
record_result() {
    mkdir -p "$logs/pg$1.results"
    echo "$3" >"$logs/pg$1.results/$2"
}

# The guard tests of tests/logical.rs once more, with the guard's trigger
# disabled: each must fail (a test that passes without the guard does not
# test it), and none for a reason of its own (a subject it cannot run).
run_without_guard() {
    local major=$1 bindir=$2 exe=$3 out=$4 t rc=0 names=() failed_ok=0
    for t in $("$exe" --list --format terse | sed -n 's/^\(guard_[a-z0-9_]*\): test$/\1/p'); do
        [[ "$major" != 15 && "$t" == *pglogical* ]] || names+=("$t")
    done
    if ((${#names[@]} == 0)); then
        echo "== FAILED: tests/logical.rs has no guard_* test to run without the guard"
        echo "1 0 0"
        return
    fi
    TMPDIR="$pgdata_parent" SNOWFLAKE_PG_BIN="$bindir" SNOWFLAKE_LOGICAL_NO_GUARD=1 SNOWFLAKE_SKIP_LOG=/dev/null \
        timeout -k 30 "$BINARY_TIMEOUT" "$exe" --exact "${names[@]}" >"$out" 2>&1 || true
    for t in "${names[@]}"; do
        if grep -qxF "test $t ... FAILED" "$out"; then
            failed_ok=$((failed_ok + 1))
        else
            echo "== FAILED: without the guard, tests/logical.rs $t did not fail (it does not test the guard)"
            rc=1
        fi
    done
    if grep -q "CANNOT RUN" "$out"; then
        echo "== FAILED: without the guard, a guard test could not run its subject: its failure shows nothing"
        rc=1
    fi
    echo "$rc ${#names[@]} $failed_ok"
}

# Runs test binaries $3... one after another against the server of major $1
# (bin dir $2), every one of them (no fail fast); fails when one did, or
# when one ran no test. Says on the console (fd 3) when each ends, and
# records each one's counts for the major's table (record_result). The
# name logical_no_guard stands for run_without_guard.
run_binaries() {
    local major=$1 bindir=$2 name exe rc=0 t0 status counts out skips old_bin
    local tests passed failed_tests skipped by_name legacy_missing
    shift 2
    for name in "$@"; do
        exe=$(awk -v n="${name%_no_guard}" '$1 == n { print $2 }' "$test_bins")
        echo "     Running tests/$name.rs"
        t0=$SECONDS
        if [ -z "$exe" ]; then
            echo "no test binary tests/$name.rs (target/test-binaries)"
            record_result "$major" "$name" "MISSING -1 0 0 0 0 0"
            rc=1
            continue
        fi
        out=$logs/pg$major.$name.out
        skips=$logs/pg$major.$name.skips
        rm -f "$skips"
        if [ "$name" = logical_no_guard ]; then
            local nrc total failed_ok
            run_without_guard "$major" "$bindir" "$exe" "$out" >"$out.verdict"
            # Their failures are the expected outcome: printed as such, so
            # that nothing reading this log takes them for failing tests.
            sed -e 's/^\(test guard_[a-z0-9_]*\) \.\.\. FAILED$/\1 ... failed without the guard, as it must/' \
                -e 's/^failures:$/failures without the guard, as they must:/' \
                -e 's/^test result: FAILED\./test result without the guard:/' "$out"
            cat "$out.verdict"
            read -r nrc total failed_ok < <(tail -n 1 "$out.verdict")
            status=ok
            ((nrc == 0)) || { status=FAILED && rc=1; }
            # Its "passed": the guard tests that failed, as they must.
            record_result "$major" "$name" "$status $total $failed_ok $((total - failed_ok)) 0 0 0 $((SECONDS - t0))"
            echo "     tests/$name.rs: $((SECONDS - t0))s"
            printf '   %-7s PostgreSQL %s tests/logical.rs without the guard: %s of %s guard tests failed, as they must (%ss)\n' \
                "$status" "$major" "$failed_ok" "$total" $((SECONDS - t0)) >&3
            continue
        fi
        # pg_upgrade to 18 starts from 17, to 19 from 18, with the library
        # installed: wait for this run's install of the major before rather
        # than use a stale one (bounded, and not past the end of test.sh
        # itself); without it in this run, the tests have no old server
        # (they fail unless SNOWFLAKE_SKIP names them).
        old_bin=""
        local before=$((major - 1))
        if ((major >= 18)) && { [ "$name" = server_lifecycle ] || [ "$name" = plants ]; } &&
            in_list "$before" "$PG_MAJORS"; then
            while [ ! -e "$logs/installed-$before" ] && [ ! -e "$logs/install-failed-$before" ] &&
                ((SECONDS - t0 < 3600)); do
                kill -0 "$main_pid" 2>/dev/null || return 1
                sleep 2
            done
            [ ! -e "$logs/installed-$before" ] || old_bin=$(bash scripts/pg_servers.sh --bindir "$before")
        fi
        status=ok
        if ! TMPDIR="$pgdata_parent" SNOWFLAKE_PG_BIN="$bindir" SNOWFLAKE_OLD_PG_BIN="$old_bin" SNOWFLAKE_SKIP_LOG="$skips" \
            timeout -k 30 "$BINARY_TIMEOUT" "$exe" >"$out" 2>&1; then
            status=FAILED
        fi
        cat "$out"
        counts=$(binary_counts "$out" "$skips" "$name")
        read -r tests passed failed_tests skipped by_name legacy_missing <<<"$counts"
        if ((tests < 0)); then
            status=FAILED
            echo "== FAILED: tests/$name.rs printed no test result (killed after ${BINARY_TIMEOUT}s, or crashed)"
        elif ((legacy_missing > 0)); then
            status=FAILED
            echo "== FAILED: tests/$name.rs: a test skipped for want of what it tests (SKIPPED ... not installed)"
        elif ((passed <= 0)) && [ "$status" = ok ]; then
            status=NOTHING
            echo "== FAILED: tests/$name.rs ran no test ($tests listed, $skipped skipped, $by_name skipped by name)"
        fi
        if [ "$status" != ok ]; then
            echo "== FAILED: tests/$name.rs"
            rc=1
        fi
        if [ -s "$skips" ]; then
            echo "     skipped:"
            sort -u "$skips" | awk -F '\t' '{ printf "       %-8s %s: %s\n", $1, $2, $3 }'
        fi
        record_result "$major" "$name" "$status $counts $((SECONDS - t0))"
        echo "     tests/$name.rs: $((SECONDS - t0))s"
        printf '   %-7s PostgreSQL %s tests/%s.rs (%ss)\n' "$status" "$major" "$name" $((SECONDS - t0)) >&3
    done
    echo "== lane done"
    return $rc
}

# Major $1's table ($major_took in its heading): one line per binary it
# was handed, from record_result,
# and its skips (of a test not run on this major by design, or named in
# SNOWFLAKE_SKIP). Fails when a binary handed to it left no line.
results_table() {
    local major=$1 name f rc=0 status tests passed failed_tests skipped by_name secs
    shift
    printf 'PostgreSQL %s (%s)\n  %-32s %7s %6s %6s %7s %7s %5s  %s\n' "$major" "${major_took:-}" "binary" "tests" "passed" \
        "failed" "skipped" "by name" "secs" "status"
    for name in "$@"; do
        f=$logs/pg$major.results/$name
        if [ ! -f "$f" ]; then
            printf '  %-32s %s\n' "tests/$name.rs" "NOT RUN"
            rc=1
            continue
        fi
        read -r status tests passed failed_tests skipped by_name _ secs <"$f"
        ((tests >= 0)) || tests="-"
        [ "$name" != logical_no_guard ] || name="logical.rs without the guard"
        [[ "$name" == *" "* ]] || name="tests/$name.rs"
        printf '  %-32s %7s %6s %6s %7s %7s %5s  %s\n' "$name" "$tests" "$passed" "$failed_tests" "$skipped" "$by_name" \
            "$secs" "$status"
        [ "$status" = ok ] || rc=1
    done
    local skip_files=("$logs"/pg"$major".*.skips)
    if [ -e "${skip_files[0]}" ]; then
        echo "  skipped (major: not on this major by design; by-name: SNOWFLAKE_SKIP):"
        cat "${skip_files[@]}" | sort -u | awk -F '\t' '{ printf "    %-8s %s: %s\n", $1, $2, $3 }'
    fi
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
    for name in $(for n in "${rest[@]}"; do echo "$(lane_weight "$major" "$n") $n"; done | sort -rn | awk '{ print $2 }'); do
        best=0
        for ((i = 1; i < LANES; i++)); do ((load[i] >= load[best])) || best=$i; done
        lanes[best]+=" $name"
        load[best]=$((load[best] + $(lane_weight "$major" "$name")))
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
    ran=$(major_counts "$major")
    if (($# == 0 || ran != $#)); then
        echo "== FAILED: $ran of the $# test binaries handed to PostgreSQL $major ran"
        rc=1
    fi
    return $rc
}

# How many test binaries major $1's logs show started (run_binaries'
# "Running" lines).
major_counts() {
    local f files=()
    for f in "$logs/pg$1.alone.log" "$logs"/pg"$1".lane*.log; do [ ! -f "$f" ] || files+=("$f"); done
    if ((${#files[@]} == 0)); then
        echo 0
        return
    fi
    cat "${files[@]}" | grep -c '^     Running tests/' || true
}
