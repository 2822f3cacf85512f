-- The managed edition's generator: SQL and PL/pgSQL only, on PostgreSQL's
-- own durable objects (docs/managed.md says what that keeps and what not).
--
-- The counter: a sequence holding an ID without its worker bits, that is
-- (milliseconds since the epoch) << sequence_bits | sequence. nextval() makes
-- it unique and increasing across every session and durable in WAL (a
-- promoted standby continues above it); an ID is a counter value with the
-- worker id spliced in. The clock enters only as a floor: a value behind the
-- clock's millisecond is not used, the counter is raised to the clock first.
--
-- The raise is the one delicate part. "read the counter, setval(clock)"
-- races with the nextval() calls of other sessions: a value drawn between
-- the read and the setval may be at or above the clock and be issued again
-- after it. So raises are fenced by a seqlock: the generation sequence is
-- bumped to an odd value before a raise reads the counter and to an even
-- value after its setval, and a draw keeps its value only if it read the same
-- even generation before and after its nextval(). A value drawn while a
-- raise ran is thrown away (the sequence moves on), never issued. Raisers
-- are serialized by a row lock on an owner-only table, taken in a
-- subtransaction that is rolled back on purpose so the lock goes at once
-- (an advisory lock would do, but any role can take any advisory key and
-- hold it: a denial of service). A raiser that dies between its two bumps
-- leaves the generation odd: draws then fail over to this slow path, whose
-- next raiser finishes the raise (read the counter again, setval, bump).
--
-- Every name is schema-qualified and every call has exact types: the bodies
-- are bound at CREATE (SQL-standard bodies) or run with a pinned search_path
-- (PL/pgSQL), so that an object another role creates later changes nothing.

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
     WHERE n.nspname OPERATOR(pg_catalog.=) ANY (ARRAY['snowflake_id_managed', 'snowflake_id_managed_lock']::pg_catalog.name[])
     LIMIT 1;
    IF owner IS NOT NULL THEN
        RAISE EXCEPTION 'snowflake_id: schema % exists already (owner %)', found, owner
            USING ERRCODE = '42P06',
                  DETAIL = 'The managed edition keeps its configuration and internal functions in schemas snowflake_id_managed and snowflake_id_managed_lock, which it creates, so that only the extension''s owner can create objects there.',
                  HINT = 'Drop or rename that schema (or drop the managed edition installed before), then install again.';
    END IF;
    -- The counter's schema outlives an uninstall (see snowflake_managed_state_ensure);
    -- an install takes it over only from the role that will own this one.
    SELECT n.nspowner::pg_catalog.regrole::pg_catalog.text INTO owner
      FROM pg_catalog.pg_namespace n
     WHERE n.nspname OPERATOR(pg_catalog.=) 'snowflake_id_managed_state'::pg_catalog.name
       AND n.nspowner OPERATOR(pg_catalog.<>) (SELECT r.oid FROM pg_catalog.pg_roles r
                                                 WHERE r.rolname OPERATOR(pg_catalog.=) CURRENT_USER);
    IF owner IS NOT NULL THEN
        RAISE EXCEPTION 'snowflake_id: schema snowflake_id_managed_state exists already and belongs to role %', owner
            USING ERRCODE = '42P06',
                  DETAIL = 'The managed edition keeps its counter there, outside the install, so that an install after an uninstall continues above every ID issued before; it takes over only a schema of the role that installs it.',
                  HINT = 'It is owned by another role: if it is not an earlier install''s, have a superuser or its owner drop or rename it; if it is, install as the role that owns it.';
    END IF;
END
$schema$;
CREATE SCHEMA snowflake_id_managed;
COMMENT ON SCHEMA snowflake_id_managed IS 'snowflake_id managed edition @snowflake_id_version@: internal functions (docs/managed.md)';
CREATE SCHEMA snowflake_id_managed_lock;
-- Only the owner creates in either, whatever ALTER DEFAULT PRIVILEGES ... ON
-- SCHEMAS granted as they were created: every grant but the owner's goes
-- (then USAGE for everyone on the first; none on the second, below).
CREATE FUNCTION snowflake_id_managed.snowflake_managed_strip_schema(nsp pg_catalog.name) RETURNS void
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
SELECT snowflake_id_managed.snowflake_managed_strip_schema('snowflake_id_managed'::pg_catalog.name);
SELECT snowflake_id_managed.snowflake_managed_strip_schema('snowflake_id_managed_lock'::pg_catalog.name);
-- USAGE only, and only for functions: the inlined fast path runs as the
-- caller and calls the slow path there. No relation is in this schema: a
-- role that can name a relation can queue a lock on it (PostgreSQL locks a
-- relation while it parses a statement, before it checks privileges), and
-- every draw would wait behind that queue.
GRANT USAGE ON SCHEMA snowflake_id_managed TO PUBLIC;

