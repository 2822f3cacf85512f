# shellcheck shell=bash
# Sourced by scripts/managed.sh (from the repository's root): the guard each
# install script opens with, which refuses what is in the way of the edition
# before anything is created. Reads parts, this_extension, guard_functions
# and guard_relations from managed.sh.

# The names the install creates in the extension's schema, read from the
# install script itself (not kept by hand), for the guard below: functions,
# and relations and types (a relation's row type shares its name).
names_of() { # $1: FUNCTION or relation
    local kinds
    if [ "$1" = FUNCTION ]; then kinds='FUNCTION|AGGREGATE|PROCEDURE'; else kinds='VIEW|TABLE|SEQUENCE|TYPE|DOMAIN|MATERIALIZED VIEW'; fi
    cat "${parts[@]}" |
        sed -nE "s/^[[:space:]]*CREATE (OR REPLACE )?($kinds)[[:space:]]+(@extschema@\.)?([A-Za-z_][A-Za-z0-9_]*)[[:space:]]*(\(|AS|$).*/\4/p" |
        sort -u | sed "s/.*/'&'/" | paste -sd, -
}

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
