#!/usr/bin/env bash
# The short text forms (snowflake_to/from_base62, _base32) against the
# built-in decimal text, each above a scan, on a throwaway PostgreSQL 15:
# writes section 11 of docs/benchmarks.md. Not a test. About a minute after
# the build (BENCH_QUICK=1: fewer repetitions). PG_CONFIG picks the server,
# BENCH_PORT the port.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
pg_config=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
echo "bench: building and installing snowflake_id (release) into $("$pg_config" --version)"
bash scripts/cargo.sh pgrx install --release --pg-config "$pg_config" >/dev/null
BENCH_SCRIPT="bash benches/text_forms.sh" exec python3 benches/bench.py --text-forms "$("$pg_config" --bindir)"
