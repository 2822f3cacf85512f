-- The registry's functions (sql/install/registry_tables.sql says what the
-- registry is), in snowflake_id_internal, where no role but the
-- extension's owner creates: nodes since 0.7.0 call them here over libpq
-- (src/service/registry/session.rs), and @extschema@'s functions of the
-- same names are thin entry points into them (sql/install/registry_entry.sql).
-- They read and write the tables in @extschema@, named with it. A DBA
-- grants the nodes' roles EXECUTE on the three (or five, with past-instant
-- IDs) a node calls, here (docs/fleets.md).

-- Whether a lease may be granted to another node: released, or not renewed
-- for its horizon plus the namespace's margin by the registry's clock.
-- Read by the snowflake_registry view (bound to it when the view is
-- created); snowflake_registry_acquire writes the same test out itself,
-- since a PL/pgSQL body would look this function up by name at every new
-- session, and an overload with one more defaulted argument, planted by a
-- role that may create in @extschema@, would make that call "not unique".
-- Its body is parsed at CREATE with @extschema@ (often public) on the path,
-- where an overload planted with a closer match than the built-in
-- (bigint / numeric, make_interval(numeric)) would be bound in for good:
-- every built-in not called with exact types is named in pg_catalog.
CREATE FUNCTION snowflake_id_internal.snowflake_registry_free(l snowflake_registry_leases, stale_margin interval, at timestamptz)
    RETURNS boolean
    LANGUAGE sql STABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    RETURN l.released_at IS NOT NULL
           OR l.renewed_at + pg_catalog.make_interval(secs => l.horizon_ms OPERATOR(pg_catalog./) 1000.0)
              + stale_margin < at;

-- Takes a worker id for a node: `wanted`, or with NULL the lowest free one.
-- A worker id is free when never granted, released, or stale; it may also be
-- taken at once by a promoted standby of its holder (same system
-- identifier, a later timeline). The new lease starts above every ceiling
-- granted before: floor_tick = old ceiling + 1. A node presenting the lease
-- it has on disk (`resume_epoch`, `resume_token`, same cluster and
-- timeline) is answered that lease as it is when it is the instance the
-- lease was granted to; another instance is refused (SFL05) while that one
-- renewed within its silence (a quarter of its horizon, at least a tenth
-- plus 6 s: core/src/lease/copies.rs, silence_ms), and granted anew after it
-- (core/src/lease.rs, takeover).
CREATE FUNCTION snowflake_id_internal.snowflake_registry_acquire(
    namespace text,
    worker_bits integer,
    sequence_bits integer,
    epoch_ms bigint,
    wanted integer,
    system_identifier text,
    timeline integer,
    node_name text,
    node_tick bigint,
    horizon_ms bigint,
    resume_epoch bigint DEFAULT NULL,
    resume_token bigint DEFAULT NULL,
    OUT worker_id integer,
    OUT lease_epoch bigint,
    OUT holder_token bigint,
    OUT floor_tick bigint,
    OUT ceiling_tick bigint)
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $acquire$
DECLARE
    ns @extschema@.snowflake_registry_namespaces;
    old @extschema@.snowflake_registry_leases;
    max_worker integer;
    now_ts timestamptz := clock_timestamp();
    tick bigint;
    caller_instance bigint := nullif(current_setting('snowflake_registry.instance', true), '')::bigint;
    silence interval;
    -- The worker id's lease exists and is neither released nor stale.
    held boolean;
