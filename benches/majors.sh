#!/usr/bin/env bash
# Bulk generation against nextval() on each PostgreSQL major, in one run:
# builds and installs the release library into each major's server (as
# scripts/pg_servers.sh caches them), then runs section 1's bulk statement on
# a throwaway server of each. Writes section 8 of docs/benchmarks.md.
# Not a test. About 3 minutes after the builds (BENCH_QUICK=1: fewer repetitions).
#
#   PG_MAJORS="15 16 17 18"   the majors to measure (default: all four)
set -euo pipefail
cd "$(dirname "$0")/.."

PG_MAJORS=${PG_MAJORS:-"15 16 17 18"}
PG_MAJORS=$PG_MAJORS bash scripts/setup.sh
# Installed in reverse order, so that the first major (measured first, in
# both modes) is installed last, right before its servers start: other
# sessions on a shared machine may install their own build over it. Each
# major is passed with the checksum of what was installed; bench.py stops if
# the library its servers loaded is no longer that file.
servers=()
for major in $(printf '%s\n' $PG_MAJORS | tac); do
    pg_config=$(bash scripts/pg_servers.sh --pg-config "$major")
    echo "majors: building and installing snowflake_id (release) into $("$pg_config" --version)"
    bash scripts/cargo.sh pgrx install --release --pg-config "$pg_config" >/dev/null
    sum=$(sha256sum <"$("$pg_config" --pkglibdir)/snowflake_id.so" | cut -c1-64)
    servers=("$major:$(bash scripts/pg_servers.sh --bindir "$major"):$sum" "${servers[@]}")
done
exec python3 benches/bench.py --majors "${servers[@]}"
