-- The counter, the generation, the offset and the layout the counter counts
-- in live in a schema that is not part of the extension: DROP EXTENSION (or
-- the plain script's uninstall) leaves it, and the next install continues
-- above every value the counter reached, as the native edition keeps its
-- durable mark across a reinstall (a counter made afresh would start at the
-- clock, and IDs stored while it ran ahead would come again). Made by the
-- install when the schema is not there; when it is (an earlier install's,
-- or one pg_restore is bringing back, whose sequences it creates after the
-- extension), the install leaves it as it is, and the first
-- snowflake_set_worker_id checks it and makes what is missing. Taken over
-- only from the extension's owner. pg_dump dumps it as the owner's own
-- objects, with the counter's value.
CREATE FUNCTION snowflake_id_internal.snowflake_managed_state_create() RETURNS void
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    r record;
BEGIN
    IF pg_catalog.to_regnamespace('snowflake_id_state') IS NULL
       AND pg_catalog.to_regnamespace('snowflake_id_managed_state') IS NOT NULL THEN
        -- 0.8.0's name for this schema (left by a DROP EXTENSION or the plain
        -- uninstall of 0.8.0, or restored from a dump of it): taken over
        -- under this version's, with its sequences, their values and the
        -- grants on them. The owner was checked (the install's guard,
        -- snowflake_managed_state_ensure); a schema of another role's is not
        -- renamed here (only its owner may).
        ALTER SCHEMA snowflake_id_managed_state RENAME TO snowflake_id_state;
    END IF;
    IF pg_catalog.to_regnamespace('snowflake_id_state') IS NULL THEN
        -- No privilege for any other role: the inlined fast path runs as the
        -- caller and reads the counter, the generation and the offset, and a
        -- role that may name them may also queue a lock on them (stalling
        -- every draw behind it) or burn the counter with nextval(). The
        -- owner grants the roles that draw (docs/managed.md, "Drawing
        -- roles"); what a takeover finds granted stays
        -- (snowflake_managed_state_grants).
        CREATE SCHEMA snowflake_id_state;
        PERFORM snowflake_id_internal.snowflake_managed_strip_schema('snowflake_id_state'::pg_catalog.name);
    END IF;
    IF pg_catalog.to_regclass('snowflake_id_state.snowflake_managed_counter') IS NULL THEN
        -- Never altered after this (an ALTER SEQUENCE is transactional:
        -- rolled back, it would bring back values already issued): the end
        -- of the layout's timestamp bits is enforced by the raise and the
        -- paths that draw (54000). Starts never called: the first draw
        -- raises it to the clock. The roles that draw get USAGE, for the
        -- fast path's nextval() and currval(), from the owner.
        CREATE SEQUENCE snowflake_id_state.snowflake_managed_counter AS bigint MINVALUE 0 START 0 CACHE 1 NO CYCLE;
        REVOKE ALL ON snowflake_id_state.snowflake_managed_counter FROM PUBLIC;
        PERFORM snowflake_id_internal.snowflake_managed_strip_relation('snowflake_id_state.snowflake_managed_counter'::pg_catalog.regclass);
    END IF;
    IF pg_catalog.to_regclass('snowflake_id_state.snowflake_managed_generation') IS NULL THEN
        -- Even: no raise in progress. Each worker id change moves it to the
        -- next multiple of 2^40, which retires every fast path baked before.
        -- The roles that draw get SELECT only (which allows neither
        -- nextval() nor setval(): a role that could bump it would break the
        -- seqlock).
        CREATE SEQUENCE snowflake_id_state.snowflake_managed_generation AS bigint MINVALUE 0 START 0 CACHE 1 NO CYCLE;
        PERFORM pg_catalog.setval('snowflake_id_state.snowflake_managed_generation'::pg_catalog.regclass, 0, true);
        REVOKE ALL ON snowflake_id_state.snowflake_managed_generation FROM PUBLIC;
        PERFORM snowflake_id_internal.snowflake_managed_strip_relation('snowflake_id_state.snowflake_managed_generation'::pg_catalog.regclass);
    END IF;
    IF pg_catalog.to_regclass('snowflake_id_state.snowflake_managed_offset') IS NULL THEN
        -- See the reference below; the fast path reads it (SELECT, for the
        -- roles that draw).
        CREATE SEQUENCE snowflake_id_state.snowflake_managed_offset AS bigint MINVALUE 0 START 0 CACHE 1 NO CYCLE;
        PERFORM pg_catalog.setval('snowflake_id_state.snowflake_managed_offset'::pg_catalog.regclass, 0, true);
        REVOKE ALL ON snowflake_id_state.snowflake_managed_offset FROM PUBLIC;
        PERFORM snowflake_id_internal.snowflake_managed_strip_relation('snowflake_id_state.snowflake_managed_offset'::pg_catalog.regclass);
    END IF;
    IF pg_catalog.to_regclass('snowflake_id_state.snowflake_managed_layout') IS NULL THEN
        -- The layout in force, which the counter counts in, as
        -- epoch_ms * 1024 + worker_bits * 32 + sequence_bits; never called
        -- (NULL) until the first worker id. Not transactional, like the
        -- counter: a configuration rolled back after IDs were drawn leaves
        -- it, and no later one can take the counter into another layout.
        CREATE SEQUENCE snowflake_id_state.snowflake_managed_layout AS bigint
            MINVALUE -9223372036854775808 START 0 CACHE 1 NO CYCLE;
        REVOKE ALL ON snowflake_id_state.snowflake_managed_layout FROM PUBLIC;
        PERFORM snowflake_id_internal.snowflake_managed_strip_relation('snowflake_id_state.snowflake_managed_layout'::pg_catalog.regclass);
    END IF;
    -- Not the extension's (CREATE EXTENSION makes everything its script
    -- creates a member of it), so that DROP EXTENSION leaves them.
    FOR r IN
        SELECT pg_catalog.format('ALTER EXTENSION %I DROP %s', e.extname,
                                 CASE WHEN d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_namespace'::pg_catalog.regclass::pg_catalog.oid
                                      THEN 'SCHEMA snowflake_id_state'
                                      ELSE 'SEQUENCE ' OPERATOR(pg_catalog.||) d.objid::pg_catalog.regclass::pg_catalog.text END) AS stmt
          FROM pg_catalog.pg_depend d JOIN pg_catalog.pg_extension e ON e.oid OPERATOR(pg_catalog.=) d.refobjid
         WHERE d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass::pg_catalog.oid
           AND d.deptype OPERATOR(pg_catalog.=) 'e'::pg_catalog."char"
           AND ((d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_namespace'::pg_catalog.regclass::pg_catalog.oid
                 AND d.objid OPERATOR(pg_catalog.=) pg_catalog.to_regnamespace('snowflake_id_state')::pg_catalog.oid)
                OR (d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
                    AND d.objid OPERATOR(pg_catalog.=) ANY (ARRAY[
                        pg_catalog.to_regclass('snowflake_id_state.snowflake_managed_counter'),
                        pg_catalog.to_regclass('snowflake_id_state.snowflake_managed_generation'),
                        pg_catalog.to_regclass('snowflake_id_state.snowflake_managed_offset'),
                        pg_catalog.to_regclass('snowflake_id_state.snowflake_managed_layout')]::pg_catalog.oid[])))
         ORDER BY d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_namespace'::pg_catalog.regclass::pg_catalog.oid
    LOOP
        EXECUTE r.stmt;
    END LOOP;
