#!/usr/bin/env bash
# Builds target/debian/postgresql-NN-snowflake-id_<version>_<arch>.deb from
# `cargo pgrx package`: the library and the extension's control and SQL
# files, nothing else, depending on postgresql-NN, laid out as Debian's and
# PGDG's postgresql-NN packages expect (/usr/lib/postgresql/NN/lib,
# /usr/share/postgresql/NN/extension). Installs what building needs first
# (scripts/setup.sh). A build output, so under target/ (dist/ holds only
# what scripts/managed.sh generates and the repository commits).
#
#   PACKAGE_PROFILE=release (default) the cargo profile of the library; the
#   test command builds it with dev, the profile every other step of a test
#   run builds with, because what tests/package.rs checks is the packaging
#   (files, paths, dependencies, install and removal), and a release build
#   (fat LTO, one codegen unit) costs 5 minutes of 2 cores that nothing reuses.
#   PG_MAJOR=15 (default) builds against Debian 12's PostgreSQL 15;
#   PG_MAJOR=16|17|18 against the server scripts/pg_servers.sh caches for that
#   major (its pg_config and headers), for hosts that run PGDG's postgresql-NN.
# tests/package.rs installs and tests the package of 15 only: Debian 12 has
# no postgresql-16/17/18 for the others to depend on.
set -euo pipefail
cd "$(dirname "$0")/.."

PG_MAJOR=${PG_MAJOR:-15}
case "$PG_MAJOR" in 15 | 16 | 17 | 18 | 19) ;; *)
    echo "package: unsupported PG_MAJOR '$PG_MAJOR' (15 to 19)" >&2
    exit 1
    ;;
esac
PACKAGE=postgresql-$PG_MAJOR-snowflake-id
PG_MAJORS=$PG_MAJOR bash scripts/setup.sh
PG_CONFIG=$(bash scripts/pg_servers.sh --pg-config "$PG_MAJOR")

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
arch=$(dpkg --print-architecture)
out="target/debian/${PACKAGE}_${version}_${arch}.deb"

work=$(mktemp -d /tmp/snowflake_id_package.XXXXXX)
trap 'rm -rf "$work"' EXIT
built="$work/built"
stage="$work/stage"

profile=${PACKAGE_PROFILE:-release}
echo "package: building snowflake_id $version ($profile) for $("$PG_CONFIG" --version)"
bash scripts/cargo.sh pgrx package --profile "$profile" --pg-config "$PG_CONFIG" --out-dir "$built" >/dev/null

# cargo pgrx package lays the files out under the build server's own
# directories (a private prefix for 16-18, the sid root for 19); the package puts them where
# postgresql-NN keeps extensions.
pkglibdir=$("$PG_CONFIG" --pkglibdir)
extdir="$("$PG_CONFIG" --sharedir)/extension"
lib="$stage/usr/lib/postgresql/$PG_MAJOR/lib"
ext="$stage/usr/share/postgresql/$PG_MAJOR/extension"
mkdir -p "$lib" "$ext"
mv "$built$pkglibdir/snowflake_id.so" "$lib/"
mv "$built$extdir"/snowflake_id.control "$built$extdir"/snowflake_id--*.sql "$ext/"
leftover=$(find "$built" -type f)
if [ -n "$leftover" ]; then
    echo "package: cargo pgrx package made files this script does not place:" >&2
    echo "$leftover" >&2
    exit 1
fi
strip --strip-unneeded "$lib/snowflake_id.so"
find "$stage" -type d -exec chmod 755 {} +
find "$stage" -type f -exec chmod 644 {} +

mkdir "$stage/DEBIAN"
cat > "$stage/DEBIAN/control" <<CONTROL
Package: $PACKAGE
Version: $version
Architecture: $arch
Maintainer: snowflake_id developers <snowflake-id@users.noreply.github.com>
Depends: postgresql-$PG_MAJOR, libc6 (>= 2.34), libgcc-s1
Section: database
Priority: optional
Installed-Size: $(du -sk "$stage/usr" | cut -f1)
Description: Snowflake IDs for PostgreSQL $PG_MAJOR
 snowflake_id gives every PostgreSQL server one shared-memory Snowflake ID
 generator: 64-bit, time-ordered bigint keys, unique across backends,
 restarts, crashes and failovers, and across servers with distinct worker
 ids. Load it with shared_preload_libraries, set snowflake_id.worker_id,
 then CREATE EXTENSION snowflake_id. Built for each of PostgreSQL 15 to 19.
CONTROL

mkdir -p target/debian
dpkg-deb --root-owner-group -Zxz --build "$stage" "$out" >/dev/null
echo "package: $out"
