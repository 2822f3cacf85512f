-- Nothing of another role's where CREATE EXTENSION makes the extension's
-- objects (since 0.5.0). An object of one of their names in @extschema@ makes a
-- CREATE of this script fail with a bare "already exists", or (a function of
-- another signature) stays beside the extension's, to be called in its place
-- by an untyped call (snowflake_timestamp(0) with a planted
-- snowflake_timestamp(integer)). Refused first, naming the object, its owner
-- and the fix. This block runs with the script's search_path (@extschema@,
-- often public, where ordinary roles may create): it names pg_catalog for
-- every function and operator it calls. (The update scripts check the names
-- they create the same way.)
DO $guard$
DECLARE
    functions pg_catalog.name[] := ARRAY[
        'snowflake_nextval', 'snowflake_nextval_at', 'snowflake_advance_past', 'snowflake_from_timestamp',
        'snowflake_id_span', 'snowflake_timestamp', 'snowflake_worker_id', 'snowflake_sequence',
        'snowflake_decode', 'snowflake_decode_fields', 'snowflake_decode_rows', 'snowflake_id_status',
        'snowflake_convert', 'snowflake_cluster_check', 'snowflake_registry_free',
        'snowflake_registry_acquire', 'snowflake_registry_renew', 'snowflake_registry_release',
        'snowflake_registry_check_holder', 'snowflake_registry_history_of',
        'snowflake_registry_record_history', 'snowflake_to_base62', 'snowflake_to_base32',
        'snowflake_from_base62', 'snowflake_from_base32', 'snowflake_nextval_block', 'snowflake_nextval_array',
        'snowflake_id_received', 'snowflake_logical_guard', 'snowflake_logical_guard_ddl',
        'snowflake_logical_peers'
    ]::pg_catalog.name[];
    relations pg_catalog.name[] := ARRAY[
        'snowflake_parts', 'snowflake_id_status', 'snowflake_registry', 'snowflake_registry_namespaces',
        'snowflake_registry_namespaces_pkey', 'snowflake_registry_leases', 'snowflake_registry_leases_pkey',
        'snowflake_registry_history', 'snowflake_registry_history_pkey', 'snowflake_logical_peer_answers',
        'snowflake_cluster_problems'
    ]::pg_catalog.name[];
    ext pg_catalog.oid;
    ns pg_catalog.oid;
    clash record;
BEGIN
    SELECT e.oid, e.extnamespace INTO ext, ns
      FROM pg_catalog.pg_extension e WHERE e.extname OPERATOR(pg_catalog.=) 'snowflake_id'::pg_catalog.name;
    SELECT o.kind, o.what, o.owner INTO clash
      FROM (SELECT 'FUNCTION'::pg_catalog.text AS kind,
                   pg_catalog.format('%I.%I(%s)', n.nspname, p.proname,
                                     pg_catalog.pg_get_function_identity_arguments(p.oid)) AS what,
                   p.proowner AS owner, 'pg_catalog.pg_proc'::pg_catalog.regclass::pg_catalog.oid AS classid,
                   p.oid AS objid
              FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace
             WHERE p.pronamespace OPERATOR(pg_catalog.=) ns AND p.proname OPERATOR(pg_catalog.=) ANY (functions)
            UNION ALL
            SELECT CASE c.relkind WHEN 'r'::pg_catalog."char" THEN 'TABLE' WHEN 'p'::pg_catalog."char" THEN 'TABLE'
                                  WHEN 'v'::pg_catalog."char" THEN 'VIEW'
                                  WHEN 'm'::pg_catalog."char" THEN 'MATERIALIZED VIEW'
                                  WHEN 'i'::pg_catalog."char" THEN 'INDEX' WHEN 'I'::pg_catalog."char" THEN 'INDEX'
                                  WHEN 'S'::pg_catalog."char" THEN 'SEQUENCE'
                                  WHEN 'f'::pg_catalog."char" THEN 'FOREIGN TABLE' ELSE 'TYPE' END::pg_catalog.text,
                   pg_catalog.format('%I.%I', n.nspname, c.relname),
                   c.relowner, 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid, c.oid
              FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
             WHERE c.relnamespace OPERATOR(pg_catalog.=) ns AND c.relname OPERATOR(pg_catalog.=) ANY (relations)
            UNION ALL
            -- Types of their own (a relation's row type is the relation's).
            SELECT 'TYPE'::pg_catalog.text, pg_catalog.format('%I.%I', n.nspname, t.typname),
                   t.typowner, 'pg_catalog.pg_type'::pg_catalog.regclass::pg_catalog.oid, t.oid
              FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) t.typnamespace
             WHERE t.typnamespace OPERATOR(pg_catalog.=) ns AND t.typname OPERATOR(pg_catalog.=) ANY (relations)
               AND t.typrelid OPERATOR(pg_catalog.=) 0::pg_catalog.oid) o
     WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_depend d
                        WHERE d.classid OPERATOR(pg_catalog.=) o.classid AND d.objid OPERATOR(pg_catalog.=) o.objid
                          AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass::pg_catalog.oid
                          AND d.refobjid OPERATOR(pg_catalog.=) ext
                          AND d.deptype OPERATOR(pg_catalog.=) 'e'::pg_catalog."char")
     ORDER BY o.what
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'cannot create extension snowflake_id: % %, owned by role %, is in the way',
                        pg_catalog.lower(clash.kind), clash.what, clash.owner::pg_catalog.regrole
            USING ERRCODE = '42710',
                  DETAIL = pg_catalog.format('The extension creates its own object of that name in schema %s. Were '
                                             'that one kept, CREATE EXTENSION would fail on it, or it would be '
                                             'called in place of the extension''s function.', '@extschema@'),
                  HINT = pg_catalog.format('Check what uses it, then drop it (DROP %s %s;) or move it out of the '
                                           'way (ALTER %s %s RENAME TO ..., or SET SCHEMA ...), as its owner or a '
                                           'superuser, and run CREATE EXTENSION snowflake_id again.',
                                           clash.kind, clash.what, clash.kind, clash.what);
    END IF;
END
$guard$;