END
$body$;
-- Not when a restore runs the install (its session has row_security off,
-- as every pg_dump script sets it, and CREATE EXTENSION leaves it): the
-- dump creates the schema and its sequences, with their values, after the
-- extension, and would stop on "already exists". A CREATE EXTENSION run
-- with row_security off by hand gets the schema at its first
-- snowflake_set_worker_id instead.
DO $state$
BEGIN
    IF pg_catalog.to_regnamespace('snowflake_id_state') IS NULL
       AND pg_catalog.current_setting('row_security') OPERATOR(pg_catalog.<>) 'off' THEN
        PERFORM snowflake_id_internal.snowflake_managed_state_create();
    END IF;
END
$state$;

-- The privileges on the counter's schema and its sequences, as an install
-- leaves them, whatever an earlier install (or a role it let) granted: a
-- role that kept UPDATE on the counter or the generation could take the
-- counter back under IDs already issued, or break the seqlock. Each role
-- other than the owner keeps only what the fast path needs and the owner
-- may give to the roles that draw (USAGE on the schema and on the counter,
-- SELECT on the generation and the offset; nothing on the layout), without
-- grant option; whatever else it holds goes (CASCADE: with what it granted
-- on). Run at every switch, so at every takeover: a reinstall's or an
-- update's first worker id.
CREATE FUNCTION snowflake_id_internal.snowflake_managed_state_grants() RETURNS void
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    o record;
    g record;
    p pg_catalog.text;
