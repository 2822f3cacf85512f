#!/usr/bin/env bash
# Starts a throwaway PostgreSQL with snowflake_id preloaded, shows IDs
# being made, decoded and queried by time, then stops and removes it.
# Installs what is missing first.
#
#   bash scripts/demo.sh               Debian 12's PostgreSQL 15
#   PG_MAJOR=19 bash scripts/demo.sh   16, 17, 18 or 19, as scripts/pg_servers.sh installs them
set -euo pipefail
cd "$(dirname "$0")/.."

PG_MAJOR=${PG_MAJOR:-15}
# Only the server the demo runs: a fresh machine need not build the others.
PG_MAJORS=$PG_MAJOR bash scripts/setup.sh
PG_BIN=$(bash scripts/pg_servers.sh --bindir "$PG_MAJOR")
echo "demo: building and installing snowflake_id (release) into $("$PG_BIN/pg_config" --version)"
bash scripts/cargo.sh pgrx install --release --pg-config "$PG_BIN/pg_config" >/dev/null

dir=$(mktemp -d /tmp/snowflake_id_demo.XXXXXX)
chmod 777 "$dir"
cleanup() {
    runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
    rm -rf "$dir"
}
trap cleanup EXIT

runuser -u postgres -- "$PG_BIN/initdb" -D "$dir/data" -A trust >/dev/null
cat >> "$dir/data/postgresql.conf" <<CONF
listen_addresses = ''
unix_socket_directories = '$dir'
port = 54329
shared_preload_libraries = 'snowflake_id'
snowflake_id.worker_id = 1
CONF
runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w start >/dev/null
echo "demo: throwaway server in $dir (removed on exit)"

runuser -u postgres -- "$PG_BIN/psql" -h "$dir" -p 54329 -d postgres -X -q -v ON_ERROR_STOP=1 -e <<'SQL'
CREATE EXTENSION snowflake_id;
CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), item text);
INSERT INTO orders (item) VALUES ('tea'), ('cake'), ('scones');
SELECT o.id, o.item, d.ts, d.worker_id, d.sequence FROM orders o, snowflake_decode(o.id) d ORDER BY o.id;
SELECT count(*) AS orders_in_the_last_minute FROM orders WHERE id >= snowflake_from_timestamp(now() - interval '1 minute');
SELECT * FROM snowflake_decode(175928847299117063, '2015-01-01 00:00:00+00', 10, 12);
SELECT count(*) AS ids, count(DISTINCT id) AS distinct_ids FROM (SELECT snowflake_nextval() AS id FROM generate_series(1, 1000000)) t;
\x on
SELECT * FROM snowflake_id_status;
SQL