-- The owner-only state, in a schema on which no other role has any
-- privilege, USAGE included, so that no other role can name what is in it
-- (and so prepare a statement on it, or queue a lock behind one). A
-- relation's OID needs no name: any role can still take the weak locks
-- below on it, which is why no path of a draw takes a lock they conflict
-- with:
-- * the table raisers lock (LOCK TABLE ... IN SHARE UPDATE EXCLUSIVE MODE,
--   in a subtransaction: unlike a row lock, it takes no transaction id, so a
--   bulk INSERT that raises at every millisecond does not fill the
--   subtransaction cache; the subtransaction's end releases it). PREPARE s
--   AS INSERT INTO ... by another role, held in an open transaction, once
--   stopped every raise. Nothing is in it. Not EXCLUSIVE: any role, with no
--   privilege at all, can hold ROW EXCLUSIVE on any relation by its OID
--   (nextval(oid::regclass) locks the relation for the top transaction
--   before it checks the kind or the privilege, and an error caught by a
--   savepoint keeps the lock), and ACCESS SHARE for a moment
--   (pg_relation_size). SHARE UPDATE EXCLUSIVE conflicts with itself (so
--   raisers are serialized) and with neither; no other path of a draw or a
--   worker id change locks a relation in a mode that conflicts with them
--   (sequence functions take ROW EXCLUSIVE, reads ACCESS SHARE, the
--   configuration's writes ROW SHARE and ROW EXCLUSIVE).
-- * the configuration, one row once the owner set the worker id or the
--   layout (worker_id stays NULL until it is set), dumped by pg_dump with the
--   extension's data (config_dump.sql);
-- * the worker id in force, as a sequence (and the layout in force with
--   the counter, below): read without a snapshot, so that a draw in a
--   transaction whose snapshot is older than a change (REPEATABLE READ)
--   still composes with the worker id of the values it draws; both are set
--   only under the raisers' lock with the generation odd
--   (snowflake_managed_switch), so a draw that saw the same even generation
--   before and after its nextval() read them as they were when its value
--   was drawn;
-- * the reference the burst bound is measured against (see below).
CREATE TABLE snowflake_id_managed_lock.snowflake_managed_raise_lock (one boolean PRIMARY KEY DEFAULT true CHECK (one));
INSERT INTO snowflake_id_managed_lock.snowflake_managed_raise_lock VALUES (true);
CREATE TABLE snowflake_id_managed_lock.snowflake_managed_config (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    worker_id integer,
    epoch timestamptz NOT NULL DEFAULT '2025-01-01 00:00:00+00',
    worker_bits integer NOT NULL DEFAULT 10,
    sequence_bits integer NOT NULL DEFAULT 12,
    -- The database the worker id was set in (its oid) and its cluster
    -- (pg_control_system()'s system identifier, NULL where EXECUTE on it is
    -- revoked): a restore into another database, or into a database of the
    -- same oid in another cluster, shows in snowflake_id_status as a copy's.
    -- A physical copy (a base backup, a snapshot restore, a clone) keeps
    -- both and is not named.
    set_in oid,
    set_on bigint,
    CHECK (worker_bits >= 0 AND sequence_bits >= 0 AND worker_bits + sequence_bits <= 22),
    CHECK (worker_id >= 0 AND worker_id < (1 OPERATOR(pg_catalog.<<) worker_bits))
);
-- -1: no worker id (no draw succeeds).
CREATE SEQUENCE snowflake_id_managed_lock.snowflake_managed_worker AS bigint MINVALUE -1 START -1 CACHE 1 NO CYCLE;
SELECT pg_catalog.setval('snowflake_id_managed_lock.snowflake_managed_worker'::pg_catalog.regclass, -1, true);
CREATE SEQUENCE snowflake_id_managed_lock.snowflake_managed_reference AS bigint MINVALUE 0 START 0 CACHE 1 NO CYCLE;
SELECT pg_catalog.setval('snowflake_id_managed_lock.snowflake_managed_reference'::pg_catalog.regclass, 0, true);
REVOKE ALL ON snowflake_id_managed_lock.snowflake_managed_raise_lock, snowflake_id_managed_lock.snowflake_managed_config,
    snowflake_id_managed_lock.snowflake_managed_worker, snowflake_id_managed_lock.snowflake_managed_reference FROM PUBLIC;

-- Strips every privilege on a relation of the edition but its owner's and
-- PUBLIC's (which the install revokes itself): whatever ALTER DEFAULT
-- PRIVILEGES ... ON TABLES or ON SEQUENCES granted as it was created.
CREATE FUNCTION snowflake_id_managed.snowflake_managed_strip_relation(rel regclass) RETURNS void
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

SELECT snowflake_id_managed.snowflake_managed_strip_relation(c.oid::pg_catalog.regclass)
  FROM pg_catalog.pg_class c
 WHERE c.relnamespace OPERATOR(pg_catalog.=) 'snowflake_id_managed_lock'::pg_catalog.regnamespace::pg_catalog.oid
   AND c.relkind OPERATOR(pg_catalog.=) ANY (ARRAY['r', 'S']::pg_catalog."char"[]);

-- The worker id and layout in force, from the sequences above, as a
-- configuration row (worker_id NULL when none is set).
CREATE FUNCTION snowflake_id_managed.snowflake_managed_live() RETURNS snowflake_id_managed_lock.snowflake_managed_config
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    w bigint := pg_catalog.pg_sequence_last_value('snowflake_id_managed_lock.snowflake_managed_worker'::pg_catalog.regclass);
    l bigint := coalesce(pg_catalog.pg_sequence_last_value(pg_catalog.to_regclass('snowflake_id_managed_state.snowflake_managed_layout')),
                         1735689600000 * 1024 + 10 * 32 + 12);
    m bigint := ((l % 1024) + 1024) % 1024;
BEGIN
    RETURN ROW(true, CASE WHEN w >= 0 THEN w::integer END,
               pg_catalog.to_timestamp(((l - m) / 1024)::pg_catalog.float8 / 1000::pg_catalog.float8),
               (m / 32)::integer, (m % 32)::integer, NULL::pg_catalog.oid, NULL::pg_catalog.int8)::snowflake_id_managed_lock.snowflake_managed_config;
END
$body$;

-- This cluster's system identifier, or NULL where EXECUTE on
-- pg_control_system() is revoked (some managed services do).
CREATE FUNCTION snowflake_id_managed.snowflake_managed_system_id() RETURNS bigint
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $body$
BEGIN
    RETURN (SELECT s.system_identifier FROM pg_catalog.pg_control_system() s);
EXCEPTION WHEN insufficient_privilege THEN
    RETURN NULL;
END
$body$;

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
CREATE FUNCTION snowflake_id_managed.snowflake_managed_state_create() RETURNS void
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    r record;
BEGIN
    IF pg_catalog.to_regnamespace('snowflake_id_managed_state') IS NULL THEN
        -- No privilege for any other role: the inlined fast path runs as the
        -- caller and reads the counter, the generation and the offset, and a
        -- role that may name them may also queue a lock on them (stalling
        -- every draw behind it) or burn the counter with nextval(). The
        -- owner grants the roles that draw (docs/managed.md, "Drawing
        -- roles"); what a takeover finds granted stays
        -- (snowflake_managed_state_grants).
        CREATE SCHEMA snowflake_id_managed_state;
        PERFORM snowflake_id_managed.snowflake_managed_strip_schema('snowflake_id_managed_state'::pg_catalog.name);
    END IF;
    IF pg_catalog.to_regclass('snowflake_id_managed_state.snowflake_managed_counter') IS NULL THEN
        -- Never altered after this (an ALTER SEQUENCE is transactional:
        -- rolled back, it would bring back values already issued): the end
        -- of the layout's timestamp bits is enforced by the raise and the
        -- paths that draw (54000). Starts never called: the first draw
        -- raises it to the clock. The roles that draw get USAGE, for the
        -- fast path's nextval() and currval(), from the owner.
        CREATE SEQUENCE snowflake_id_managed_state.snowflake_managed_counter AS bigint MINVALUE 0 START 0 CACHE 1 NO CYCLE;
        REVOKE ALL ON snowflake_id_managed_state.snowflake_managed_counter FROM PUBLIC;
        PERFORM snowflake_id_managed.snowflake_managed_strip_relation('snowflake_id_managed_state.snowflake_managed_counter'::pg_catalog.regclass);
    END IF;
    IF pg_catalog.to_regclass('snowflake_id_managed_state.snowflake_managed_generation') IS NULL THEN
        -- Even: no raise in progress. Each worker id change moves it to the
        -- next multiple of 2^40, which retires every fast path baked before.
        -- The roles that draw get SELECT only (which allows neither
        -- nextval() nor setval(): a role that could bump it would break the
        -- seqlock).
        CREATE SEQUENCE snowflake_id_managed_state.snowflake_managed_generation AS bigint MINVALUE 0 START 0 CACHE 1 NO CYCLE;
        PERFORM pg_catalog.setval('snowflake_id_managed_state.snowflake_managed_generation'::pg_catalog.regclass, 0, true);
        REVOKE ALL ON snowflake_id_managed_state.snowflake_managed_generation FROM PUBLIC;
        PERFORM snowflake_id_managed.snowflake_managed_strip_relation('snowflake_id_managed_state.snowflake_managed_generation'::pg_catalog.regclass);
    END IF;
    IF pg_catalog.to_regclass('snowflake_id_managed_state.snowflake_managed_offset') IS NULL THEN
        -- See the reference below; the fast path reads it (SELECT, for the
        -- roles that draw).
        CREATE SEQUENCE snowflake_id_managed_state.snowflake_managed_offset AS bigint MINVALUE 0 START 0 CACHE 1 NO CYCLE;
        PERFORM pg_catalog.setval('snowflake_id_managed_state.snowflake_managed_offset'::pg_catalog.regclass, 0, true);
        REVOKE ALL ON snowflake_id_managed_state.snowflake_managed_offset FROM PUBLIC;
        PERFORM snowflake_id_managed.snowflake_managed_strip_relation('snowflake_id_managed_state.snowflake_managed_offset'::pg_catalog.regclass);
    END IF;
    IF pg_catalog.to_regclass('snowflake_id_managed_state.snowflake_managed_layout') IS NULL THEN
        -- The layout in force, which the counter counts in, as
        -- epoch_ms * 1024 + worker_bits * 32 + sequence_bits; never called
        -- (NULL) until the first worker id. Not transactional, like the
        -- counter: a configuration rolled back after IDs were drawn leaves
        -- it, and no later one can take the counter into another layout.
        CREATE SEQUENCE snowflake_id_managed_state.snowflake_managed_layout AS bigint
            MINVALUE -9223372036854775808 START 0 CACHE 1 NO CYCLE;
        REVOKE ALL ON snowflake_id_managed_state.snowflake_managed_layout FROM PUBLIC;
        PERFORM snowflake_id_managed.snowflake_managed_strip_relation('snowflake_id_managed_state.snowflake_managed_layout'::pg_catalog.regclass);
    END IF;
    -- Not the extension's (CREATE EXTENSION makes everything its script
    -- creates a member of it), so that DROP EXTENSION leaves them.
    FOR r IN
        SELECT pg_catalog.format('ALTER EXTENSION %I DROP %s', e.extname,
                                 CASE WHEN d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_namespace'::pg_catalog.regclass::pg_catalog.oid
                                      THEN 'SCHEMA snowflake_id_managed_state'
                                      ELSE 'SEQUENCE ' OPERATOR(pg_catalog.||) d.objid::pg_catalog.regclass::pg_catalog.text END) AS stmt
          FROM pg_catalog.pg_depend d JOIN pg_catalog.pg_extension e ON e.oid OPERATOR(pg_catalog.=) d.refobjid
         WHERE d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass::pg_catalog.oid
           AND d.deptype OPERATOR(pg_catalog.=) 'e'::pg_catalog."char"
           AND ((d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_namespace'::pg_catalog.regclass::pg_catalog.oid
                 AND d.objid OPERATOR(pg_catalog.=) pg_catalog.to_regnamespace('snowflake_id_managed_state')::pg_catalog.oid)
                OR (d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
                    AND d.objid OPERATOR(pg_catalog.=) ANY (ARRAY[
                        pg_catalog.to_regclass('snowflake_id_managed_state.snowflake_managed_counter'),
                        pg_catalog.to_regclass('snowflake_id_managed_state.snowflake_managed_generation'),
                        pg_catalog.to_regclass('snowflake_id_managed_state.snowflake_managed_offset'),
                        pg_catalog.to_regclass('snowflake_id_managed_state.snowflake_managed_layout')]::pg_catalog.oid[])))
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
    IF pg_catalog.to_regnamespace('snowflake_id_managed_state') IS NULL
       AND pg_catalog.current_setting('row_security') OPERATOR(pg_catalog.<>) 'off' THEN
        PERFORM snowflake_id_managed.snowflake_managed_state_create();
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
CREATE FUNCTION snowflake_id_managed.snowflake_managed_state_grants() RETURNS void
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    o record;
    g record;
    p pg_catalog.text;
BEGIN
    FOR o IN
        SELECT 'SCHEMA'::pg_catalog.text AS kind, 'snowflake_id_managed_state'::pg_catalog.text AS obj, n.nspacl AS acl,
               n.nspowner AS owner, ARRAY['USAGE']::pg_catalog.text[] AS allowed
          FROM pg_catalog.pg_namespace n
         WHERE n.nspname OPERATOR(pg_catalog.=) 'snowflake_id_managed_state'::pg_catalog.name
        UNION ALL
        SELECT 'SEQUENCE', pg_catalog.format('snowflake_id_managed_state.%I', c.relname), c.relacl, c.relowner,
               CASE c.relname WHEN 'snowflake_managed_counter' THEN ARRAY['USAGE']::pg_catalog.text[]
                              WHEN 'snowflake_managed_layout' THEN ARRAY[]::pg_catalog.text[]
                              ELSE ARRAY['SELECT']::pg_catalog.text[] END
          FROM pg_catalog.pg_class c
         WHERE c.relnamespace OPERATOR(pg_catalog.=) pg_catalog.to_regnamespace('snowflake_id_managed_state')::pg_catalog.oid
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
CREATE FUNCTION snowflake_id_managed.snowflake_managed_check_layout(epoch timestamptz, worker_bits integer, sequence_bits integer)
    RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    was bigint;
    wanted bigint := (pg_catalog.date_part('epoch', epoch) * 1000)::pg_catalog.int8 * 1024 + worker_bits * 32 + sequence_bits;
    m bigint;
BEGIN
    was := pg_catalog.pg_sequence_last_value(pg_catalog.to_regclass('snowflake_id_managed_state.snowflake_managed_layout'));
    IF was IS DISTINCT FROM wanted AND was IS NOT NULL
       AND pg_catalog.pg_sequence_last_value(pg_catalog.to_regclass('snowflake_id_managed_state.snowflake_managed_counter')) IS NOT NULL THEN
        m := ((was % 1024) + 1024) % 1024;
        RAISE EXCEPTION 'snowflake_id: the counter counts in another layout'
            USING ERRCODE = '55000',
                  DETAIL = pg_catalog.format('It holds IDs of epoch %s, %s worker bits, %s sequence bits (kept from an earlier install, or from a configuration rolled back after IDs were drawn); stored IDs decode with the layout they were made with.',
                                             pg_catalog.to_char(pg_catalog.to_timestamp(((was - m) / 1024)::pg_catalog.float8 / 1000::pg_catalog.float8) AT TIME ZONE 'UTC',
                                                                'YYYY-MM-DD HH24:MI:SS.MS"+00"'),
                                             m / 32, m % 32),
                  HINT = 'Set that layout with snowflake_id_managed.snowflake_set_layout(...) before the worker id.';
    END IF;
END
$body$;

-- Checks the counter's schema before a worker id comes into force (the
-- extension's owner's, with its four sequences of the owner's, made if
-- missing) and that the counter counts in the layout coming into force, if
-- it has counted at all: a counter value means a millisecond only in one
-- layout.
CREATE FUNCTION snowflake_id_managed.snowflake_managed_state_ensure(epoch timestamptz, worker_bits integer, sequence_bits integer)
    RETURNS void
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    owner pg_catalog.oid := (SELECT c.relowner FROM pg_catalog.pg_class c
                              WHERE c.oid OPERATOR(pg_catalog.=) 'snowflake_id_managed_lock.snowflake_managed_config'::pg_catalog.regclass);
    nsp_owner pg_catalog.oid := (SELECT n.nspowner FROM pg_catalog.pg_namespace n
                                  WHERE n.nspname OPERATOR(pg_catalog.=) 'snowflake_id_managed_state'::pg_catalog.name);
    bad text;
BEGIN
    IF nsp_owner IS NOT NULL AND nsp_owner OPERATOR(pg_catalog.<>) owner THEN
        RAISE EXCEPTION 'snowflake_id: schema snowflake_id_managed_state belongs to role %, not to the extension''s owner %',
                        nsp_owner::pg_catalog.regrole, owner::pg_catalog.regrole
            USING ERRCODE = '42P06',
                  DETAIL = 'It holds the counter of an earlier install, which this one continues only if the same role owns both.',
                  HINT = 'It is owned by another role: if it is not an earlier install''s, have a superuser or its owner drop or rename it; if it is, install as the role that owns it.';
    END IF;
    PERFORM snowflake_id_managed.snowflake_managed_state_create();
    SELECT pg_catalog.string_agg(pg_catalog.format('%I.%I', n.nspname, c.relname), ', ') INTO bad
      FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
     WHERE n.nspname OPERATOR(pg_catalog.=) 'snowflake_id_managed_state'::pg_catalog.name
       AND c.relname OPERATOR(pg_catalog.=) ANY (ARRAY['snowflake_managed_counter', 'snowflake_managed_generation',
                                                      'snowflake_managed_offset', 'snowflake_managed_layout']::pg_catalog.name[])
       AND (c.relowner OPERATOR(pg_catalog.<>) owner OR c.relkind OPERATOR(pg_catalog.<>) 'S'::pg_catalog."char");
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'snowflake_id: schema snowflake_id_managed_state is not an earlier install''s counter'
            USING ERRCODE = '42P06',
                  DETAIL = pg_catalog.format('Its sequences should be the extension''s owner''s; not so: %s.', bad),
                  HINT = 'Have their owner drop or rename that schema, then set the worker id again.';
    END IF;
    PERFORM snowflake_id_managed.snowflake_managed_state_grants();
    PERFORM snowflake_id_managed.snowflake_managed_check_layout(epoch, worker_bits, sequence_bits);
END
$body$;

-- The reference a burst's lead is measured against: the clock's floor plus
-- `offset`, the part of the counter's lead that no burst made (clock steps
-- back, snowflake_advance_past). `reference` is the reference as last seen:
-- a floor plus offset that comes out more than a quarter of max_drift below
-- it means the clock went back, and the offset takes the step (so the
-- reference goes on from where it was, at the clock's pace, and only bursts
-- beyond the layout's rate wait); once the counter is below the reference
-- (the clock caught up), the offset shrinks to the counter's lead. So a step
-- back never makes callers wait, and a burst on top of a step or an advance
-- is bounded like any other, which a rule on the lead alone ("twice
-- max_drift ahead: not a burst") could not do. Both only decide waits,
-- never which values are issued. The inlined fast path reads the offset
-- (SELECT); only the owner's functions move them.

-- The layout in force before snowflake_set_layout(): the native defaults.
-- (A function, not a table read, so that the bodies below stay constants.)
CREATE FUNCTION snowflake_id_managed.snowflake_managed_max_drift_ms() RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN 1000;
COMMENT ON FUNCTION snowflake_id_managed.snowflake_managed_max_drift_ms() IS
    'how far bursts may push the managed generator ahead of the clock before callers wait (the native default of snowflake_id.max_drift)';

-- The counter's floor now: the clock's millisecond since the epoch, shifted.
CREATE FUNCTION snowflake_id_managed.snowflake_managed_floor(epoch timestamptz, sequence_bits integer) RETURNS bigint
    LANGUAGE sql VOLATILE PARALLEL SAFE
    RETURN pg_catalog.floor((pg_catalog.date_part('epoch'::pg_catalog.text, pg_catalog.clock_timestamp())
                              OPERATOR(pg_catalog.-) pg_catalog.date_part('epoch'::pg_catalog.text, epoch))
                            OPERATOR(pg_catalog.*) 1000::pg_catalog.float8)::pg_catalog.int8
           OPERATOR(pg_catalog.<<) sequence_bits;

-- A counter value as an ID of worker_id.
CREATE FUNCTION snowflake_id_managed.snowflake_managed_compose(counter bigint, worker_id integer, worker_bits integer, sequence_bits integer)
    RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN ((counter OPERATOR(pg_catalog.>>) sequence_bits) OPERATOR(pg_catalog.<<) (worker_bits OPERATOR(pg_catalog.+) sequence_bits))
           OPERATOR(pg_catalog.|) ((worker_id::pg_catalog.int8) OPERATOR(pg_catalog.<<) sequence_bits)
           OPERATOR(pg_catalog.|) (counter OPERATOR(pg_catalog.&) ((1::pg_catalog.int8 OPERATOR(pg_catalog.<<) sequence_bits) OPERATOR(pg_catalog.-) 1));

-- The refusal of a standby, the edition's own (25006 like core nextval(),
-- with what to do).
CREATE FUNCTION snowflake_id_managed.snowflake_managed_refuse_standby(what text) RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $body$
BEGIN
    RAISE EXCEPTION 'snowflake_id: % refused: this server is a standby (in recovery)', what
        USING ERRCODE = '25006',
              DETAIL = 'The managed edition issues IDs from a sequence, which only a primary can advance.',
              HINT = 'Draw IDs on the primary; after a promotion this server issues them, above every ID its old primary committed.';
END
$body$;

-- The layout's last counter value: the last millisecond its timestamp bits
-- hold, with every sequence value (2^(63 - worker_bits) - 1, written so that
-- worker_bits = 0 does not overflow).
CREATE FUNCTION snowflake_id_managed.snowflake_managed_last(worker_bits integer) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN (((1::pg_catalog.int8 OPERATOR(pg_catalog.<<) (62 OPERATOR(pg_catalog.-) worker_bits))
             OPERATOR(pg_catalog.-) 1::pg_catalog.int8) OPERATOR(pg_catalog.*) 2::pg_catalog.int8)
           OPERATOR(pg_catalog.+) 1::pg_catalog.int8;

-- The end of the layout's timestamp field, the edition's own error (54000,
-- as the native edition's). Reached when the clock passes the layout's last
-- millisecond, or sooner when snowflake_advance_past(..., force => true)
-- moved the counter near it.
CREATE FUNCTION snowflake_id_managed.snowflake_managed_refuse_end() RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    cfg snowflake_id_managed_lock.snowflake_managed_config := snowflake_id_managed.snowflake_managed_live();
BEGIN
    RAISE EXCEPTION 'snowflake_id: the timestamp field is exhausted: no IDs after %',
        pg_catalog.to_char((cfg.epoch OPERATOR(pg_catalog.+)
                            pg_catalog.make_interval(secs => (pg_catalog.power(2::pg_catalog.numeric,
                                63 OPERATOR(pg_catalog.-) cfg.worker_bits OPERATOR(pg_catalog.-) cfg.sequence_bits)
                              OPERATOR(pg_catalog.-) 1::pg_catalog.numeric)::pg_catalog.float8 OPERATOR(pg_catalog./) 1000::pg_catalog.float8))
                           AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS"Z"')
        USING ERRCODE = '54000',
              DETAIL = 'The layout''s timestamp bits hold no later millisecond; an ID past it would lose its time.',
              HINT = 'If the clock is far before that instant, the counter was moved there by snowflake_advance_past(..., force => true) with a wrong ID; IDs of this database can only continue in a new layout (a new database with a later epoch).';
END
$body$;

-- The offset now, given the clock's floor f and the counter cur, kept as
-- the comment on snowflake_managed_offset says. Not under a lock: a race
-- between two sessions only changes how long one of them waits.
CREATE FUNCTION snowflake_id_managed.snowflake_managed_offset_now(f bigint, cur bigint, lim bigint, epoch timestamptz,
                                                                  sequence_bits integer) RETURNS bigint
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    off_seq constant regclass := 'snowflake_id_managed_state.snowflake_managed_offset'::pg_catalog.regclass;
    ref_seq constant regclass := 'snowflake_id_managed_lock.snowflake_managed_reference'::pg_catalog.regclass;
    off bigint := coalesce(pg_catalog.pg_sequence_last_value(off_seq), 0);
    seen bigint := coalesce(pg_catalog.pg_sequence_last_value(ref_seq), 0);
    was bigint := off;
    fresh bigint;
BEGIN
    -- The floor again, read after the offset and the reference: reading
    -- those may wait on a lock (another role's queued lock request on the
    -- reference was seen holding one for seconds), and a floor read before
    -- that wait, compared with a reference others advanced meanwhile, looked
    -- like a clock set back and grew the offset by the wait, again and
    -- again. Later than the caller's, never
    -- earlier: the caller's comparisons with its own floor only grow stricter.
    -- The layout is the caller's: it does not change while a worker id is
    -- in force, and reading it again here cost a call per draw.
    fresh := snowflake_id_managed.snowflake_managed_floor(epoch, sequence_bits);
    f := greatest(f, coalesce(fresh, f));
    IF f + off < seen - lim / 4 THEN
        -- The clock went back: the reference goes on from where it was (or,
        -- if it was last seen long ago, from where the counter shows it had
        -- come to: every value was drawn less than lim above it).
        off := greatest(seen, cur - lim) - f;
    END IF;
    IF cur < f + off THEN
        off := greatest(cur - f, 0);
    END IF;
    IF off <> was THEN
        PERFORM pg_catalog.setval(off_seq, off, true);
    END IF;
    IF f + off > seen OR off <> was THEN
        PERFORM pg_catalog.setval(ref_seq, greatest(f + off, 0), true);
    END IF;
    RETURN off;
END
$body$;

-- Waits, interruptibly, while the counter is more than max_drift ahead of
-- the reference because of a burst (more than 2^sequence_bits IDs per ms),
-- so the lead stays bounded. A lead from a clock set back or
-- snowflake_advance_past() is in the offset: no wait for it.
CREATE FUNCTION snowflake_id_managed.snowflake_managed_wait_lead(cfg snowflake_id_managed_lock.snowflake_managed_config, extra bigint) RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    lim constant bigint := snowflake_id_managed.snowflake_managed_max_drift_ms() << cfg.sequence_bits;
    f bigint;
    cur bigint;
BEGIN
    LOOP
        f := snowflake_id_managed.snowflake_managed_floor(cfg.epoch, cfg.sequence_bits);
        cur := coalesce(pg_catalog.pg_sequence_last_value('snowflake_id_managed_state.snowflake_managed_counter'::pg_catalog.regclass), 0);
        EXIT WHEN cur + extra - f - snowflake_id_managed.snowflake_managed_offset_now(f, cur, lim, cfg.epoch, cfg.sequence_bits) < lim;
        PERFORM pg_catalog.pg_sleep(0.001);
    END LOOP;
END
$body$;

-- The raise: under the raisers' table lock, moves the counter so that its
-- next value is at least target (the clock's floor, or a block's end),
-- fenced by the generation's odd/even bumps; `base` is the counter value just
-- below the first one the caller may use, with `got` values above it
-- reserved for the caller. A plain raise takes none (take 0). A block takes
-- up to `take`, but only values below `ceiling` (the reference plus
-- max_drift), checked here under the lock (checked before it, concurrent
-- blocks all saw room and together pushed the lead without bound), and at
-- least one chunk when the counter is not ahead of the reference: the
-- caller waits for the clock and comes back for the rest. Also finishes
-- the raise of a raiser that died between its two bumps (the generation
-- odd). `last` is the layout's last counter value: a raise past it is
-- refused (54000), with the counter and the generation left as they were.
CREATE FUNCTION snowflake_id_managed.snowflake_managed_raise(target bigint, take bigint, last bigint, ceiling bigint,
                                                             OUT base bigint, OUT got bigint)
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    counter constant regclass := 'snowflake_id_managed_state.snowflake_managed_counter'::pg_catalog.regclass;
    generation constant regclass := 'snowflake_id_managed_state.snowflake_managed_generation'::pg_catalog.regclass;
    cur bigint;
BEGIN
    got := 0;
    -- Another session raised it already (the sessions that find the counter
    -- behind at a millisecond boundary all come here): no lock, which would
    -- also give this transaction an xid and a WAL flush at commit. Skipping a
    -- raise is always safe: the caller draws again through the seqlock.
    IF take = 0 AND coalesce(pg_catalog.pg_sequence_last_value(counter), -1) >= target - 1
       AND pg_catalog.pg_sequence_last_value(generation) % 2 = 0 THEN
        RETURN;
    END IF;
    BEGIN
        LOCK TABLE snowflake_id_managed_lock.snowflake_managed_raise_lock IN SHARE UPDATE EXCLUSIVE MODE;
        cur := coalesce(pg_catalog.pg_sequence_last_value(counter), -1);
        IF take > 0 OR cur < target - 1 OR pg_catalog.pg_sequence_last_value(generation) % 2 = 1 THEN
            IF coalesce(pg_catalog.pg_sequence_last_value(generation), 0) % 2 = 0 THEN
                PERFORM pg_catalog.nextval(generation);
            END IF;
            -- Read after the odd bump: every value drawn before it is at or
            -- below cur, every value drawn after it is thrown away by its drawer.
            cur := coalesce(pg_catalog.pg_sequence_last_value(counter), -1);
            base := greatest(target - 1, cur);
            got := CASE WHEN take = 0 THEN 0 ELSE least(take, greatest(ceiling - 1 - base, 0)) END;
            IF base > last - got THEN
                -- Even again before refusing (the error ends the block).
                PERFORM pg_catalog.nextval(generation);
                PERFORM snowflake_id_managed.snowflake_managed_refuse_end();
            END IF;
            IF base + got > cur THEN
                PERFORM pg_catalog.setval(counter, base + got, true);
            END IF;
            PERFORM pg_catalog.nextval(generation);
        END IF;
        -- Roll the subtransaction back: it releases the table lock now, not at
        -- the end of the caller's transaction; sequences are not rolled back.
        RAISE EXCEPTION USING ERRCODE = 'SFRAI';
    EXCEPTION WHEN SQLSTATE 'SFRAI' THEN
        NULL;
    END;
END
$body$;

-- A worker id (and the layout with it) comes into force: under the raisers'
-- lock, with the generation moved first into the next worker id's range of
-- 2^40 (odd), the counter moves past the last millisecond any value was
-- drawn in (the counter's, or the clock's if that is later), the worker id
-- and layout are set, and the generation goes even. So every ID of the new worker id is in a
-- later millisecond than every ID returned before, whatever the two worker
-- ids; a draw in flight during the change sees the generation move and
-- draws again; and a fast path baked for the old worker id (a statement
-- planned before, still running) reads a generation above its range and
-- takes the slow path, which composes with the worker id in force. The
-- sequences are not transactional: a switch stays in force whatever the
-- caller's transaction does after it, so snowflake_set_worker_id's switch
-- runs as its transaction commits (snowflake_managed_config_commit), and
-- the other callers switch to the committed configuration (a restore).
CREATE FUNCTION snowflake_id_managed.snowflake_managed_switch(worker_id integer, epoch timestamptz, worker_bits integer,
                                                              sequence_bits integer) RETURNS void
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $body$
BEGIN
    PERFORM snowflake_id_managed.snowflake_managed_state_ensure(epoch, worker_bits, sequence_bits);
    PERFORM snowflake_id_managed.snowflake_managed_switch_locked(worker_id, epoch, worker_bits, sequence_bits, false);
END
$body$;

-- True when the counter's schema is in order for `epoch, worker_bits,
-- sequence_bits` as it stands: the extension's owner's, with its four
-- sequences of the owner's, not members of the extension, and the counter
-- counting in that layout (or not yet in any). Changes nothing (no DDL):
-- a draw by any role asks it, and DDL in that role's transaction would hold
-- catalog rows the owner's calls need until it ends.
CREATE FUNCTION snowflake_id_managed.snowflake_managed_state_ready(epoch timestamptz, worker_bits integer, sequence_bits integer)
    RETURNS boolean
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    RETURN (SELECT n.nspowner FROM pg_catalog.pg_namespace n
             WHERE n.nspname OPERATOR(pg_catalog.=) 'snowflake_id_managed_state'::pg_catalog.name)
           IS NOT DISTINCT FROM (SELECT c.relowner FROM pg_catalog.pg_class c
                                  WHERE c.oid OPERATOR(pg_catalog.=) 'snowflake_id_managed_lock.snowflake_managed_config'::pg_catalog.regclass)
       AND (SELECT pg_catalog.count(*) FROM pg_catalog.pg_class c
             WHERE c.relnamespace OPERATOR(pg_catalog.=) pg_catalog.to_regnamespace('snowflake_id_managed_state')::pg_catalog.oid
               AND c.relname OPERATOR(pg_catalog.=) ANY (ARRAY['snowflake_managed_counter', 'snowflake_managed_generation',
                                                              'snowflake_managed_offset', 'snowflake_managed_layout']::pg_catalog.name[])
               AND c.relkind OPERATOR(pg_catalog.=) 'S'::pg_catalog."char"
               AND c.relowner OPERATOR(pg_catalog.=) (SELECT o.relowner FROM pg_catalog.pg_class o
                                                       WHERE o.oid OPERATOR(pg_catalog.=) 'snowflake_id_managed_lock.snowflake_managed_config'::pg_catalog.regclass)
               AND NOT EXISTS (SELECT FROM pg_catalog.pg_depend d
                                WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
                                  AND d.objid OPERATOR(pg_catalog.=) c.oid
                                  AND d.deptype OPERATOR(pg_catalog.=) 'e'::pg_catalog."char")) OPERATOR(pg_catalog.=) 4
       AND coalesce(pg_catalog.pg_sequence_last_value(pg_catalog.to_regclass('snowflake_id_managed_state.snowflake_managed_layout'))
                        OPERATOR(pg_catalog.=)
                    ((((pg_catalog.date_part('epoch', epoch) OPERATOR(pg_catalog.*) 1000)::pg_catalog.int8 OPERATOR(pg_catalog.*) 1024)
                        OPERATOR(pg_catalog.+) (worker_bits OPERATOR(pg_catalog.*) 32)) OPERATOR(pg_catalog.+) sequence_bits),
                    true);

-- The switch itself, under the raisers' lock. With only_unset it does
-- nothing unless no worker id is in force (the first draw after a restore,
-- which any role may make): a worker id the owner brought into force in the
-- meantime is never replaced by the restored one.
CREATE FUNCTION snowflake_id_managed.snowflake_managed_switch_locked(worker_id integer, epoch timestamptz, worker_bits integer,
                                                                     sequence_bits integer, only_unset boolean) RETURNS void
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    counter regclass;
    generation regclass;
    cur bigint;
    f bigint;
    target bigint;
    last bigint := snowflake_id_managed.snowflake_managed_last(worker_bits);
BEGIN
    counter := 'snowflake_id_managed_state.snowflake_managed_counter'::pg_catalog.regclass;
    generation := 'snowflake_id_managed_state.snowflake_managed_generation'::pg_catalog.regclass;
    BEGIN
        LOCK TABLE snowflake_id_managed_lock.snowflake_managed_raise_lock IN SHARE UPDATE EXCLUSIVE MODE;
        IF only_unset AND pg_catalog.pg_sequence_last_value('snowflake_id_managed_lock.snowflake_managed_worker'::pg_catalog.regclass) >= 0 THEN
            RAISE EXCEPTION USING ERRCODE = 'SFRAI';
        END IF;
        -- The generation first (why: below), and the counter read after it,
        -- as a raise reads it after its odd bump: a fast-path draw that took
        -- a counter value under the old even generation took it before the
        -- bump, so the read sees it and the counter moves past it. Read
        -- before the bump, such a value could be above what was read, and
        -- the counter set back under it would hand the same values out again
        -- under the new worker id, smaller than IDs already returned.
        PERFORM pg_catalog.setval(generation, (((pg_catalog.pg_sequence_last_value(generation) >> 40) + 1) << 40) + 1, true);
        cur := coalesce(pg_catalog.pg_sequence_last_value(counter), -1);
        f := snowflake_id_managed.snowflake_managed_floor(epoch, sequence_bits);
        target := ((greatest(cur, f) >> sequence_bits) + 1) << sequence_bits;
        IF target > last THEN
            PERFORM snowflake_id_managed.snowflake_managed_refuse_end();
        END IF;
        -- The sequences are not transactional and the caller may be stopped
        -- between any two of these steps (pg_cancel_backend at its COMMIT,
        -- an error, a crash); each step leaves a state that is safe as it
        -- stands. First (above) the generation goes to the next worker id's
        -- range, odd: every fast path baked before reads a generation above its
        -- range from now on, whatever happens after, and takes the slow
        -- path, which composes with the worker id in force as it reads it
        -- between two equal even generations; a draw in flight sees the
        -- generation move. Then the counter moves past the last millisecond
        -- drawn in (before the worker id, so that a new worker id is never
        -- in force over a millisecond the old one drew in), then the layout
        -- and the worker id. Stopped anywhere in between, the generation is
        -- left odd in the new range: the next raise makes it even there
        -- (snowflake_managed_raise), and one worker id, the one in force,
        -- issues from then on, by the slow path. With the old order (odd in
        -- the old range, the worker id, then the new range) a stop before the
        -- last step let the next raise make the old range valid again, and
        -- fast paths baked for the old worker id issued beside the slow
        -- path's new one.
        PERFORM pg_catalog.setval(counter, target - 1, true);
        PERFORM pg_catalog.setval('snowflake_id_managed_state.snowflake_managed_layout'::pg_catalog.regclass,
            (pg_catalog.date_part('epoch', epoch) * 1000)::pg_catalog.int8 * 1024 + worker_bits * 32 + sequence_bits, true);
        PERFORM pg_catalog.setval('snowflake_id_managed_lock.snowflake_managed_worker'::pg_catalog.regclass, worker_id, true);
        PERFORM pg_catalog.nextval(generation);
        -- Roll the subtransaction back: it releases the table lock now.
        RAISE EXCEPTION USING ERRCODE = 'SFRAI';
    EXCEPTION WHEN SQLSTATE 'SFRAI' THEN
        NULL;
    END;
END
$body$;

-- The slow path: a draw that the inlined fast path could not keep (the
-- counter behind the clock, a raise in its way, a burst ahead of max_drift),
-- the refusals (standby, no worker id), and every draw after a restore
-- until the owner sets the worker id (`unbaked`: the fast path is not yet
-- built from the configuration).
CREATE FUNCTION snowflake_id_managed.snowflake_managed_draw(unbaked boolean) RETURNS bigint
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    counter regclass;
    generation regclass;
    cfg snowflake_id_managed_lock.snowflake_managed_config;
    lim bigint;
    last bigint;
    f bigint;
    v bigint;
    g1 bigint;
    g2 bigint;
BEGIN
    IF pg_catalog.pg_is_in_recovery() THEN
        PERFORM snowflake_id_managed.snowflake_managed_refuse_standby('snowflake_nextval()');
    END IF;
    -- A configuration restored (pg_dump) into a new database, and no worker
    -- id in force yet: bring the restored one into force (the sequences
    -- only, under the raisers' lock, which goes at once). Any role may get
    -- here, so nothing that outlasts the call: no row lock and no DDL (the
    -- inlined fast path stays unbuilt, every draw takes this slow path,
    -- until the owner's snowflake_set_worker_id builds it at its commit),
    -- else a role holding its transaction open would stop the owner's
    -- change of the copy's worker id. Not in a transaction that set the
    -- worker id: that one comes into force at its commit
    -- (snowflake_managed_config_commit), not before.
    IF unbaked AND pg_catalog.current_setting('snowflake_id_managed.switch_at_commit', true) IS DISTINCT FROM 'on'
       AND pg_catalog.pg_sequence_last_value('snowflake_id_managed_lock.snowflake_managed_worker'::pg_catalog.regclass) < 0 THEN
        SELECT * INTO cfg FROM snowflake_id_managed_lock.snowflake_managed_config;
        IF FOUND AND cfg.worker_id IS NOT NULL
           AND snowflake_id_managed.snowflake_managed_state_ready(cfg.epoch, cfg.worker_bits, cfg.sequence_bits) THEN
            PERFORM snowflake_id_managed.snowflake_managed_switch_locked(cfg.worker_id, cfg.epoch, cfg.worker_bits,
                                                                         cfg.sequence_bits, true);
        END IF;
    END IF;
    -- The counter's schema exists once a worker id was set.
    IF pg_catalog.pg_sequence_last_value('snowflake_id_managed_lock.snowflake_managed_worker'::pg_catalog.regclass) >= 0 THEN
        counter := 'snowflake_id_managed_state.snowflake_managed_counter'::pg_catalog.regclass;
        generation := 'snowflake_id_managed_state.snowflake_managed_generation'::pg_catalog.regclass;
    END IF;
    LOOP
        -- The worker id and layout are read between the two reads of the
        -- generation, like the value: they change only while it is odd.
        g1 := CASE WHEN generation IS NOT NULL THEN pg_catalog.pg_sequence_last_value(generation) END;
        cfg := snowflake_id_managed.snowflake_managed_live();
        IF cfg.worker_id IS NULL OR generation IS NULL THEN
            RAISE EXCEPTION 'snowflake_id: no worker id is set for this database'
                USING ERRCODE = '55000',
                      DETAIL = 'The managed edition keeps its worker id in the database, set by the extension''s owner.',
                      HINT = CASE WHEN pg_catalog.current_setting('snowflake_id_managed.switch_at_commit', true) OPERATOR(pg_catalog.=) 'on'
                                  THEN 'The worker id set in this transaction comes into force when it commits: commit, then draw.'
                                  ELSE 'As the extension''s owner, run SELECT snowflake_id_managed.snowflake_set_worker_id(n); with n unique among the servers and databases issuing IDs together (0 to 1023 with the default layout).' END;
        END IF;
        lim := snowflake_id_managed.snowflake_managed_max_drift_ms() << cfg.sequence_bits;
        last := snowflake_id_managed.snowflake_managed_last(cfg.worker_bits);
        f := snowflake_id_managed.snowflake_managed_floor(cfg.epoch, cfg.sequence_bits);
        v := pg_catalog.nextval(counter);
        g2 := pg_catalog.pg_sequence_last_value(generation);
        IF v > last THEN
            -- Past the layout's end (the counter only gets here by nextval()
            -- from its last value: raises stop below it).
            PERFORM snowflake_id_managed.snowflake_managed_refuse_end();
        END IF;
        IF g1 = g2 AND g1 % 2 = 0 AND v >= f THEN
            IF v - f - snowflake_id_managed.snowflake_managed_offset_now(f, v, lim, cfg.epoch, cfg.sequence_bits) < lim THEN
                RETURN snowflake_id_managed.snowflake_managed_compose(v, cfg.worker_id, cfg.worker_bits, cfg.sequence_bits);
            END IF;
            PERFORM snowflake_id_managed.snowflake_managed_wait_lead(cfg, 0::pg_catalog.int8);
        ELSE
            PERFORM snowflake_id_managed.snowflake_managed_raise(f, 0::pg_catalog.int8, last, 0::pg_catalog.int8);
        END IF;
    END LOOP;
END
$body$;

-- Before a worker id is set (and after a restore, until the owner sets or
-- confirms the worker id) the fast path is this: every call takes the slow
-- path, which refuses, or brings the restored worker id into force and
-- draws.
CREATE FUNCTION snowflake_nextval() RETURNS bigint
    LANGUAGE sql VOLATILE PARALLEL UNSAFE
    RETURN snowflake_id_managed.snowflake_managed_draw(true::pg_catalog.bool);

-- Builds the fast path from the configuration: an SQL function of one
-- expression with the layout and worker id as literals, which the planner
-- inlines into the caller's query (no function call, no table read):
--   1. pg_is_in_recovery(): a standby takes the slow path for its own error;
--   2. g1: the generation before;
--   3. nextval(counter), kept if d = v - floor - offset is in [0, L): less
--      than max_drift L ahead of the reference (snowflake_managed_offset),
--      and not behind it (behind the clock: the slow path raises; behind the
--      reference: the slow path shrinks the offset). (d + L) / L is 1
--      exactly then (integer division truncates toward zero), which tests it
--      with v used once (twice would need a variable);
--   4. g2: the generation after, read only if 3 held (CASE orders it);
--   5. g1 / 2 = (g2 + 1) / 2: g1 = g2 and even, each read used once (the
--      generation only grows: with g1 <= g2, equality of the halves holds
--      exactly when g2 is even and g1 = g2);
--   6. the ID from currval(counter) (the value of 3, without a variable);
--      its time part multiplied into place rather than shifted, so that a
--      counter past the layout's end (reached only by nextval() at the end,
--      with the counter ahead of the clock) fails (22003) rather than lose
--      the time's high bits.
-- The order 2, 3, 4 rests on PostgreSQL evaluating an operator's operands
-- left to right (the executor's steps compute a function's arguments in
-- order; nothing volatile is folded or moved) and a CASE's condition before
-- its result. Anything else takes the slow path, which draws again. Also sets the three
-- layout functions the server-layout decoders read (layout.sql).
CREATE FUNCTION snowflake_id_managed.snowflake_managed_bake(fast boolean) RETURNS void
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    cfg snowflake_id_managed_lock.snowflake_managed_config;
    live snowflake_id_managed_lock.snowflake_managed_config;
    body text;
    epoch_literal text;
    g bigint;
BEGIN
    SELECT * INTO cfg FROM snowflake_id_managed_lock.snowflake_managed_config;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    epoch_literal := pg_catalog.quote_literal(pg_catalog.to_char(cfg.epoch AT TIME ZONE 'UTC',
                                                                  'YYYY-MM-DD"T"HH24:MI:SS.US"+00"'));
    -- The server layout the decoders read (layout.sql), as literals.
    EXECUTE pg_catalog.format($f$CREATE OR REPLACE FUNCTION @extschema@.snowflake_managed_epoch() RETURNS timestamptz
        LANGUAGE sql IMMUTABLE PARALLEL SAFE RETURN %s::pg_catalog.timestamptz$f$, epoch_literal);
    EXECUTE pg_catalog.format($f$CREATE OR REPLACE FUNCTION @extschema@.snowflake_managed_worker_bits() RETURNS integer
        LANGUAGE sql IMMUTABLE PARALLEL SAFE RETURN %s$f$, cfg.worker_bits);
    EXECUTE pg_catalog.format($f$CREATE OR REPLACE FUNCTION @extschema@.snowflake_managed_sequence_bits() RETURNS integer
        LANGUAGE sql IMMUTABLE PARALLEL SAFE RETURN %s$f$, cfg.sequence_bits);
    IF NOT fast OR cfg.worker_id IS NULL THEN
        -- Until the owner sets a worker id, or after the configuration
        -- changed (a restore loads it before the counter's value), every
        -- call takes the slow path, until the commit of the owner's
        -- snowflake_set_worker_id bakes it.
        CREATE OR REPLACE FUNCTION @extschema@.snowflake_nextval() RETURNS bigint
            LANGUAGE sql VOLATILE PARALLEL UNSAFE
            RETURN snowflake_id_managed.snowflake_managed_draw(true::pg_catalog.bool);
        RETURN;
    END IF;
    -- The worker id and layout in force are the configuration's (at the
    -- commit of snowflake_set_worker_id, or after a restore).
    live := snowflake_id_managed.snowflake_managed_live();
    IF live.worker_id IS DISTINCT FROM cfg.worker_id OR live.epoch IS DISTINCT FROM cfg.epoch
       OR live.worker_bits IS DISTINCT FROM cfg.worker_bits OR live.sequence_bits IS DISTINCT FROM cfg.sequence_bits THEN
        PERFORM snowflake_id_managed.snowflake_managed_switch(cfg.worker_id, cfg.epoch, cfg.worker_bits, cfg.sequence_bits);
    END IF;
    g := pg_catalog.pg_sequence_last_value('snowflake_id_managed_state.snowflake_managed_generation'::pg_catalog.regclass);
    body := $fast$
CREATE OR REPLACE FUNCTION @extschema@.snowflake_nextval() RETURNS bigint
    LANGUAGE sql VOLATILE PARALLEL UNSAFE
    RETURN CASE
        WHEN pg_catalog.pg_is_in_recovery() THEN snowflake_id_managed.snowflake_managed_draw(false::pg_catalog.bool)
        WHEN (LEAST(pg_catalog.pg_sequence_last_value('snowflake_id_managed_state.snowflake_managed_generation'::pg_catalog.regclass),
                    %GLIMIT%::pg_catalog.int8)
              OPERATOR(pg_catalog./) 2::pg_catalog.int8)
             OPERATOR(pg_catalog.=)
             ((CASE WHEN ((((pg_catalog.nextval('snowflake_id_managed_state.snowflake_managed_counter'::pg_catalog.regclass)
                             OPERATOR(pg_catalog.-)
                             (((pg_catalog.date_part('epoch'::pg_catalog.text, pg_catalog.clock_timestamp())
                                OPERATOR(pg_catalog.*) 1000::pg_catalog.float8)
                               OPERATOR(pg_catalog.-) %EPOCH_MS_HALF%::pg_catalog.float8)::pg_catalog.int8
                              OPERATOR(pg_catalog.<<) %K%))
                            OPERATOR(pg_catalog.-)
                            pg_catalog.pg_sequence_last_value('snowflake_id_managed_state.snowflake_managed_offset'::pg_catalog.regclass))
                           OPERATOR(pg_catalog.+) %LIM%::pg_catalog.int8)
                          OPERATOR(pg_catalog./) %LIM%::pg_catalog.int8)
                         OPERATOR(pg_catalog.=) 1::pg_catalog.int8
                    THEN pg_catalog.pg_sequence_last_value('snowflake_id_managed_state.snowflake_managed_generation'::pg_catalog.regclass)
               END
               OPERATOR(pg_catalog.+) 1::pg_catalog.int8)
              OPERATOR(pg_catalog./) 2::pg_catalog.int8)
        THEN ((pg_catalog.currval('snowflake_id_managed_state.snowflake_managed_counter'::pg_catalog.regclass)
               OPERATOR(pg_catalog.>>) %K%) OPERATOR(pg_catalog.*) %MUL%::pg_catalog.int8)
             OPERATOR(pg_catalog.|)
             ((pg_catalog.currval('snowflake_id_managed_state.snowflake_managed_counter'::pg_catalog.regclass)
               OPERATOR(pg_catalog.&) %MASK%::pg_catalog.int8)
              OPERATOR(pg_catalog.|) %WORKER%::pg_catalog.int8)
        ELSE snowflake_id_managed.snowflake_managed_draw(false::pg_catalog.bool)
    END
$fast$;
    -- The floor's rounding: (ms - epoch - 0.5) rounded to nearest is the
    -- millisecond floor, without a floor() call in the fast path.
    body := pg_catalog.replace(body, '%EPOCH_MS_HALF%',
        pg_catalog.to_char(pg_catalog.date_part('epoch', cfg.epoch) * 1000 + 0.5, 'FM9999999999999990.0'));
    body := pg_catalog.replace(body, '%K%', cfg.sequence_bits::text);
    -- The last generation of this worker id's range (odd): a fast path baked
    -- before the next change reads a generation above it and takes the slow
    -- path, which composes with the worker id in force.
    body := pg_catalog.replace(body, '%GLIMIT%', ((((g >> 40) + 1) << 40) - 1)::text);
    body := pg_catalog.replace(body, '%MUL%', (1::bigint << (cfg.worker_bits + cfg.sequence_bits))::text);
    body := pg_catalog.replace(body, '%LIM%', (snowflake_id_managed.snowflake_managed_max_drift_ms() << cfg.sequence_bits)::text);
    body := pg_catalog.replace(body, '%MASK%', ((1::bigint << cfg.sequence_bits) - 1)::text);
    body := pg_catalog.replace(body, '%WORKER%', (cfg.worker_id::bigint << cfg.sequence_bits)::text);
    EXECUTE body;
END
$body$;

-- n IDs in ascending order. Taken in chunks, each reserved by a raise that
-- keeps the counter within max_drift of the clock (waiting for the clock in
-- between, like single draws), so that blocks cannot push the lead past it
-- whatever their size or number.
CREATE FUNCTION snowflake_id_managed.snowflake_managed_block(n integer, what text) RETURNS bigint[]
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    cfg snowflake_id_managed_lock.snowflake_managed_config;
    lim bigint;
    last bigint;
    r record;
    f bigint;
    bases bigint[];
    gots bigint[];
    left_ bigint;
    g0 bigint;
BEGIN
    IF n < 1 OR n > 1000000 THEN
        RAISE EXCEPTION 'snowflake_id: % takes 1 to 1000000 IDs, not %', what, n
            USING ERRCODE = '22023', HINT = 'Ask for at most 1000000 IDs per call; call it again for more.';
    END IF;
    IF pg_catalog.pg_is_in_recovery() THEN
        PERFORM snowflake_id_managed.snowflake_managed_refuse_standby(what);
    END IF;
    <<whole>>
    LOOP
    cfg := snowflake_id_managed.snowflake_managed_live();
    IF cfg.worker_id IS NULL THEN
        -- The refusal without a worker id.
        PERFORM snowflake_id_managed.snowflake_managed_draw(false::pg_catalog.bool);
    END IF;
    -- The worker id's range of generations: a change while the block is
    -- reserved makes its values belong to no single worker id, so it starts
    -- again (the values reserved are burnt, never issued).
    g0 := pg_catalog.pg_sequence_last_value('snowflake_id_managed_state.snowflake_managed_generation'::pg_catalog.regclass) >> 40;
    cfg := snowflake_id_managed.snowflake_managed_live();
    bases := '{}';
    gots := '{}';
    left_ := n;
    lim := snowflake_id_managed.snowflake_managed_max_drift_ms() << cfg.sequence_bits;
    last := snowflake_id_managed.snowflake_managed_last(cfg.worker_bits);
    WHILE left_ > 0 LOOP
        PERFORM snowflake_id_managed.snowflake_managed_wait_lead(cfg, 0::pg_catalog.int8);
        f := snowflake_id_managed.snowflake_managed_floor(cfg.epoch, cfg.sequence_bits);
        SELECT * INTO r FROM snowflake_id_managed.snowflake_managed_raise(f, left_, last,
            f + lim + coalesce(pg_catalog.pg_sequence_last_value('snowflake_id_managed_state.snowflake_managed_offset'::pg_catalog.regclass), 0));
        IF r.got > 0 THEN
            bases := bases || r.base;
            gots := gots || r.got;
            left_ := left_ - r.got;
        ELSE
            PERFORM pg_catalog.pg_sleep(0.001);
        END IF;
    END LOOP;
    EXIT whole WHEN pg_catalog.pg_sequence_last_value('snowflake_id_managed_state.snowflake_managed_generation'::pg_catalog.regclass) >> 40 = g0;
    END LOOP;
    RETURN ARRAY(SELECT snowflake_id_managed.snowflake_managed_compose(c, cfg.worker_id, cfg.worker_bits, cfg.sequence_bits)
                   FROM ROWS FROM (pg_catalog.unnest(bases), pg_catalog.unnest(gots)) AS k(b, g),
                        pg_catalog.generate_series(k.b + 1, k.b + k.g) AS c
                  ORDER BY c);
END
$body$;

CREATE FUNCTION snowflake_nextval_block(n integer) RETURNS SETOF bigint
    LANGUAGE sql VOLATILE STRICT PARALLEL RESTRICTED
    BEGIN ATOMIC
        SELECT pg_catalog.unnest(snowflake_id_managed.snowflake_managed_block(n, 'snowflake_nextval_block(integer)'));
    END;
COMMENT ON FUNCTION snowflake_nextval_block(integer) IS
    'n new IDs in ascending order, one row each (managed edition)';

CREATE FUNCTION snowflake_nextval_array(n integer) RETURNS bigint[]
    LANGUAGE sql VOLATILE STRICT PARALLEL RESTRICTED
    RETURN snowflake_id_managed.snowflake_managed_block(n, 'snowflake_nextval_array(integer)');
COMMENT ON FUNCTION snowflake_nextval_array(integer) IS
    'n new IDs in ascending order in one array (managed edition)';

-- Internal: called by the owner's SECURITY DEFINER functions only. Left
-- executable by PUBLIC, as they must be: snowflake_managed_draw (the inlined
-- fast path calls it as the caller) and snowflake_managed_block.
REVOKE EXECUTE ON FUNCTION snowflake_id_managed.snowflake_managed_switch(integer, timestamptz, integer, integer),
    snowflake_id_managed.snowflake_managed_switch_locked(integer, timestamptz, integer, integer, boolean),
    snowflake_id_managed.snowflake_managed_state_ready(timestamptz, integer, integer), snowflake_id_managed.snowflake_managed_system_id(),
    snowflake_id_managed.snowflake_managed_state_ensure(timestamptz, integer, integer), snowflake_id_managed.snowflake_managed_live(),
    snowflake_id_managed.snowflake_managed_state_create(), snowflake_id_managed.snowflake_managed_state_grants(),
    snowflake_id_managed.snowflake_managed_strip_schema(name), snowflake_id_managed.snowflake_managed_strip_relation(regclass),
    snowflake_id_managed.snowflake_managed_check_layout(timestamptz, integer, integer), snowflake_id_managed.snowflake_managed_refuse_standby(text), snowflake_id_managed.snowflake_managed_wait_lead(snowflake_id_managed_lock.snowflake_managed_config, bigint),
    snowflake_id_managed.snowflake_managed_raise(bigint, bigint, bigint, bigint), snowflake_id_managed.snowflake_managed_bake(boolean),
    snowflake_id_managed.snowflake_managed_last(integer), snowflake_id_managed.snowflake_managed_refuse_end(),
    snowflake_id_managed.snowflake_managed_offset_now(bigint, bigint, bigint, timestamptz, integer), snowflake_id_managed.snowflake_managed_max_drift_ms(),
    snowflake_id_managed.snowflake_managed_floor(timestamptz, integer), snowflake_id_managed.snowflake_managed_compose(bigint, integer, integer, integer) FROM PUBLIC;
