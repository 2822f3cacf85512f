#!/usr/bin/env bash
# The planner hook's cost on a server that does not use snowflake_id:
# pgbench select-only with the library preloaded and without it, alternating
# runs on one throwaway cluster (benches/hook_cost.py). Builds a private
# release copy of the library (`cargo pgrx package`); the system's installed
# copy is not touched. Writes section 7 of docs/benchmarks.md.
# Also the planning time of a 100,000-element IN list with and without it.
# About 8 minutes with the defaults; arguments go to hook_cost.py
# (--runs N --seconds S --no-docs).
set -euo pipefail
cd "$(dirname "$0")/.."

PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config
bash scripts/setup.sh
# valgrind counts the instructions per statement (exact where timings are not).
command -v valgrind >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends valgrind >/dev/null
echo "hook_cost: building snowflake_id (release, private copy)"
bash scripts/cargo.sh pgrx package --pg-config "$PG_CONFIG" >/dev/null
target=${CARGO_TARGET_DIR:-target}
library=$(realpath "$target/release/snowflake_id-pg15/usr/lib/postgresql/15/lib/snowflake_id.so")
# The cluster runs as postgres, which must be able to read the library.
stage=$(mktemp -d /tmp/snowflake_id_hooklib.XXXXXX)
trap 'rm -rf "$stage"' EXIT
install -m 755 "$library" "$stage/snowflake_id.so"
chmod 755 "$stage"
python3 benches/hook_cost.py "$stage/snowflake_id.so" --label "build of $(git describe --always --dirty)" "$@"
