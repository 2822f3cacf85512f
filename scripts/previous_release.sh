#!/usr/bin/env bash
# The previous release of snowflake_id, built from this repository's history
# and installed into a private copy of one PostgreSQL major, for the tests of
# version skew (tests/skew.rs: during a rolling update, nodes of one release
# lease worker ids from a registry of the other).
#
#   bash scripts/previous_release.sh MAJOR     build and install it once, print the
#                                              copy's bin directory
#
# PREVIOUS_RELEASE, below, is the one place that names the previous release:
# the commit of the release (0.8.0 is 3fdffc8, the last commit with
# version 0.8.0 in Cargo.toml). Update it when a release is made.
# scripts/test.sh exports the printed directory as SNOWFLAKE_PREVIOUS_PG_BIN.
#
# Cached, keyed by commit and major, under
# $SNOWFLAKE_PG_CACHE/previous-<commit>-pg<MAJOR> (default
# /var/cache/snowflake_id as root): a copy made by scripts/pg_copy.sh without
# snowflake_id's files, with the previous release's library, control file and
# install script. A second run checks it and prints (tenths of a second);
# servers may run from it meanwhile, so a complete copy is never touched
# again. The build takes minutes on a fresh machine (pgrx and its bindings
# from scratch); its cargo target directory, target/previous-release/target
# here, is kept, so that another major or a rebuild is cheaper.
#
# The release is built as its own scripts/test.sh built it: its own
# scripts/cargo.sh (the wrapper rustc 1.95 needs for pgrx 0.19) running
# cargo-pgrx, whose version must be the one its Cargo.toml pins (checked).
set -euo pipefail
umask 022

PREVIOUS_RELEASE=3fdffc8

[ $# -eq 1 ] || {
    echo "usage: $0 MAJOR" >&2
    exit 2
}
major=$1
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
if [ "$(id -u)" = 0 ]; then
    CACHE=${SNOWFLAKE_PG_CACHE:-/var/cache/snowflake_id}
else
    CACHE=${SNOWFLAKE_PG_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/snowflake_id}
fi
say() { echo "previous_release: $*" >&2; }
die() {
    say "$*"
    exit 1
}

# A shallow clone lacks the commit: say so rather than build something else.
commit=$(git -C "$repo" rev-parse --verify --quiet "$PREVIOUS_RELEASE^{commit}") ||
    die "commit $PREVIOUS_RELEASE (the previous release) is not in $repo's history (a shallow clone? git fetch --unshallow)"
short=${commit:0:12}
version=$(git -C "$repo" show "$commit:Cargo.toml" | awk -F '"' '/^version *=/ { print $2; exit }')
[ -n "$version" ] || die "no version in $commit's Cargo.toml"
dest=$CACHE/previous-$short-pg$major
case "$major" in 15 | 19) bin=$dest/usr/lib/postgresql/$major/bin ;; *) bin=$dest/bin ;; esac
stamp="$commit $version $major"

# Complete: the stamp is written last, after the files it vouches for.
ready() {
    [ -x "$bin/pg_config" ] && [ "$(cat "$dest/previous_release.done" 2>/dev/null)" = "$stamp" ] || return 1
    local lib share
    lib=$("$bin/pg_config" --pkglibdir)
    share=$("$bin/pg_config" --sharedir)
    [ -f "$lib/snowflake_id.so" ] && [ -f "$share/extension/snowflake_id--$version.sql" ] &&
        grep -q "^default_version = '$version'" "$share/extension/snowflake_id.control"
}

if ready; then
    echo "$bin"
    exit 0
fi
mkdir -p "$CACHE"
# Two runs at once (two checkouts, say) build it once.
exec 9>"$CACHE/previous-$short-pg$major.lock"
flock 9
if ready; then
    echo "$bin"
    exit 0
fi

# The release's files as committed, in a fixed place (cargo keys its
# fingerprints by path: the kept target directory then rebuilds only what
# changed).
work=$repo/target/previous-release
src=$work/src-$short
rm -rf "$src"
mkdir -p "$src"
git -C "$repo" archive "$commit" | tar -x -C "$src"
pinned=$(awk -F '"' '/^pgrx *=/ { sub(/^=/, "", $2); print $2; exit }' "$src/Cargo.toml")
have=$(cargo pgrx --version 2>/dev/null | awk '{ print $2 }') || true
[ "$have" = "$pinned" ] ||
    die "$version pins pgrx $pinned, and cargo-pgrx here is ${have:-missing} (cargo install cargo-pgrx --version $pinned --locked)"

say "building snowflake_id $version ($short) for PostgreSQL $major into $dest"
bindir=$(bash "$here/pg_copy.sh" "$major" "$dest" --bare)
[ "$bindir" = "$bin" ] || die "pg_copy.sh made $bindir, expected $bin"
(cd "$src" && CARGO_TARGET_DIR=$work/target bash scripts/cargo.sh pgrx install --pg-config "$bin/pg_config" >&2)
ready_files=$("$bin/pg_config" --sharedir)/extension/snowflake_id--$version.sql
[ -f "$ready_files" ] || die "the build installed no $ready_files"
chmod -R a+rX "$dest"
echo "$stamp" >"$dest/previous_release.done"
ready || die "$dest is not complete after the build"
rm -rf "$src"
echo "$bin"
