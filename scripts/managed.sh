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
# SQL file a reader takes in as a room.

# The names the install creates in the extension's schema, read from the
# install script itself (not kept by hand), for the guard below: functions,
# and relations and types (a relation's row type shares its name).
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

names_of() { # $1: FUNCTION or relation
    local kinds
    if [ "$1" = FUNCTION ]; then kinds='FUNCTION|AGGREGATE|PROCEDURE'; else kinds='VIEW|TABLE|SEQUENCE|TYPE|DOMAIN|MATERIALIZED VIEW'; fi
    cat "${parts[@]}" |
        sed -nE "s/^[[:space:]]*CREATE (OR REPLACE )?($kinds)[[:space:]]+(@extschema@\.)?([A-Za-z_][A-Za-z0-9_]*)[[:space:]]*(\(|AS|$).*/\4/p" |
        sort -u | sed "s/.*/'&'/" | paste -sd, -
}
guard_functions=$(names_of FUNCTION)
guard_relations=$(names_of relation)
[ -n "$guard_functions" ] && [ -n "$guard_relations" ] || { echo "managed.sh: found no names to guard" >&2; exit 1; }

# Refuses, before anything is created, an object of another's of a name the
# install creates in the extension's schema: kept beside the edition's, it
# would be called in its place by an untyped call (a literal that prefers
# text, an integer where bigint is declared), as the caller, who may be the
# owner; or it would make the owner's call "not unique". $1: tle (objects
# of the extension being created are its own) or plain (every one is in the
# way: the plain script installs into a schema that has none of them).
guard() {
    local ext updating=false
    [ "$1" = plain ] && updating=@snowflake_id_updating@
    if [ "$1" = tle ]; then
        ext="(SELECT e.oid FROM pg_catalog.pg_extension e WHERE $this_extension)"
    else
        ext="NULL::pg_catalog.oid"
    fi
    if [ "$1" = tle ]; then
        # Whoever creates the extension owns it: the worker id, the layout and
        # snowflake_advance_past are that role's. pg_tle lets any role with
        # CREATE on the database create a registered extension; the edition
        # lets only those who could have registered it (pgtle_admin) or who
        # own the database.
        cat <<'OWNER'
DO $owner_managed$
BEGIN
    IF NOT pg_catalog.pg_has_role(CURRENT_USER, 'pgtle_admin', 'MEMBER')
       AND NOT pg_catalog.pg_has_role(CURRENT_USER, (SELECT d.datdba FROM pg_catalog.pg_database d
                                                      WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database()), 'MEMBER') THEN
        RAISE EXCEPTION 'snowflake_id: permission denied to create extension snowflake_id'
            USING ERRCODE = '42501',
                  DETAIL = 'The role that creates it owns the worker id, the layout and snowflake_advance_past of this database.',
                  HINT = 'Create it as a member of pgtle_admin or as the database''s owner.';
    END IF;
END
$owner_managed$;
OWNER
        # The edition's extension under another name (the pg_tle script's
        # and database.dev's package in one database) would be a second
        # install over the same internal schemas: refused, naming it.
        cat <<ONE
DO \$one_managed\$
DECLARE
    names pg_catalog.text;
BEGIN
    SELECT pg_catalog.string_agg(pg_catalog.quote_ident(e.extname), ', ' ORDER BY e.oid) INTO names
      FROM pg_catalog.pg_extension e
     WHERE e.extname::pg_catalog.text OPERATOR(pg_catalog.~) '^(.+[@-])?snowflake_id\$'
    HAVING pg_catalog.count(*) OPERATOR(pg_catalog.>) 1;
    IF names IS NOT NULL THEN
        RAISE EXCEPTION 'snowflake_id: the managed edition is in this database already'
            USING ERRCODE = '42710',
                  DETAIL = pg_catalog.format('Extensions %s are the same edition; one database holds one install of it.', names),
                  HINT = 'Use the one there, or uninstall it first (docs/managed.md, "Reinstall, uninstall and update").';
    END IF;
END
\$one_managed\$;
ONE
    fi
    cat <<GUARD
DO \$guard_managed\$
DECLARE
    functions pg_catalog.name[] := ARRAY[$guard_functions]::pg_catalog.name[];
    relations pg_catalog.name[] := ARRAY[$guard_relations]::pg_catalog.name[];
    ns pg_catalog.oid := '@extschema@'::pg_catalog.regnamespace::pg_catalog.oid;
    ext pg_catalog.oid := $ext;
    -- The plain script over an earlier plain install: the owner's own
    -- objects of these names are that install's, replaced in place.
    updating pg_catalog.bool := $updating;
    clash record;
BEGIN
    SELECT o.kind, o.what, o.owner INTO clash
      FROM (SELECT 'FUNCTION'::pg_catalog.text AS kind,
                   pg_catalog.format('%I.%I(%s)', n.nspname, p.proname,
                                     pg_catalog.pg_get_function_identity_arguments(p.oid)) AS what,
                   p.proowner AS owner, 'pg_catalog.pg_proc'::pg_catalog.regclass::pg_catalog.oid AS classid, p.oid AS objid
              FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace
             WHERE p.pronamespace OPERATOR(pg_catalog.=) ns AND p.proname OPERATOR(pg_catalog.=) ANY (functions)
            UNION ALL
            SELECT CASE WHEN c.relkind OPERATOR(pg_catalog.=) 'v'::pg_catalog."char" THEN 'VIEW'
                        WHEN c.relkind OPERATOR(pg_catalog.=) 'S'::pg_catalog."char" THEN 'SEQUENCE'
                        WHEN c.relkind OPERATOR(pg_catalog.=) 'm'::pg_catalog."char" THEN 'MATERIALIZED VIEW'
                        WHEN c.relkind OPERATOR(pg_catalog.=) ANY (ARRAY['i', 'I']::pg_catalog."char"[]) THEN 'INDEX'
                        WHEN c.relkind OPERATOR(pg_catalog.=) 'c'::pg_catalog."char" THEN 'TYPE'
                        WHEN c.relkind OPERATOR(pg_catalog.=) 'f'::pg_catalog."char" THEN 'FOREIGN TABLE'
                        ELSE 'TABLE' END,
                   pg_catalog.format('%I.%I', n.nspname, c.relname), c.relowner,
                   -- A composite type is an extension's member through its
                   -- pg_type row, not its pg_class one.
                   CASE WHEN c.relkind OPERATOR(pg_catalog.=) 'c'::pg_catalog."char"
                        THEN 'pg_catalog.pg_type'::pg_catalog.regclass::pg_catalog.oid
                        ELSE 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid END,
                   CASE WHEN c.relkind OPERATOR(pg_catalog.=) 'c'::pg_catalog."char" THEN c.reltype ELSE c.oid END
              FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
             WHERE c.relnamespace OPERATOR(pg_catalog.=) ns AND c.relname OPERATOR(pg_catalog.=) ANY (relations)
            UNION ALL
            SELECT 'TYPE'::pg_catalog.text, pg_catalog.format('%I.%I', n.nspname, t.typname), t.typowner,
                   'pg_catalog.pg_type'::pg_catalog.regclass::pg_catalog.oid, t.oid
              FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) t.typnamespace
             WHERE t.typnamespace OPERATOR(pg_catalog.=) ns AND t.typname OPERATOR(pg_catalog.=) ANY (relations)
               AND t.typrelid OPERATOR(pg_catalog.=) 0::pg_catalog.oid AND t.typelem OPERATOR(pg_catalog.=) 0::pg_catalog.oid) o
     WHERE CASE WHEN ext IS NULL
                THEN NOT (updating AND o.owner OPERATOR(pg_catalog.=) CURRENT_USER::pg_catalog.regrole::pg_catalog.oid)
                ELSE NOT EXISTS (SELECT FROM pg_catalog.pg_depend d
                                  WHERE d.classid OPERATOR(pg_catalog.=) o.classid AND d.objid OPERATOR(pg_catalog.=) o.objid
                                    AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass::pg_catalog.oid
                                    AND d.refobjid OPERATOR(pg_catalog.=) ext AND d.deptype OPERATOR(pg_catalog.=) 'e'::pg_catalog."char")
           END
     ORDER BY o.what
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'snowflake_id: % %, owned by role %, is in the way of the managed edition',
                        pg_catalog.lower(clash.kind), clash.what, clash.owner::pg_catalog.regrole
            USING ERRCODE = '42710',
                  DETAIL = pg_catalog.format('The managed edition creates its own object of that name in schema %s; '
                                             'kept beside it, that one could be called in its place (as whoever calls, '
                                             'the edition''s owner included) or make calls of the name "not unique".',
                                             '@extschema@'),
                  HINT = pg_catalog.format('Check what uses it, then drop it (DROP %s %s;) or move it out of the way '
                                           '(ALTER %s %s RENAME TO ..., or SET SCHEMA ...), as its owner or a superuser, '
                                           'and install again.', clash.kind, clash.what, clash.kind, clash.what);
    END IF;
