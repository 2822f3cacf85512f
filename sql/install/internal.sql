-- The registry (src/service/registry_session.rs): the five functions of
-- sql/install/registry.sql a node calls. A 0.6.0 node still calls them in
-- @extschema@ by name.
CREATE FUNCTION snowflake_id_internal.snowflake_registry_acquire(
    namespace text, worker_bits integer, sequence_bits integer, epoch_ms bigint, wanted integer,
    system_identifier text, timeline integer, node_name text, node_tick bigint, horizon_ms bigint,
    resume_epoch bigint, resume_token bigint,
    OUT worker_id integer, OUT lease_epoch bigint, OUT holder_token bigint, OUT floor_tick bigint,
    OUT ceiling_tick bigint)
    LANGUAGE sql VOLATILE
BEGIN ATOMIC
    SELECT a.worker_id, a.lease_epoch, a.holder_token, a.floor_tick, a.ceiling_tick
      FROM @extschema@.snowflake_registry_acquire(
               snowflake_registry_acquire.namespace, snowflake_registry_acquire.worker_bits,
               snowflake_registry_acquire.sequence_bits, snowflake_registry_acquire.epoch_ms,
               snowflake_registry_acquire.wanted, snowflake_registry_acquire.system_identifier,
               snowflake_registry_acquire.timeline, snowflake_registry_acquire.node_name,
               snowflake_registry_acquire.node_tick, snowflake_registry_acquire.horizon_ms,
               snowflake_registry_acquire.resume_epoch, snowflake_registry_acquire.resume_token) a;
END;

CREATE FUNCTION snowflake_id_internal.snowflake_registry_renew(
    namespace text, worker_id integer, lease_epoch bigint, holder_token bigint, node_tick bigint,
    horizon_ms bigint, OUT ceiling_tick bigint)
    LANGUAGE sql VOLATILE
BEGIN ATOMIC
    SELECT @extschema@.snowflake_registry_renew(
               snowflake_registry_renew.namespace, snowflake_registry_renew.worker_id,
               snowflake_registry_renew.lease_epoch, snowflake_registry_renew.holder_token,
               snowflake_registry_renew.node_tick, snowflake_registry_renew.horizon_ms);
END;

CREATE FUNCTION snowflake_id_internal.snowflake_registry_release(
    namespace text, worker_id integer, lease_epoch bigint, holder_token bigint, last_tick bigint)
    RETURNS boolean
    LANGUAGE sql VOLATILE
BEGIN ATOMIC
    SELECT @extschema@.snowflake_registry_release(
               snowflake_registry_release.namespace, snowflake_registry_release.worker_id,
               snowflake_registry_release.lease_epoch, snowflake_registry_release.holder_token,
               snowflake_registry_release.last_tick);
END;

CREATE FUNCTION snowflake_id_internal.snowflake_registry_history_of(
    namespace text, worker_id integer, lease_epoch bigint, holder_token bigint)
    RETURNS TABLE (claim_epoch bigint, from_tick bigint, to_tick bigint, level integer)
    LANGUAGE sql VOLATILE
BEGIN ATOMIC
    SELECT h.claim_epoch, h.from_tick, h.to_tick, h.level
      FROM @extschema@.snowflake_registry_history_of(
               snowflake_registry_history_of.namespace, snowflake_registry_history_of.worker_id,
               snowflake_registry_history_of.lease_epoch, snowflake_registry_history_of.holder_token) h;
END;

CREATE FUNCTION snowflake_id_internal.snowflake_registry_record_history(
    namespace text, worker_id integer, lease_epoch bigint, holder_token bigint,
    from_tick bigint, to_tick bigint, level integer)
    RETURNS void
    LANGUAGE sql VOLATILE
BEGIN ATOMIC
    SELECT @extschema@.snowflake_registry_record_history(
               snowflake_registry_record_history.namespace, snowflake_registry_record_history.worker_id,
               snowflake_registry_record_history.lease_epoch, snowflake_registry_record_history.holder_token,
               snowflake_registry_record_history.from_tick, snowflake_registry_record_history.to_tick,
               snowflake_registry_record_history.level);
END;

-- Said once, where the DBA installs or updates: roles other than the
-- schema's owner (and its members) and superusers that may create in
-- @extschema@ (docs/security.md, trust rule 1). A WARNING, not a refusal:
-- the extension's own calls are bound; what such a role can still do is
-- make other roles' unqualified calls of the extension's names ambiguous.
DO $writers$
DECLARE
    writers pg_catalog.text;
BEGIN
    SELECT pg_catalog.string_agg(pg_catalog.quote_ident(r.rolname), ', ' ORDER BY r.rolname) INTO writers
      FROM pg_catalog.pg_roles r, pg_catalog.pg_namespace n
     WHERE n.oid OPERATOR(pg_catalog.=) (SELECT e.extnamespace FROM pg_catalog.pg_extension e
                                          WHERE e.extname OPERATOR(pg_catalog.=) 'snowflake_id'::pg_catalog.name)
       AND NOT r.rolsuper AND NOT pg_catalog.pg_has_role(r.oid, n.nspowner, 'USAGE')
       AND r.rolname OPERATOR(pg_catalog.!~) '^pg_'
       AND pg_catalog.has_schema_privilege(r.oid, n.oid, 'CREATE');
    IF writers IS NOT NULL THEN
        RAISE WARNING 'snowflake_id: roles other than the owner of schema % may create in it: %', '@extschema@', writers
            USING DETAIL = 'They cannot change what the extension''s own calls run, but a function they create '
                           'there under one of its names makes other roles'' unqualified calls of that name '
                           'ambiguous, or is called in place of the extension''s by untyped calls.',
                  HINT = 'Revoke CREATE on that schema from them, or install the extension into a schema only its '
                         'owner can create in (docs/security.md).';
    END IF;
END
$writers$;
