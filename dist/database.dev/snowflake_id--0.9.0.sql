-- ==== the guard (scripts/managed.sh) ====
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
DO $one_managed$
DECLARE
    names pg_catalog.text;
BEGIN
    SELECT pg_catalog.string_agg(pg_catalog.quote_ident(e.extname), ', ' ORDER BY e.oid) INTO names
      FROM pg_catalog.pg_extension e
     WHERE e.extname::pg_catalog.text OPERATOR(pg_catalog.~) '^(.+[@-])?snowflake_id$'
    HAVING pg_catalog.count(*) OPERATOR(pg_catalog.>) 1;
    IF names IS NOT NULL THEN
        RAISE EXCEPTION 'snowflake_id: the managed edition is in this database already'
            USING ERRCODE = '42710',
                  DETAIL = pg_catalog.format('Extensions %s are the same edition; one database holds one install of it.', names),
                  HINT = 'Use the one there, or uninstall it first (docs/managed.md, "Reinstall, uninstall and update").';
    END IF;
END
$one_managed$;
DO $guard_managed$
DECLARE
    functions pg_catalog.name[] := ARRAY['snowflake_advance_past','snowflake_decode','snowflake_decode_fields','snowflake_decode_rows','snowflake_from_base32','snowflake_from_base62','snowflake_from_timestamp','snowflake_id_span','snowflake_id_status','snowflake_managed_epoch','snowflake_managed_sequence_bits','snowflake_managed_worker_bits','snowflake_nextval','snowflake_nextval_array','snowflake_nextval_block','snowflake_sequence','snowflake_set_layout','snowflake_set_worker_id','snowflake_timestamp','snowflake_to_base32','snowflake_to_base62','snowflake_worker_id']::pg_catalog.name[];
    relations pg_catalog.name[] := ARRAY['snowflake_id_status','snowflake_parts']::pg_catalog.name[];
    ns pg_catalog.oid := '@extschema@'::pg_catalog.regnamespace::pg_catalog.oid;
    ext pg_catalog.oid := (SELECT e.oid FROM pg_catalog.pg_extension e WHERE e.extname::pg_catalog.text OPERATOR(pg_catalog.~) '^(.+[@-])?snowflake_id$'
         AND e.extnamespace OPERATOR(pg_catalog.=) '@extschema@'::pg_catalog.regnamespace::pg_catalog.oid);
    -- The plain script over an earlier plain install: the owner's own
    -- objects of these names are that install's, replaced in place.
    updating pg_catalog.bool := false;
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
$guard_managed$;

-- ==== sql/install/objects_in_the_way.sql ====
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
      FROM pg_catalog.pg_extension e WHERE e.extname::pg_catalog.text OPERATOR(pg_catalog.~) '^(.+[@-])?snowflake_id$'
         AND e.extnamespace OPERATOR(pg_catalog.=) '@extschema@'::pg_catalog.regnamespace::pg_catalog.oid;
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

-- ==== sql/install/parts_type.sql ====
-- The fields of a decoded ID: the instant of its millisecond, the worker id
-- that made it, and its number within that millisecond.
CREATE TYPE snowflake_parts AS (
    ts        timestamptz,
    worker_id integer,
    sequence  integer
);

-- ==== sql/managed/schemas.sql ====
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
COMMENT ON SCHEMA snowflake_id_internal IS 'snowflake_id managed edition 0.9.0: internal functions (docs/managed.md)';
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

