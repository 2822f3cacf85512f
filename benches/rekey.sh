#!/usr/bin/env bash
# Re-keying a table to past-instant IDs: snowflake_convert(..., rekey_by =>
# 'created_at') on 1,000,000 orders with 1,000,000 lines referencing them,
# against the same statements with plain arithmetic keys, on a throwaway
# PostgreSQL 15. Prints both times and the ratio and writes section 10 of
# docs/benchmarks.md. Not a test. About 15 minutes after the build
# (BENCH_QUICK=1: two repetitions). An argument sets the number of rows.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
pg_config=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
echo "bench: building and installing snowflake_id (release) into $("$pg_config" --version)"
bash scripts/cargo.sh pgrx install --release --pg-config "$pg_config" >/dev/null
BENCH_SCRIPT="bash benches/rekey.sh" exec python3 benches/bench.py --rekey "$("$pg_config" --bindir)" "$@"
