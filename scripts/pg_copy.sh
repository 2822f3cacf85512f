#!/usr/bin/env bash
# A private, relocated copy of one PostgreSQL installation (15 from Debian,
# 16-19 from scripts/pg_servers.sh's cache), for work that must not touch the
# shared one:
#   - installing a build of the library while other servers of that major run
#     (an install onto the shared library's inode kills them: docs/development.md);
#   - the managed edition's tests, which need a server without the native
#     snowflake_id files (pg_tle refuses a name a file-based extension has).
#
#   bash scripts/pg_copy.sh MAJOR DEST           copy, print DEST's bin directory
#   bash scripts/pg_copy.sh MAJOR DEST --bare    the same without snowflake_id's files
#
# PostgreSQL finds its share, lib and include directories relative to its
# binaries when they keep their relative places, so the copy keeps the
# layout of its source (Debian's /usr/lib, /usr/share and /usr/include
# trees under DEST/usr for 15; the prefix itself for the others) and its
# pg_config answers with DEST's paths: `cargo pgrx install --pg-config` and
# PGXS builds (pg_tle's) install into the copy. DEST is made anew each time
# (a few tenths of a second), readable by the postgres user.
set -euo pipefail
umask 022

usage() {
    echo "usage: $0 MAJOR DEST [--bare]" >&2
    exit 2
}
[ $# -ge 2 ] || usage
major=$1
dest=$2
bare=""
case "${3:-}" in
"") ;;
--bare) bare=1 ;;
*) usage ;;
esac
here=$(cd "$(dirname "$0")" && pwd)

# A relative or empty DEST would copy somewhere unexpected and, below, be
# removed first: refuse it.
case "$dest" in
/?*) ;;
*)
    echo "pg_copy: DEST must be an absolute path, not '$dest'" >&2
    exit 2
    ;;
esac
[ "$dest" != / ] || usage

rm -rf "$dest"
mkdir -p "$dest"
# Debian's layout (15 on the host, 19 in the sid root of scripts/pg_servers.sh):
# the lib, share and include trees under DEST/usr. The others: one prefix.
case "$major" in
15 | 19)
    if [ "$major" = 15 ]; then
        root=""
        [ -x /usr/lib/postgresql/15/bin/pg_config ] || {
            echo "pg_copy: PostgreSQL 15 is not installed (bash scripts/setup.sh --packages)" >&2
            exit 1
        }
    else
        source_bin=$(bash "$here/pg_servers.sh" --bindir "$major")
        root=${source_bin%/usr/lib/postgresql/19/bin}
    fi
    mkdir -p "$dest/usr/lib/postgresql" "$dest/usr/share/postgresql" "$dest/usr/include"
    cp -a "$root/usr/lib/postgresql/$major" "$dest/usr/lib/postgresql/"
    cp -a "$root/usr/share/postgresql/$major" "$dest/usr/share/postgresql/"
    [ ! -d "$root/usr/include/postgresql" ] || cp -a "$root/usr/include/postgresql" "$dest/usr/include/"
    bin=$dest/usr/lib/postgresql/$major/bin
    ;;
*)
    source_bin=$(bash "$here/pg_servers.sh" --bindir "$major")
    cp -a "$(dirname "$source_bin")/." "$dest/"
    bin=$dest/bin
    ;;
esac
pg_config=$bin/pg_config
# The copy must answer with its own paths; a build that stored absolute ones
# would send installs back into the shared installation.
case "$("$pg_config" --pkglibdir)" in
"$dest"/*) ;;
*)
    echo "pg_copy: $pg_config still names $("$pg_config" --pkglibdir): this installation does not relocate" >&2
    exit 1
    ;;
esac
if [ -n "$bare" ]; then
    rm -f "$("$pg_config" --pkglibdir)/snowflake_id.so"
    rm -f "$("$pg_config" --sharedir)"/extension/snowflake_id.control "$("$pg_config" --sharedir)"/extension/snowflake_id--*.sql
fi
chmod -R a+rX "$dest"
echo "$bin"
