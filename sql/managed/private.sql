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
