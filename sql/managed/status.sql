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
