#!/usr/bin/env bash
# The benchmark: starts a throwaway PostgreSQL 15 with snowflake_id
# preloaded, measures snowflake_nextval() against nextval(), gen_random_uuid()
# and the bare loop, and writes docs/benchmarks.md and docs/benchmarks-tps.png.
# Not a test: nothing here passes or fails on a time. About 15 minutes.
# BENCH_QUICK=1 runs fewer repetitions and skips the 10M-row inserts.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
# gnuplot draws the chart (Debian's gnuplot-nox: no X needed).
if ! command -v gnuplot >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends gnuplot-nox >/dev/null
fi
echo "bench: building and installing snowflake_id (release)"
bash scripts/cargo.sh pgrx install --release --pg-config /usr/lib/postgresql/15/bin/pg_config >/dev/null
exec python3 benches/bench.py "$@"
