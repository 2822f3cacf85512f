-- The registry's public entry points: what a DBA calls by hand and what a
-- node of 0.6.0 calls over libpq. Nodes since 0.7.0 call the
-- implementations in snowflake_id_internal (sql/install/registry_functions.sql)
-- directly. Each body is SQL-standard, so its call is bound to the
-- implementation when it is created, and pg_upgrade or pg_dump re-create it
-- from a text that names only the owner-only schema: nothing another role
-- puts in @extschema@ changes what it runs or stops its re-creation. None
-- is SECURITY DEFINER; each is revoked from PUBLIC like its implementation,
-- whose EXECUTE is checked too. The grants a DBA gives the nodes' roles are
-- on the implementations (docs/fleets.md); a node of 0.6.0, which calls
-- these, needs them here as well. (A registry updated from 0.8.0 keeps the
-- grants it had on these names: these are the functions that were the
-- implementations, replaced in place.)
CREATE FUNCTION @extschema@.snowflake_registry_acquire(
    namespace text, worker_bits integer, sequence_bits integer, epoch_ms bigint, wanted integer,
    system_identifier text, timeline integer, node_name text, node_tick bigint, horizon_ms bigint,
    resume_epoch bigint DEFAULT NULL, resume_token bigint DEFAULT NULL,
    OUT worker_id integer, OUT lease_epoch bigint, OUT holder_token bigint, OUT floor_tick bigint,
    OUT ceiling_tick bigint)
    LANGUAGE sql VOLATILE
BEGIN ATOMIC
    SELECT a.worker_id, a.lease_epoch, a.holder_token, a.floor_tick, a.ceiling_tick
      FROM snowflake_id_internal.snowflake_registry_acquire(
               snowflake_registry_acquire.namespace, snowflake_registry_acquire.worker_bits,
               snowflake_registry_acquire.sequence_bits, snowflake_registry_acquire.epoch_ms,
               snowflake_registry_acquire.wanted, snowflake_registry_acquire.system_identifier,
               snowflake_registry_acquire.timeline, snowflake_registry_acquire.node_name,
               snowflake_registry_acquire.node_tick, snowflake_registry_acquire.horizon_ms,
               snowflake_registry_acquire.resume_epoch, snowflake_registry_acquire.resume_token) a;
END;

CREATE FUNCTION @extschema@.snowflake_registry_renew(
    namespace text, worker_id integer, lease_epoch bigint, holder_token bigint, node_tick bigint,
    horizon_ms bigint, OUT ceiling_tick bigint)
    LANGUAGE sql VOLATILE
BEGIN ATOMIC
    SELECT snowflake_id_internal.snowflake_registry_renew(
               snowflake_registry_renew.namespace, snowflake_registry_renew.worker_id,
               snowflake_registry_renew.lease_epoch, snowflake_registry_renew.holder_token,
               snowflake_registry_renew.node_tick, snowflake_registry_renew.horizon_ms);
END;

CREATE FUNCTION @extschema@.snowflake_registry_release(
    namespace text, worker_id integer, lease_epoch bigint, holder_token bigint, last_tick bigint)
    RETURNS boolean
    LANGUAGE sql VOLATILE
BEGIN ATOMIC
    SELECT snowflake_id_internal.snowflake_registry_release(
               snowflake_registry_release.namespace, snowflake_registry_release.worker_id,
               snowflake_registry_release.lease_epoch, snowflake_registry_release.holder_token,
               snowflake_registry_release.last_tick);
END;

CREATE FUNCTION @extschema@.snowflake_registry_history_of(
    namespace text, worker_id integer, lease_epoch bigint, holder_token bigint)
    RETURNS TABLE (claim_epoch bigint, from_tick bigint, to_tick bigint, level integer)
    LANGUAGE sql VOLATILE
BEGIN ATOMIC
    SELECT h.claim_epoch, h.from_tick, h.to_tick, h.level
      FROM snowflake_id_internal.snowflake_registry_history_of(
               snowflake_registry_history_of.namespace, snowflake_registry_history_of.worker_id,
               snowflake_registry_history_of.lease_epoch, snowflake_registry_history_of.holder_token) h;
END;

CREATE FUNCTION @extschema@.snowflake_registry_record_history(
    namespace text, worker_id integer, lease_epoch bigint, holder_token bigint,
    from_tick bigint, to_tick bigint, level integer)
    RETURNS void
    LANGUAGE sql VOLATILE
BEGIN ATOMIC
    SELECT snowflake_id_internal.snowflake_registry_record_history(
               snowflake_registry_record_history.namespace, snowflake_registry_record_history.worker_id,
               snowflake_registry_record_history.lease_epoch, snowflake_registry_record_history.holder_token,
               snowflake_registry_record_history.from_tick, snowflake_registry_record_history.to_tick,
               snowflake_registry_record_history.level);
END;

REVOKE EXECUTE ON FUNCTION @extschema@.snowflake_registry_acquire(text, integer, integer, bigint, integer, text, integer, text, bigint, bigint, bigint, bigint) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION @extschema@.snowflake_registry_renew(text, integer, bigint, bigint, bigint, bigint) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION @extschema@.snowflake_registry_release(text, integer, bigint, bigint, bigint) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION @extschema@.snowflake_registry_history_of(text, integer, bigint, bigint) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION @extschema@.snowflake_registry_record_history(text, integer, bigint, bigint, bigint, bigint, integer) FROM PUBLIC;

-- What a DBA reads: each worker id ever granted, its holder and its range.
-- Parsed at CREATE like the function above, and run by whoever reads it
-- (a superuser, often): qualified the same way.
CREATE VIEW snowflake_registry AS
SELECT l.namespace, l.worker_id, l.node_name, l.system_identifier, l.timeline, l.lease_epoch,
       pg_catalog.to_timestamp((n.epoch_ms + l.floor_tick) OPERATOR(pg_catalog./) 1000.0) AS floor,
       pg_catalog.to_timestamp((n.epoch_ms + l.ceiling_tick) OPERATOR(pg_catalog./) 1000.0) AS ceiling,
       l.granted_at, l.renewed_at, l.released_at,
       CASE WHEN l.released_at IS NOT NULL THEN 'free'
            WHEN snowflake_id_internal.snowflake_registry_free(l, n.stale_margin, pg_catalog.clock_timestamp()) THEN 'stale'
            ELSE 'live'
       END AS state
  FROM @extschema@.snowflake_registry_leases l
  JOIN @extschema@.snowflake_registry_namespaces n USING (namespace);
COMMENT ON VIEW snowflake_registry IS
    'snowflake_id registry: each worker id granted, its holder, its ID time range and whether it is live, stale or free';