BEGIN
    FOR o IN
        SELECT 'SCHEMA'::pg_catalog.text AS kind, 'snowflake_id_state'::pg_catalog.text AS obj, n.nspacl AS acl,
               n.nspowner AS owner, ARRAY['USAGE']::pg_catalog.text[] AS allowed
          FROM pg_catalog.pg_namespace n
         WHERE n.nspname OPERATOR(pg_catalog.=) 'snowflake_id_state'::pg_catalog.name
        UNION ALL
        SELECT 'SEQUENCE', pg_catalog.format('snowflake_id_state.%I', c.relname), c.relacl, c.relowner,
               CASE c.relname WHEN 'snowflake_managed_counter' THEN ARRAY['USAGE']::pg_catalog.text[]
                              WHEN 'snowflake_managed_layout' THEN ARRAY[]::pg_catalog.text[]
                              ELSE ARRAY['SELECT']::pg_catalog.text[] END
          FROM pg_catalog.pg_class c
         WHERE c.relnamespace OPERATOR(pg_catalog.=) pg_catalog.to_regnamespace('snowflake_id_state')::pg_catalog.oid
           AND c.relname OPERATOR(pg_catalog.=) ANY (ARRAY['snowflake_managed_counter', 'snowflake_managed_generation',
                                                          'snowflake_managed_offset', 'snowflake_managed_layout']::pg_catalog.name[])
    LOOP
        FOR g IN
            SELECT a.grantee, pg_catalog.array_agg(a.privilege_type) AS privs, pg_catalog.bool_or(a.is_grantable) AS grantable
              FROM pg_catalog.aclexplode(o.acl) a
             WHERE a.grantee OPERATOR(pg_catalog.<>) o.owner
             GROUP BY a.grantee
        LOOP
            IF g.grantable OR NOT (g.privs OPERATOR(pg_catalog.<@) o.allowed) THEN
                EXECUTE pg_catalog.format('REVOKE ALL ON %s %s FROM %s CASCADE', o.kind, o.obj,
                                          CASE WHEN g.grantee OPERATOR(pg_catalog.=) 0::pg_catalog.oid THEN 'PUBLIC'
                                               ELSE g.grantee::pg_catalog.regrole::pg_catalog.text END);
                FOREACH p IN ARRAY o.allowed LOOP
                    IF p OPERATOR(pg_catalog.=) ANY (g.privs) THEN
                        EXECUTE pg_catalog.format('GRANT %s ON %s %s TO %s', p, o.kind, o.obj,
                                                  CASE WHEN g.grantee OPERATOR(pg_catalog.=) 0::pg_catalog.oid THEN 'PUBLIC'
                                                       ELSE g.grantee::pg_catalog.regrole::pg_catalog.text END);
                    END IF;
                END LOOP;
            END IF;
        END LOOP;
    END LOOP;
END
$body$;

-- Refuses a layout other than the one the counter counts in, once it has
-- counted (kept from an earlier install, or from a configuration rolled
-- back after IDs were drawn): a counter value means a millisecond only in
-- one layout. Asked by snowflake_set_layout, so that a reinstall's decoders
-- are never baked for a layout the kept counter does not count in, and
-- before every switch (snowflake_managed_state_ensure).
CREATE FUNCTION snowflake_id_internal.snowflake_managed_check_layout(epoch timestamptz, worker_bits integer, sequence_bits integer)
    RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    was bigint;
    wanted bigint := (pg_catalog.date_part('epoch', epoch) * 1000)::pg_catalog.int8 * 1024 + worker_bits * 32 + sequence_bits;
    m bigint;