END
\$guard_managed\$;
GUARD
}

script() { # $1: tle or plain
    printf -- '-- ==== the guard (scripts/managed.sh) ====\n'
    guard "$1"
    printf '\n'
    local text
    for f in "${parts[@]}"; do
        printf -- '-- ==== %s ====\n' "$f"
        if [ "$f" = sql/install/objects_in_the_way.sql ]; then
            text=$(sed "s/@snowflake_id_version@/$version/g" "$f")
            printf '%s\n' "${text//"$types_lookup"/"$this_extension;"}"
        else
            sed "s/@snowflake_id_version@/$version/g" "$f"
        fi
        printf '\n'
    done
    if [ "$1" = tle ]; then
        printf -- '-- ==== %s ====\n' sql/managed/config_dump.sql
        cat sql/managed/config_dump.sql
    fi
}

tag_tle='$snowflake_id_managed$'
tag_plain='$snowflake_id_plain$'
for f in "${parts[@]}" sql/managed/config_dump.sql "$updates"/*.sql; do
    [ -f "$f" ] || continue
    if grep -qF -e "$tag_tle" -e "$tag_plain" "$f"; then
        echo "managed.sh: $f holds a dollar-quote tag the dist scripts use" >&2
        exit 1
    fi
done

# The update scripts this version registers, one path a line: a path to a
# version after this one is a draft for the next release, left out (the
# version it leads to is not here).
update_scripts() {
    local u to base
    for u in "$updates"/snowflake_id--*--*.sql; do
        [ -f "$u" ] || continue
        base=$(basename "$u" .sql)
        to=${base##*--}
        if [ "$(printf '%s\n%s\n' "$to" "$version" | sort -V | tail -1)" = "$version" ]; then
            printf '%s\n' "$u"
        fi
    done
}

# An update script as pg_tle runs it. A line "-- @snowflake_id_install_in_place@"
# stands for this version's install script made to run over an earlier
# install, as the plain script's update does: functions and the view
# replaced in place (the same identities: column defaults and views that use
# them stay), the type kept.
update_body() { # $1: sql/managed/updates/snowflake_id--FROM--TO.sql
    local line
    while IFS= read -r line || [ -n "$line" ]; do
        if [ "$line" = '-- @snowflake_id_install_in_place@' ]; then
            # sql/install/objects_in_the_way.sql and parts_type.sql left out: the type is kept, and the guard
            # (the native one) counts a composite type's pg_class row,
            # which is no member, as in the way.
            script tle | awk '/^-- ==== /{skip = ($0 == "-- ==== sql/install/objects_in_the_way.sql ====" || $0 == "-- ==== sql/install/parts_type.sql ====")} !skip' |
                sed -e 's/^CREATE FUNCTION /CREATE OR REPLACE FUNCTION /' -e 's/^CREATE VIEW /CREATE OR REPLACE VIEW /'
        else
            printf '%s\n' "$line"
        fi
    done <"$1"
}

tle() {
    cat <<HEAD
-- snowflake_id $version, managed edition, for pg_tle (Trusted Language
-- Extensions: RDS, Aurora, Supabase). Generated by scripts/managed.sh from the
-- repository's sources: do not edit. Run it as a member of pgtle_admin in the
-- database (psql -f), then: CREATE EXTENSION snowflake_id;
-- and, as the same role: SELECT snowflake_set_worker_id(n);
-- Running it again registers what is missing and changes nothing else.
-- docs/managed.md says what holds here and what differs from the native edition.
DO \$register\$
DECLARE
    -- The install script, once: the registration of a first version and
    -- that of a further one take the same text.
    body pg_catalog.text := $tag_tle
HEAD
    script tle
    cat <<TAIL
$tag_tle;
BEGIN
    IF NOT EXISTS (SELECT FROM pgtle.available_extension_versions() v
                    WHERE v.name OPERATOR(pg_catalog.=) 'snowflake_id'::pg_catalog.name) THEN
        PERFORM pgtle.install_extension('snowflake_id', '$version',
            'Snowflake IDs (managed edition: SQL and PL/pgSQL only)', body, ARRAY['plpgsql']);
    ELSIF NOT EXISTS (SELECT FROM pgtle.available_extension_versions() v
                       WHERE v.name OPERATOR(pg_catalog.=) 'snowflake_id'::pg_catalog.name
                         AND v.version OPERATOR(pg_catalog.=) '$version') THEN
        PERFORM pgtle.install_extension_version_sql('snowflake_id', '$version', body);
    END IF;
END
\$register\$;
TAIL
    for u in $(update_scripts); do
        base=$(basename "$u" .sql)
        from=${base#snowflake_id--}
        from=${from%%--*}
        to=${base##*--}
        cat <<UPD
DO \$update\$
BEGIN
    IF NOT EXISTS (SELECT FROM pgtle.extension_update_paths('snowflake_id') p
                    WHERE p.source OPERATOR(pg_catalog.=) '$from' AND p.target OPERATOR(pg_catalog.=) '$to'
                      AND p.path IS NOT NULL) THEN
        PERFORM pgtle.install_update_path('snowflake_id', '$from', '$to',
$tag_tle
UPD
        update_body "$u"
        cat <<UPD
$tag_tle);
    END IF;
END
\$update\$;
UPD
    done
    # The default version moves forward only: an older release's script run
    # after a newer one registers what it lacks and leaves the default
    # alone, so ALTER EXTENSION UPDATE and a restore keep aiming at the
    # newest version registered.
    cat <<DEFAULT
DO \$default\$
DECLARE
    current pg_catalog.text := (SELECT a.default_version FROM pgtle.available_extensions() a
                                 WHERE a.name OPERATOR(pg_catalog.=) 'snowflake_id'::pg_catalog.name);
BEGIN
    IF current IS NULL OR pg_catalog.string_to_array(current, '.')::pg_catalog.int4[]
                          OPERATOR(pg_catalog.<) pg_catalog.string_to_array('$version', '.')::pg_catalog.int4[] THEN
        PERFORM pgtle.set_default_version('snowflake_id', '$version');
    END IF;
END
\$default\$;
DEFAULT
}

plain() {
    cat <<HEAD
-- snowflake_id $version, managed edition, as a plain script for servers
-- without pg_tle (Cloud SQL, Azure, Neon). Generated by scripts/managed.sh
-- from the repository's sources: do not edit. Creates the objects in the
-- current schema (the first of search_path), owned by the role that runs
-- it, which is the edition's owner; then, as the same role:
--   SELECT snowflake_id_internal.snowflake_set_worker_id(n);
-- Run over an earlier plain install of the same role in the same schema, it
-- updates it in place: the counter, the worker id and the layout stay, and
-- so do the functions' identities (column defaults, views that use them).
-- docs/managed.md says what holds here and what differs from the native edition.
DO $tag_plain
DECLARE
    nsp pg_catalog.text := pg_catalog.current_schema();
    script pg_catalog.text;
    previous pg_catalog.text;
    cfg record;
    seq pg_catalog.text;
    suffix pg_catalog.text;
    old_internal pg_catalog.name;
    old_private pg_catalog.name;
    owner pg_catalog.text;
BEGIN
    IF nsp IS NULL THEN
        RAISE EXCEPTION 'snowflake_id: no schema to create the managed edition in'
            USING ERRCODE = '3F000', HINT = 'SET search_path to the schema it should go in, then run the script again.';
    END IF;
    script := \$snowflake_id_plain_script\$
HEAD
    script plain
    cat <<TAIL
\$snowflake_id_plain_script\$;
    script := pg_catalog.replace(script, '@extschema@', pg_catalog.quote_ident(nsp));
    -- An earlier plain install of this role, here: update it in place. Its
    -- internal functions are in snowflake_id_internal (0.9.0 and later) or
    -- snowflake_id_managed (0.7.0 and 0.8.0): a schema of the role's that no
    -- extension owns (the native edition's snowflake_id_internal is its
    -- extension's, and so is a pg_tle install's).
    SELECT n.nspname INTO old_internal
      FROM pg_catalog.pg_namespace n
     WHERE n.nspname OPERATOR(pg_catalog.=) ANY (ARRAY['snowflake_id_internal', 'snowflake_id_managed']::pg_catalog.name[])
       AND n.nspowner OPERATOR(pg_catalog.=) CURRENT_USER::pg_catalog.regrole::pg_catalog.oid
       AND NOT EXISTS (SELECT FROM pg_catalog.pg_depend d
                        WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_namespace'::pg_catalog.regclass::pg_catalog.oid
                          AND d.objid OPERATOR(pg_catalog.=) n.oid AND d.deptype OPERATOR(pg_catalog.=) 'e'::pg_catalog."char")
     ORDER BY n.nspname OPERATOR(pg_catalog.=) 'snowflake_id_internal'::pg_catalog.name DESC
     LIMIT 1;
    IF old_internal IS NOT NULL
       AND EXISTS (SELECT FROM pg_catalog.pg_proc p
                    WHERE p.pronamespace OPERATOR(pg_catalog.=) pg_catalog.to_regnamespace(pg_catalog.quote_ident(nsp))::pg_catalog.oid
                      AND p.proname OPERATOR(pg_catalog.=) 'snowflake_nextval'::pg_catalog.name
                      AND p.proowner OPERATOR(pg_catalog.=) CURRENT_USER::pg_catalog.regrole::pg_catalog.oid) THEN
        -- 0.7.0 marks no version on its schema.
        previous := coalesce(pg_catalog.substring(pg_catalog.obj_description(pg_catalog.to_regnamespace(old_internal)::pg_catalog.oid, 'pg_namespace'),
                                                  'managed edition ([0-9.]+)'), '0.7.0');
        -- Its owner-only schema: snowflake_id_private (0.9.0 and later) or
        -- snowflake_id_managed_lock (0.7.0 and 0.8.0), and its
        -- configuration, there or (0.7.0) with its internals.
        old_private := CASE WHEN old_internal OPERATOR(pg_catalog.=) 'snowflake_id_internal' THEN 'snowflake_id_private'
                            WHEN pg_catalog.to_regnamespace('snowflake_id_managed_lock') IS NOT NULL THEN 'snowflake_id_managed_lock' END;
        EXECUTE pg_catalog.format('SELECT * FROM %I.snowflake_managed_config',
                                  CASE WHEN pg_catalog.to_regclass(pg_catalog.quote_ident(old_internal) OPERATOR(pg_catalog.||) '.snowflake_managed_config') IS NOT NULL
                                       THEN old_internal ELSE old_private END) INTO cfg;
        -- The counter's schema under this version's name, never another
        -- role's: the sequences go nowhere else.
        SELECT n.nspowner::pg_catalog.regrole::pg_catalog.text INTO owner
          FROM pg_catalog.pg_namespace n
         WHERE n.nspname OPERATOR(pg_catalog.=) 'snowflake_id_state'::pg_catalog.name
           AND n.nspowner OPERATOR(pg_catalog.<>) CURRENT_USER::pg_catalog.regrole::pg_catalog.oid;
        IF owner IS NOT NULL THEN
            RAISE EXCEPTION 'snowflake_id: schema snowflake_id_state exists already and belongs to role %', owner
                USING ERRCODE = '42P06',
                      DETAIL = 'The managed edition keeps its counter there; the update moves the counter of the install it updates there, and takes over only a schema of the role that installed it.',
                      HINT = 'Have a superuser or its owner drop or rename that schema, then run the script again.';
        END IF;
        -- 0.8.0's counter schema, renamed (its sequences, their values and
        -- the grants on them go with it); for 0.7.0's sequences, a new one
        -- with the drawing 0.7.0 gave every role.
        IF pg_catalog.to_regnamespace('snowflake_id_state') IS NULL THEN
            IF pg_catalog.to_regnamespace('snowflake_id_managed_state') IS NOT NULL THEN
                ALTER SCHEMA snowflake_id_managed_state RENAME TO snowflake_id_state;
            ELSE
                CREATE SCHEMA snowflake_id_state;
                GRANT USAGE ON SCHEMA snowflake_id_state TO PUBLIC;
            END IF;
        END IF;
        -- 0.7.0's counter, generation and offset, moved (values and all) to
        -- the schema that outlives an install (0.7.0 kept them with its
        -- internals).
        FOREACH seq IN ARRAY ARRAY['snowflake_managed_generation', 'snowflake_managed_counter', 'snowflake_managed_offset'] LOOP
            IF pg_catalog.to_regclass(pg_catalog.quote_ident(old_internal) OPERATOR(pg_catalog.||) '.' OPERATOR(pg_catalog.||) seq) IS NOT NULL THEN
                EXECUTE pg_catalog.format('ALTER SEQUENCE %I.%I SET SCHEMA snowflake_id_state', old_internal, seq);
            END IF;
        END LOOP;
        -- The earlier internals out of the way; dropped once nothing of the
        -- new install depends on them. Under names no role can create in
        -- advance (a random suffix): a role with CREATE on the database that
        -- made a schema of a fixed name first would stop the update.
        suffix := pg_catalog.substr(pg_catalog.md5(pg_catalog.random()::pg_catalog.text
            OPERATOR(pg_catalog.||) pg_catalog.clock_timestamp()::pg_catalog.text
            OPERATOR(pg_catalog.||) pg_catalog.pg_backend_pid()::pg_catalog.text), 1, 24);
        EXECUTE pg_catalog.format('ALTER SCHEMA %I RENAME TO %I', old_internal, 'snowflake_id_internal_previous_' OPERATOR(pg_catalog.||) suffix);
        IF old_private IS NOT NULL THEN
            EXECUTE pg_catalog.format('ALTER SCHEMA %I RENAME TO %I', old_private, 'snowflake_id_private_previous_' OPERATOR(pg_catalog.||) suffix);
        END IF;
        -- The same script, replacing the functions and the view in place
        -- (same identities: defaults and views that use them stay) and
        -- keeping the type.
        script := pg_catalog.replace(script, '@snowflake_id_updating@', 'true');
        script := pg_catalog.replace(script, E'\\nCREATE FUNCTION ', E'\\nCREATE OR REPLACE FUNCTION ');
        script := pg_catalog.replace(script, E'\\nCREATE VIEW ', E'\\nCREATE OR REPLACE VIEW ');
        script := pg_catalog.replace(script, E'\\nCREATE TYPE snowflake_parts AS', E'\\nCREATE TYPE pg_temp.snowflake_parts_kept AS');
        EXECUTE script;
        IF cfg.epoch IS NOT NULL THEN
            PERFORM snowflake_id_internal.snowflake_set_layout(cfg.epoch, cfg.worker_bits, cfg.sequence_bits);
        END IF;
        IF cfg.worker_id IS NOT NULL THEN
            PERFORM snowflake_id_internal.snowflake_set_worker_id(cfg.worker_id);
            -- Where the worker id was set, as it was (0.8.0 and later): a
            -- database restored from a dump is still named a copy.
            IF pg_catalog.to_jsonb(cfg) OPERATOR(pg_catalog.?) 'set_in' THEN
                UPDATE snowflake_id_private.snowflake_managed_config
                   SET set_in = (pg_catalog.to_jsonb(cfg) OPERATOR(pg_catalog.->>) 'set_in')::pg_catalog.oid,
                       set_on = (pg_catalog.to_jsonb(cfg) OPERATOR(pg_catalog.->>) 'set_on')::pg_catalog.int8;
            END IF;
        END IF;
        EXECUTE pg_catalog.format('DROP SCHEMA %I CASCADE', 'snowflake_id_internal_previous_' OPERATOR(pg_catalog.||) suffix);
        EXECUTE pg_catalog.format('DROP SCHEMA IF EXISTS %I CASCADE', 'snowflake_id_private_previous_' OPERATOR(pg_catalog.||) suffix);
        RAISE NOTICE 'snowflake_id: the managed edition in schema % is updated from % to $version', nsp, previous
            USING DETAIL = 'The counter, the worker id and the layout are kept, and so are the privileges on them: where PUBLIC could draw (0.7.0), it still can.',
                  HINT = 'To keep drawing to the roles that need it, revoke those privileges from PUBLIC and grant them to those roles (docs/managed.md, "Drawing roles").';
    ELSE
        EXECUTE pg_catalog.replace(script, '@snowflake_id_updating@', 'false');
    END IF;
END
$tag_plain;
TAIL
}

# Removes a plain install from the current schema (the first of
# search_path), all of it or nothing: refused while a column's default calls
# snowflake_nextval() (dropping the function would drop the default with
# it), and never drops another role's object of one of the names. Keeps
# schema snowflake_id_state, the counter: an install after this one
# continues above every ID issued before.
plain_uninstall() {
    cat <<HEAD
-- snowflake_id $version, managed edition: uninstall of the plain script's
-- install from the current schema. Generated by scripts/managed.sh: do not
-- edit. Run it as the role that installed it:
--   PGOPTIONS='-c search_path=<schema>' psql -v ON_ERROR_STOP=1 -d yourdb -f dist/snowflake_id_plain_uninstall.sql
-- docs/managed.md ("Uninstall") says what it keeps.
DO \$uninstall\$
DECLARE
    functions pg_catalog.name[] := ARRAY[$guard_functions]::pg_catalog.name[];
    relations pg_catalog.name[] := ARRAY[$guard_relations]::pg_catalog.name[];
    ns pg_catalog.oid := pg_catalog.to_regnamespace(pg_catalog.quote_ident(pg_catalog.current_schema()));
    users text;
    r record;
BEGIN
    IF ns IS NULL OR pg_catalog.to_regnamespace('snowflake_id_internal') IS NULL
       OR pg_catalog.to_regnamespace('snowflake_id_private') IS NULL THEN
        RAISE EXCEPTION 'snowflake_id: no plain install of the managed edition $version here'
            USING ERRCODE = '42704',
                  HINT = 'SET search_path to the schema it was installed in, then run this again. An install of 0.8.0 or earlier: run this version''s dist/snowflake_id_plain.sql first, which updates it.';
    END IF;
    SELECT pg_catalog.string_agg(pg_catalog.format('%s.%I', ad.adrelid::pg_catalog.regclass, a.attname), ', ') INTO users
      FROM pg_catalog.pg_depend d
      JOIN pg_catalog.pg_attrdef ad ON d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_attrdef'::pg_catalog.regclass::pg_catalog.oid
                                   AND d.objid OPERATOR(pg_catalog.=) ad.oid
      JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) ad.adrelid AND a.attnum OPERATOR(pg_catalog.=) ad.adnum
      JOIN pg_catalog.pg_proc p ON d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass::pg_catalog.oid
                               AND d.refobjid OPERATOR(pg_catalog.=) p.oid
     WHERE p.pronamespace OPERATOR(pg_catalog.=) ns AND p.proname OPERATOR(pg_catalog.=) ANY (functions);
    IF users IS NOT NULL THEN
        RAISE EXCEPTION 'snowflake_id: columns default to the managed edition''s functions: %', users
            USING ERRCODE = '2BP01',
                  DETAIL = 'Dropping the functions would drop those defaults with them, and inserts would then fail or store NULL.',
                  HINT = 'Give each column another default first (ALTER TABLE ... ALTER COLUMN ... SET DEFAULT ... or DROP DEFAULT), then run this again.';
    END IF;
    FOR r IN
        SELECT c.oid FROM pg_catalog.pg_class c
         WHERE c.relnamespace OPERATOR(pg_catalog.=) ns AND c.relname OPERATOR(pg_catalog.=) ANY (relations)
           AND c.relkind OPERATOR(pg_catalog.=) 'v'::pg_catalog."char" AND c.relowner OPERATOR(pg_catalog.=) CURRENT_USER::pg_catalog.regrole::pg_catalog.oid
    LOOP
        EXECUTE pg_catalog.format('DROP VIEW %s', r.oid::pg_catalog.regclass);
    END LOOP;
    FOR r IN
        SELECT p.oid FROM pg_catalog.pg_proc p
         WHERE p.pronamespace OPERATOR(pg_catalog.=) ns AND p.proname OPERATOR(pg_catalog.=) ANY (functions)
           AND p.proowner OPERATOR(pg_catalog.=) CURRENT_USER::pg_catalog.regrole::pg_catalog.oid
    LOOP
        -- CASCADE: the edition's functions call one another (one may be gone
        -- with another already); nothing else depends on them (the defaults
        -- were checked above).
        IF EXISTS (SELECT FROM pg_catalog.pg_proc p WHERE p.oid OPERATOR(pg_catalog.=) r.oid) THEN
            EXECUTE pg_catalog.format('DROP FUNCTION %s CASCADE', r.oid::pg_catalog.regprocedure);
        END IF;
    END LOOP;
    FOR r IN
        SELECT pg_catalog.format('DROP TYPE %s', t.oid::pg_catalog.regtype) AS stmt
          FROM pg_catalog.pg_type t
         WHERE t.typnamespace OPERATOR(pg_catalog.=) ns AND t.typname OPERATOR(pg_catalog.=) ANY (relations)
           AND t.typelem OPERATOR(pg_catalog.=) 0::pg_catalog.oid
           AND (t.typrelid OPERATOR(pg_catalog.=) 0::pg_catalog.oid
                OR (SELECT c.relkind FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) t.typrelid)
                   OPERATOR(pg_catalog.=) 'c'::pg_catalog."char")
           AND t.typowner OPERATOR(pg_catalog.=) CURRENT_USER::pg_catalog.regrole::pg_catalog.oid
    LOOP
        EXECUTE r.stmt;
    END LOOP;
    DROP SCHEMA snowflake_id_internal, snowflake_id_private CASCADE;
    RAISE NOTICE 'snowflake_id: the managed edition is uninstalled; schema snowflake_id_state, its counter, is kept'
        USING HINT = 'An install after this one continues above every ID issued before. DROP SCHEMA snowflake_id_state CASCADE forgets that, once no stored ID matters.';
END
\$uninstall\$;
HEAD
}

# The package for database.dev, Supabase's registry of pg_tle extensions,
# laid out as its dbdev CLI reads a directory to publish or install: one
# control file named for the extension, the install script of this version
# (snowflake_id--VERSION.sql: the pg_tle script's body), the update scripts
# (snowflake_id--FROM--TO.sql: the pg_tle script's update paths) and
# README.md, the package's page. dbdev installs them through pg_tle
# (pgtle.install_extension, install_update_path, set_default_version).
package() { # $1: the directory to write into
    local dir=$1 u
    mkdir -p "$dir"
    cat >"$dir"/snowflake_id.control <<CONTROL
# snowflake_id $version, managed edition (SQL and PL/pgSQL only), for pg_tle.
# Generated by scripts/managed.sh: do not edit.
comment = 'Snowflake IDs (managed edition: SQL and PL/pgSQL only)'
default_version = '$version'
relocatable = false
superuser = false
requires = 'plpgsql'
CONTROL
    printf '%s\n' "$(script tle)" >"$dir/snowflake_id--$version.sql"
    for u in $(update_scripts); do
        printf '%s\n' "$(update_body "$u")" >"$dir/$(basename "$u")"
    done
    cat >"$dir"/README.md <<README
# snowflake_id (managed edition)

Snowflake IDs for PostgreSQL: 64-bit, time-ordered \`bigint\` keys, unique
across every session of a server and, with distinct worker ids, across
servers. \`DEFAULT snowflake_nextval()\` on a primary key, like \`bigserial\`,
and decodable to their time, worker id and sequence, like a UUIDv7 that fits
in a \`bigint\`. This is the managed edition, written in SQL and PL/pgSQL
only, for servers that cannot load the native library; it issues the same
IDs as the native edition of the same layout.

Version $version. Generated by \`scripts/managed.sh\` from the repository's
sources; the repository's \`docs/managed.md\` is the manual: what holds,
what differs from the native edition, dump and restore, update, uninstall.

## Install

With the \`dbdev\` client, as a member of \`pgtle_admin\` (the package is
named \`<handle>@snowflake_id\` on database.dev, after its publisher):

\`\`\`sql
SELECT dbdev.install('<handle>@snowflake_id');
CREATE EXTENSION "<handle>@snowflake_id" VERSION '$version';
SELECT snowflake_id_internal.snowflake_set_worker_id(1);  -- 0 .. 1023, one per server
\`\`\`

Then let the roles that draw IDs read the generator (the extension's owner
grants; a fresh install grants no other role anything):

\`\`\`sql
GRANT USAGE ON SCHEMA snowflake_id_state TO app_role;
GRANT USAGE ON SEQUENCE snowflake_id_state.snowflake_managed_counter TO app_role;
GRANT SELECT ON SEQUENCE snowflake_id_state.snowflake_managed_generation,
    snowflake_id_state.snowflake_managed_offset TO app_role;
\`\`\`

## Use

\`\`\`sql
CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_nextval(), total numeric);
SELECT snowflake_timestamp(id), snowflake_worker_id(id) FROM orders;
\`\`\`

## Update

\`SELECT dbdev.install('<handle>@snowflake_id');\` registers the new version
and its update path, then \`ALTER EXTENSION "<handle>@snowflake_id" UPDATE;\`.
The counter, the worker id and the layout are kept.
README
}

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