-- ==== sql/managed/private.sql ====
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
CREATE TABLE snowflake_id_private.snowflake_managed_raise_lock (one boolean PRIMARY KEY DEFAULT true CHECK (one));
INSERT INTO snowflake_id_private.snowflake_managed_raise_lock VALUES (true);
CREATE TABLE snowflake_id_private.snowflake_managed_config (
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
CREATE SEQUENCE snowflake_id_private.snowflake_managed_worker AS bigint MINVALUE -1 START -1 CACHE 1 NO CYCLE;
SELECT pg_catalog.setval('snowflake_id_private.snowflake_managed_worker'::pg_catalog.regclass, -1, true);
CREATE SEQUENCE snowflake_id_private.snowflake_managed_reference AS bigint MINVALUE 0 START 0 CACHE 1 NO CYCLE;
SELECT pg_catalog.setval('snowflake_id_private.snowflake_managed_reference'::pg_catalog.regclass, 0, true);
REVOKE ALL ON snowflake_id_private.snowflake_managed_raise_lock, snowflake_id_private.snowflake_managed_config,
    snowflake_id_private.snowflake_managed_worker, snowflake_id_private.snowflake_managed_reference FROM PUBLIC;

SELECT snowflake_id_internal.snowflake_managed_strip_relation(c.oid::pg_catalog.regclass)
  FROM pg_catalog.pg_class c
 WHERE c.relnamespace OPERATOR(pg_catalog.=) 'snowflake_id_private'::pg_catalog.regnamespace::pg_catalog.oid
   AND c.relkind OPERATOR(pg_catalog.=) ANY (ARRAY['r', 'S']::pg_catalog."char"[]);

-- The worker id and layout in force, from the sequences above, as a
-- configuration row (worker_id NULL when none is set).
CREATE FUNCTION snowflake_id_internal.snowflake_managed_live() RETURNS snowflake_id_private.snowflake_managed_config
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    w bigint := pg_catalog.pg_sequence_last_value('snowflake_id_private.snowflake_managed_worker'::pg_catalog.regclass);
    l bigint := coalesce(pg_catalog.pg_sequence_last_value(pg_catalog.to_regclass('snowflake_id_state.snowflake_managed_layout')),
                         1735689600000 * 1024 + 10 * 32 + 12);
    m bigint := ((l % 1024) + 1024) % 1024;
BEGIN
    RETURN ROW(true, CASE WHEN w >= 0 THEN w::integer END,
               pg_catalog.to_timestamp(((l - m) / 1024)::pg_catalog.float8 / 1000::pg_catalog.float8),
               (m / 32)::integer, (m % 32)::integer, NULL::pg_catalog.oid, NULL::pg_catalog.int8)::snowflake_id_private.snowflake_managed_config;
END
$body$;

-- This cluster's system identifier, or NULL where EXECUTE on
-- pg_control_system() is revoked (some managed services do).
CREATE FUNCTION snowflake_id_internal.snowflake_managed_system_id() RETURNS bigint
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $body$
BEGIN
    RETURN (SELECT s.system_identifier FROM pg_catalog.pg_control_system() s);
EXCEPTION WHEN insufficient_privilege THEN
    RETURN NULL;
END
$body$;

REVOKE EXECUTE ON FUNCTION snowflake_id_internal.snowflake_managed_live(),
    snowflake_id_internal.snowflake_managed_system_id() FROM PUBLIC;

-- ==== sql/managed/layout.sql ====
-- The managed edition's layout, as three IMMUTABLE functions with literal
-- bodies: the same default as the native edition (snowflake_id.epoch,
-- worker_bits, sequence_bits in src/settings; 2025-01-01 00:00:00+00, 10, 12).
--
-- Literals, not a table read, so that the planner inlines them into the
-- server-layout accessors (snowflake_timestamp(id) and the others) and folds
-- every layout-derived quantity into a constant: the accessors then cost
-- what the explicit-layout forms with constants cost. IMMUTABLE is true for
-- as long as the layout holds, and the layout may change only before the
-- first ID (snowflake_set_layout refuses afterwards, 55000): the
-- configuration rewrites these bodies, with literals again, when a DBA sets
-- another layout, together with the generator's baked constants, so that
-- what an ID decodes to never changes once IDs exist. In
-- snowflake_id_internal, where only the owner creates, since 0.9.0 (0.8.0
-- had them in the extension's schema): the bodies that call them are
-- created again from their text by pg_dump and pg_upgrade, and a look-alike
-- with one more defaulted argument beside them there would make those calls
-- "not unique" and stop the restore.
CREATE FUNCTION snowflake_id_internal.snowflake_managed_epoch() RETURNS timestamptz
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN '2025-01-01 00:00:00+00'::pg_catalog.timestamptz;
COMMENT ON FUNCTION snowflake_id_internal.snowflake_managed_epoch() IS
    'the instant timestamp 0 of this database''s IDs stands for (set by snowflake_set_layout)';

CREATE FUNCTION snowflake_id_internal.snowflake_managed_worker_bits() RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN 10;
COMMENT ON FUNCTION snowflake_id_internal.snowflake_managed_worker_bits() IS
    'the bits of this database''s IDs that hold the worker id (set by snowflake_set_layout)';

CREATE FUNCTION snowflake_id_internal.snowflake_managed_sequence_bits() RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN 12;
COMMENT ON FUNCTION snowflake_id_internal.snowflake_managed_sequence_bits() IS
    'the bits of this database''s IDs that number the IDs of one millisecond (set by snowflake_set_layout)';

-- The same three in the extension's schema, as in 0.8.0, for whoever reads
-- the layout there: entry points calling the ones above (bound when
-- created; the planner inlines both). The edition's own bodies call the
-- ones above.
CREATE FUNCTION snowflake_managed_epoch() RETURNS timestamptz
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN snowflake_id_internal.snowflake_managed_epoch();
COMMENT ON FUNCTION snowflake_managed_epoch() IS
    'the instant timestamp 0 of this database''s IDs stands for (set by snowflake_set_layout)';
CREATE FUNCTION snowflake_managed_worker_bits() RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN snowflake_id_internal.snowflake_managed_worker_bits();
COMMENT ON FUNCTION snowflake_managed_worker_bits() IS
    'the bits of this database''s IDs that hold the worker id (set by snowflake_set_layout)';
CREATE FUNCTION snowflake_managed_sequence_bits() RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN snowflake_id_internal.snowflake_managed_sequence_bits();
COMMENT ON FUNCTION snowflake_managed_sequence_bits() IS
    'the bits of this database''s IDs that number the IDs of one millisecond (set by snowflake_set_layout)';

-- ==== sql/managed/state.sql ====
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

-- ==== sql/managed/raise.sql ====
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
CREATE FUNCTION snowflake_id_internal.snowflake_managed_max_drift_ms() RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN 1000;
COMMENT ON FUNCTION snowflake_id_internal.snowflake_managed_max_drift_ms() IS
    'how far bursts may push the managed generator ahead of the clock before callers wait (the native default of snowflake_id.max_drift)';

-- The counter's floor now: the clock's millisecond since the epoch, shifted.
CREATE FUNCTION snowflake_id_internal.snowflake_managed_floor(epoch timestamptz, sequence_bits integer) RETURNS bigint
    LANGUAGE sql VOLATILE PARALLEL SAFE
    RETURN pg_catalog.floor((pg_catalog.date_part('epoch'::pg_catalog.text, pg_catalog.clock_timestamp())
                              OPERATOR(pg_catalog.-) pg_catalog.date_part('epoch'::pg_catalog.text, epoch))
                            OPERATOR(pg_catalog.*) 1000::pg_catalog.float8)::pg_catalog.int8
           OPERATOR(pg_catalog.<<) sequence_bits;

-- A counter value as an ID of worker_id.
CREATE FUNCTION snowflake_id_internal.snowflake_managed_compose(counter bigint, worker_id integer, worker_bits integer, sequence_bits integer)
    RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN ((counter OPERATOR(pg_catalog.>>) sequence_bits) OPERATOR(pg_catalog.<<) (worker_bits OPERATOR(pg_catalog.+) sequence_bits))
           OPERATOR(pg_catalog.|) ((worker_id::pg_catalog.int8) OPERATOR(pg_catalog.<<) sequence_bits)
           OPERATOR(pg_catalog.|) (counter OPERATOR(pg_catalog.&) ((1::pg_catalog.int8 OPERATOR(pg_catalog.<<) sequence_bits) OPERATOR(pg_catalog.-) 1));

-- The refusal of a standby, the edition's own (25006 like core nextval(),
-- with what to do).
CREATE FUNCTION snowflake_id_internal.snowflake_managed_refuse_standby(what text) RETURNS void
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
CREATE FUNCTION snowflake_id_internal.snowflake_managed_last(worker_bits integer) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN (((1::pg_catalog.int8 OPERATOR(pg_catalog.<<) (62 OPERATOR(pg_catalog.-) worker_bits))
             OPERATOR(pg_catalog.-) 1::pg_catalog.int8) OPERATOR(pg_catalog.*) 2::pg_catalog.int8)
           OPERATOR(pg_catalog.+) 1::pg_catalog.int8;

-- The end of the layout's timestamp field, the edition's own error (54000,
-- as the native edition's). Reached when the clock passes the layout's last
-- millisecond, or sooner when snowflake_advance_past(..., force => true)
-- moved the counter near it.
CREATE FUNCTION snowflake_id_internal.snowflake_managed_refuse_end() RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    cfg snowflake_id_private.snowflake_managed_config := snowflake_id_internal.snowflake_managed_live();
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
CREATE FUNCTION snowflake_id_internal.snowflake_managed_offset_now(f bigint, cur bigint, lim bigint, epoch timestamptz,
                                                                  sequence_bits integer) RETURNS bigint
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    off_seq constant regclass := 'snowflake_id_state.snowflake_managed_offset'::pg_catalog.regclass;
    ref_seq constant regclass := 'snowflake_id_private.snowflake_managed_reference'::pg_catalog.regclass;
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
    fresh := snowflake_id_internal.snowflake_managed_floor(epoch, sequence_bits);
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
CREATE FUNCTION snowflake_id_internal.snowflake_managed_wait_lead(cfg snowflake_id_private.snowflake_managed_config, extra bigint) RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    lim constant bigint := snowflake_id_internal.snowflake_managed_max_drift_ms() << cfg.sequence_bits;
    f bigint;
    cur bigint;
BEGIN
    LOOP
        f := snowflake_id_internal.snowflake_managed_floor(cfg.epoch, cfg.sequence_bits);
        cur := coalesce(pg_catalog.pg_sequence_last_value('snowflake_id_state.snowflake_managed_counter'::pg_catalog.regclass), 0);
        EXIT WHEN cur + extra - f - snowflake_id_internal.snowflake_managed_offset_now(f, cur, lim, cfg.epoch, cfg.sequence_bits) < lim;
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
CREATE FUNCTION snowflake_id_internal.snowflake_managed_raise(target bigint, take bigint, last bigint, ceiling bigint,
                                                             OUT base bigint, OUT got bigint)
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    counter constant regclass := 'snowflake_id_state.snowflake_managed_counter'::pg_catalog.regclass;
    generation constant regclass := 'snowflake_id_state.snowflake_managed_generation'::pg_catalog.regclass;
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
        LOCK TABLE snowflake_id_private.snowflake_managed_raise_lock IN SHARE UPDATE EXCLUSIVE MODE;
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
                PERFORM snowflake_id_internal.snowflake_managed_refuse_end();
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

REVOKE EXECUTE ON FUNCTION snowflake_id_internal.snowflake_managed_max_drift_ms(),
    snowflake_id_internal.snowflake_managed_floor(timestamptz, integer),
    snowflake_id_internal.snowflake_managed_compose(bigint, integer, integer, integer),
    snowflake_id_internal.snowflake_managed_refuse_standby(text), snowflake_id_internal.snowflake_managed_last(integer),
    snowflake_id_internal.snowflake_managed_refuse_end(),
    snowflake_id_internal.snowflake_managed_offset_now(bigint, bigint, bigint, timestamptz, integer),
    snowflake_id_internal.snowflake_managed_wait_lead(snowflake_id_private.snowflake_managed_config, bigint),
    snowflake_id_internal.snowflake_managed_raise(bigint, bigint, bigint, bigint) FROM PUBLIC;

-- ==== sql/managed/switch.sql ====
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
CREATE FUNCTION snowflake_id_internal.snowflake_managed_switch(worker_id integer, epoch timestamptz, worker_bits integer,
                                                              sequence_bits integer) RETURNS void
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $body$
BEGIN
    PERFORM snowflake_id_internal.snowflake_managed_state_ensure(epoch, worker_bits, sequence_bits);
    PERFORM snowflake_id_internal.snowflake_managed_switch_locked(worker_id, epoch, worker_bits, sequence_bits, false);
END
$body$;

-- The switch itself, under the raisers' lock. With only_unset it does
-- nothing unless no worker id is in force (the first draw after a restore,
-- which any role may make): a worker id the owner brought into force in the
-- meantime is never replaced by the restored one.
CREATE FUNCTION snowflake_id_internal.snowflake_managed_switch_locked(worker_id integer, epoch timestamptz, worker_bits integer,
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
    last bigint := snowflake_id_internal.snowflake_managed_last(worker_bits);
BEGIN
    counter := 'snowflake_id_state.snowflake_managed_counter'::pg_catalog.regclass;
    generation := 'snowflake_id_state.snowflake_managed_generation'::pg_catalog.regclass;
    BEGIN
        LOCK TABLE snowflake_id_private.snowflake_managed_raise_lock IN SHARE UPDATE EXCLUSIVE MODE;
        IF only_unset AND pg_catalog.pg_sequence_last_value('snowflake_id_private.snowflake_managed_worker'::pg_catalog.regclass) >= 0 THEN
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
        f := snowflake_id_internal.snowflake_managed_floor(epoch, sequence_bits);
        target := ((greatest(cur, f) >> sequence_bits) + 1) << sequence_bits;
        IF target > last THEN
            PERFORM snowflake_id_internal.snowflake_managed_refuse_end();
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
        PERFORM pg_catalog.setval('snowflake_id_state.snowflake_managed_layout'::pg_catalog.regclass,
            (pg_catalog.date_part('epoch', epoch) * 1000)::pg_catalog.int8 * 1024 + worker_bits * 32 + sequence_bits, true);
        PERFORM pg_catalog.setval('snowflake_id_private.snowflake_managed_worker'::pg_catalog.regclass, worker_id, true);
        PERFORM pg_catalog.nextval(generation);
        -- Roll the subtransaction back: it releases the table lock now.
        RAISE EXCEPTION USING ERRCODE = 'SFRAI';
    EXCEPTION WHEN SQLSTATE 'SFRAI' THEN
        NULL;
    END;
END
$body$;

REVOKE EXECUTE ON FUNCTION snowflake_id_internal.snowflake_managed_switch(integer, timestamptz, integer, integer),
    snowflake_id_internal.snowflake_managed_switch_locked(integer, timestamptz, integer, integer, boolean) FROM PUBLIC;

-- ==== sql/managed/draw.sql ====
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

-- The slow path: a draw that the inlined fast path could not keep (the
-- counter behind the clock, a raise in its way, a burst ahead of max_drift),
-- the refusals (standby, no worker id), and every draw after a restore
-- until the owner sets the worker id (`unbaked`: the fast path is not yet
-- built from the configuration).
CREATE FUNCTION snowflake_id_internal.snowflake_managed_draw(unbaked boolean) RETURNS bigint
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    counter regclass;
    generation regclass;
    cfg snowflake_id_private.snowflake_managed_config;
    lim bigint;
    last bigint;
    f bigint;
    v bigint;
    g1 bigint;
    g2 bigint;
BEGIN
    IF pg_catalog.pg_is_in_recovery() THEN
        PERFORM snowflake_id_internal.snowflake_managed_refuse_standby('snowflake_nextval()');
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
       AND pg_catalog.pg_sequence_last_value('snowflake_id_private.snowflake_managed_worker'::pg_catalog.regclass) < 0 THEN
        SELECT * INTO cfg FROM snowflake_id_private.snowflake_managed_config;
        IF FOUND AND cfg.worker_id IS NOT NULL
           AND snowflake_id_internal.snowflake_managed_state_ready(cfg.epoch, cfg.worker_bits, cfg.sequence_bits) THEN
            PERFORM snowflake_id_internal.snowflake_managed_switch_locked(cfg.worker_id, cfg.epoch, cfg.worker_bits,
                                                                         cfg.sequence_bits, true);
        END IF;
    END IF;
    -- The counter's schema exists once a worker id was set.
    IF pg_catalog.pg_sequence_last_value('snowflake_id_private.snowflake_managed_worker'::pg_catalog.regclass) >= 0 THEN
        counter := 'snowflake_id_state.snowflake_managed_counter'::pg_catalog.regclass;
        generation := 'snowflake_id_state.snowflake_managed_generation'::pg_catalog.regclass;
    END IF;
    LOOP
        -- The worker id and layout are read between the two reads of the
        -- generation, like the value: they change only while it is odd.
        g1 := CASE WHEN generation IS NOT NULL THEN pg_catalog.pg_sequence_last_value(generation) END;
        cfg := snowflake_id_internal.snowflake_managed_live();
        IF cfg.worker_id IS NULL OR generation IS NULL THEN
            RAISE EXCEPTION 'snowflake_id: no worker id is set for this database'
                USING ERRCODE = '55000',
                      DETAIL = 'The managed edition keeps its worker id in the database, set by the extension''s owner.',
                      HINT = CASE WHEN pg_catalog.current_setting('snowflake_id_managed.switch_at_commit', true) OPERATOR(pg_catalog.=) 'on'
                                  THEN 'The worker id set in this transaction comes into force when it commits: commit, then draw.'
                                  ELSE 'As the extension''s owner, run SELECT snowflake_id_internal.snowflake_set_worker_id(n); with n unique among the servers and databases issuing IDs together (0 to 1023 with the default layout).' END;
        END IF;
        lim := snowflake_id_internal.snowflake_managed_max_drift_ms() << cfg.sequence_bits;
        last := snowflake_id_internal.snowflake_managed_last(cfg.worker_bits);
        f := snowflake_id_internal.snowflake_managed_floor(cfg.epoch, cfg.sequence_bits);
        v := pg_catalog.nextval(counter);
        g2 := pg_catalog.pg_sequence_last_value(generation);
        IF v > last THEN
            -- Past the layout's end (the counter only gets here by nextval()
            -- from its last value: raises stop below it).
            PERFORM snowflake_id_internal.snowflake_managed_refuse_end();
        END IF;
        IF g1 = g2 AND g1 % 2 = 0 AND v >= f THEN
            IF v - f - snowflake_id_internal.snowflake_managed_offset_now(f, v, lim, cfg.epoch, cfg.sequence_bits) < lim THEN
                RETURN snowflake_id_internal.snowflake_managed_compose(v, cfg.worker_id, cfg.worker_bits, cfg.sequence_bits);
            END IF;
            PERFORM snowflake_id_internal.snowflake_managed_wait_lead(cfg, 0::pg_catalog.int8);
        ELSE
            PERFORM snowflake_id_internal.snowflake_managed_raise(f, 0::pg_catalog.int8, last, 0::pg_catalog.int8);
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
    RETURN snowflake_id_internal.snowflake_managed_draw(true::pg_catalog.bool);

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
CREATE FUNCTION snowflake_id_internal.snowflake_managed_bake(fast boolean) RETURNS void
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    cfg snowflake_id_private.snowflake_managed_config;
    live snowflake_id_private.snowflake_managed_config;
    body text;
    epoch_literal text;
    g bigint;
BEGIN
    SELECT * INTO cfg FROM snowflake_id_private.snowflake_managed_config;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    epoch_literal := pg_catalog.quote_literal(pg_catalog.to_char(cfg.epoch AT TIME ZONE 'UTC',
                                                                  'YYYY-MM-DD"T"HH24:MI:SS.US"+00"'));
    -- The server layout the decoders read (layout.sql), as literals.
    EXECUTE pg_catalog.format($f$CREATE OR REPLACE FUNCTION snowflake_id_internal.snowflake_managed_epoch() RETURNS timestamptz
        LANGUAGE sql IMMUTABLE PARALLEL SAFE RETURN %s::pg_catalog.timestamptz$f$, epoch_literal);
    EXECUTE pg_catalog.format($f$CREATE OR REPLACE FUNCTION snowflake_id_internal.snowflake_managed_worker_bits() RETURNS integer
        LANGUAGE sql IMMUTABLE PARALLEL SAFE RETURN %s$f$, cfg.worker_bits);
    EXECUTE pg_catalog.format($f$CREATE OR REPLACE FUNCTION snowflake_id_internal.snowflake_managed_sequence_bits() RETURNS integer
        LANGUAGE sql IMMUTABLE PARALLEL SAFE RETURN %s$f$, cfg.sequence_bits);
    IF NOT fast OR cfg.worker_id IS NULL THEN
        -- Until the owner sets a worker id, or after the configuration
        -- changed (a restore loads it before the counter's value), every
        -- call takes the slow path, until the commit of the owner's
        -- snowflake_set_worker_id bakes it.
        CREATE OR REPLACE FUNCTION @extschema@.snowflake_nextval() RETURNS bigint
            LANGUAGE sql VOLATILE PARALLEL UNSAFE
            RETURN snowflake_id_internal.snowflake_managed_draw(true::pg_catalog.bool);
        RETURN;
    END IF;
    -- The worker id and layout in force are the configuration's (at the
    -- commit of snowflake_set_worker_id, or after a restore).
    live := snowflake_id_internal.snowflake_managed_live();
    IF live.worker_id IS DISTINCT FROM cfg.worker_id OR live.epoch IS DISTINCT FROM cfg.epoch
       OR live.worker_bits IS DISTINCT FROM cfg.worker_bits OR live.sequence_bits IS DISTINCT FROM cfg.sequence_bits THEN
        PERFORM snowflake_id_internal.snowflake_managed_switch(cfg.worker_id, cfg.epoch, cfg.worker_bits, cfg.sequence_bits);
    END IF;
    g := pg_catalog.pg_sequence_last_value('snowflake_id_state.snowflake_managed_generation'::pg_catalog.regclass);
    body := $fast$
CREATE OR REPLACE FUNCTION @extschema@.snowflake_nextval() RETURNS bigint
    LANGUAGE sql VOLATILE PARALLEL UNSAFE
    RETURN CASE
        WHEN pg_catalog.pg_is_in_recovery() THEN snowflake_id_internal.snowflake_managed_draw(false::pg_catalog.bool)
        WHEN (LEAST(pg_catalog.pg_sequence_last_value('snowflake_id_state.snowflake_managed_generation'::pg_catalog.regclass),
                    %GLIMIT%::pg_catalog.int8)
              OPERATOR(pg_catalog./) 2::pg_catalog.int8)
             OPERATOR(pg_catalog.=)
             ((CASE WHEN ((((pg_catalog.nextval('snowflake_id_state.snowflake_managed_counter'::pg_catalog.regclass)
                             OPERATOR(pg_catalog.-)
                             (((pg_catalog.date_part('epoch'::pg_catalog.text, pg_catalog.clock_timestamp())
                                OPERATOR(pg_catalog.*) 1000::pg_catalog.float8)
                               OPERATOR(pg_catalog.-) %EPOCH_MS_HALF%::pg_catalog.float8)::pg_catalog.int8
                              OPERATOR(pg_catalog.<<) %K%))
                            OPERATOR(pg_catalog.-)
                            pg_catalog.pg_sequence_last_value('snowflake_id_state.snowflake_managed_offset'::pg_catalog.regclass))
                           OPERATOR(pg_catalog.+) %LIM%::pg_catalog.int8)
                          OPERATOR(pg_catalog./) %LIM%::pg_catalog.int8)
                         OPERATOR(pg_catalog.=) 1::pg_catalog.int8
                    THEN pg_catalog.pg_sequence_last_value('snowflake_id_state.snowflake_managed_generation'::pg_catalog.regclass)
               END
               OPERATOR(pg_catalog.+) 1::pg_catalog.int8)
              OPERATOR(pg_catalog./) 2::pg_catalog.int8)
        THEN ((pg_catalog.currval('snowflake_id_state.snowflake_managed_counter'::pg_catalog.regclass)
               OPERATOR(pg_catalog.>>) %K%) OPERATOR(pg_catalog.*) %MUL%::pg_catalog.int8)
             OPERATOR(pg_catalog.|)
             ((pg_catalog.currval('snowflake_id_state.snowflake_managed_counter'::pg_catalog.regclass)
               OPERATOR(pg_catalog.&) %MASK%::pg_catalog.int8)
              OPERATOR(pg_catalog.|) %WORKER%::pg_catalog.int8)
        ELSE snowflake_id_internal.snowflake_managed_draw(false::pg_catalog.bool)
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
    body := pg_catalog.replace(body, '%LIM%', (snowflake_id_internal.snowflake_managed_max_drift_ms() << cfg.sequence_bits)::text);
    body := pg_catalog.replace(body, '%MASK%', ((1::bigint << cfg.sequence_bits) - 1)::text);
    body := pg_catalog.replace(body, '%WORKER%', (cfg.worker_id::bigint << cfg.sequence_bits)::text);
    EXECUTE body;
END
$body$;

REVOKE EXECUTE ON FUNCTION snowflake_id_internal.snowflake_managed_bake(boolean) FROM PUBLIC;

-- ==== sql/managed/block.sql ====
-- n IDs in ascending order. Taken in chunks, each reserved by a raise that
-- keeps the counter within max_drift of the clock (waiting for the clock in
-- between, like single draws), so that blocks cannot push the lead past it
-- whatever their size or number.
CREATE FUNCTION snowflake_id_internal.snowflake_managed_block(n integer, what text) RETURNS bigint[]
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    cfg snowflake_id_private.snowflake_managed_config;
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
        PERFORM snowflake_id_internal.snowflake_managed_refuse_standby(what);
    END IF;
    <<whole>>
    LOOP
    cfg := snowflake_id_internal.snowflake_managed_live();
    IF cfg.worker_id IS NULL THEN
        -- The refusal without a worker id.
        PERFORM snowflake_id_internal.snowflake_managed_draw(false::pg_catalog.bool);
    END IF;
    -- The worker id's range of generations: a change while the block is
    -- reserved makes its values belong to no single worker id, so it starts
    -- again (the values reserved are burnt, never issued).
    g0 := pg_catalog.pg_sequence_last_value('snowflake_id_state.snowflake_managed_generation'::pg_catalog.regclass) >> 40;
    cfg := snowflake_id_internal.snowflake_managed_live();
    bases := '{}';
    gots := '{}';
    left_ := n;
    lim := snowflake_id_internal.snowflake_managed_max_drift_ms() << cfg.sequence_bits;
    last := snowflake_id_internal.snowflake_managed_last(cfg.worker_bits);
    WHILE left_ > 0 LOOP
        PERFORM snowflake_id_internal.snowflake_managed_wait_lead(cfg, 0::pg_catalog.int8);
        f := snowflake_id_internal.snowflake_managed_floor(cfg.epoch, cfg.sequence_bits);
        SELECT * INTO r FROM snowflake_id_internal.snowflake_managed_raise(f, left_, last,
            f + lim + coalesce(pg_catalog.pg_sequence_last_value('snowflake_id_state.snowflake_managed_offset'::pg_catalog.regclass), 0));
        IF r.got > 0 THEN
            bases := bases || r.base;
            gots := gots || r.got;
            left_ := left_ - r.got;
        ELSE
            PERFORM pg_catalog.pg_sleep(0.001);
        END IF;
    END LOOP;
    EXIT whole WHEN pg_catalog.pg_sequence_last_value('snowflake_id_state.snowflake_managed_generation'::pg_catalog.regclass) >> 40 = g0;
    END LOOP;
    RETURN ARRAY(SELECT snowflake_id_internal.snowflake_managed_compose(c, cfg.worker_id, cfg.worker_bits, cfg.sequence_bits)
                   FROM ROWS FROM (pg_catalog.unnest(bases), pg_catalog.unnest(gots)) AS k(b, g),
                        pg_catalog.generate_series(k.b + 1, k.b + k.g) AS c
                  ORDER BY c);
END
$body$;

CREATE FUNCTION snowflake_nextval_block(n integer) RETURNS SETOF bigint
    LANGUAGE sql VOLATILE STRICT PARALLEL RESTRICTED
    BEGIN ATOMIC
        SELECT pg_catalog.unnest(snowflake_id_internal.snowflake_managed_block(n, 'snowflake_nextval_block(integer)'));
    END;
COMMENT ON FUNCTION snowflake_nextval_block(integer) IS
    'n new IDs in ascending order, one row each (managed edition)';

CREATE FUNCTION snowflake_nextval_array(n integer) RETURNS bigint[]
    LANGUAGE sql VOLATILE STRICT PARALLEL RESTRICTED
    RETURN snowflake_id_internal.snowflake_managed_block(n, 'snowflake_nextval_array(integer)');
COMMENT ON FUNCTION snowflake_nextval_array(integer) IS
    'n new IDs in ascending order in one array (managed edition)';

-- ==== sql/managed/config.sql ====
-- The managed edition's configuration: what postgresql.conf holds for the
-- native edition (worker id, layout) is set here by the extension's owner,
-- kept in snowflake_managed_config (owner-only, dumped by pg_dump) and baked
-- as literals into the inlined fast path and the decoders' layout functions.
-- Nothing an ordinary role can SET changes which IDs are drawn.

-- The extension's owner (the owner of its configuration table, which is the
-- role that ran CREATE EXTENSION or the plain script) or a superuser
-- (pg_has_role counts superusers as members of every role); anyone else
-- gets 42501. The functions are also not executable by PUBLIC: this names
-- the rule for a role the owner granted EXECUTE to by mistake.
CREATE FUNCTION snowflake_id_internal.snowflake_managed_require_owner(what text) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    owner pg_catalog.oid := (SELECT c.relowner FROM pg_catalog.pg_class c
                              WHERE c.oid = 'snowflake_id_private.snowflake_managed_config'::pg_catalog.regclass);
BEGIN
    IF NOT pg_catalog.pg_has_role(current_user, owner, 'MEMBER') THEN
        RAISE EXCEPTION 'permission denied for function %', what
            USING ERRCODE = '42501',
                  DETAIL = pg_catalog.format('It changes which IDs every role of this database gets; only the extension''s owner (%s) may.',
                                             pg_catalog.quote_ident(owner::pg_catalog.regrole::pg_catalog.text)),
                  HINT = 'Run it as the role that created the extension (on a managed service, its admin role).';
    END IF;
END
$body$;

-- Bakes the decoders' layout functions again whenever the configuration
-- changes, including when pg_restore loads it into a new database, and
-- leaves the fast path unbuilt (a restore loads the counter's value after
-- the configuration; the first draw brings the restored worker id into
-- force, and the owner's snowflake_set_worker_id builds the fast path).
CREATE FUNCTION snowflake_id_internal.snowflake_managed_config_changed() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $body$
BEGIN
    PERFORM snowflake_id_internal.snowflake_managed_bake(false::pg_catalog.bool);
    RETURN NULL;
END
$body$;
CREATE TRIGGER snowflake_managed_config_changed AFTER INSERT OR UPDATE ON snowflake_id_private.snowflake_managed_config
    FOR EACH ROW EXECUTE FUNCTION snowflake_id_internal.snowflake_managed_config_changed();

-- At the commit of a transaction that ran snowflake_set_worker_id (a
-- deferred trigger fires as the transaction commits, never when it rolls
-- back): the worker id comes into force (snowflake_managed_bake switches to
-- the configuration) and the fast path is built for it. Only after
-- snowflake_set_worker_id (its transaction-local mark): a restore's load of
-- the configuration leaves the switch to the first draw, after the
-- counter's value is loaded.
CREATE FUNCTION snowflake_id_internal.snowflake_managed_config_commit() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $body$
BEGIN
    IF pg_catalog.current_setting('snowflake_id_managed.switch_at_commit', true) OPERATOR(pg_catalog.=) 'on' THEN
        PERFORM pg_catalog.set_config('snowflake_id_managed.switch_at_commit', 'off', true);
        PERFORM snowflake_id_internal.snowflake_managed_bake(true::pg_catalog.bool);
    END IF;
    RETURN NULL;
END
$body$;
CREATE CONSTRAINT TRIGGER snowflake_managed_config_commit AFTER INSERT OR UPDATE ON snowflake_id_private.snowflake_managed_config
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION snowflake_id_internal.snowflake_managed_config_commit();

-- A reinstall (DROP and CREATE EXTENSION, or the plain script run again
-- after its uninstall) finds the counter of the earlier install and the
-- layout it counts in: that layout is this install's from the start, so
-- that stored IDs decode as they did (the decoders' layout functions are
-- baked from it by the trigger above), and the owner sets only the worker
-- id again. Not during a restore: its dump brings the configuration.
DO $seed$
DECLARE
    l bigint := pg_catalog.pg_sequence_last_value(pg_catalog.to_regclass('snowflake_id_state.snowflake_managed_layout'));
    m bigint := ((l % 1024) + 1024) % 1024;
BEGIN
    IF l IS NOT NULL AND NOT EXISTS (SELECT FROM snowflake_id_private.snowflake_managed_config) THEN
        INSERT INTO snowflake_id_private.snowflake_managed_config (epoch, worker_bits, sequence_bits)
            VALUES (pg_catalog.to_timestamp(((l - m) / 1024)::pg_catalog.float8 / 1000::pg_catalog.float8),
                    (m / 32)::integer, (m % 32)::integer);
    END IF;
END
$seed$;

-- This database's worker id: unique among every server and database that
-- issues IDs for the same tables (native servers included). May change at
-- any time: every ID of the new worker id is in a later millisecond than
-- every ID returned before (snowflake_managed_switch), so no ID is ever
-- smaller than one returned before it; IDs stay unique only if no other
-- issuer has the new one. Takes effect when the calling transaction
-- commits (for running statements too), and not at all if it rolls back:
-- until then every draw, the caller's included, uses the worker id in
-- force before.
CREATE FUNCTION snowflake_id_internal.snowflake_set_worker_id(worker_id integer) RETURNS void
    LANGUAGE plpgsql VOLATILE STRICT
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    cfg snowflake_id_private.snowflake_managed_config;
    written bigint;
BEGIN
    PERFORM snowflake_id_internal.snowflake_managed_require_owner('snowflake_set_worker_id');
    SELECT * INTO cfg FROM snowflake_id_private.snowflake_managed_config c FOR UPDATE;
    IF NOT FOUND THEN
        cfg := ROW(true, NULL, '2025-01-01 00:00:00+00', 10, 12, NULL, NULL)::snowflake_id_private.snowflake_managed_config;
    END IF;
    IF worker_id < 0 OR worker_id >= (1 << cfg.worker_bits) THEN
        RAISE EXCEPTION 'snowflake_id: worker id % is out of range for % worker bits', worker_id, cfg.worker_bits
            USING ERRCODE = '22023',
                  HINT = pg_catalog.format('Give a worker id from 0 to %s, unique among the servers issuing IDs together.',
                                           (1 << cfg.worker_bits) - 1);
    END IF;
    -- Checked now (the counter's schema, its owner, its layout), so that a
    -- refusal comes from this call; the switch itself waits for the commit
    -- (snowflake_managed_config_commit): the sequences it sets are not
    -- transactional, and a worker id whose transaction rolled back stayed
    -- in force, unseen by the configuration, with every draw on the slow
    -- path from then on.
    PERFORM snowflake_id_internal.snowflake_managed_state_ensure(cfg.epoch, cfg.worker_bits, cfg.sequence_bits);
    -- Marked before the write below fires the trigger (at once under SET
    -- CONSTRAINTS ... IMMEDIATE, which brings the change into force at
    -- once, as before, and status names it if it is then rolled back).
    PERFORM pg_catalog.set_config('snowflake_id_managed.switch_at_commit', 'on', true);
    -- Written first, and only over the layout read above (a layout set by a
    -- transaction that committed after that read had no row to lock), so
    -- that the switch at commit brings the layout that is stored into force.
    INSERT INTO snowflake_id_private.snowflake_managed_config AS c (worker_id, epoch, worker_bits, sequence_bits, set_in, set_on)
        VALUES (worker_id, cfg.epoch, cfg.worker_bits, cfg.sequence_bits,
                (SELECT d.oid FROM pg_catalog.pg_database d WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database()),
                snowflake_id_internal.snowflake_managed_system_id())
        ON CONFLICT (one) DO UPDATE SET worker_id = excluded.worker_id, set_in = excluded.set_in, set_on = excluded.set_on
        WHERE c.epoch = excluded.epoch AND c.worker_bits = excluded.worker_bits AND c.sequence_bits = excluded.sequence_bits;
    GET DIAGNOSTICS written = ROW_COUNT;
    IF written = 0 THEN
        RAISE EXCEPTION 'snowflake_id: the layout changed while the worker id was being set'
            USING ERRCODE = '40001', HINT = 'Run snowflake_set_worker_id again.';
    END IF;
END
$body$;
COMMENT ON FUNCTION snowflake_id_internal.snowflake_set_worker_id(integer) IS
    'sets this database''s worker id (managed edition; the extension''s owner only)';

-- The layout, only while no worker id is set: what an ID decodes to must not
-- change (invariant 6), and no draw succeeds without a worker id, so none
-- can have read the old layout and issue with it after the change (a rule
-- on "has the counter moved" would race a first draw, and any role with
-- USAGE on the counter could move it). Same checks as the native settings.
CREATE FUNCTION snowflake_id_internal.snowflake_set_layout(epoch timestamptz, worker_bits integer, sequence_bits integer) RETURNS void
    LANGUAGE plpgsql VOLATILE STRICT
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    worker integer;
    reach_ms numeric;
    written bigint;
BEGIN
    PERFORM snowflake_id_internal.snowflake_managed_require_owner('snowflake_set_layout');
    -- The row, locked to the end of the transaction: snowflake_set_worker_id
    -- waits for this change (and then checks the new layout's range).
    worker := (SELECT c.worker_id FROM snowflake_id_private.snowflake_managed_config c FOR UPDATE);
    IF worker IS NOT NULL THEN
        RAISE EXCEPTION 'snowflake_id: the layout cannot change once a worker id is set'
            USING ERRCODE = '55000',
                  DETAIL = pg_catalog.format('Worker id %s is set: IDs may have been issued, and stored IDs decode with the layout they were made with.', worker),
                  HINT = 'Set the layout before the worker id (in a new database: snowflake_set_layout, then snowflake_set_worker_id); to decode IDs of another layout, use the decoders that take a layout.';
    END IF;
    IF worker_bits < 0 OR sequence_bits < 0 OR worker_bits + sequence_bits > 22 THEN
        RAISE EXCEPTION 'snowflake_id: worker_bits % and sequence_bits % are not a layout', worker_bits, sequence_bits
            USING ERRCODE = '22023', HINT = 'Both at least 0, together at most 22 (the default is 10 and 12).';
    END IF;
    IF pg_catalog.date_part('microseconds', epoch)::pg_catalog.int8 % 1000 <> 0 THEN
        -- As the native snowflake_id.epoch: the timestamp field counts whole
        -- milliseconds from the epoch.
        RAISE EXCEPTION 'snowflake_id: epoch % is not a whole millisecond', epoch
            USING ERRCODE = '22023', HINT = 'Give the epoch in whole milliseconds, such as ''2025-01-01 00:00:00+00'' (the default).';
    END IF;
    IF epoch > pg_catalog.now() OR pg_catalog.isfinite(epoch) IS NOT TRUE THEN
        RAISE EXCEPTION 'snowflake_id: epoch % is not a past instant', epoch
            USING ERRCODE = '22023', HINT = 'Give an instant before now, such as ''2025-01-01 00:00:00+00'' (the default).';
    END IF;
    reach_ms := pg_catalog.power(2::numeric, 63 - worker_bits - sequence_bits);
    IF (pg_catalog.date_part('epoch', pg_catalog.now()) - pg_catalog.date_part('epoch', epoch)) * 1000 >= reach_ms THEN
        RAISE EXCEPTION 'snowflake_id: the timestamp bits of this layout cannot reach past today from epoch %', epoch
            USING ERRCODE = '22023', HINT = 'Give a later epoch or fewer worker and sequence bits.';
    END IF;
    -- Not over a counter that counts in another layout (a reinstall's, whose
    -- layout the install took over): the decoders would be baked for this
    -- one and decode the stored IDs wrongly.
    PERFORM snowflake_id_internal.snowflake_managed_check_layout(epoch, worker_bits, sequence_bits);
    -- Checked again on the row as it is when written: a worker id set by a
    -- transaction that committed after the check above (its row was not
    -- there to lock) wins, and this change is refused.
    INSERT INTO snowflake_id_private.snowflake_managed_config AS c (epoch, worker_bits, sequence_bits)
        VALUES (epoch, worker_bits, sequence_bits)
        ON CONFLICT (one) DO UPDATE SET epoch = excluded.epoch, worker_bits = excluded.worker_bits,
                                        sequence_bits = excluded.sequence_bits
        WHERE c.worker_id IS NULL;
    GET DIAGNOSTICS written = ROW_COUNT;
    IF written = 0 THEN
        RAISE EXCEPTION 'snowflake_id: the layout cannot change once a worker id is set'
            USING ERRCODE = '55000',
                  DETAIL = 'A worker id was set while this layout change ran: IDs may have been issued since.',
                  HINT = 'Set the layout before the worker id (in a new database: snowflake_set_layout, then snowflake_set_worker_id); to decode IDs of another layout, use the decoders that take a layout.';
    END IF;
END
$body$;
COMMENT ON FUNCTION snowflake_id_internal.snowflake_set_layout(timestamptz, integer, integer) IS
    'sets the epoch and bit split of this database''s IDs, before the first one (managed edition; the extension''s owner only)';

-- Moves the counter past `id`: every later ID is greater (IDs restored from
-- a dump of another database or edition). Past its whole millisecond, since
-- an ID of another worker id in that millisecond may be above ours. More than
-- a day ahead of the clock only with force: a move cannot be taken back.
-- Returns the smallest ID the next call may return.
CREATE FUNCTION snowflake_id_internal.snowflake_advance_past(id bigint, force boolean DEFAULT false) RETURNS bigint
    LANGUAGE plpgsql VOLATILE STRICT
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    cfg snowflake_id_private.snowflake_managed_config;
    tick bigint;
    target bigint;
    f bigint;
    off bigint;
BEGIN
    PERFORM snowflake_id_internal.snowflake_managed_require_owner('snowflake_advance_past');
    IF pg_catalog.pg_is_in_recovery() THEN
        PERFORM snowflake_id_internal.snowflake_managed_refuse_standby('snowflake_advance_past()');
    END IF;
    cfg := snowflake_id_internal.snowflake_managed_live();
    IF cfg.worker_id IS NULL THEN
        -- The refusal of a draw without a worker id.
        PERFORM snowflake_id_internal.snowflake_managed_draw(false::pg_catalog.bool);
    END IF;
    IF id < 0 THEN
        RAISE EXCEPTION 'snowflake_id: % is not an ID (negative)', id
            USING ERRCODE = '22003', HINT = 'IDs are positive bigints.';
    END IF;
    tick := id >> (cfg.worker_bits + cfg.sequence_bits);
    IF NOT force AND cfg.epoch + pg_catalog.make_interval(secs => tick / 1000.0) > pg_catalog.clock_timestamp() + interval '1 day' THEN
        RAISE EXCEPTION 'snowflake_id: ID % decodes to %, more than a day ahead of the clock', id,
                        cfg.epoch + pg_catalog.make_interval(secs => tick / 1000.0)
            USING ERRCODE = '22023',
                  DETAIL = 'A move cannot be taken back: every later ID of this database would decode to that instant or later.',
                  HINT = pg_catalog.format('Check the ID. If it is right (IDs copied from a server whose clock ran ahead), run SELECT snowflake_advance_past(%s, force => true);', id);
    END IF;
    IF tick >= snowflake_id_internal.snowflake_managed_last(cfg.worker_bits) >> cfg.sequence_bits THEN
        -- Past the layout's last millisecond there is no next one.
        PERFORM snowflake_id_internal.snowflake_managed_refuse_end();
    END IF;
    target := (tick + 1) << cfg.sequence_bits;
    PERFORM snowflake_id_internal.snowflake_managed_raise(target, 0::pg_catalog.int8,
                                                         snowflake_id_internal.snowflake_managed_last(cfg.worker_bits),
                                                         0::pg_catalog.int8);
    -- The whole lead this leaves is the offset, not a burst: no wait for it
    -- (snowflake_managed_offset).
    f := snowflake_id_internal.snowflake_managed_floor(cfg.epoch, cfg.sequence_bits);
    off := greatest(pg_catalog.pg_sequence_last_value('snowflake_id_state.snowflake_managed_counter'::pg_catalog.regclass) - f, 0);
    PERFORM pg_catalog.setval('snowflake_id_state.snowflake_managed_offset'::pg_catalog.regclass, off, true);
    PERFORM pg_catalog.setval('snowflake_id_private.snowflake_managed_reference'::pg_catalog.regclass, f + off, true);
    RETURN snowflake_id_internal.snowflake_managed_compose(
        pg_catalog.pg_sequence_last_value('snowflake_id_state.snowflake_managed_counter'::pg_catalog.regclass) + 1,
        cfg.worker_id, cfg.worker_bits, cfg.sequence_bits);
END
$body$;
COMMENT ON FUNCTION snowflake_id_internal.snowflake_advance_past(bigint, boolean) IS
    'moves the generator past an ID: every later ID is greater (managed edition; the extension''s owner only)';

REVOKE EXECUTE ON FUNCTION snowflake_id_internal.snowflake_managed_require_owner(text), snowflake_id_internal.snowflake_managed_config_changed(),
    snowflake_id_internal.snowflake_managed_config_commit(),
    snowflake_id_internal.snowflake_set_worker_id(integer), snowflake_id_internal.snowflake_set_layout(timestamptz, integer, integer),
    snowflake_id_internal.snowflake_advance_past(bigint, boolean) FROM PUBLIC;

-- The same three in the extension's schema, where applications and the
-- native edition have them. They call the ones above, bound when created.
-- Another role that can create in the extension's schema can put a
-- look-alike beside them after the install (an untyped literal that
-- prefers text, or one more argument with a default), which an unqualified
-- call would reach or find "not unique": docs/managed.md gives the owner
-- the calls qualified with snowflake_id_internal, where only the owner
-- creates.
CREATE FUNCTION snowflake_set_worker_id(worker_id integer) RETURNS void
    LANGUAGE sql VOLATILE STRICT
    BEGIN ATOMIC
        SELECT snowflake_id_internal.snowflake_set_worker_id(worker_id);
    END;
COMMENT ON FUNCTION snowflake_set_worker_id(integer) IS
    'sets this database''s worker id (managed edition; the extension''s owner only)';
CREATE FUNCTION snowflake_set_layout(epoch timestamptz, worker_bits integer, sequence_bits integer) RETURNS void
    LANGUAGE sql VOLATILE STRICT
    BEGIN ATOMIC
        SELECT snowflake_id_internal.snowflake_set_layout(epoch, worker_bits, sequence_bits);
    END;
COMMENT ON FUNCTION snowflake_set_layout(timestamptz, integer, integer) IS
    'sets the epoch and bit split of this database''s IDs, before the first one (managed edition; the extension''s owner only)';
CREATE FUNCTION snowflake_advance_past(id bigint, force boolean DEFAULT false) RETURNS bigint
    LANGUAGE sql VOLATILE STRICT
    RETURN snowflake_id_internal.snowflake_advance_past(id, force);
COMMENT ON FUNCTION snowflake_advance_past(bigint, boolean) IS
    'moves the generator past an ID: every later ID is greater (managed edition; the extension''s owner only)';
REVOKE EXECUTE ON FUNCTION snowflake_set_worker_id(integer), snowflake_set_layout(timestamptz, integer, integer),
    snowflake_advance_past(bigint, boolean) FROM PUBLIC;

-- ==== sql/managed/accessors.sql ====
-- The managed edition's accessors: what the native edition implements in
-- Rust (src/api/functions.rs over core/src/layout.rs), as SQL the planner
-- inlines, with the native results and errors for every input
-- (tests/managed_decode.rs compares the two editions).
--
-- Every body is one SQL expression without a subquery, so that the planner
-- puts it in place of the call; with the layout known (the server-layout
-- forms read it from the IMMUTABLE literal functions of layout.sql, and an
-- index or partition key gives constants) it folds everything derived from
-- the layout into constants, and what is left per row is a shift, a mask and
-- a comparison or two. SQL-standard bodies, parsed once at CREATE with the
-- install's search_path, so they name snowflake_id_internal and pg_catalog
-- for every function, operator and type, with exact argument types, and
-- never call a function of the extension's schema: nothing another role
-- creates later, there or anywhere, is ever called in their place.
--
-- Not STRICT, unlike the native functions, and this is the one label that
-- differs: PostgreSQL inlines a STRICT SQL function only if its body is
-- made of strict constructs alone, and a CASE is not one, yet a CASE is the
-- only way an expression can raise an error for some rows and not others.
-- The first arm of each CASE gives NULL when any argument is NULL, before
-- any check, so the results are a STRICT function's (NULL in, NULL out,
-- never an error). Errors come from small PL/pgSQL functions called only in
-- the arm that raises; they are IMMUTABLE (an IMMUTABLE body may call
-- nothing less, or it is not inlined) and each takes the values its arm's
-- condition tests, so that the planner never folds a raise whose condition
-- it cannot decide into a plan-time error.

-- The helpers live in snowflake_id_internal (schemas.sql: only the owner
-- creates there): the PL/pgSQL ones call each other by name when they run,
-- and a look-alike with a defaulted argument beside them in the extension's
-- schema (public, often) would make those calls "not unique". So are the
-- three layout functions (layout.sql) and the implementations of the
-- accessors, below.

-- Errors, worded as the native edition's (src/refusal.rs, core/src/error.rs).
-- The first argument only carries the type of the arm that calls them; the
-- others are all the arguments of the function whose arm calls them, even
-- those the message does not need: the planner evaluates a call whose
-- arguments are all constants when it plans, and an arm's call must not be
-- evaluated before the earlier arms' conditions (a NULL ID with a constant
-- bad layout is NULL, not an error).
CREATE FUNCTION snowflake_id_internal.snowflake_managed_layout_refusal(result anyelement, id bigint, epoch timestamptz, worker_bits integer,
                                                 sequence_bits integer) RETURNS anyelement
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION USING
        ERRCODE = '22023',
        MESSAGE = pg_catalog.format('snowflake_id: worker_bits (%s) + sequence_bits (%s) must be at most 22, each between 0 and 22',
                                    worker_bits, sequence_bits),
        HINT = 'worker_bits and sequence_bits must each be 0..22 with a sum of at most 22.';
END
$$;

CREATE FUNCTION snowflake_id_internal.snowflake_managed_negative_refusal(result anyelement, id bigint, epoch timestamptz, worker_bits integer,
                                                   sequence_bits integer) RETURNS anyelement
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION USING
        ERRCODE = '22003',
        MESSAGE = pg_catalog.format('snowflake_id: snowflake ID %s is negative', id),
        HINT = 'Snowflake IDs always have the sign bit 0; a negative bigint was not made by a snowflake generator.';
END
$$;

-- An ID whose instant, the epoch's Unix ms + the tick, PostgreSQL cannot
-- hold. The native edition adds with saturation and names the sum.
CREATE FUNCTION snowflake_id_internal.snowflake_managed_time_refusal(result anyelement, id bigint, epoch timestamptz, worker_bits integer,
                                               sequence_bits integer) RETURNS anyelement
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION USING
        ERRCODE = '22008',
        MESSAGE = pg_catalog.format('snowflake_id: timestamp out of range: %s ms after 1970',
                                    LEAST(snowflake_id_internal.snowflake_managed_unix_ms(epoch)::numeric
                                          + (id >> (worker_bits + sequence_bits))::numeric,
                                          9223372036854775807::numeric)),
        HINT = 'The epoch given to snowflake_decode() puts this ID outside PostgreSQL''s timestamp range.';
END
$$;

CREATE FUNCTION snowflake_id_internal.snowflake_managed_infinity_refusal(result anyelement, ts timestamptz) RETURNS anyelement
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION USING
        ERRCODE = '22008',
        MESSAGE = 'snowflake_id: timestamp infinity has no ID',
        HINT = 'For an open-ended partition bound write MAXVALUE; for a range, leave the upper bound out.';
END
$$;

-- Unix milliseconds as the native edition writes them in messages (chrono's
-- RFC 3339 with milliseconds: 2094-09-07T15:47:35.551Z, +10000-01-01T...
-- past year 9999, and the bare number past chrono's last year, 262142).
CREATE FUNCTION snowflake_id_internal.snowflake_managed_format_ms(unix_ms bigint) RETURNS text
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- 262143-01-01T00:00:00Z (past chrono's last year, 262142) and 0001-01-01T00:00:00Z in Unix ms: outside
    -- them, the bare number (years before 1 never reach a message here:
    -- only instants past a layout's end, after today, are written).
    IF unix_ms >= 8210266876800000 OR unix_ms < -62135596800000 THEN
        RETURN unix_ms::text || ' ms after 1970';
    END IF;
    RETURN CASE WHEN unix_ms >= 253402300800000 THEN '+' ELSE '' END
           || to_char(snowflake_id_internal.snowflake_managed_timestamptz_of(unix_ms) AT TIME ZONE 'UTC',
                      'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');
END
$$;

-- An instant past the layout's end (snowflake_from_timestamp).
CREATE FUNCTION snowflake_id_internal.snowflake_managed_past_end_refusal(result anyelement, unix_ms bigint, epoch_ms bigint,
                                                   node_bits integer) RETURNS anyelement
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION USING
        ERRCODE = '22008',
        MESSAGE = pg_catalog.format('snowflake_id: timestamp %s is past the last one this layout can encode (%s)',
                                    snowflake_id_internal.snowflake_managed_format_ms(unix_ms),
                                    snowflake_id_internal.snowflake_managed_format_ms(LEAST(
                                        epoch_ms::numeric + (9223372036854775807 >> node_bits)::numeric,
                                        9223372036854775807::numeric)::bigint)),
        HINT = 'Instants past the layout''s end have no ID; a later snowflake_id.epoch moves the end.';
END
$$;

-- Every error of snowflake_id_span, in the native edition's order: months,
-- then a span that is not whole milliseconds (or overflows microseconds),
-- then one outside 1 ms .. the layout's last tick. Called only when the
-- inlined test of a valid span fails; a valid span gets its value here too.
CREATE FUNCTION snowflake_id_internal.snowflake_managed_span_refusal(result anyelement, span interval, worker_bits integer,
                                               sequence_bits integer) RETURNS anyelement
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    months numeric;
    days numeric;
    micros numeric;
    ms bigint;
    max_tick bigint := 9223372036854775807 >> (worker_bits + sequence_bits);
BEGIN
    IF NOT pg_catalog.isfinite(span) THEN
        -- An infinite interval (17 and later) holds the extreme month count.
        months := CASE WHEN span > interval '0' THEN 2147483647 ELSE -2147483648 END;
    ELSE
        months := EXTRACT(year FROM span) * 12 + EXTRACT(month FROM span);
    END IF;
    IF months <> 0 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = pg_catalog.format('snowflake_id: a span of months has no fixed number of IDs: %s months', months),
            HINT = 'Give the span in days or smaller units; bound calendar months with snowflake_from_timestamp().';
    END IF;
    days := EXTRACT(day FROM span);
    micros := EXTRACT(epoch FROM span) * 1000000;
    IF days * 86400000000 NOT BETWEEN -9223372036854775808 AND 9223372036854775807
       OR micros NOT BETWEEN -9223372036854775808 AND 9223372036854775807
       OR pg_catalog.mod(micros, 1000) <> 0 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = 'snowflake_id: the span is not a whole number of milliseconds',
            HINT = 'IDs count milliseconds; give a span such as ''1 day'' or ''15 minutes''.';
    END IF;
    ms := pg_catalog.div(micros, 1000);
    IF ms <= 0 OR ms > max_tick THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = pg_catalog.format('snowflake_id: a span of %s ms is not between 1 ms and the layout''s %s ms',
                                        ms, max_tick),
            HINT = 'Give a positive span such as ''1 day'', shorter than the layout''s whole range.';
    END IF;
    RETURN (ms << (worker_bits + sequence_bits));
END
$$;

-- An instant as the native edition reads one: Unix milliseconds, rounded
-- down (the epoch's microseconds are dropped), infinity as the extreme
-- microsecond counts divided the same way. Exact: numeric, not float.
CREATE FUNCTION snowflake_id_internal.snowflake_managed_unix_ms(ts timestamptz) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE
        WHEN ts OPERATOR(pg_catalog.=) 'infinity'::pg_catalog.timestamptz THEN 9224318721654775::bigint
        WHEN ts OPERATOR(pg_catalog.=) '-infinity'::pg_catalog.timestamptz THEN (-9222425352054776)::bigint
        ELSE (pg_catalog.floor(EXTRACT(epoch FROM ts OPERATOR(pg_catalog.-) '2000-01-01 00:00:00+00'::pg_catalog.timestamptz)
                               OPERATOR(pg_catalog.*) 1000::numeric))::bigint
             OPERATOR(pg_catalog.+) 946684800000::bigint
    END;

-- Unix milliseconds (within PostgreSQL's range) as a timestamptz, exactly:
-- counted from 2000-01-01 (PostgreSQL's zero, so that the microseconds of
-- the last instants still fit a bigint), as two products of an interval and
-- a number below 2^53, so no float rounding; timestamp arithmetic and a
-- zero offset, which are IMMUTABLE where timestamptz + interval is not.
CREATE FUNCTION snowflake_id_internal.snowflake_managed_timestamptz_of(unix_ms bigint) RETURNS timestamptz
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN pg_catalog.timezone('00:00'::pg_catalog.interval,
        ('2000-01-01 00:00:00'::pg_catalog.timestamp
         OPERATOR(pg_catalog.+) ('1 millisecond'::pg_catalog.interval
                                 OPERATOR(pg_catalog.*) ((unix_ms OPERATOR(pg_catalog.-) 946684800000::bigint)
                                                         OPERATOR(pg_catalog.&) 4294967295::bigint)::pg_catalog.float8))
        OPERATOR(pg_catalog.+) ('4294967296 milliseconds'::pg_catalog.interval
                                OPERATOR(pg_catalog.*) ((unix_ms OPERATOR(pg_catalog.-) 946684800000::bigint)
                                                        OPERATOR(pg_catalog.>>) 32)::pg_catalog.float8));

-- The implementations, in snowflake_id_internal (only the owner creates
-- there): the decoders of sql/install/decode.sql, shared with the native
-- edition, call these by exact signature, so that a look-alike planted in
-- the extension's schema cannot make their bodies "not unique" when
-- pg_dump or pg_upgrade creates them again from their text. The functions
-- in the extension's schema (below) are entry points calling these.
--
-- The explicit-layout forms: IMMUTABLE, for expression indexes, generated
-- columns and partition keys. Checks in the native order: the layout, then
-- the sign, then the instant.
CREATE FUNCTION snowflake_id_internal.snowflake_timestamp(id bigint, epoch timestamptz, worker_bits integer, sequence_bits integer)
    RETURNS timestamptz
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE
        WHEN id IS NULL OR epoch IS NULL OR worker_bits IS NULL OR sequence_bits IS NULL THEN NULL::pg_catalog.timestamptz
        WHEN worker_bits OPERATOR(pg_catalog.<) 0 OR worker_bits OPERATOR(pg_catalog.>) 22
             OR sequence_bits OPERATOR(pg_catalog.<) 0 OR sequence_bits OPERATOR(pg_catalog.>) 22
             OR (worker_bits OPERATOR(pg_catalog.+) sequence_bits) OPERATOR(pg_catalog.>) 22
            THEN snowflake_id_internal.snowflake_managed_layout_refusal(NULL::pg_catalog.timestamptz, id, epoch, worker_bits, sequence_bits)
        WHEN id OPERATOR(pg_catalog.<) 0::bigint
            THEN snowflake_id_internal.snowflake_managed_negative_refusal(NULL::pg_catalog.timestamptz, id, epoch, worker_bits, sequence_bits)
        -- PostgreSQL's range, -210866803200000 .. 9224318016000000 (excluded)
        -- in Unix ms, as bounds on the tick: no addition that can overflow.
        WHEN (id OPERATOR(pg_catalog.>>) (worker_bits OPERATOR(pg_catalog.+) sequence_bits))
                 OPERATOR(pg_catalog.>=) (9224318016000000::bigint OPERATOR(pg_catalog.-) snowflake_id_internal.snowflake_managed_unix_ms(epoch))
             OR (id OPERATOR(pg_catalog.>>) (worker_bits OPERATOR(pg_catalog.+) sequence_bits))
                 OPERATOR(pg_catalog.<) ((-210866803200000)::bigint OPERATOR(pg_catalog.-) snowflake_id_internal.snowflake_managed_unix_ms(epoch))
            THEN snowflake_id_internal.snowflake_managed_time_refusal(NULL::pg_catalog.timestamptz, id, epoch, worker_bits, sequence_bits)
        ELSE snowflake_id_internal.snowflake_managed_timestamptz_of(snowflake_id_internal.snowflake_managed_unix_ms(epoch)
                 OPERATOR(pg_catalog.+) (id OPERATOR(pg_catalog.>>) (worker_bits OPERATOR(pg_catalog.+) sequence_bits)))
    END;

CREATE FUNCTION snowflake_id_internal.snowflake_worker_id(id bigint, epoch timestamptz, worker_bits integer, sequence_bits integer)
    RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE
        WHEN id IS NULL OR epoch IS NULL OR worker_bits IS NULL OR sequence_bits IS NULL THEN NULL::integer
        WHEN worker_bits OPERATOR(pg_catalog.<) 0 OR worker_bits OPERATOR(pg_catalog.>) 22
             OR sequence_bits OPERATOR(pg_catalog.<) 0 OR sequence_bits OPERATOR(pg_catalog.>) 22
             OR (worker_bits OPERATOR(pg_catalog.+) sequence_bits) OPERATOR(pg_catalog.>) 22
            THEN snowflake_id_internal.snowflake_managed_layout_refusal(NULL::integer, id, epoch, worker_bits, sequence_bits)
        WHEN id OPERATOR(pg_catalog.<) 0::bigint
            THEN snowflake_id_internal.snowflake_managed_negative_refusal(NULL::integer, id, epoch, worker_bits, sequence_bits)
        ELSE ((id OPERATOR(pg_catalog.>>) sequence_bits)
              OPERATOR(pg_catalog.&) ((1::bigint OPERATOR(pg_catalog.<<) worker_bits) OPERATOR(pg_catalog.-) 1::bigint))::integer
    END;

CREATE FUNCTION snowflake_id_internal.snowflake_sequence(id bigint, epoch timestamptz, worker_bits integer, sequence_bits integer)
    RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE
        WHEN id IS NULL OR epoch IS NULL OR worker_bits IS NULL OR sequence_bits IS NULL THEN NULL::integer
        WHEN worker_bits OPERATOR(pg_catalog.<) 0 OR worker_bits OPERATOR(pg_catalog.>) 22
             OR sequence_bits OPERATOR(pg_catalog.<) 0 OR sequence_bits OPERATOR(pg_catalog.>) 22
             OR (worker_bits OPERATOR(pg_catalog.+) sequence_bits) OPERATOR(pg_catalog.>) 22
            THEN snowflake_id_internal.snowflake_managed_layout_refusal(NULL::integer, id, epoch, worker_bits, sequence_bits)
        WHEN id OPERATOR(pg_catalog.<) 0::bigint
            THEN snowflake_id_internal.snowflake_managed_negative_refusal(NULL::integer, id, epoch, worker_bits, sequence_bits)
        ELSE (id OPERATOR(pg_catalog.&) ((1::bigint OPERATOR(pg_catalog.<<) sequence_bits) OPERATOR(pg_catalog.-) 1::bigint))::integer
    END;

-- The server-layout forms: the explicit ones with this database's layout.
-- STABLE as in the native edition (there a restart may change the layout;
-- here snowflake_set_layout may, before the first ID).
CREATE FUNCTION snowflake_id_internal.snowflake_timestamp(id bigint) RETURNS timestamptz
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN snowflake_id_internal.snowflake_timestamp(id, snowflake_id_internal.snowflake_managed_epoch(),
                                                      snowflake_id_internal.snowflake_managed_worker_bits(),
                                                      snowflake_id_internal.snowflake_managed_sequence_bits());

CREATE FUNCTION snowflake_id_internal.snowflake_worker_id(id bigint) RETURNS integer
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN snowflake_id_internal.snowflake_worker_id(id, snowflake_id_internal.snowflake_managed_epoch(),
                                                      snowflake_id_internal.snowflake_managed_worker_bits(),
                                                      snowflake_id_internal.snowflake_managed_sequence_bits());

CREATE FUNCTION snowflake_id_internal.snowflake_sequence(id bigint) RETURNS integer
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN snowflake_id_internal.snowflake_sequence(id, snowflake_id_internal.snowflake_managed_epoch(),
                                                     snowflake_id_internal.snowflake_managed_worker_bits(),
                                                     snowflake_id_internal.snowflake_managed_sequence_bits());

-- The entry points applications call, in the extension's schema: each one
-- call of its implementation above, bound when created (SQL-standard
-- bodies, no SET clause), so that the planner inlines the entry point and
-- then the implementation, and decoding costs what it did with the bodies
-- here.
CREATE FUNCTION snowflake_timestamp(id bigint, epoch timestamptz, worker_bits integer, sequence_bits integer)
    RETURNS timestamptz
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN snowflake_id_internal.snowflake_timestamp(id, epoch, worker_bits, sequence_bits);
CREATE FUNCTION snowflake_worker_id(id bigint, epoch timestamptz, worker_bits integer, sequence_bits integer)
    RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN snowflake_id_internal.snowflake_worker_id(id, epoch, worker_bits, sequence_bits);
CREATE FUNCTION snowflake_sequence(id bigint, epoch timestamptz, worker_bits integer, sequence_bits integer)
    RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN snowflake_id_internal.snowflake_sequence(id, epoch, worker_bits, sequence_bits);
CREATE FUNCTION snowflake_timestamp(id bigint) RETURNS timestamptz
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN snowflake_id_internal.snowflake_timestamp(id);
COMMENT ON FUNCTION snowflake_timestamp(bigint) IS 'the instant of the millisecond an ID was made in';
CREATE FUNCTION snowflake_worker_id(id bigint) RETURNS integer
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN snowflake_id_internal.snowflake_worker_id(id);
COMMENT ON FUNCTION snowflake_worker_id(bigint) IS 'the worker id that made an ID';
CREATE FUNCTION snowflake_sequence(id bigint) RETURNS integer
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN snowflake_id_internal.snowflake_sequence(id);
COMMENT ON FUNCTION snowflake_sequence(bigint) IS 'an ID''s number within its millisecond';

-- The smallest ID of the millisecond holding unix_ms in a layout (core's
-- Layout::smallest_id_at): 0 before the epoch, an error past the layout's
-- end. unix_ms is finite and within PostgreSQL's range, epoch_ms any.
CREATE FUNCTION snowflake_id_internal.snowflake_managed_smallest_id_at(unix_ms bigint, epoch_ms bigint, worker_bits integer,
                                                 sequence_bits integer) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE
        WHEN (unix_ms OPERATOR(pg_catalog.-) epoch_ms) OPERATOR(pg_catalog.<=) 0::bigint THEN 0::bigint
        WHEN (unix_ms OPERATOR(pg_catalog.-) epoch_ms)
             OPERATOR(pg_catalog.>) (9223372036854775807::bigint OPERATOR(pg_catalog.>>) (worker_bits OPERATOR(pg_catalog.+) sequence_bits))
            THEN snowflake_id_internal.snowflake_managed_past_end_refusal(NULL::bigint, unix_ms, epoch_ms,
                                                                worker_bits OPERATOR(pg_catalog.+) sequence_bits)
        ELSE (unix_ms OPERATOR(pg_catalog.-) epoch_ms) OPERATOR(pg_catalog.<<) (worker_bits OPERATOR(pg_catalog.+) sequence_bits)
    END;

CREATE FUNCTION snowflake_from_timestamp(ts timestamptz) RETURNS bigint
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN CASE
        WHEN ts IS NULL THEN NULL::bigint
        WHEN ts OPERATOR(pg_catalog.=) '-infinity'::pg_catalog.timestamptz THEN 0::bigint
        WHEN ts OPERATOR(pg_catalog.=) 'infinity'::pg_catalog.timestamptz
            THEN snowflake_id_internal.snowflake_managed_infinity_refusal(NULL::bigint, ts)
        ELSE snowflake_id_internal.snowflake_managed_smallest_id_at(snowflake_id_internal.snowflake_managed_unix_ms(ts),
                                                          snowflake_id_internal.snowflake_managed_unix_ms(snowflake_id_internal.snowflake_managed_epoch()),
                                                          snowflake_id_internal.snowflake_managed_worker_bits(),
                                                          snowflake_id_internal.snowflake_managed_sequence_bits())
    END;
COMMENT ON FUNCTION snowflake_from_timestamp(timestamptz) IS
    'the smallest ID of the millisecond holding an instant, with this database''s layout';

-- A whole, positive number of milliseconds within the layout's range is
-- computed here; anything else (months, infinity, a fraction of a
-- millisecond, too long) goes to the PL/pgSQL function, which words the
-- native error.
CREATE FUNCTION snowflake_id_span(span interval) RETURNS bigint
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN CASE
        WHEN span IS NULL THEN NULL::bigint
        WHEN pg_catalog.isfinite(span)
             AND EXTRACT(year FROM span) OPERATOR(pg_catalog.=) 0::numeric
             AND EXTRACT(month FROM span) OPERATOR(pg_catalog.=) 0::numeric
             AND EXTRACT(day FROM span) OPERATOR(pg_catalog.<=) 106751991::numeric
             AND pg_catalog.mod(EXTRACT(epoch FROM span), 0.001::numeric) OPERATOR(pg_catalog.=) 0::numeric
             AND EXTRACT(epoch FROM span) OPERATOR(pg_catalog.>=) 0.001::numeric
             AND EXTRACT(epoch FROM span) OPERATOR(pg_catalog.*) 1000::numeric
                 OPERATOR(pg_catalog.<=) (9223372036854775807::bigint OPERATOR(pg_catalog.>>)
                                          (snowflake_id_internal.snowflake_managed_worker_bits() OPERATOR(pg_catalog.+)
                                           snowflake_id_internal.snowflake_managed_sequence_bits()))::numeric
             AND EXTRACT(epoch FROM span) OPERATOR(pg_catalog.<=) 9223372036854.775807::numeric
            THEN (EXTRACT(epoch FROM span) OPERATOR(pg_catalog.*) 1000::numeric)::bigint
                 OPERATOR(pg_catalog.<<) (snowflake_id_internal.snowflake_managed_worker_bits() OPERATOR(pg_catalog.+)
                                          snowflake_id_internal.snowflake_managed_sequence_bits())
        ELSE snowflake_id_internal.snowflake_managed_span_refusal(NULL::bigint, span, snowflake_id_internal.snowflake_managed_worker_bits(),
                                                        snowflake_id_internal.snowflake_managed_sequence_bits())
    END;
COMMENT ON FUNCTION snowflake_id_span(interval) IS
    'how many IDs of one worker''s numbering a span of time covers, with this database''s layout';

-- ==== sql/install/decode.sql ====
-- These bodies are parsed once, at CREATE (SQL-standard bodies), with the
-- search_path of the install or update script: @extschema@ first, often
-- public, where another role may have planted look-alikes. So they name
-- @extschema@ and call only with exact argument types, which nothing planted
-- can beat. They pin no search_path: a SET clause would stop the inlining
-- the planner hook and the decoding benchmarks rely on (docs/benchmarks.md,
-- section 2), and a body parsed at CREATE does not need one.
--
-- snowflake_decode is plain SQL over the C accessors so that the planner
-- inlines it. It is not STRICT (that would stop the inlining), yet NULL in
-- gives NULL out, as 0.1.0's STRICT function did (not a row of NULLs, which
-- count() counts and coalesce() keeps): the CASE says so. A field of it,
-- (snowflake_decode(id)).ts, is the same NULL either way, so the extension's
-- planner hook calls the field twins below there instead, whose bare ROW the
-- planner reduces to the one accessor asked for: snowflake_timestamp(id), no
-- composite value built per row.
CREATE FUNCTION snowflake_decode(id bigint) RETURNS snowflake_parts
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN CASE WHEN id IS NULL THEN NULL
                ELSE ROW(snowflake_id_internal.snowflake_timestamp(id), snowflake_id_internal.snowflake_worker_id(id),
                         snowflake_id_internal.snowflake_sequence(id))::@extschema@.snowflake_parts
           END;
COMMENT ON FUNCTION snowflake_decode(bigint) IS
    'the instant, worker id and sequence of a snowflake ID, with this server''s layout';

CREATE FUNCTION snowflake_decode(id bigint, epoch timestamptz, worker_bits integer, sequence_bits integer)
    RETURNS snowflake_parts
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE WHEN id IS NULL OR epoch IS NULL OR worker_bits IS NULL OR sequence_bits IS NULL THEN NULL
                ELSE ROW(snowflake_id_internal.snowflake_timestamp(id, epoch, worker_bits, sequence_bits),
                         snowflake_id_internal.snowflake_worker_id(id, epoch, worker_bits, sequence_bits),
                         snowflake_id_internal.snowflake_sequence(id, epoch, worker_bits, sequence_bits))::@extschema@.snowflake_parts
           END;
COMMENT ON FUNCTION snowflake_decode(bigint, timestamptz, integer, integer) IS
    'the instant, worker id and sequence of a snowflake ID made with the given epoch and bit split';

-- The field twins of snowflake_decode: the bare ROW, a row of NULLs for a
-- NULL argument. The planner hook puts them in place of snowflake_decode
-- under a field selection only, where the two agree. Call snowflake_decode,
-- not these.
CREATE FUNCTION snowflake_decode_fields(id bigint) RETURNS snowflake_parts
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN ROW(snowflake_id_internal.snowflake_timestamp(id), snowflake_id_internal.snowflake_worker_id(id),
               snowflake_id_internal.snowflake_sequence(id))::@extschema@.snowflake_parts;
CREATE FUNCTION snowflake_decode_fields(id bigint, epoch timestamptz, worker_bits integer, sequence_bits integer)
    RETURNS snowflake_parts
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN ROW(snowflake_id_internal.snowflake_timestamp(id, epoch, worker_bits, sequence_bits),
               snowflake_id_internal.snowflake_worker_id(id, epoch, worker_bits, sequence_bits),
               snowflake_id_internal.snowflake_sequence(id, epoch, worker_bits, sequence_bits))::@extschema@.snowflake_parts;

-- The set-returning twins of snowflake_decode, one row each. PostgreSQL
-- inlines an SQL function in FROM only if it returns a set; the extension's
-- planner hook puts these in place of snowflake_decode in FROM
-- (`FROM t, snowflake_decode(t.id) d`), so that form costs the accessors too
-- rather than a tuplestore per row. Call snowflake_decode, not these.
CREATE FUNCTION snowflake_decode_rows(id bigint) RETURNS SETOF snowflake_parts
    LANGUAGE sql STABLE PARALLEL SAFE ROWS 1
    BEGIN ATOMIC
        SELECT snowflake_id_internal.snowflake_timestamp(id), snowflake_id_internal.snowflake_worker_id(id),
               snowflake_id_internal.snowflake_sequence(id);
    END;
CREATE FUNCTION snowflake_decode_rows(id bigint, epoch timestamptz, worker_bits integer, sequence_bits integer)
    RETURNS SETOF snowflake_parts
    LANGUAGE sql IMMUTABLE PARALLEL SAFE ROWS 1
    BEGIN ATOMIC
        SELECT snowflake_id_internal.snowflake_timestamp(id, epoch, worker_bits, sequence_bits),
               snowflake_id_internal.snowflake_worker_id(id, epoch, worker_bits, sequence_bits),
               snowflake_id_internal.snowflake_sequence(id, epoch, worker_bits, sequence_bits);
    END;

-- ==== sql/managed/text_forms.sql ====
-- The managed edition's short text forms: fixed-width base62 and Crockford
-- base32, with the native edition's exact results and errors (the rules are
-- core/src/id_text.rs; docs/text-forms.md; tests/managed_decode.rs compares
-- the two editions).
--
-- As the accessors (accessors.sql, whose header says why): one inlined SQL
-- expression each, naming @extschema@ and pg_catalog, NULL in NULL out
-- without the STRICT label (a STRICT SQL function with a CASE is not
-- inlined). Encoding is a digit per symbol, looked up in the alphabet.
-- Decoding takes the text that needs no care, matched by one regular
-- expression (the symbols of the form, not more than fit a bigint), and
-- reads each symbol's value from a table indexed by its code; all other
-- text (hyphens, a stray character, empty, too long, too large) goes to a
-- PL/pgSQL function that reads it as the native decoder does, symbol by
-- symbol, and returns its value or raises the native error.

-- A character as messages quote it, by the project's rule (core/src/quote.rs,
-- docs/text-forms.md): printable ASCII as itself, a quote or backslash
-- escaped, \t \n \r \0, and any other character as \u{hex}; ASCII in any
-- database encoding, and no Unicode table that a new release would change.
-- Every operator named by schema: a body bound when it is created.
CREATE FUNCTION snowflake_id_internal.snowflake_managed_quoted_char(c text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN ''''::text OPERATOR(pg_catalog.||) CASE
        WHEN pg_catalog.ascii(c) OPERATOR(pg_catalog.=) 0 THEN '\0'::text
        WHEN pg_catalog.ascii(c) OPERATOR(pg_catalog.=) 9 THEN '\t'::text
        WHEN pg_catalog.ascii(c) OPERATOR(pg_catalog.=) 10 THEN '\n'::text
        WHEN pg_catalog.ascii(c) OPERATOR(pg_catalog.=) 13 THEN '\r'::text
        WHEN pg_catalog.ascii(c) OPERATOR(pg_catalog.=) 39 THEN '\'''::text
        WHEN pg_catalog.ascii(c) OPERATOR(pg_catalog.=) 92 THEN '\\'::text
        WHEN pg_catalog.ascii(c) OPERATOR(pg_catalog.>=) 32 AND pg_catalog.ascii(c) OPERATOR(pg_catalog.<=) 126 THEN c
        ELSE '\u{'::text OPERATOR(pg_catalog.||) pg_catalog.to_hex(pg_catalog.ascii(c)) OPERATOR(pg_catalog.||) '}'::text
    END OPERATOR(pg_catalog.||) ''''::text;

-- Reads text of a form (62 or 32) as core's id_text::decode: every character
-- checked before the length, a hyphen only between two base32 symbols, the
-- first problem raised with its SQLSTATE, HINT and a DETAIL quoting the text.
CREATE FUNCTION snowflake_id_internal.snowflake_managed_from_text(text text, radix integer) RETURNS bigint
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    name text := CASE radix WHEN 62 THEN 'base62' ELSE 'Crockford base32' END;
    width integer := CASE radix WHEN 62 THEN 11 ELSE 13 END;
    alphabet text := CASE radix
        WHEN 62 THEN '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
        ELSE '0123456789ABCDEFGHJKMNPQRSTVWXYZ0123456789abcdefghjkmnpqrstvwxyzIiLlOo' END;
    -- The values of the base32 aliases after the two cases: I i L l 1, O o 0.
    aliases integer[] := ARRAY[1, 1, 1, 1, 0, 0];
    hint text := CASE radix
        WHEN 62 THEN 'Base62 text is 1 to 11 of 0-9, A-Z and a-z (case matters).'
        ELSE 'Crockford base32 text is 1 to 13 of 0-9 and A-Z less U, in any case; I and L read as 1, O as 0, '
             'and single hyphens between symbols are ignored.' END;
    detail text := 'The text was "' || left(text, 40) || CASE WHEN char_length(text) > 40 THEN '...' ELSE '' END || '".';
    len integer := char_length(text);
    value numeric := 0;
    symbols integer := 0;
    c text;
    at integer;
    bad integer;
BEGIN
    FOR i IN 1 .. len LOOP
        c := substr(text, i, 1);
        bad := NULL;
        IF radix = 32 AND c COLLATE "C" = '-' THEN
            -- Only between two symbols: a leading one would read "-5" as 5.
            IF symbols = 0 OR i = len OR strpos(alphabet COLLATE "C", substr(text, i + 1, 1) COLLATE "C") = 0
               OR substr(text, i + 1, 1) COLLATE "C" = '-' THEN
                bad := i;
            ELSE
                CONTINUE;
            END IF;
        ELSE
            at := strpos(alphabet COLLATE "C", c COLLATE "C");
            IF at = 0 THEN
                bad := i;
            END IF;
        END IF;
        IF bad IS NOT NULL THEN
            RAISE EXCEPTION USING
                ERRCODE = '22P02',
                MESSAGE = format('snowflake_id: invalid character %s at position %s in %s text',
                                 snowflake_id_internal.snowflake_managed_quoted_char(c), bad, name),
                DETAIL = detail, HINT = hint;
        END IF;
        symbols := symbols + 1;
        value := value * radix + CASE
            WHEN radix = 62 THEN at - 1
            WHEN at <= 64 THEN (at - 1) % 32
            ELSE aliases[at - 64] END;
    END LOOP;
    IF symbols = 0 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22P02', MESSAGE = format('snowflake_id: empty %s text is not a snowflake ID', name),
            DETAIL = detail, HINT = hint;
    END IF;
    IF symbols > width THEN
        RAISE EXCEPTION USING
            ERRCODE = '22P02',
            MESSAGE = format('snowflake_id: %s text of %s symbols is too long for a snowflake ID (at most %s)',
                             name, symbols, width),
            DETAIL = detail, HINT = hint;
    END IF;
    IF value > 9223372036854775807 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22003', MESSAGE = format('snowflake_id: %s text is above the largest bigint', name),
            DETAIL = detail,
            HINT = format('The largest ID, 9223372036854775807, is %s in %s.',
                          CASE radix WHEN 62 THEN 'AzL8n0Y58m7' ELSE '7ZZZZZZZZZZZZ' END, name);
    END IF;
    RETURN value::bigint;
END
$$;

CREATE FUNCTION snowflake_to_base62(id bigint) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE
        WHEN id IS NULL THEN NULL::pg_catalog.text
        WHEN id OPERATOR(pg_catalog.<) 0::bigint THEN snowflake_id_internal.snowflake_managed_negative_refusal(NULL::pg_catalog.text, id, NULL::pg_catalog.timestamptz, NULL::integer, NULL::integer)
        ELSE pg_catalog.substr('0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'::pg_catalog.text,
                 ((id OPERATOR(pg_catalog./) 839299365868340224::bigint) OPERATOR(pg_catalog.+) 1::bigint)::integer, 1)
             OPERATOR(pg_catalog.||) pg_catalog.substr('0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'::pg_catalog.text,
                 (((id OPERATOR(pg_catalog./) 13537086546263552::bigint) OPERATOR(pg_catalog.%) 62::bigint) OPERATOR(pg_catalog.+) 1::bigint)::integer, 1)
             OPERATOR(pg_catalog.||) pg_catalog.substr('0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'::pg_catalog.text,
                 (((id OPERATOR(pg_catalog./) 218340105584896::bigint) OPERATOR(pg_catalog.%) 62::bigint) OPERATOR(pg_catalog.+) 1::bigint)::integer, 1)
             OPERATOR(pg_catalog.||) pg_catalog.substr('0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'::pg_catalog.text,
                 (((id OPERATOR(pg_catalog./) 3521614606208::bigint) OPERATOR(pg_catalog.%) 62::bigint) OPERATOR(pg_catalog.+) 1::bigint)::integer, 1)
             OPERATOR(pg_catalog.||) pg_catalog.substr('0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'::pg_catalog.text,
                 (((id OPERATOR(pg_catalog./) 56800235584::bigint) OPERATOR(pg_catalog.%) 62::bigint) OPERATOR(pg_catalog.+) 1::bigint)::integer, 1)
             OPERATOR(pg_catalog.||) pg_catalog.substr('0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'::pg_catalog.text,
                 (((id OPERATOR(pg_catalog./) 916132832::bigint) OPERATOR(pg_catalog.%) 62::bigint) OPERATOR(pg_catalog.+) 1::bigint)::integer, 1)
             OPERATOR(pg_catalog.||) pg_catalog.substr('0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'::pg_catalog.text,
                 (((id OPERATOR(pg_catalog./) 14776336::bigint) OPERATOR(pg_catalog.%) 62::bigint) OPERATOR(pg_catalog.+) 1::bigint)::integer, 1)
             OPERATOR(pg_catalog.||) pg_catalog.substr('0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'::pg_catalog.text,
                 (((id OPERATOR(pg_catalog./) 238328::bigint) OPERATOR(pg_catalog.%) 62::bigint) OPERATOR(pg_catalog.+) 1::bigint)::integer, 1)
             OPERATOR(pg_catalog.||) pg_catalog.substr('0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'::pg_catalog.text,
                 (((id OPERATOR(pg_catalog./) 3844::bigint) OPERATOR(pg_catalog.%) 62::bigint) OPERATOR(pg_catalog.+) 1::bigint)::integer, 1)
             OPERATOR(pg_catalog.||) pg_catalog.substr('0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'::pg_catalog.text,
                 (((id OPERATOR(pg_catalog./) 62::bigint) OPERATOR(pg_catalog.%) 62::bigint) OPERATOR(pg_catalog.+) 1::bigint)::integer, 1)
             OPERATOR(pg_catalog.||) pg_catalog.substr('0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'::pg_catalog.text,
                 ((id OPERATOR(pg_catalog.%) 62::bigint) OPERATOR(pg_catalog.+) 1::bigint)::integer, 1)
    END;
COMMENT ON FUNCTION snowflake_to_base62(bigint) IS 'an ID as 11 base62 symbols (0-9A-Za-z), sorting as the IDs';

CREATE FUNCTION snowflake_to_base32(id bigint) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE
        WHEN id IS NULL THEN NULL::pg_catalog.text
        WHEN id OPERATOR(pg_catalog.<) 0::bigint THEN snowflake_id_internal.snowflake_managed_negative_refusal(NULL::pg_catalog.text, id, NULL::pg_catalog.timestamptz, NULL::integer, NULL::integer)
        ELSE pg_catalog.substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ'::pg_catalog.text,
                 ((id OPERATOR(pg_catalog.>>) 60) OPERATOR(pg_catalog.+) 1::bigint)::integer, 1)
             OPERATOR(pg_catalog.||) pg_catalog.substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ'::pg_catalog.text,
                 (((id OPERATOR(pg_catalog.>>) 55) OPERATOR(pg_catalog.&) 31::bigint) OPERATOR(pg_catalog.+) 1::bigint)::integer, 1)
             OPERATOR(pg_catalog.||) pg_catalog.substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ'::pg_catalog.text,
                 (((id OPERATOR(pg_catalog.>>) 50) OPERATOR(pg_catalog.&) 31::bigint) OPERATOR(pg_catalog.+) 1::bigint)::integer, 1)
             OPERATOR(pg_catalog.||) pg_catalog.substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ'::pg_catalog.text,
                 (((id OPERATOR(pg_catalog.>>) 45) OPERATOR(pg_catalog.&) 31::bigint) OPERATOR(pg_catalog.+) 1::bigint)::integer, 1)
             OPERATOR(pg_catalog.||) pg_catalog.substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ'::pg_catalog.text,
                 (((id OPERATOR(pg_catalog.>>) 40) OPERATOR(pg_catalog.&) 31::bigint) OPERATOR(pg_catalog.+) 1::bigint)::integer, 1)
             OPERATOR(pg_catalog.||) pg_catalog.substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ'::pg_catalog.text,
                 (((id OPERATOR(pg_catalog.>>) 35) OPERATOR(pg_catalog.&) 31::bigint) OPERATOR(pg_catalog.+) 1::bigint)::integer, 1)
             OPERATOR(pg_catalog.||) pg_catalog.substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ'::pg_catalog.text,
                 (((id OPERATOR(pg_catalog.>>) 30) OPERATOR(pg_catalog.&) 31::bigint) OPERATOR(pg_catalog.+) 1::bigint)::integer, 1)
             OPERATOR(pg_catalog.||) pg_catalog.substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ'::pg_catalog.text,
                 (((id OPERATOR(pg_catalog.>>) 25) OPERATOR(pg_catalog.&) 31::bigint) OPERATOR(pg_catalog.+) 1::bigint)::integer, 1)
             OPERATOR(pg_catalog.||) pg_catalog.substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ'::pg_catalog.text,
                 (((id OPERATOR(pg_catalog.>>) 20) OPERATOR(pg_catalog.&) 31::bigint) OPERATOR(pg_catalog.+) 1::bigint)::integer, 1)
             OPERATOR(pg_catalog.||) pg_catalog.substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ'::pg_catalog.text,
                 (((id OPERATOR(pg_catalog.>>) 15) OPERATOR(pg_catalog.&) 31::bigint) OPERATOR(pg_catalog.+) 1::bigint)::integer, 1)
             OPERATOR(pg_catalog.||) pg_catalog.substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ'::pg_catalog.text,
                 (((id OPERATOR(pg_catalog.>>) 10) OPERATOR(pg_catalog.&) 31::bigint) OPERATOR(pg_catalog.+) 1::bigint)::integer, 1)
             OPERATOR(pg_catalog.||) pg_catalog.substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ'::pg_catalog.text,
                 (((id OPERATOR(pg_catalog.>>) 5) OPERATOR(pg_catalog.&) 31::bigint) OPERATOR(pg_catalog.+) 1::bigint)::integer, 1)
             OPERATOR(pg_catalog.||) pg_catalog.substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ'::pg_catalog.text,
                 ((id OPERATOR(pg_catalog.&) 31::bigint) OPERATOR(pg_catalog.+) 1::bigint)::integer, 1)
    END;