BEGIN
    IF namespace IS NULL OR system_identifier IS NULL OR timeline IS NULL OR node_name IS NULL
       OR node_tick IS NULL OR horizon_ms IS NULL OR worker_bits IS NULL OR sequence_bits IS NULL
       OR epoch_ms IS NULL THEN
        RAISE EXCEPTION 'snowflake_registry_acquire: no argument but wanted and resume_epoch may be NULL'
            USING ERRCODE = '22004';
    END IF;
    IF horizon_ms NOT BETWEEN 1 AND 86400000 THEN
        RAISE EXCEPTION 'snowflake_registry_acquire: a horizon of % ms is not between 1 ms and a day', horizon_ms
            USING ERRCODE = '22023';
    END IF;
    -- One namespace's grants are serialised on its row: two nodes asking for
    -- "any free id" at once get different ones.
    INSERT INTO @extschema@.snowflake_registry_namespaces AS n (namespace, worker_bits, sequence_bits, epoch_ms)
        VALUES (snowflake_registry_acquire.namespace, snowflake_registry_acquire.worker_bits,
                snowflake_registry_acquire.sequence_bits, snowflake_registry_acquire.epoch_ms)
        ON CONFLICT DO NOTHING;
    SELECT * INTO ns FROM @extschema@.snowflake_registry_namespaces n
        WHERE n.namespace = snowflake_registry_acquire.namespace FOR UPDATE;
    IF (ns.worker_bits, ns.sequence_bits, ns.epoch_ms)
       IS DISTINCT FROM (snowflake_registry_acquire.worker_bits, snowflake_registry_acquire.sequence_bits,
                         snowflake_registry_acquire.epoch_ms) THEN
        RAISE EXCEPTION 'namespace "%" uses worker_bits=%, sequence_bits=%, epoch=%; node "%" has worker_bits=%, sequence_bits=%, epoch=%',
                        ns.namespace, ns.worker_bits, ns.sequence_bits,
                        to_char(to_timestamp(ns.epoch_ms / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                        node_name, snowflake_registry_acquire.worker_bits, snowflake_registry_acquire.sequence_bits,
                        to_char(to_timestamp(snowflake_registry_acquire.epoch_ms / 1000.0) AT TIME ZONE 'UTC',
                                'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
            USING ERRCODE = 'SFL03',
                  HINT = 'Every node of a namespace must use one layout: set the node''s snowflake_id.worker_bits, sequence_bits and epoch like the others, or give it its own snowflake_id.registry_namespace.';
    END IF;
    max_worker := (1 << ns.worker_bits) - 1;
    tick := least(node_tick, (extract(epoch FROM now_ts) * 1000)::bigint - ns.epoch_ms + 86400000);
    IF wanted IS NOT NULL AND wanted NOT BETWEEN 0 AND max_worker THEN
        RAISE EXCEPTION 'worker id % is out of range 0..% of namespace "%"', wanted, max_worker, ns.namespace
            USING ERRCODE = '22023';
    END IF;

    IF wanted IS NULL THEN
        -- The node's own lease first (a restart), then the lowest free id.
        SELECT l.worker_id INTO wanted FROM @extschema@.snowflake_registry_leases l
            WHERE l.namespace = ns.namespace AND l.system_identifier = snowflake_registry_acquire.system_identifier
              AND l.lease_epoch = resume_epoch AND l.holder_token = resume_token AND l.released_at IS NULL;
        IF wanted IS NULL THEN
            SELECT g.id INTO wanted
              FROM generate_series(0, max_worker) AS g(id)
              LEFT JOIN @extschema@.snowflake_registry_leases l ON l.namespace = ns.namespace AND l.worker_id = g.id
             WHERE l.worker_id IS NULL OR l.released_at IS NOT NULL
                OR l.renewed_at + make_interval(secs => l.horizon_ms / 1000.0) + ns.stale_margin < now_ts
             ORDER BY g.id
             LIMIT 1;
        END IF;
        IF wanted IS NULL THEN
            RAISE EXCEPTION 'no free worker id in namespace "%": all % are held by live nodes', ns.namespace, max_worker + 1
                USING ERRCODE = 'SFL04',
                      HINT = 'Stop a node, or give the namespace more worker_bits (a new namespace: the layout is fixed per namespace).';
        END IF;
    END IF;

    SELECT * INTO old FROM @extschema@.snowflake_registry_leases l
        WHERE l.namespace = ns.namespace AND l.worker_id = wanted FOR UPDATE;
    held := FOUND AND old.released_at IS NULL
            AND old.renewed_at + make_interval(secs => old.horizon_ms / 1000.0) + ns.stale_margin >= now_ts;
    IF held
       -- IS NOT TRUE: without a lease on disk (resume_epoch NULL) the test is
       -- NULL, and NOT NULL would skip the refusal (0.3.0 did: a node of the
       -- holder's cluster and timeline with no lease on disk took it at once).
       AND (old.system_identifier = snowflake_registry_acquire.system_identifier
            AND (snowflake_registry_acquire.timeline > old.timeline
                 OR (snowflake_registry_acquire.timeline = old.timeline AND old.lease_epoch = resume_epoch
                     AND old.holder_token = resume_token))) IS NOT TRUE THEN
        RAISE EXCEPTION 'worker id % of namespace "%" is held by node "%" (system %, timeline %), renewed % ago',
                        wanted, ns.namespace, old.node_name, old.system_identifier, old.timeline,
                        date_trunc('second', now_ts - old.renewed_at)
            USING ERRCODE = 'SFL02',
                  DETAIL = format('Lease epoch %s reaches %s; it becomes free when that node stops cleanly or %s after its last renewal.',
                                  old.lease_epoch,
                                  to_char(to_timestamp((ns.epoch_ms + old.ceiling_tick) / 1000.0) AT TIME ZONE 'UTC',
                                          'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                                  make_interval(secs => old.horizon_ms / 1000.0) + ns.stale_margin),
                  HINT = 'Give this node another snowflake_id.worker_id, or auto.';
    END IF;
    IF held AND caller_instance IS NOT NULL
       AND snowflake_registry_acquire.timeline = old.timeline
       AND old.lease_epoch = resume_epoch AND old.holder_token = resume_token THEN
        IF old.instance = caller_instance THEN
            -- The same postmaster (its keeper restarted, or shared memory
            -- reinitialised after a crash): the lease goes on as it is.
            worker_id := wanted;
            lease_epoch := old.lease_epoch;
            holder_token := old.holder_token;
            floor_tick := old.floor_tick;
            ceiling_tick := old.ceiling_tick;
            RETURN;
        END IF;
        -- The silence (core/src/lease/copies.rs, silence_ms).
        silence := make_interval(secs => greatest(old.horizon_ms / 4, greatest(old.horizon_ms / 10, 1) + 6000) / 1000.0);
        IF old.renewed_at + silence >= now_ts THEN
            RAISE EXCEPTION 'worker id % of namespace "%" is in use by another running start of this server (node "%", renewed % ago)',
                            wanted, ns.namespace, old.node_name, now_ts - old.renewed_at
                USING ERRCODE = 'SFL05',
                      DETAIL = format('This server has the holder''s system identifier %s, timeline %s and lease (epoch %s) on disk, but another postmaster start renews it: this data directory is a copy of a running node (a VM snapshot, a base backup started as a primary), or the holder restarted less than %s after its last renewal.',
                                      old.system_identifier, old.timeline, old.lease_epoch,
                                      silence),
                      HINT = 'A copy must not issue under the original''s lease: give it its own snowflake_id.worker_id (or auto, which takes a free one) or its own snowflake_id.registry_namespace. A restarted holder needs nothing: it is granted the worker id anew once the old start has been silent that long.';
        END IF;
        -- Silent since: a new grant below, above the old ceiling (the old
        -- start may be paused, not gone, and issue up to it).
    END IF;

    worker_id := wanted;
    lease_epoch := coalesce(old.lease_epoch, 0) + 1;
    -- Never 0: a node writes 0 for a lease it released.
    holder_token := greatest(1, (random() * 9223372036854775807)::bigint);
    floor_tick := coalesce(old.ceiling_tick + 1, 0);
    -- A horizon past the node's tick, at least a quarter horizon past the
    -- floor (core/src/lease.rs, grant: takeovers in a row do not add up).
    ceiling_tick := greatest(floor_tick + greatest(horizon_ms / 4, 1), tick + horizon_ms);
    INSERT INTO @extschema@.snowflake_registry_leases AS l
        VALUES (ns.namespace, worker_id, lease_epoch, holder_token, snowflake_registry_acquire.system_identifier,
                snowflake_registry_acquire.timeline, node_name, floor_tick, ceiling_tick, horizon_ms,
                now_ts, now_ts, NULL, caller_instance)
        ON CONFLICT ON CONSTRAINT snowflake_registry_leases_pkey DO UPDATE
        SET lease_epoch = excluded.lease_epoch, holder_token = excluded.holder_token,
            system_identifier = excluded.system_identifier,
            timeline = excluded.timeline, node_name = excluded.node_name, floor_tick = excluded.floor_tick,
            ceiling_tick = excluded.ceiling_tick, horizon_ms = excluded.horizon_ms,
            granted_at = excluded.granted_at, renewed_at = excluded.renewed_at, released_at = NULL,
            instance = excluded.instance;
END
$acquire$;
COMMENT ON FUNCTION snowflake_id_internal.snowflake_registry_acquire(text, integer, integer, bigint, integer, text, integer, text, bigint, bigint, bigint, bigint) IS
    'snowflake_id registry: grants a worker id (wanted, or the lowest free one) above every ceiling granted before';

-- Fails with SFL01 unless the caller holds the lease (epoch and token, not
-- released). Called by the history functions, as their owner, from
-- SQL-standard bodies that bind the call to this function when they are
-- created (a PL/pgSQL PERFORM would resolve it by name at run time, where
-- an overload with one more defaulted argument makes it "not unique"); the
-- renewal writes the same test out itself. Not SECURITY DEFINER itself, and
-- not granted to anyone.
CREATE FUNCTION snowflake_id_internal.snowflake_registry_check_holder(
    namespace text, worker_id integer, lease_epoch bigint, holder_token bigint)
    RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
AS $holder$
DECLARE
    l @extschema@.snowflake_registry_leases;
BEGIN
    SELECT * INTO l FROM @extschema@.snowflake_registry_leases r
        WHERE r.namespace = snowflake_registry_check_holder.namespace
          AND r.worker_id = snowflake_registry_check_holder.worker_id
        FOR UPDATE;
    -- IS DISTINCT FROM: a NULL epoch or token names no lease, and must not
    -- pass as one (a NULL comparison would skip the refusal).
    IF NOT FOUND OR l.lease_epoch IS DISTINCT FROM snowflake_registry_check_holder.lease_epoch
       OR l.holder_token IS DISTINCT FROM snowflake_registry_check_holder.holder_token OR l.released_at IS NOT NULL THEN
        RAISE EXCEPTION 'the lease on worker id % of namespace "%" (epoch %) is lost', worker_id, namespace, lease_epoch
            USING ERRCODE = 'SFL01',
                  DETAIL = CASE WHEN NOT FOUND THEN 'The registry has no lease on that worker id.'
                                WHEN l.released_at IS NOT NULL THEN format('It was released at %s.', l.released_at)
                                WHEN l.lease_epoch = snowflake_registry_check_holder.lease_epoch
                                    THEN 'The registry has another grant under that epoch (it lost the one this node holds).'
                                ELSE format('Node "%s" (system %s, timeline %s) holds it with epoch %s since %s.',
                                            l.node_name, l.system_identifier, l.timeline, l.lease_epoch, l.granted_at)
                           END;
    END IF;
END
$holder$;
COMMENT ON FUNCTION snowflake_id_internal.snowflake_registry_check_holder(text, integer, bigint, bigint) IS
    'snowflake_id registry: SQLSTATE SFL01 unless the caller holds the lease (epoch and token)';

-- Raises the ceiling of a lease still held (same lease_epoch, not released):
-- to the node's tick plus the horizon (at least a quarter horizon past the
-- floor), never lower.
-- Fails with SQLSTATE SFL01 once the lease was replaced or released: the
-- node then stops at the ceiling it has; with SFL05 when another start of
-- the same lease than the recorded one asks (it went on under its lease on
-- disk without the registry's answer): that node stops at once.
CREATE FUNCTION snowflake_id_internal.snowflake_registry_renew(
    namespace text,
    worker_id integer,
    lease_epoch bigint,
    holder_token bigint,
    node_tick bigint,
    horizon_ms bigint,
    OUT ceiling_tick bigint)
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $renew$
DECLARE
    l @extschema@.snowflake_registry_leases;
    tick bigint;
    caller_instance bigint := nullif(current_setting('snowflake_registry.instance', true), '')::bigint;
BEGIN
    IF namespace IS NULL OR worker_id IS NULL OR lease_epoch IS NULL OR holder_token IS NULL OR node_tick IS NULL
       OR horizon_ms IS NULL THEN
        RAISE EXCEPTION 'snowflake_registry_renew: no argument may be NULL' USING ERRCODE = '22004';
    END IF;
    IF horizon_ms NOT BETWEEN 1 AND 86400000 THEN
        RAISE EXCEPTION 'snowflake_registry_renew: a horizon of % ms is not between 1 ms and a day', horizon_ms
            USING ERRCODE = '22023';
    END IF;
    -- snowflake_registry_check_holder's test, written out: a PL/pgSQL call
    -- of it would be resolved by name at run time (see that function).
    SELECT * INTO l FROM @extschema@.snowflake_registry_leases r
        WHERE r.namespace = snowflake_registry_renew.namespace AND r.worker_id = snowflake_registry_renew.worker_id
        FOR UPDATE;
    IF NOT FOUND OR l.lease_epoch IS DISTINCT FROM snowflake_registry_renew.lease_epoch
       OR l.holder_token IS DISTINCT FROM snowflake_registry_renew.holder_token OR l.released_at IS NOT NULL THEN
        RAISE EXCEPTION 'the lease on worker id % of namespace "%" (epoch %) is lost', worker_id, namespace, lease_epoch
            USING ERRCODE = 'SFL01',
                  DETAIL = CASE WHEN NOT FOUND THEN 'The registry has no lease on that worker id.'
                                WHEN l.released_at IS NOT NULL THEN format('It was released at %s.', l.released_at)
                                WHEN l.lease_epoch = snowflake_registry_renew.lease_epoch
                                    THEN 'The registry has another grant under that epoch (it lost the one this node holds).'
                                ELSE format('Node "%s" (system %s, timeline %s) holds it with epoch %s since %s.',
                                            l.node_name, l.system_identifier, l.timeline, l.lease_epoch, l.granted_at)
                           END;
    END IF;
    IF caller_instance IS NOT NULL AND l.instance IS NOT NULL AND l.instance <> caller_instance THEN
        RAISE EXCEPTION 'the lease on worker id % of namespace "%" (epoch %) is renewed by another start of this server', worker_id, namespace, lease_epoch
            USING ERRCODE = 'SFL05',
                  DETAIL = format('Node "%s" holds it under another postmaster start, last renewed %s ago: this server went on under the lease on disk without the registry''s answer, and is a copy of that node''s data directory or was replaced by a restart of it.',
                                  l.node_name, clock_timestamp() - l.renewed_at),
                  HINT = 'This server issues no more IDs under this lease. Give a copy its own snowflake_id.worker_id (or auto) or its own snowflake_id.registry_namespace.';
    END IF;
    SELECT least(node_tick, (extract(epoch FROM clock_timestamp()) * 1000)::bigint - n.epoch_ms + 86400000) INTO tick
      FROM @extschema@.snowflake_registry_namespaces n WHERE n.namespace = l.namespace;
    ceiling_tick := greatest(l.ceiling_tick, tick + horizon_ms, l.floor_tick + greatest(horizon_ms / 4, 1));
    UPDATE @extschema@.snowflake_registry_leases r
       SET ceiling_tick = snowflake_registry_renew.ceiling_tick, horizon_ms = snowflake_registry_renew.horizon_ms,
           renewed_at = clock_timestamp(), instance = coalesce(r.instance, caller_instance)
     WHERE r.namespace = l.namespace AND r.worker_id = l.worker_id;
END
$renew$;
COMMENT ON FUNCTION snowflake_id_internal.snowflake_registry_renew(text, integer, bigint, bigint, bigint, bigint) IS
    'snowflake_id registry: raises the ceiling of a lease still held; SQLSTATE SFL01 once it is lost';

-- A clean stop: the ceiling comes down to the last tick the node issued (it
-- has made that its own ceiling first), so the next holder starts right above
-- it rather than a horizon ahead. Releasing a lease no longer held does
-- nothing, nor does a release by another start than the recorded one: its
-- last tick says nothing of what the recorded one issued.
CREATE FUNCTION snowflake_id_internal.snowflake_registry_release(
    namespace text, worker_id integer, lease_epoch bigint, holder_token bigint, last_tick bigint)
    RETURNS boolean
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $release$
BEGIN
    UPDATE @extschema@.snowflake_registry_leases r
       SET ceiling_tick = greatest(r.floor_tick - 1, least(r.ceiling_tick, last_tick)), released_at = clock_timestamp()
     WHERE r.namespace = snowflake_registry_release.namespace AND r.worker_id = snowflake_registry_release.worker_id
       AND r.lease_epoch = snowflake_registry_release.lease_epoch
       AND r.holder_token = snowflake_registry_release.holder_token AND r.released_at IS NULL
       AND (r.instance IS NULL OR r.instance = coalesce(nullif(current_setting('snowflake_registry.instance', true), '')::bigint, r.instance));
    RETURN FOUND;
END
$release$;
COMMENT ON FUNCTION snowflake_id_internal.snowflake_registry_release(text, integer, bigint, bigint, bigint) IS
    'snowflake_id registry: ends a lease at a clean stop, lowering its ceiling to the last tick issued';

-- The claims of a worker id's history slots, for its holder: what its map
-- must be raised by before its first claim under the lease.
CREATE FUNCTION snowflake_id_internal.snowflake_registry_history_of(
    namespace text, worker_id integer, lease_epoch bigint, holder_token bigint)
    RETURNS TABLE (claim_epoch bigint, from_tick bigint, to_tick bigint, level integer)
    LANGUAGE sql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT snowflake_id_internal.snowflake_registry_check_holder(snowflake_registry_history_of.namespace,
                                                       snowflake_registry_history_of.worker_id,
                                                       snowflake_registry_history_of.lease_epoch,
                                                       snowflake_registry_history_of.holder_token);
    SELECT h.lease_epoch, h.from_tick, h.to_tick, h.level FROM @extschema@.snowflake_registry_history h
     WHERE h.namespace = snowflake_registry_history_of.namespace
       AND h.worker_id = snowflake_registry_history_of.worker_id
     ORDER BY h.from_tick, h.to_tick;
END;
COMMENT ON FUNCTION snowflake_id_internal.snowflake_registry_history_of(text, integer, bigint, bigint) IS
    'snowflake_id registry: the history slots claimed on a worker id, for the holder of its lease';

-- Records a claim of history slots by the lease's holder, before the holder
-- uses it (committed: the node's connection sets synchronous_commit = on).
-- SFL01 once the lease is lost: the claim is then never used.
CREATE FUNCTION snowflake_id_internal.snowflake_registry_record_history(
    namespace text, worker_id integer, lease_epoch bigint, holder_token bigint,
    from_tick bigint, to_tick bigint, level integer)
    RETURNS void
    LANGUAGE sql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT snowflake_id_internal.snowflake_registry_check_holder(snowflake_registry_record_history.namespace,
                                                       snowflake_registry_record_history.worker_id,
                                                       snowflake_registry_record_history.lease_epoch,
                                                       snowflake_registry_record_history.holder_token);
    -- The same lease's claims that this one covers at a level at least
    -- theirs say nothing more.
    DELETE FROM @extschema@.snowflake_registry_history h
     WHERE h.namespace = snowflake_registry_record_history.namespace
       AND h.worker_id = snowflake_registry_record_history.worker_id
       AND h.lease_epoch = snowflake_registry_record_history.lease_epoch
       AND h.from_tick >= snowflake_registry_record_history.from_tick
       AND h.to_tick <= snowflake_registry_record_history.to_tick
       AND h.level <= snowflake_registry_record_history.level;
    INSERT INTO @extschema@.snowflake_registry_history AS h
        VALUES (snowflake_registry_record_history.namespace, snowflake_registry_record_history.worker_id,
                snowflake_registry_record_history.lease_epoch, snowflake_registry_record_history.from_tick,
                snowflake_registry_record_history.to_tick, snowflake_registry_record_history.level)
        ON CONFLICT ON CONSTRAINT snowflake_registry_history_pkey DO UPDATE SET level = greatest(h.level, excluded.level);
END;
COMMENT ON FUNCTION snowflake_id_internal.snowflake_registry_record_history(text, integer, bigint, bigint, bigint, bigint, integer) IS
    'snowflake_id registry: records a claim of history slots (past-instant IDs) by the holder of a lease; SQLSTATE SFL01 once it is lost';

REVOKE EXECUTE ON FUNCTION snowflake_id_internal.snowflake_registry_acquire(text, integer, integer, bigint, integer, text, integer, text, bigint, bigint, bigint, bigint) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION snowflake_id_internal.snowflake_registry_renew(text, integer, bigint, bigint, bigint, bigint) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION snowflake_id_internal.snowflake_registry_release(text, integer, bigint, bigint, bigint) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION snowflake_id_internal.snowflake_registry_check_holder(text, integer, bigint, bigint) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION snowflake_id_internal.snowflake_registry_history_of(text, integer, bigint, bigint) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION snowflake_id_internal.snowflake_registry_record_history(text, integer, bigint, bigint, bigint, bigint, integer) FROM PUBLIC;
