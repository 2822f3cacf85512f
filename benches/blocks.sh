#!/usr/bin/env bash
# Blocks of IDs in one call (snowflake_nextval_block/_array) against the same
# number of snowflake_nextval() calls in one statement, on a throwaway
# PostgreSQL 15: writes section 12 of docs/benchmarks.md. Not a test. About 2
# minutes after the build (BENCH_QUICK=1: fewer repetitions). An argument sets
# the IDs per statement (default 1,000,000). PG_CONFIG picks the server's
# installation, BENCH_PORT its port (default 54400).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
pg_config=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
echo "bench: building and installing snowflake_id (release) into $("$pg_config" --version)"
bash scripts/cargo.sh pgrx install --release --pg-config "$pg_config" >/dev/null
BENCH_SCRIPT="bash benches/blocks.sh" exec python3 benches/bench.py --blocks "$("$pg_config" --bindir)" "$@"