COMMENT ON FUNCTION snowflake_to_base32(bigint) IS 'an ID as 13 Crockford base32 symbols, sorting as the IDs';

-- The ID a text stands for. The symbols' values come from a table of 128
-- bytes indexed by character code (ascii('') is 0, and 0 is the value of a
-- position before the text's first symbol), the last symbol first. Each
-- term is parenthesized: OPERATOR(pg_catalog.x) forms share one precedence.
CREATE FUNCTION snowflake_from_base62(text text) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE
        WHEN text IS NULL THEN NULL::bigint
        WHEN (text COLLATE pg_catalog."C") OPERATOR(pg_catalog.~) '^[0-9A-Za-z]{1,11}$'::pg_catalog.text
             AND (pg_catalog.char_length(text) OPERATOR(pg_catalog.<) 11
                  OR (text COLLATE pg_catalog."C") OPERATOR(pg_catalog.<=) 'AzL8n0Y58m7'::pg_catalog.text)
            THEN ((pg_catalog.get_byte(pg_catalog.decode('00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010203040506070809000000000000000a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122230000000000002425262728292a2b2c2d2e2f303132333435363738393a3b3c3d0000000000'::pg_catalog.text, 'hex'::pg_catalog.text),
                     pg_catalog.ascii(pg_catalog.substr(text, pg_catalog.char_length(text) OPERATOR(pg_catalog.-) 0, 1))))::bigint OPERATOR(pg_catalog.*) 1::bigint)
                 OPERATOR(pg_catalog.+) ((pg_catalog.get_byte(pg_catalog.decode('00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010203040506070809000000000000000a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122230000000000002425262728292a2b2c2d2e2f303132333435363738393a3b3c3d0000000000'::pg_catalog.text, 'hex'::pg_catalog.text),
                     pg_catalog.ascii(pg_catalog.substr(text, pg_catalog.char_length(text) OPERATOR(pg_catalog.-) 1, 1))))::bigint OPERATOR(pg_catalog.*) 62::bigint)
                 OPERATOR(pg_catalog.+) ((pg_catalog.get_byte(pg_catalog.decode('00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010203040506070809000000000000000a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122230000000000002425262728292a2b2c2d2e2f303132333435363738393a3b3c3d0000000000'::pg_catalog.text, 'hex'::pg_catalog.text),
                     pg_catalog.ascii(pg_catalog.substr(text, pg_catalog.char_length(text) OPERATOR(pg_catalog.-) 2, 1))))::bigint OPERATOR(pg_catalog.*) 3844::bigint)
                 OPERATOR(pg_catalog.+) ((pg_catalog.get_byte(pg_catalog.decode('00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010203040506070809000000000000000a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122230000000000002425262728292a2b2c2d2e2f303132333435363738393a3b3c3d0000000000'::pg_catalog.text, 'hex'::pg_catalog.text),
                     pg_catalog.ascii(pg_catalog.substr(text, pg_catalog.char_length(text) OPERATOR(pg_catalog.-) 3, 1))))::bigint OPERATOR(pg_catalog.*) 238328::bigint)
                 OPERATOR(pg_catalog.+) ((pg_catalog.get_byte(pg_catalog.decode('00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010203040506070809000000000000000a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122230000000000002425262728292a2b2c2d2e2f303132333435363738393a3b3c3d0000000000'::pg_catalog.text, 'hex'::pg_catalog.text),
                     pg_catalog.ascii(pg_catalog.substr(text, pg_catalog.char_length(text) OPERATOR(pg_catalog.-) 4, 1))))::bigint OPERATOR(pg_catalog.*) 14776336::bigint)
                 OPERATOR(pg_catalog.+) ((pg_catalog.get_byte(pg_catalog.decode('00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010203040506070809000000000000000a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122230000000000002425262728292a2b2c2d2e2f303132333435363738393a3b3c3d0000000000'::pg_catalog.text, 'hex'::pg_catalog.text),
                     pg_catalog.ascii(pg_catalog.substr(text, pg_catalog.char_length(text) OPERATOR(pg_catalog.-) 5, 1))))::bigint OPERATOR(pg_catalog.*) 916132832::bigint)
                 OPERATOR(pg_catalog.+) ((pg_catalog.get_byte(pg_catalog.decode('00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010203040506070809000000000000000a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122230000000000002425262728292a2b2c2d2e2f303132333435363738393a3b3c3d0000000000'::pg_catalog.text, 'hex'::pg_catalog.text),
                     pg_catalog.ascii(pg_catalog.substr(text, pg_catalog.char_length(text) OPERATOR(pg_catalog.-) 6, 1))))::bigint OPERATOR(pg_catalog.*) 56800235584::bigint)
                 OPERATOR(pg_catalog.+) ((pg_catalog.get_byte(pg_catalog.decode('00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010203040506070809000000000000000a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122230000000000002425262728292a2b2c2d2e2f303132333435363738393a3b3c3d0000000000'::pg_catalog.text, 'hex'::pg_catalog.text),
                     pg_catalog.ascii(pg_catalog.substr(text, pg_catalog.char_length(text) OPERATOR(pg_catalog.-) 7, 1))))::bigint OPERATOR(pg_catalog.*) 3521614606208::bigint)
                 OPERATOR(pg_catalog.+) ((pg_catalog.get_byte(pg_catalog.decode('00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010203040506070809000000000000000a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122230000000000002425262728292a2b2c2d2e2f303132333435363738393a3b3c3d0000000000'::pg_catalog.text, 'hex'::pg_catalog.text),
                     pg_catalog.ascii(pg_catalog.substr(text, pg_catalog.char_length(text) OPERATOR(pg_catalog.-) 8, 1))))::bigint OPERATOR(pg_catalog.*) 218340105584896::bigint)
                 OPERATOR(pg_catalog.+) ((pg_catalog.get_byte(pg_catalog.decode('00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010203040506070809000000000000000a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122230000000000002425262728292a2b2c2d2e2f303132333435363738393a3b3c3d0000000000'::pg_catalog.text, 'hex'::pg_catalog.text),
                     pg_catalog.ascii(pg_catalog.substr(text, pg_catalog.char_length(text) OPERATOR(pg_catalog.-) 9, 1))))::bigint OPERATOR(pg_catalog.*) 13537086546263552::bigint)
                 OPERATOR(pg_catalog.+) ((pg_catalog.get_byte(pg_catalog.decode('00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010203040506070809000000000000000a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122230000000000002425262728292a2b2c2d2e2f303132333435363738393a3b3c3d0000000000'::pg_catalog.text, 'hex'::pg_catalog.text),
                     pg_catalog.ascii(pg_catalog.substr(text, pg_catalog.char_length(text) OPERATOR(pg_catalog.-) 10, 1))))::bigint OPERATOR(pg_catalog.*) 839299365868340224::bigint)
        ELSE snowflake_id_internal.snowflake_managed_from_text(text, 62)
    END;
COMMENT ON FUNCTION snowflake_from_base62(text) IS 'the ID base62 text stands for';

CREATE FUNCTION snowflake_from_base32(text text) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE
        WHEN text IS NULL THEN NULL::bigint
        WHEN (text COLLATE pg_catalog."C") OPERATOR(pg_catalog.~) '^([0-9A-TV-Za-tv-z]{1,12}|[0-7IiLlOo][0-9A-TV-Za-tv-z]{12})$'::pg_catalog.text
            THEN ((pg_catalog.get_byte(pg_catalog.decode('00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010203040506070809000000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000'::pg_catalog.text, 'hex'::pg_catalog.text),
                     pg_catalog.ascii(pg_catalog.substr(text, pg_catalog.char_length(text) OPERATOR(pg_catalog.-) 0, 1))))::bigint OPERATOR(pg_catalog.<<) 0)
                 OPERATOR(pg_catalog.+) ((pg_catalog.get_byte(pg_catalog.decode('00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010203040506070809000000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000'::pg_catalog.text, 'hex'::pg_catalog.text),
                     pg_catalog.ascii(pg_catalog.substr(text, pg_catalog.char_length(text) OPERATOR(pg_catalog.-) 1, 1))))::bigint OPERATOR(pg_catalog.<<) 5)
                 OPERATOR(pg_catalog.+) ((pg_catalog.get_byte(pg_catalog.decode('00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010203040506070809000000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000'::pg_catalog.text, 'hex'::pg_catalog.text),
                     pg_catalog.ascii(pg_catalog.substr(text, pg_catalog.char_length(text) OPERATOR(pg_catalog.-) 2, 1))))::bigint OPERATOR(pg_catalog.<<) 10)
                 OPERATOR(pg_catalog.+) ((pg_catalog.get_byte(pg_catalog.decode('00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010203040506070809000000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000'::pg_catalog.text, 'hex'::pg_catalog.text),
                     pg_catalog.ascii(pg_catalog.substr(text, pg_catalog.char_length(text) OPERATOR(pg_catalog.-) 3, 1))))::bigint OPERATOR(pg_catalog.<<) 15)
                 OPERATOR(pg_catalog.+) ((pg_catalog.get_byte(pg_catalog.decode('00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010203040506070809000000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000'::pg_catalog.text, 'hex'::pg_catalog.text),
                     pg_catalog.ascii(pg_catalog.substr(text, pg_catalog.char_length(text) OPERATOR(pg_catalog.-) 4, 1))))::bigint OPERATOR(pg_catalog.<<) 20)
                 OPERATOR(pg_catalog.+) ((pg_catalog.get_byte(pg_catalog.decode('00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010203040506070809000000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000'::pg_catalog.text, 'hex'::pg_catalog.text),
                     pg_catalog.ascii(pg_catalog.substr(text, pg_catalog.char_length(text) OPERATOR(pg_catalog.-) 5, 1))))::bigint OPERATOR(pg_catalog.<<) 25)
                 OPERATOR(pg_catalog.+) ((pg_catalog.get_byte(pg_catalog.decode('00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010203040506070809000000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000'::pg_catalog.text, 'hex'::pg_catalog.text),
                     pg_catalog.ascii(pg_catalog.substr(text, pg_catalog.char_length(text) OPERATOR(pg_catalog.-) 6, 1))))::bigint OPERATOR(pg_catalog.<<) 30)
                 OPERATOR(pg_catalog.+) ((pg_catalog.get_byte(pg_catalog.decode('00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010203040506070809000000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000'::pg_catalog.text, 'hex'::pg_catalog.text),
                     pg_catalog.ascii(pg_catalog.substr(text, pg_catalog.char_length(text) OPERATOR(pg_catalog.-) 7, 1))))::bigint OPERATOR(pg_catalog.<<) 35)
                 OPERATOR(pg_catalog.+) ((pg_catalog.get_byte(pg_catalog.decode('00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010203040506070809000000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000'::pg_catalog.text, 'hex'::pg_catalog.text),
                     pg_catalog.ascii(pg_catalog.substr(text, pg_catalog.char_length(text) OPERATOR(pg_catalog.-) 8, 1))))::bigint OPERATOR(pg_catalog.<<) 40)
                 OPERATOR(pg_catalog.+) ((pg_catalog.get_byte(pg_catalog.decode('00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010203040506070809000000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000'::pg_catalog.text, 'hex'::pg_catalog.text),
                     pg_catalog.ascii(pg_catalog.substr(text, pg_catalog.char_length(text) OPERATOR(pg_catalog.-) 9, 1))))::bigint OPERATOR(pg_catalog.<<) 45)
                 OPERATOR(pg_catalog.+) ((pg_catalog.get_byte(pg_catalog.decode('00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010203040506070809000000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000'::pg_catalog.text, 'hex'::pg_catalog.text),
                     pg_catalog.ascii(pg_catalog.substr(text, pg_catalog.char_length(text) OPERATOR(pg_catalog.-) 10, 1))))::bigint OPERATOR(pg_catalog.<<) 50)
                 OPERATOR(pg_catalog.+) ((pg_catalog.get_byte(pg_catalog.decode('00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010203040506070809000000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000'::pg_catalog.text, 'hex'::pg_catalog.text),
                     pg_catalog.ascii(pg_catalog.substr(text, pg_catalog.char_length(text) OPERATOR(pg_catalog.-) 11, 1))))::bigint OPERATOR(pg_catalog.<<) 55)
                 OPERATOR(pg_catalog.+) ((pg_catalog.get_byte(pg_catalog.decode('00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010203040506070809000000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000'::pg_catalog.text, 'hex'::pg_catalog.text),
                     pg_catalog.ascii(pg_catalog.substr(text, pg_catalog.char_length(text) OPERATOR(pg_catalog.-) 12, 1))))::bigint OPERATOR(pg_catalog.<<) 60)
        ELSE snowflake_id_internal.snowflake_managed_from_text(text, 32)
    END;
COMMENT ON FUNCTION snowflake_from_base32(text) IS 'the ID Crockford base32 text stands for (any case, I and L as 1, O as 0, hyphens between symbols)';

-- ==== sql/managed/status.sql ====
-- snowflake_id_status for the managed edition: the native columns that mean
-- something here, under the native names and types, so that a dashboard
-- query works on both editions. Not here: what needs shared memory (started_at,
-- counters since start, the durable mark and its LSN, the keeper, leases);
-- docs/managed.md lists them. The implementation is in
-- snowflake_id_internal, where the view (below) and the entry point in the
-- extension's schema call it: a body that called the one in the extension's
-- schema would be created again from its text by pg_dump and pg_upgrade,
-- where a look-alike beside it could make the call "not unique".
CREATE FUNCTION snowflake_id_internal.snowflake_id_status() RETURNS TABLE (
    worker_id bigint,
    worker_bits integer,
    sequence_bits integer,
    epoch timestamptz,
    last_id bigint,
    logical_clock timestamptz,
    wall_clock timestamptz,
    drift_ms bigint,
    max_drift_ms bigint,
    in_recovery boolean,
    problem text
)
    LANGUAGE plpgsql VOLATILE PARALLEL SAFE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    cfg snowflake_id_private.snowflake_managed_config := snowflake_id_internal.snowflake_managed_live();
    stored snowflake_id_private.snowflake_managed_config;
    last bigint := pg_catalog.pg_sequence_last_value(pg_catalog.to_regclass('snowflake_id_state.snowflake_managed_counter'));
    now_ms numeric := pg_catalog.date_part('epoch', pg_catalog.clock_timestamp())::numeric * 1000;
BEGIN
    IF cfg.worker_id IS NULL THEN
        -- No worker id in force: the layout the owner has set so far.
        SELECT * INTO stored FROM snowflake_id_private.snowflake_managed_config;
        IF FOUND THEN
            cfg := stored;
        END IF;
    END IF;
    worker_id := cfg.worker_id;
    worker_bits := coalesce(cfg.worker_bits, 10);
    sequence_bits := coalesce(cfg.sequence_bits, 12);
    epoch := coalesce(cfg.epoch, '2025-01-01 00:00:00+00');
    wall_clock := pg_catalog.to_timestamp(pg_catalog.floor(now_ms) / 1000);
    max_drift_ms := snowflake_id_internal.snowflake_managed_max_drift_ms();
    in_recovery := pg_catalog.pg_is_in_recovery();
    IF last IS NOT NULL AND worker_id IS NOT NULL THEN
        last_id := snowflake_id_internal.snowflake_managed_compose(last, cfg.worker_id, worker_bits, sequence_bits);
        logical_clock := epoch + pg_catalog.make_interval(secs => (last >> sequence_bits) / 1000.0);
        drift_ms := greatest(0, (last >> sequence_bits)
                                - (pg_catalog.floor(now_ms) - pg_catalog.date_part('epoch', epoch)::numeric * 1000)::bigint);
    END IF;
    problem := CASE
        WHEN in_recovery THEN 'snowflake_id: this server is a standby (in recovery); IDs are issued by the primary'
        WHEN worker_id IS NULL THEN 'snowflake_id: no worker id is set for this database; the extension''s owner runs SELECT snowflake_id_internal.snowflake_set_worker_id(n)'
        -- A restored dump (a copy) carries its source's worker id: two
        -- databases issuing with one collide, and nothing else notices.
        -- The database's oid alone misses a restore into another cluster
        -- whose database got the same oid (fresh clusters hand out the same
        -- ones): the cluster's system identifier too, where both are known.
        WHEN (SELECT c.set_in FROM snowflake_id_private.snowflake_managed_config c)
             IS DISTINCT FROM (SELECT d.oid FROM pg_catalog.pg_database d
                                WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database())
             OR (SELECT c.set_on FROM snowflake_id_private.snowflake_managed_config c)
                OPERATOR(pg_catalog.<>) snowflake_id_internal.snowflake_managed_system_id()
            THEN pg_catalog.format('snowflake_id: worker id %s was set in another database (this one was restored from a dump of it, or copied): if that one still issues IDs, the two collide; the extension''s owner gives this one its own with SELECT snowflake_id_internal.snowflake_set_worker_id(n), or the same again to confirm it',
                                   worker_id)
        -- The worker id in force is not the configuration's (a change whose
        -- commit failed after the switch, or made by an earlier version that
        -- switched before the commit and was rolled back).
        WHEN (SELECT c.worker_id FROM snowflake_id_private.snowflake_managed_config c) IS DISTINCT FROM worker_id
            THEN pg_catalog.format('snowflake_id: worker id %s is in force, but the configuration says %s: the extension''s owner runs SELECT snowflake_id_internal.snowflake_set_worker_id(n) with the right one',
                                   worker_id, coalesce((SELECT c.worker_id FROM snowflake_id_private.snowflake_managed_config c)::pg_catalog.text, 'none'))
        WHEN drift_ms > max_drift_ms THEN pg_catalog.format(
            'snowflake_id: IDs are %s ms ahead of the clock, more than max_drift (%s ms): the clock was set back, or snowflake_advance_past() moved the generator ahead; new IDs carry the later time until the clock catches up',
            drift_ms, max_drift_ms)
    END;
    RETURN NEXT;