BEGIN
    was := pg_catalog.pg_sequence_last_value(pg_catalog.to_regclass('snowflake_id_state.snowflake_managed_layout'));
    IF was IS DISTINCT FROM wanted AND was IS NOT NULL
       AND pg_catalog.pg_sequence_last_value(pg_catalog.to_regclass('snowflake_id_state.snowflake_managed_counter')) IS NOT NULL THEN
        m := ((was % 1024) + 1024) % 1024;
        RAISE EXCEPTION 'snowflake_id: the counter counts in another layout'
            USING ERRCODE = '55000',
                  DETAIL = pg_catalog.format('It holds IDs of epoch %s, %s worker bits, %s sequence bits (kept from an earlier install, or from a configuration rolled back after IDs were drawn); stored IDs decode with the layout they were made with.',
                                             pg_catalog.to_char(pg_catalog.to_timestamp(((was - m) / 1024)::pg_catalog.float8 / 1000::pg_catalog.float8) AT TIME ZONE 'UTC',
                                                                'YYYY-MM-DD HH24:MI:SS.MS"+00"'),
                                             m / 32, m % 32),
                  HINT = 'Set that layout with snowflake_id_internal.snowflake_set_layout(...) before the worker id.';
    END IF;
END
$body$;

-- Checks the counter's schema before a worker id comes into force (the
-- extension's owner's, with its four sequences of the owner's, made if
-- missing) and that the counter counts in the layout coming into force, if
-- it has counted at all: a counter value means a millisecond only in one
-- layout.
CREATE FUNCTION snowflake_id_internal.snowflake_managed_state_ensure(epoch timestamptz, worker_bits integer, sequence_bits integer)
    RETURNS void
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    owner pg_catalog.oid := (SELECT c.relowner FROM pg_catalog.pg_class c
                              WHERE c.oid OPERATOR(pg_catalog.=) 'snowflake_id_private.snowflake_managed_config'::pg_catalog.regclass);
    -- The counter's schema, or 0.8.0's name for it, which
    -- snowflake_managed_state_create takes over when this version's is not
    -- there.
    nsp pg_catalog.name := CASE WHEN pg_catalog.to_regnamespace('snowflake_id_state') IS NULL
                                     AND pg_catalog.to_regnamespace('snowflake_id_managed_state') IS NOT NULL
                                THEN 'snowflake_id_managed_state'::pg_catalog.name
                                ELSE 'snowflake_id_state'::pg_catalog.name END;
    nsp_owner pg_catalog.oid := (SELECT n.nspowner FROM pg_catalog.pg_namespace n
                                  WHERE n.nspname OPERATOR(pg_catalog.=) nsp);
    bad text;
BEGIN
    IF nsp_owner IS NOT NULL AND nsp_owner OPERATOR(pg_catalog.<>) owner THEN
        RAISE EXCEPTION 'snowflake_id: schema % belongs to role %, not to the extension''s owner %',
                        nsp, nsp_owner::pg_catalog.regrole, owner::pg_catalog.regrole
            USING ERRCODE = '42P06',
                  DETAIL = 'It holds the counter of an earlier install, which this one continues only if the same role owns both.',
                  HINT = 'It is owned by another role: if it is not an earlier install''s, have a superuser or its owner drop or rename it; if it is, install as the role that owns it.';
    END IF;
    PERFORM snowflake_id_internal.snowflake_managed_state_create();
    SELECT pg_catalog.string_agg(pg_catalog.format('%I.%I', n.nspname, c.relname), ', ') INTO bad
      FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
     WHERE n.nspname OPERATOR(pg_catalog.=) 'snowflake_id_state'::pg_catalog.name
       AND c.relname OPERATOR(pg_catalog.=) ANY (ARRAY['snowflake_managed_counter', 'snowflake_managed_generation',
                                                      'snowflake_managed_offset', 'snowflake_managed_layout']::pg_catalog.name[])
       AND (c.relowner OPERATOR(pg_catalog.<>) owner OR c.relkind OPERATOR(pg_catalog.<>) 'S'::pg_catalog."char");
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'snowflake_id: schema snowflake_id_state is not an earlier install''s counter'
            USING ERRCODE = '42P06',
                  DETAIL = pg_catalog.format('Its sequences should be the extension''s owner''s; not so: %s.', bad),
                  HINT = 'Have their owner drop or rename that schema, then set the worker id again.';
    END IF;
    PERFORM snowflake_id_internal.snowflake_managed_state_grants();
    PERFORM snowflake_id_internal.snowflake_managed_check_layout(epoch, worker_bits, sequence_bits);
