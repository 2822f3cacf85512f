-- The internal objects live in a schema of their own that only the
-- extension's owner can create in. PL/pgSQL resolves its calls when they
-- run, among every function of the schema it names: in the extension's
-- schema (public on many servers, where any role may create before 15 and
-- on managed services) another role could add an overload that matches a
-- call better (an integer literal where bigint is declared), or one with an
-- extra defaulted argument that makes the call ambiguous, and have it run as
-- the owner from a SECURITY DEFINER function. Nobody else creates here, and
-- every call passes its arguments cast to their exact types besides. The
-- functions applications call stay in the extension's schema.
DO $schema$
DECLARE
    found pg_catalog.name;
    owner pg_catalog.text;
BEGIN
    SELECT n.nspname, n.nspowner::pg_catalog.regrole::pg_catalog.text INTO found, owner
      FROM pg_catalog.pg_namespace n
     WHERE n.nspname OPERATOR(pg_catalog.=) ANY (ARRAY['snowflake_id_internal', 'snowflake_id_private']::pg_catalog.name[])
     ORDER BY n.nspname
     LIMIT 1;
    IF owner IS NOT NULL THEN
        RAISE EXCEPTION 'snowflake_id: schema % exists already (owner %)', found, owner
            USING ERRCODE = '42P06',
                  DETAIL = 'The managed edition keeps its internal functions and its owner-only configuration in schemas snowflake_id_internal and snowflake_id_private, which it creates, so that only the extension''s owner can create objects there; the native edition has a snowflake_id_internal of its own.',
                  HINT = pg_catalog.format('Drop or rename schema %s as its owner or a superuser (or uninstall the edition of snowflake_id installed before), then install again.', found);
    END IF;
    -- The counter's schema outlives an uninstall (see
    -- snowflake_managed_state_create), under this version's name or, from
    -- 0.8.0, as snowflake_id_managed_state, which the install takes over
    -- and renames: an install takes either over only from the role that
    -- will own this one, and not both (two counters, neither of which
    -- alone is above every ID issued).
    SELECT n.nspname, n.nspowner::pg_catalog.regrole::pg_catalog.text INTO found, owner
      FROM pg_catalog.pg_namespace n
     WHERE n.nspname OPERATOR(pg_catalog.=) ANY (ARRAY['snowflake_id_state', 'snowflake_id_managed_state']::pg_catalog.name[])
       AND n.nspowner OPERATOR(pg_catalog.<>) (SELECT r.oid FROM pg_catalog.pg_roles r
                                                 WHERE r.rolname OPERATOR(pg_catalog.=) CURRENT_USER)
     ORDER BY n.nspname DESC
     LIMIT 1;
    IF owner IS NOT NULL THEN
        RAISE EXCEPTION 'snowflake_id: schema % exists already and belongs to role %', found, owner
            USING ERRCODE = '42P06',
                  DETAIL = 'The managed edition keeps its counter there, outside the install, so that an install after an uninstall continues above every ID issued before; it takes over only a schema of the role that installs it.',
                  HINT = 'It is owned by another role: if it is not an earlier install''s, have a superuser or its owner drop or rename it; if it is, install as the role that owns it.';
    END IF;
    IF pg_catalog.to_regnamespace('snowflake_id_state') IS NOT NULL
       AND pg_catalog.to_regnamespace('snowflake_id_managed_state') IS NOT NULL THEN
        RAISE EXCEPTION 'snowflake_id: schemas snowflake_id_state and snowflake_id_managed_state both exist'
            USING ERRCODE = '42P06',
                  DETAIL = 'Each holds the counter of an earlier install (snowflake_id_managed_state is 0.8.0''s name for it); an install continues above one counter only.',
                  HINT = 'Keep the one whose counter is ahead (SELECT last_value FROM ....snowflake_managed_counter in each), drop the other (DROP SCHEMA ... CASCADE), then install again.';
    END IF;
END
$schema$;
CREATE SCHEMA snowflake_id_internal;
COMMENT ON SCHEMA snowflake_id_internal IS 'snowflake_id managed edition @snowflake_id_version@: internal functions (docs/managed.md)';
CREATE SCHEMA snowflake_id_private;
-- Only the owner creates in either, whatever ALTER DEFAULT PRIVILEGES ... ON
-- SCHEMAS granted as they were created: every grant but the owner's goes
-- (then USAGE for everyone on the first; none on the second, below).
CREATE FUNCTION snowflake_id_internal.snowflake_managed_strip_schema(nsp pg_catalog.name) RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    r record;
BEGIN
    FOR r IN
        SELECT DISTINCT a.grantee
          FROM pg_catalog.pg_namespace n, pg_catalog.aclexplode(n.nspacl) a
         WHERE n.nspname OPERATOR(pg_catalog.=) nsp AND a.grantee OPERATOR(pg_catalog.<>) n.nspowner
    LOOP
        EXECUTE pg_catalog.format('REVOKE ALL ON SCHEMA %I FROM %s', nsp,
                                  CASE WHEN r.grantee OPERATOR(pg_catalog.=) 0::pg_catalog.oid THEN 'PUBLIC'
                                       ELSE r.grantee::pg_catalog.regrole::pg_catalog.text END);
    END LOOP;
END
$body$;
SELECT snowflake_id_internal.snowflake_managed_strip_schema('snowflake_id_internal'::pg_catalog.name);
SELECT snowflake_id_internal.snowflake_managed_strip_schema('snowflake_id_private'::pg_catalog.name);
-- USAGE only, and only for functions: the inlined fast path runs as the
-- caller and calls the slow path there. No relation is in this schema: a
-- role that can name a relation can queue a lock on it (PostgreSQL locks a
-- relation while it parses a statement, before it checks privileges), and
-- every draw would wait behind that queue.
GRANT USAGE ON SCHEMA snowflake_id_internal TO PUBLIC;

-- Strips every privilege on a relation of the edition but its owner's and
-- PUBLIC's (which the install revokes itself): whatever ALTER DEFAULT
-- PRIVILEGES ... ON TABLES or ON SEQUENCES granted as it was created.
CREATE FUNCTION snowflake_id_internal.snowflake_managed_strip_relation(rel regclass) RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    r record;
BEGIN
    FOR r IN
        SELECT DISTINCT a.grantee
          FROM pg_catalog.pg_class c, pg_catalog.aclexplode(c.relacl) a
         WHERE c.oid OPERATOR(pg_catalog.=) rel::pg_catalog.oid AND a.grantee OPERATOR(pg_catalog.<>) c.relowner
           AND a.grantee OPERATOR(pg_catalog.<>) 0::pg_catalog.oid
    LOOP
        EXECUTE pg_catalog.format('REVOKE ALL ON %s FROM %s CASCADE', rel::pg_catalog.text,
                                  r.grantee::pg_catalog.regrole::pg_catalog.text);
    END LOOP;
END
$body$;