END
$body$;

CREATE FUNCTION snowflake_id_status() RETURNS TABLE (
    worker_id bigint,
    worker_bits integer,
    sequence_bits integer,
    epoch timestamptz,
    last_id bigint,
    logical_clock timestamptz,
    wall_clock timestamptz,
    drift_ms bigint,
    max_drift_ms bigint,
    in_recovery boolean,
    problem text
)
    LANGUAGE sql VOLATILE PARALLEL SAFE ROWS 1
    BEGIN ATOMIC
        SELECT s.worker_id, s.worker_bits, s.sequence_bits, s.epoch, s.last_id, s.logical_clock, s.wall_clock,
               s.drift_ms, s.max_drift_ms, s.in_recovery, s.problem
          FROM snowflake_id_internal.snowflake_id_status() s;
    END;

-- The view has every column of the native one, those that mean nothing
-- here NULL (lease_state 'none', as native without a registry), after the
-- function's own, so that the native edition's queries
-- (monitoring/postgres_exporter.yaml, docs/monitoring.md) run unchanged.
CREATE VIEW snowflake_id_status AS
    SELECT s.*,
           NULL::pg_catalog.timestamptz AS started_at,
           NULL::pg_catalog.timestamptz AS durable_mark,
           NULL::pg_catalog.int8 AS ids_issued,
           NULL::pg_catalog.int8 AS ms_borrowed,
           NULL::pg_catalog.int8 AS waits,
           NULL::pg_catalog.int8 AS clock_steps_back,
           NULL::pg_catalog.int8 AS largest_step_back_ms,
           NULL::pg_catalog.int8 AS mark_writes,
           NULL::pg_catalog.int8 AS mark_writes_by_keeper,
           NULL::pg_catalog.pg_lsn AS mark_lsn,
           NULL::pg_catalog.int4 AS keeper_pid,
           NULL::pg_catalog.timestamptz AS sync_standby_wait_since,
           'none'::pg_catalog.text AS lease_state,
           NULL::pg_catalog.int8 AS lease_epoch,
           NULL::pg_catalog.timestamptz AS lease_floor,
           NULL::pg_catalog.timestamptz AS lease_ceiling,
           NULL::pg_catalog.timestamptz AS lease_renewed_at,
           NULL::pg_catalog.text AS registry_error
      FROM snowflake_id_internal.snowflake_id_status() s;
COMMENT ON VIEW snowflake_id_status IS
    'snowflake_id generator (managed edition): layout, worker id, logical vs wall clock';
GRANT SELECT ON snowflake_id_status TO PUBLIC;

-- ==== sql/managed/privileges.sql ====
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

-- ==== sql/managed/config_dump.sql ====
-- pg_tle only (an extension's objects are not dumped by pg_dump; a plain
-- script's are, as they are): the configuration travels with the database's
-- data, so that a restore into a new database issues with the same layout
-- (and the worker id, which status names as a copy's until the owner sets
-- one). The counter, the generation and the offset need no mark: they are
-- not the extension's (generator.sql, snowflake_managed_state_ensure), so
-- pg_dump dumps them, with their values, as the owner's own sequences.
SELECT pg_catalog.pg_extension_config_dump('snowflake_id_private.snowflake_managed_config'::pg_catalog.regclass, '');
