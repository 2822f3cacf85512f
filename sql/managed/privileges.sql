-- The privileges on the edition's internals, as this script means them,
-- whatever the installing role's default privileges granted as they were
-- created (ALTER DEFAULT PRIVILEGES ... GRANT EXECUTE ON FUNCTIONS, or ON
-- SEQUENCES, ON TABLES, to a role): a role granted EXECUTE on the internal
-- SECURITY DEFINER functions could switch the worker id or the layout as
-- the owner, and one granted USAGE on the worker sequence could move it by
-- its OID. Every grant on them to a role other than the owner goes: the
-- script grants none (what it means for every role it grants to PUBLIC, or
-- revokes from PUBLIC, itself). The schemas are stripped as they are made
-- (snowflake_managed_strip_schema), the relations of
-- snowflake_id_private and snowflake_id_state too
-- (snowflake_managed_strip_relation). No check inside the internal
-- SECURITY DEFINER functions could stand in for this: current_user there is
-- the owner whoever called them.
DO $privileges$
DECLARE
    r record;
BEGIN
    FOR r IN
        SELECT DISTINCT p.oid::pg_catalog.regprocedure::pg_catalog.text AS fn, a.grantee
          FROM pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
         WHERE (p.pronamespace OPERATOR(pg_catalog.=) 'snowflake_id_internal'::pg_catalog.regnamespace::pg_catalog.oid
                OR p.oid OPERATOR(pg_catalog.=) ANY (ARRAY[
                    '@extschema@.snowflake_set_worker_id(integer)'::pg_catalog.regprocedure,
                    '@extschema@.snowflake_set_layout(timestamp with time zone, integer, integer)'::pg_catalog.regprocedure,
                    '@extschema@.snowflake_advance_past(bigint, boolean)'::pg_catalog.regprocedure]::pg_catalog.oid[]))
           AND a.grantee OPERATOR(pg_catalog.<>) p.proowner
           AND a.grantee OPERATOR(pg_catalog.<>) 0::pg_catalog.oid
    LOOP
        EXECUTE pg_catalog.format('REVOKE ALL ON FUNCTION %s FROM %s CASCADE', r.fn, r.grantee::pg_catalog.regrole::pg_catalog.text);
    END LOOP;
END
$privileges$;
