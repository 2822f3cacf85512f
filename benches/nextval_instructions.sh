#!/usr/bin/env bash
# Instructions per snowflake_nextval() call, counted by valgrind: a
# postmaster run under callgrind (collecting only inside the pgrx wrapper
# snowflake_nextval_wrapper, so only the library's work is counted), one
# backend drawing N IDs (default 200,000) in one statement, after one call
# that starts the generator. Exact where the timings of section 8 of
# docs/benchmarks.md are not. Not a test; writes nothing to the docs.
#
#   bash benches/nextval_instructions.sh BINDIR fixed|registry OUT [N]
#
# BINDIR: a server's bin directory whose pkglibdir holds the library to count
# (a private copy: /work/tools/private_pg.sh, then cargo pgrx install
# --release --pg-config BINDIR/pg_config). `registry`: the worker id is
# leased from a second server (not under valgrind). OUT: the callgrind file
# (--dump-instr=yes), for callgrind_annotate. BENCH_PORT (default 54490; the
# registry takes the next port). Prints the count per call and the top
# functions. About a minute.
set -euo pipefail
command -v valgrind >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends valgrind >/dev/null
BIN=$1 MODE=$2 OUT=$3 N=${4:-200000}
PORT=${BENCH_PORT:-54490}
dir=$(mktemp -d /tmp/sf_cg.XXXXXX); chmod 777 "$dir"
as_pg() { runuser -u postgres -- "$@"; }
as_pg "$BIN/initdb" -D "$dir/data" -A trust >/dev/null
base="port = $PORT\nunix_socket_directories = '$dir'\nlisten_addresses = ''\njit = off\nmax_parallel_workers_per_gather = 0\n"
reg=""
cleanup() {
  [ -n "${vpid:-}" ] && as_pg "$BIN/pg_ctl" -D "$dir/data" -m fast -w -t 120 stop >/dev/null 2>&1
  [ -n "$reg" ] && { as_pg "$BIN/pg_ctl" -D "$reg/data" -m fast -w stop >/dev/null 2>&1; rm -rf "$reg"; } || true
}
trap cleanup EXIT
if [ "$MODE" = registry ]; then
  reg=$(mktemp -d /tmp/sf_cgreg.XXXXXX); chmod 777 "$reg"
  as_pg "$BIN/initdb" -D "$reg/data" -A trust >/dev/null
  printf "port = $((PORT+1))\nunix_socket_directories = '$reg'\nlisten_addresses = ''\n" >> "$reg/data/postgresql.conf"
  as_pg "$BIN/pg_ctl" -D "$reg/data" -l "$reg/log" -w start >/dev/null
  as_pg "$BIN/psql" -h "$reg" -p $((PORT+1)) -d postgres -Xqc "CREATE EXTENSION snowflake_id"
  printf "${base}shared_preload_libraries = 'snowflake_id'\nsnowflake_id.registry = 'host=$reg port=$((PORT+1)) dbname=postgres user=postgres'\n" >> "$dir/data/postgresql.conf"
else
  printf "${base}shared_preload_libraries = 'snowflake_id'\nsnowflake_id.worker_id = 1\n" >> "$dir/data/postgresql.conf"
fi
as_pg valgrind --tool=callgrind --dump-instr=yes --collect-atstart=no \
  --toggle-collect='snowflake_nextval_wrapper' --callgrind-out-file="$dir/cg.%p" \
  "$BIN/postgres" -D "$dir/data" >"$dir/log" 2>&1 &
vpid=$!
psql=("$BIN/psql" -h "$dir" -p "$PORT" -d postgres -Xq -v ON_ERROR_STOP=1 -At)
for i in $(seq 1 120); do as_pg "${psql[@]}" -c "select 1" >/dev/null 2>&1 && break; sleep 1; done
as_pg "${psql[@]}" -c "CREATE EXTENSION snowflake_id"
for i in $(seq 1 200); do as_pg "${psql[@]}" -c "select snowflake_nextval()" >/dev/null 2>&1 && break; sleep 1; done
# one backend: the warm-up call, then the counted statement
as_pg "${psql[@]}" <<SQL
SELECT snowflake_nextval();
SELECT pg_backend_pid() AS pid \gset
\setenv BPID :pid
SELECT count(x) FROM (SELECT snowflake_nextval() AS x FROM generate_series(1, $N) g) t;
\! echo \$BPID > $dir/bpid
SQL
bpid=$(cat "$dir/bpid")
sleep 2
as_pg "$BIN/pg_ctl" -D "$dir/data" -m fast -w -t 120 stop >/dev/null; wait "$vpid" || true; vpid=""
cp "$dir/cg.$bpid" "$OUT"
total=$(grep -m1 '^summary:' "$OUT" | awk '{ print $2 }')
echo "nextval_instructions: $MODE: $total instructions in the library for $((N + 1)) calls: $((total / (N + 1))) per call"
callgrind_annotate "$OUT" | sed -n '/file:function/,/^$/p' | head -20
rm -rf "$dir"
