#!/usr/bin/env bash
# Past-instant IDs (snowflake_nextval_at) in bulk on a throwaway PostgreSQL 15,
# against nextval() and snowflake_nextval() on the same server: writes
# section 9 of docs/benchmarks.md. Not a test. About 2 minutes after the build
# (BENCH_QUICK=1: fewer repetitions).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
pg_config=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
echo "bench: building and installing snowflake_id (release) into $("$pg_config" --version)"
bash scripts/cargo.sh pgrx install --release --pg-config "$pg_config" >/dev/null
BENCH_SCRIPT="bash benches/past_instants.sh" exec python3 benches/bench.py --past-instants "$("$pg_config" --bindir)"
