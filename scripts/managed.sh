#!/usr/bin/env bash
# Writes the managed edition (SQL and PL/pgSQL only) from the repository's
# sources, for servers that cannot load the native library:
#   dist/snowflake_id_pg_tle.sql  run by a member of pgtle_admin (RDS, Aurora,
#                                 Supabase) to register the extension with
#                                 pg_tle; then CREATE EXTENSION snowflake_id
#   dist/snowflake_id_plain.sql   creates the same objects in the current
#                                 schema where there is no pg_tle (Cloud SQL,
#                                 Azure, Neon)
# The decoders are the native sql/install/decode.sql (and sql/install/parts_type.sql) verbatim,
# over the managed accessors; @extschema@ is what CREATE EXTENSION replaces,
# and the plain script replaces it with the current schema when it runs.
# Update scripts for later versions live in sql/managed/updates/ as
# snowflake_id--FROM--TO.sql and become pg_tle update paths.
#
#   bash scripts/managed.sh            write dist/
#   bash scripts/managed.sh --check    fail if dist/ is not what it would write
#
# tests/managed.rs makes a next version the same way, with
# SNOWFLAKE_MANAGED_VERSION (default: Cargo.toml's), SNOWFLAKE_MANAGED_UPDATES
# (default: sql/managed/updates) and SNOWFLAKE_MANAGED_OUT (default: dist).
set -euo pipefail
cd "$(dirname "$0")/.."
version=${SNOWFLAKE_MANAGED_VERSION:-$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)}
[ -n "$version" ] || { echo "managed.sh: no version in Cargo.toml" >&2; exit 1; }
updates=${SNOWFLAKE_MANAGED_UPDATES:-sql/managed/updates}
out=${SNOWFLAKE_MANAGED_OUT:-dist}

# The install script, in dependency order: the schemas, the owner-only
# configuration and worker id in force (private.sql), the decoders' layout,
# the counter's schema (state.sql), the raise, the worker id switch, the
# draw (slow path, fast path and its baking), blocks of IDs, the owner's
# configuration calls, the accessors and text forms (the managed decoders'
# own files) with the native decoders over them, the status, the privileges.
parts=(sql/install/objects_in_the_way.sql sql/install/parts_type.sql sql/managed/schemas.sql sql/managed/private.sql sql/managed/layout.sql
    sql/managed/state.sql sql/managed/raise.sql sql/managed/switch.sql sql/managed/draw.sql
    sql/managed/block.sql sql/managed/config.sql sql/managed/accessors.sql sql/install/decode.sql
    sql/managed/text_forms.sql sql/managed/status.sql sql/managed/privileges.sql)
for f in "${parts[@]}" sql/managed/config_dump.sql; do
    [ -f "$f" ] || { echo "managed.sh: $f is missing" >&2; exit 1; }
done
# Each file of the edition does one job and stays readable whole: the
# size rule (450 non-blank lines) is scripts/import_graph.py's, for every
# SQL file a reader takes in as a room, and for this script and those it
# sources, one writer each:
#   scripts/managed/guard.sh            the guard each install script opens with
#   scripts/managed/install_script.sh   the install script's body, and the update scripts'
#   scripts/managed/pg_tle.sh           dist/snowflake_id_pg_tle.sql
#   scripts/managed/plain.sh            dist/snowflake_id_plain.sql
#   scripts/managed/plain_uninstall.sh  dist/snowflake_id_plain_uninstall.sql
#   scripts/managed/database_dev.sh     dist/database.dev/
# This script keeps the settings, the checks of the sources, and the order.
for f in guard install_script pg_tle plain plain_uninstall database_dev; do
    # shellcheck source=/dev/null
    source "scripts/managed/$f.sh"
done