END
$body$;


-- True when the counter's schema is in order for `epoch, worker_bits,
-- sequence_bits` as it stands: the extension's owner's, with its four
-- sequences of the owner's, not members of the extension, and the counter
-- counting in that layout (or not yet in any). Changes nothing (no DDL):
-- a draw by any role asks it, and DDL in that role's transaction would hold
-- catalog rows the owner's calls need until it ends.
CREATE FUNCTION snowflake_id_internal.snowflake_managed_state_ready(epoch timestamptz, worker_bits integer, sequence_bits integer)
    RETURNS boolean
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    RETURN (SELECT n.nspowner FROM pg_catalog.pg_namespace n
             WHERE n.nspname OPERATOR(pg_catalog.=) 'snowflake_id_state'::pg_catalog.name)
           IS NOT DISTINCT FROM (SELECT c.relowner FROM pg_catalog.pg_class c
                                  WHERE c.oid OPERATOR(pg_catalog.=) 'snowflake_id_private.snowflake_managed_config'::pg_catalog.regclass)
       AND (SELECT pg_catalog.count(*) FROM pg_catalog.pg_class c
             WHERE c.relnamespace OPERATOR(pg_catalog.=) pg_catalog.to_regnamespace('snowflake_id_state')::pg_catalog.oid
               AND c.relname OPERATOR(pg_catalog.=) ANY (ARRAY['snowflake_managed_counter', 'snowflake_managed_generation',
                                                              'snowflake_managed_offset', 'snowflake_managed_layout']::pg_catalog.name[])
               AND c.relkind OPERATOR(pg_catalog.=) 'S'::pg_catalog."char"
               AND c.relowner OPERATOR(pg_catalog.=) (SELECT o.relowner FROM pg_catalog.pg_class o
                                                       WHERE o.oid OPERATOR(pg_catalog.=) 'snowflake_id_private.snowflake_managed_config'::pg_catalog.regclass)
               AND NOT EXISTS (SELECT FROM pg_catalog.pg_depend d
                                WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
                                  AND d.objid OPERATOR(pg_catalog.=) c.oid
                                  AND d.deptype OPERATOR(pg_catalog.=) 'e'::pg_catalog."char")) OPERATOR(pg_catalog.=) 4
       AND coalesce(pg_catalog.pg_sequence_last_value(pg_catalog.to_regclass('snowflake_id_state.snowflake_managed_layout'))
                        OPERATOR(pg_catalog.=)
                    ((((pg_catalog.date_part('epoch', epoch) OPERATOR(pg_catalog.*) 1000)::pg_catalog.int8 OPERATOR(pg_catalog.*) 1024)
                        OPERATOR(pg_catalog.+) (worker_bits OPERATOR(pg_catalog.*) 32)) OPERATOR(pg_catalog.+) sequence_bits),
                    true);

REVOKE EXECUTE ON FUNCTION snowflake_id_internal.snowflake_managed_state_create(),
    snowflake_id_internal.snowflake_managed_state_grants(),
    snowflake_id_internal.snowflake_managed_check_layout(timestamptz, integer, integer),
    snowflake_id_internal.snowflake_managed_state_ensure(timestamptz, integer, integer),
    snowflake_id_internal.snowflake_managed_state_ready(timestamptz, integer, integer) FROM PUBLIC;
