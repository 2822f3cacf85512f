-- snowflake_id_internal: a schema of the extension's own, where no role but
-- the extension's owner (a superuser) may create, for what is called by
-- name at run time: the registry's functions the nodes call over libpq,
-- and the extension's functions snowflake_convert() puts in the statements
-- it runs. A role that may create in @extschema@ (often public) can put a
-- function of one of the extension's names beside it there, with one more
-- defaulted or variadic argument: every call by name, however qualified
-- and typed, is then "not unique" (42725). Here no one else can add a
-- candidate, and each function's SQL-standard body is bound to the
-- extension's own function when it is created, so nothing planted later in
-- @extschema@ changes what a call here runs. None is SECURITY DEFINER: the
-- function each calls checks the caller's EXECUTE as before (the grants
-- DBAs gave the nodes' roles on the registry's functions keep working, and
-- are the only ones needed).
-- A schema of that name already there is another role's (a role with
-- CREATE on the database made it): named, with the fix, rather than
-- PostgreSQL's bare "already exists".
DO $internal_guard$
DECLARE
    owner pg_catalog.regrole;
BEGIN
    SELECT n.nspowner::pg_catalog.regrole INTO owner
      FROM pg_catalog.pg_namespace n WHERE n.nspname OPERATOR(pg_catalog.=) 'snowflake_id_internal'::pg_catalog.name;
    IF FOUND THEN
        RAISE EXCEPTION 'cannot create extension snowflake_id: schema snowflake_id_internal, owned by role %, is in the way',
                        owner
            USING ERRCODE = '42710',
                  DETAIL = 'The extension creates its own schema of that name, where only its owner may create.',
                  HINT = 'Check what is in it, then drop it (DROP SCHEMA snowflake_id_internal;) or rename it, as its '
                         'owner or a superuser, and run CREATE EXTENSION snowflake_id again.';
    END IF;
END
$internal_guard$;
CREATE SCHEMA snowflake_id_internal;
COMMENT ON SCHEMA snowflake_id_internal IS
    'snowflake_id: what the library calls over libpq, where no role but the extension''s owner may create';
-- Only the owner creates here, whatever ALTER DEFAULT PRIVILEGES ... ON
-- SCHEMAS granted as it was created: every grant but the owner's goes,
-- then USAGE for everyone.
DO $acl$
DECLARE
    grantee pg_catalog.oid;
BEGIN
    FOR grantee IN
        SELECT DISTINCT a.grantee
          FROM pg_catalog.pg_namespace n, pg_catalog.aclexplode(n.nspacl) a
         WHERE n.nspname OPERATOR(pg_catalog.=) 'snowflake_id_internal'::pg_catalog.name
           AND a.grantee OPERATOR(pg_catalog.<>) n.nspowner
    LOOP
        EXECUTE pg_catalog.format('REVOKE ALL ON SCHEMA snowflake_id_internal FROM %s',
                                  CASE WHEN grantee OPERATOR(pg_catalog.=) 0::pg_catalog.oid THEN 'PUBLIC'
                                       ELSE grantee::pg_catalog.regrole::pg_catalog.text END);
    END LOOP;
END
$acl$;
GRANT USAGE ON SCHEMA snowflake_id_internal TO PUBLIC;
