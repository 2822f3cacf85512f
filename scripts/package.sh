#!/usr/bin/env bash
# Builds dist/postgresql-15-snowflake-id_<version>_<arch>.deb from
# `cargo pgrx package`: the library and the extension's control and SQL
# files, nothing else, depending on postgresql-15. Installs what building
# needs first (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config
PACKAGE=postgresql-15-snowflake-id
bash scripts/setup.sh

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
arch=$(dpkg --print-architecture)
out="dist/${PACKAGE}_${version}_${arch}.deb"

echo "package: building snowflake_id $version (release)"
rm -rf target/release/snowflake_id-pg15
cargo pgrx package --pg-config "$PG_CONFIG" >/dev/null

stage=$(mktemp -d /tmp/snowflake_id_package.XXXXXX)
trap 'rm -rf "$stage"' EXIT
cp -a target/release/snowflake_id-pg15/. "$stage/"
strip --strip-unneeded "$stage/usr/lib/postgresql/15/lib/snowflake_id.so"
find "$stage" -type d -exec chmod 755 {} +
find "$stage" -type f -exec chmod 644 {} +

mkdir "$stage/DEBIAN"
cat > "$stage/DEBIAN/control" <<CONTROL
Package: $PACKAGE
Version: $version
Architecture: $arch
Maintainer: snowflake_id developers <snowflake-id@users.noreply.github.com>
Depends: postgresql-15, libc6 (>= 2.34), libgcc-s1
Section: database
Priority: optional
Installed-Size: $(du -sk "$stage/usr" | cut -f1)
Description: Snowflake IDs for PostgreSQL 15
 snowflake_id gives every PostgreSQL server one shared-memory Snowflake ID
 generator: 64-bit, time-ordered bigint keys, unique across backends,
 restarts, crashes and failovers, and across servers with distinct worker
 ids. Load it with shared_preload_libraries, set snowflake_id.worker_id,
 then CREATE EXTENSION snowflake_id.
CONTROL

mkdir -p dist
dpkg-deb --root-owner-group -Zxz --build "$stage" "$out" >/dev/null
echo "package: $out"
