#!/usr/bin/env bash
# The managed edition (SQL and PL/pgSQL only) beside the native one on one
# throwaway server: per ID against nextval(), gen_random_uuid(), the native
# snowflake_nextval() and, on 18, uuidv7(); single-row INSERTs per second
# against bigserial; the decoders per row, managed against native. Writes
# section 15 of docs/benchmarks.md. Not a test. About 5 minutes after the
# build (BENCH_QUICK=1: fewer repetitions).
#
#   PG_CONFIG=.../pg_config   the server to build for and run (default:
#                             scripts/pg_servers.sh's 18, which has uuidv7())
set -euo pipefail
cd "$(dirname "$0")/.."

pg_config=${PG_CONFIG:-$(bash scripts/pg_servers.sh --pg-config 18)}
bash scripts/managed.sh
echo "bench: building and installing snowflake_id (release) into $("$pg_config" --version)"
bash scripts/cargo.sh pgrx install --release --pg-config "$pg_config" >/dev/null
BENCH_SCRIPT="bash benches/managed.sh" exec python3 benches/bench.py --managed "$("$pg_config" --bindir)" \
    dist/snowflake_id_plain.sql
