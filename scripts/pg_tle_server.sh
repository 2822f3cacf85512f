#!/usr/bin/env bash
# A private PostgreSQL installation for the managed edition's tests: a bare
# copy of one major (no native snowflake_id files: pg_tle refuses to register
# a name a file-based extension already has) with pg_tle 1.5.3 built into it.
# The servers the tests start from it preload pg_tle, never snowflake_id, as
# a managed service's do.
#
#   bash scripts/pg_tle_server.sh MAJOR [DEST]    prints DEST's bin directory
#
# DEST defaults to /var/cache/snowflake_id/managed-MAJOR. Idempotent: a copy
# that already has pg_tle and no native files is kept (servers may run from
# it); otherwise it is made anew. scripts/test.sh exports the printed
# directory as SNOWFLAKE_MANAGED_PG_BIN.
set -euo pipefail
umask 022
[ $# -ge 1 ] || { echo "usage: $0 MAJOR [DEST]" >&2; exit 2; }
major=$1
dest=${2:-/var/cache/snowflake_id/managed-$major}
here=$(cd "$(dirname "$0")" && pwd)
tle=${SNOWFLAKE_PG_TLE_DIR:-$here/../../shared/pg_tle}
[ -f "$tle/install.sh" ] || tle=/work/shared/pg_tle

case "$major" in 15 | 19) bin=$dest/usr/lib/postgresql/$major/bin ;; *) bin=$dest/bin ;; esac

ready() {
    [ -x "$bin/pg_config" ] || return 1
    local lib share
    lib=$("$bin/pg_config" --pkglibdir)
    share=$("$bin/pg_config" --sharedir)
    [ -f "$lib/pg_tle.so" ] && [ -f "$share/extension/pg_tle.control" ] &&
        [ ! -e "$lib/snowflake_id.so" ] && [ ! -e "$share/extension/snowflake_id.control" ]
}

if ! ready; then
    bash "$here/pg_copy.sh" "$major" "$dest" --bare >/dev/null
    bash "$tle/install.sh" "$bin/pg_config" >&2
    chmod -R a+rX "$dest"
    ready || { echo "pg_tle_server: $dest is not ready after the build" >&2; exit 1; }
fi
echo "$bin"
