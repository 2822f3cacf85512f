#!/usr/bin/env bash
# PostgreSQL 18's own uuidv7() beside snowflake_nextval() on a throwaway 18
# server: per ID, a million-row insert and the index it leaves. Writes
# section 14 of docs/benchmarks.md. Not a test. About 3 minutes after the
# build (BENCH_QUICK=1: fewer repetitions).
#
#   PG_CONFIG=.../pg_config   the 18 server to build for and run (default:
#                             scripts/pg_servers.sh's 18)
set -euo pipefail
cd "$(dirname "$0")/.."

pg_config=${PG_CONFIG:-$(bash scripts/pg_servers.sh --pg-config 18)}
echo "bench: building and installing snowflake_id (release) into $("$pg_config" --version)"
bash scripts/cargo.sh pgrx install --release --pg-config "$pg_config" >/dev/null
BENCH_SCRIPT="bash benches/uuidv7.sh" exec python3 benches/bench.py --uuidv7 "$("$pg_config" --bindir)"