# Which extension of pg_extension is the one being created or updated, for
# the scripts that run inside CREATE/ALTER EXTENSION: the pg_tle script
# registers it as snowflake_id, but database.dev's client registers a
# package under the name its registry gives it, handle@snowflake_id (or
# handle-snowflake_id before 2023-12). One database holds one install of the
# edition (its internal schemas are unique), and the row is the one in the
# schema being installed into.
this_extension="e.extname::pg_catalog.text OPERATOR(pg_catalog.~) '^(.+[@-])?snowflake_id\$'
         AND e.extnamespace OPERATOR(pg_catalog.=) '@extschema@'::pg_catalog.regnamespace::pg_catalog.oid"
# sql/install/objects_in_the_way.sql (the native edition's too) finds its extension by its one
# name; the managed scripts find it by the rule above.
types_lookup="e.extname OPERATOR(pg_catalog.=) 'snowflake_id'::pg_catalog.name;"
grep -qF "$types_lookup" sql/install/objects_in_the_way.sql || { echo "managed.sh: sql/install/objects_in_the_way.sql no longer finds its extension as this script expects" >&2; exit 1; }

guard_functions=$(names_of FUNCTION)
guard_relations=$(names_of relation)
[ -n "$guard_functions" ] && [ -n "$guard_relations" ] || { echo "managed.sh: found no names to guard" >&2; exit 1; }

tag_tle='$snowflake_id_managed$'
tag_plain='$snowflake_id_plain$'
for f in "${parts[@]}" sql/managed/config_dump.sql "$updates"/*.sql; do
    [ -f "$f" ] || continue
    if grep -qF -e "$tag_tle" -e "$tag_plain" "$f"; then
        echo "managed.sh: $f holds a dollar-quote tag the dist scripts use" >&2
        exit 1
    fi
done

# Everything this script writes, into the directory \$1.
write_all() {
    local dir=$1
    mkdir -p "$dir"
    printf '%s\n' "$(tle)" >"$dir"/snowflake_id_pg_tle.sql
    printf '%s\n' "$(plain)" >"$dir"/snowflake_id_plain.sql
    printf '%s\n' "$(plain_uninstall)" >"$dir"/snowflake_id_plain_uninstall.sql
    package "$dir"/database.dev
    cat >"$dir"/README.md <<README
# dist/

Generated by \`bash scripts/managed.sh\` from the repository's sources (do
not edit; \`bash scripts/managed.sh --check\` fails when they differ from
what it writes): the managed edition of snowflake_id $version, for servers
that cannot load the native library (docs/managed.md).

- \`snowflake_id_pg_tle.sql\`: registers the extension with pg_tle (RDS,
  Aurora, Supabase); then \`CREATE EXTENSION snowflake_id\`.
- \`snowflake_id_plain.sql\`: the same objects in the current schema, where
  there is no pg_tle (Cloud SQL, Azure, Neon); run again, it updates an
  earlier plain install in place.
- \`snowflake_id_plain_uninstall.sql\`: removes a plain install.
- \`database.dev/\`: the package for Supabase's database.dev, as its
  \`dbdev\` CLI publishes a directory: \`snowflake_id.control\`,
  \`snowflake_id--$version.sql\`, the update scripts
  (\`snowflake_id--FROM--TO.sql\`) and \`README.md\`.
README
}

# The files and directories write_all makes, for the check.
outputs=(snowflake_id_pg_tle.sql snowflake_id_plain.sql snowflake_id_plain_uninstall.sql database.dev README.md)
if [ "${1:-}" = --check ]; then
    gen=$(mktemp -d)
    trap 'rm -rf "$gen"' EXIT
    write_all "$gen"
    for o in "${outputs[@]}"; do
        diff -r -q "$gen/$o" "$out/$o" >/dev/null 2>&1 ||
            { echo "managed.sh: $out/$o is not what scripts/managed.sh writes: run it and commit $out/" >&2; exit 1; }
    done
    exit 0
fi
rm -rf "$out"/database.dev
write_all "$out"
echo "managed.sh: wrote $out/: ${outputs[*]} ($version)"
