-- snowflake_id 0.8.0 -> 0.9.0: the extension's SQL implementations move
-- into the owner-only schema snowflake_id_internal, and its public names
-- become entry points bound to them (docs/upgrading.md, "From 0.8.0 to
-- 0.9.0"). pg_upgrade and pg_dump re-create bodies and views from their
-- text; a body that called a function in @extschema@ by name stopped the
-- restore once another role had put a look-alike with one more defaulted
-- argument there. After this update no body or view of the extension names
-- a function of @extschema@.
--
-- Nothing that another role may use is dropped: 0.7.0's wrappers in
-- snowflake_id_internal were executable by every role, and a view or a
-- temporary table's default of anyone's on one would make a DROP fail. So
-- those wrappers become the implementations in place, and the public
-- functions that were the implementations become the entry points in
-- place; what nobody else calls moves with ALTER FUNCTION ... SET SCHEMA.
-- Grants follow: a DBA's grants on an implementation (the nodes' roles'
-- EXECUTE on the registry's functions) are copied to the function that now
-- is it. Every statement names exact argument types, which a look-alike
-- cannot make ambiguous.
-- Install the 0.9.0 library first (it serves 0.8.0's definitions as they
-- are), then ALTER EXTENSION snowflake_id UPDATE.
\echo Use "ALTER EXTENSION snowflake_id UPDATE" to load this file. \quit

-- The two views replaced below: an open transaction that read one holds a
-- lock the replacement must wait for, and a wait with no end would stop
-- every later reader too. Taken first, 5 s at most, naming the sessions
-- that hold them.
DO $views$
DECLARE
    v pg_catalog.regclass;
    holders pg_catalog.text;
    saved pg_catalog.text := pg_catalog.current_setting('lock_timeout');
BEGIN
    PERFORM pg_catalog.set_config('lock_timeout', '5s', true);
    FOREACH v IN ARRAY ARRAY['@extschema@.snowflake_id_status', '@extschema@.snowflake_logical_peer_answers']::pg_catalog.regclass[] LOOP
        BEGIN
            EXECUTE pg_catalog.format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', v);
        EXCEPTION WHEN lock_not_available THEN
            SELECT pg_catalog.string_agg(pg_catalog.format('pid %s (role %s, %s since %s)', a.pid, a.usename, a.state,
                                                           a.xact_start), ', ' ORDER BY a.pid)
              INTO holders
              FROM pg_catalog.pg_locks l JOIN pg_catalog.pg_stat_activity a ON a.pid OPERATOR(pg_catalog.=) l.pid
             WHERE l.locktype OPERATOR(pg_catalog.=) 'relation' AND l.relation OPERATOR(pg_catalog.=) v::pg_catalog.oid
               AND l.granted AND l.pid OPERATOR(pg_catalog.<>) pg_catalog.pg_backend_pid();
            RAISE EXCEPTION 'cannot update extension snowflake_id: view % is in use', v
                USING ERRCODE = '55P03',
                      DETAIL = pg_catalog.format('Sessions holding it: %s.', coalesce(holders, 'none any more')),
                      HINT = 'End those transactions (SELECT pg_catalog.pg_terminate_backend(pid); if they are idle), then run ALTER EXTENSION snowflake_id UPDATE again.';
        END;
    END LOOP;
    PERFORM pg_catalog.set_config('lock_timeout', saved, true);
END
$views$;

-- The library's C functions under snowflake_id_internal, as a fresh
-- install declares them (sql/install/library_functions.sql). 0.7.0 made
-- three of these names SQL wrappers that called @extschema@ by name: they
-- are replaced in place, not dropped, since any role may have a view or a
-- temporary table's default that uses one (a DROP would fail on it).
CREATE OR REPLACE FUNCTION snowflake_id_internal.snowflake_timestamp(id bigint) RETURNS timestamptz
    LANGUAGE c STRICT STABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'snowflake_timestamp_wrapper';
CREATE OR REPLACE FUNCTION snowflake_id_internal.snowflake_worker_id(id bigint) RETURNS integer
    LANGUAGE c STRICT STABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'snowflake_worker_id_wrapper';
CREATE OR REPLACE FUNCTION snowflake_id_internal.snowflake_sequence(id bigint) RETURNS integer
    LANGUAGE c STRICT STABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'snowflake_sequence_wrapper';
CREATE OR REPLACE FUNCTION snowflake_id_internal.snowflake_timestamp(id bigint, epoch timestamptz, worker_bits integer,
                                                          sequence_bits integer) RETURNS timestamptz
    LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', 'snowflake_timestamp_with_layout_wrapper';
CREATE OR REPLACE FUNCTION snowflake_id_internal.snowflake_worker_id(id bigint, epoch timestamptz, worker_bits integer,
                                                          sequence_bits integer) RETURNS integer
    LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', 'snowflake_worker_id_with_layout_wrapper';
CREATE OR REPLACE FUNCTION snowflake_id_internal.snowflake_sequence(id bigint, epoch timestamptz, worker_bits integer,
                                                         sequence_bits integer) RETURNS integer
    LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', 'snowflake_sequence_with_layout_wrapper';
-- What snowflake_convert() runs (sql/install/convert.sql): the epoch's
-- lookup and the generators its statements call.
CREATE OR REPLACE FUNCTION snowflake_id_internal.snowflake_from_timestamp(ts timestamptz) RETURNS bigint
    LANGUAGE c STRICT STABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'snowflake_from_timestamp_wrapper';
-- snowflake_nextval_at spends history slots, which is the DBA's grant to
-- give (REVOKEd from PUBLIC at the end of the install): one grant, on the
-- public function, must let a role call it and have snowflake_convert()
-- re-key with it. A second C declaration would be a second grant to give.
-- So the call goes to the public function itself, through an operator: an
-- operator names its function by exact signature when it is created (and
-- when pg_upgrade or pg_dump re-create it), which no look-alike with one
-- more defaulted argument can make ambiguous, and calling it checks the
-- caller's EXECUTE on that function. The operator is in the owner-only
-- schema, so nothing can be put in its place either.
CREATE OPERATOR snowflake_id_internal.#@# (RIGHTARG = timestamptz, FUNCTION = @extschema@.snowflake_nextval_at);
CREATE OR REPLACE FUNCTION snowflake_id_internal.snowflake_nextval_at(ts timestamptz) RETURNS bigint
    LANGUAGE sql VOLATILE STRICT
    RETURN OPERATOR(snowflake_id_internal.#@#) ts;
-- What the status view (sql/install/status_view.sql) and the cluster check's
-- view of the publishers' answers (sql/install/cluster.sql) read.
CREATE OR REPLACE FUNCTION snowflake_id_internal.snowflake_id_status()
    RETURNS TABLE (worker_id bigint, worker_bits integer, sequence_bits integer, epoch timestamptz,
                   started_at timestamptz, last_id bigint, logical_clock timestamptz, wall_clock timestamptz,
                   drift_ms bigint, durable_mark timestamptz, max_drift_ms bigint, ids_issued bigint,
                   ms_borrowed bigint, waits bigint, clock_steps_back bigint, largest_step_back_ms bigint,
                   mark_writes bigint, mark_writes_by_keeper bigint, in_recovery boolean, mark_lsn pg_lsn,
                   keeper_pid integer, problem text, sync_standby_wait_since timestamptz, lease_state text,
                   lease_epoch bigint, lease_floor timestamptz, lease_ceiling timestamptz,
                   lease_renewed_at timestamptz, registry_error text)
    LANGUAGE c STRICT VOLATILE PARALLEL SAFE AS 'MODULE_PATHNAME', 'snowflake_id_status_wrapper';
CREATE OR REPLACE FUNCTION snowflake_id_internal.snowflake_logical_peers() RETURNS TABLE (node text, status text, trouble text)
    LANGUAGE c STRICT VOLATILE PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp
    AS 'MODULE_PATHNAME', 'snowflake_logical_peers_wrapper';
-- What the hints of the generator's refusals give a superuser to run
-- (snowflake_advance_past checks the caller is one, under either name).
CREATE OR REPLACE FUNCTION snowflake_id_internal.snowflake_advance_past(id bigint, force boolean DEFAULT false) RETURNS bigint
    LANGUAGE c STRICT VOLATILE PARALLEL UNSAFE AS 'MODULE_PATHNAME', 'snowflake_advance_past_checked_wrapper';

-- The decoders call the functions above.
CREATE OR REPLACE FUNCTION @extschema@.snowflake_decode(id bigint) RETURNS snowflake_parts
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN CASE WHEN id IS NULL THEN NULL
                ELSE ROW(snowflake_id_internal.snowflake_timestamp(id), snowflake_id_internal.snowflake_worker_id(id),
                         snowflake_id_internal.snowflake_sequence(id))::@extschema@.snowflake_parts
           END;
CREATE OR REPLACE FUNCTION @extschema@.snowflake_decode(id bigint, epoch timestamptz, worker_bits integer, sequence_bits integer)
    RETURNS snowflake_parts
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE WHEN id IS NULL OR epoch IS NULL OR worker_bits IS NULL OR sequence_bits IS NULL THEN NULL
                ELSE ROW(snowflake_id_internal.snowflake_timestamp(id, epoch, worker_bits, sequence_bits),
                         snowflake_id_internal.snowflake_worker_id(id, epoch, worker_bits, sequence_bits),
                         snowflake_id_internal.snowflake_sequence(id, epoch, worker_bits, sequence_bits))::@extschema@.snowflake_parts
           END;
CREATE OR REPLACE FUNCTION @extschema@.snowflake_decode_fields(id bigint) RETURNS snowflake_parts
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN ROW(snowflake_id_internal.snowflake_timestamp(id), snowflake_id_internal.snowflake_worker_id(id),
               snowflake_id_internal.snowflake_sequence(id))::@extschema@.snowflake_parts;
CREATE OR REPLACE FUNCTION @extschema@.snowflake_decode_fields(id bigint, epoch timestamptz, worker_bits integer, sequence_bits integer)
    RETURNS snowflake_parts
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN ROW(snowflake_id_internal.snowflake_timestamp(id, epoch, worker_bits, sequence_bits),
               snowflake_id_internal.snowflake_worker_id(id, epoch, worker_bits, sequence_bits),
               snowflake_id_internal.snowflake_sequence(id, epoch, worker_bits, sequence_bits))::@extschema@.snowflake_parts;
CREATE OR REPLACE FUNCTION @extschema@.snowflake_decode_rows(id bigint) RETURNS SETOF snowflake_parts
    LANGUAGE sql STABLE PARALLEL SAFE ROWS 1
    BEGIN ATOMIC
        SELECT snowflake_id_internal.snowflake_timestamp(id), snowflake_id_internal.snowflake_worker_id(id),
               snowflake_id_internal.snowflake_sequence(id);
    END;
CREATE OR REPLACE FUNCTION @extschema@.snowflake_decode_rows(id bigint, epoch timestamptz, worker_bits integer, sequence_bits integer)
    RETURNS SETOF snowflake_parts
    LANGUAGE sql IMMUTABLE PARALLEL SAFE ROWS 1
    BEGIN ATOMIC
        SELECT snowflake_id_internal.snowflake_timestamp(id, epoch, worker_bits, sequence_bits),
               snowflake_id_internal.snowflake_worker_id(id, epoch, worker_bits, sequence_bits),
               snowflake_id_internal.snowflake_sequence(id, epoch, worker_bits, sequence_bits);
    END;

-- The views read the functions above.
CREATE OR REPLACE VIEW @extschema@.snowflake_id_status AS SELECT * FROM snowflake_id_internal.snowflake_id_status();
CREATE OR REPLACE VIEW @extschema@.snowflake_logical_peer_answers AS
    SELECT p.node, p.status, p.trouble FROM snowflake_id_internal.snowflake_logical_peers() p;

-- The registry. The two helpers nobody else calls move with their
-- identity (the history functions' bodies and the snowflake_registry view
-- follow them). The five a node calls: 0.7.0's wrappers of their names in
-- snowflake_id_internal, which nodes since 0.7.0 call, become the
-- implementations in place (any role may have something that uses them),
-- with the grants the DBA gave the implementations in @extschema@; those
-- become entry points into them in place, keeping their grants (a node of
-- 0.6.0 calls them). A database updated from 0.6.0 with a look-alike in the
-- way has no wrappers: the implementations are created.
ALTER FUNCTION @extschema@.snowflake_registry_free(@extschema@.snowflake_registry_leases, interval, timestamptz) SET SCHEMA snowflake_id_internal;
ALTER FUNCTION @extschema@.snowflake_registry_check_holder(text, integer, bigint, bigint) SET SCHEMA snowflake_id_internal;
CREATE OR REPLACE FUNCTION snowflake_id_internal.snowflake_registry_acquire(
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
CREATE OR REPLACE FUNCTION snowflake_id_internal.snowflake_registry_renew(
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
CREATE OR REPLACE FUNCTION snowflake_id_internal.snowflake_registry_release(
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
CREATE OR REPLACE FUNCTION snowflake_id_internal.snowflake_registry_history_of(
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
CREATE OR REPLACE FUNCTION snowflake_id_internal.snowflake_registry_record_history(
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
-- Each function that now does the work answers whom the public function
-- of its name answered: the grants a DBA gave the registry's
-- implementations (the nodes' roles'), and a REVOKE on a public function
-- the decoders and views used to read (the status function, an accessor),
-- hold for its twin here.
DO $acl$
DECLARE
    pair pg_catalog.text[];
    source pg_catalog.regprocedure;
    target pg_catalog.regprocedure;
    acl pg_catalog.aclitem[];
    owner pg_catalog.oid;
    grantee pg_catalog.oid;
    item record;
BEGIN
    FOREACH pair SLICE 1 IN ARRAY ARRAY[
        ['@extschema@.snowflake_timestamp(bigint)', 'snowflake_id_internal.snowflake_timestamp(bigint)'],
        ['@extschema@.snowflake_worker_id(bigint)', 'snowflake_id_internal.snowflake_worker_id(bigint)'],
        ['@extschema@.snowflake_sequence(bigint)', 'snowflake_id_internal.snowflake_sequence(bigint)'],
        ['@extschema@.snowflake_timestamp(bigint, timestamptz, integer, integer)', 'snowflake_id_internal.snowflake_timestamp(bigint, timestamptz, integer, integer)'],
        ['@extschema@.snowflake_worker_id(bigint, timestamptz, integer, integer)', 'snowflake_id_internal.snowflake_worker_id(bigint, timestamptz, integer, integer)'],
        ['@extschema@.snowflake_sequence(bigint, timestamptz, integer, integer)', 'snowflake_id_internal.snowflake_sequence(bigint, timestamptz, integer, integer)'],
        ['@extschema@.snowflake_from_timestamp(timestamptz)', 'snowflake_id_internal.snowflake_from_timestamp(timestamptz)'],
        ['@extschema@.snowflake_id_status()', 'snowflake_id_internal.snowflake_id_status()'],
        ['@extschema@.snowflake_logical_peers()', 'snowflake_id_internal.snowflake_logical_peers()'],
        ['@extschema@.snowflake_advance_past(bigint, boolean)', 'snowflake_id_internal.snowflake_advance_past(bigint, boolean)'],
        ['@extschema@.snowflake_registry_acquire(text, integer, integer, bigint, integer, text, integer, text, bigint, bigint, bigint, bigint)', 'snowflake_id_internal.snowflake_registry_acquire(text, integer, integer, bigint, integer, text, integer, text, bigint, bigint, bigint, bigint)'],
        ['@extschema@.snowflake_registry_renew(text, integer, bigint, bigint, bigint, bigint)', 'snowflake_id_internal.snowflake_registry_renew(text, integer, bigint, bigint, bigint, bigint)'],
        ['@extschema@.snowflake_registry_release(text, integer, bigint, bigint, bigint)', 'snowflake_id_internal.snowflake_registry_release(text, integer, bigint, bigint, bigint)'],
        ['@extschema@.snowflake_registry_history_of(text, integer, bigint, bigint)', 'snowflake_id_internal.snowflake_registry_history_of(text, integer, bigint, bigint)'],
        ['@extschema@.snowflake_registry_record_history(text, integer, bigint, bigint, bigint, bigint, integer)', 'snowflake_id_internal.snowflake_registry_record_history(text, integer, bigint, bigint, bigint, bigint, integer)']
    ]::pg_catalog.text[] LOOP
        source := pair[1]::pg_catalog.regprocedure;
        target := pair[2]::pg_catalog.regprocedure;
        SELECT p.proacl, p.proowner INTO acl, owner FROM pg_catalog.pg_proc p
         WHERE p.oid OPERATOR(pg_catalog.=) source::pg_catalog.oid;
        CONTINUE WHEN acl IS NULL;
        -- The target's grants go first, those default privileges gave it
        -- included, then it gets the source's.
        FOR grantee IN
            SELECT DISTINCT a.grantee
              FROM pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
             WHERE p.oid OPERATOR(pg_catalog.=) target::pg_catalog.oid AND a.grantee OPERATOR(pg_catalog.<>) owner
        LOOP
            EXECUTE pg_catalog.format('REVOKE ALL ON FUNCTION %s FROM %s', target,
                                      CASE WHEN grantee OPERATOR(pg_catalog.=) 0::pg_catalog.oid THEN 'PUBLIC'
                                           ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(grantee)) END);
        END LOOP;
        EXECUTE pg_catalog.format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', target);
        FOR item IN
            SELECT a.grantee, a.is_grantable FROM pg_catalog.aclexplode(acl) a
             WHERE a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE' AND a.grantee OPERATOR(pg_catalog.<>) owner
        LOOP
            EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO %s%s', target,
                                      CASE WHEN item.grantee OPERATOR(pg_catalog.=) 0::pg_catalog.oid THEN 'PUBLIC'
                                           ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(item.grantee)) END,
                                      CASE WHEN item.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
        END LOOP;
        -- Every GRANT in an extension script is recorded as the object's
        -- initial privileges, which pg_dump leaves out (CREATE EXTENSION
        -- makes them): the DBA's grants copied here would be lost by a dump
        -- and restore. The target's initial privileges are the source's,
        -- the extension's own, so that the DBA's are dumped as changes.
        DELETE FROM pg_catalog.pg_init_privs i
         WHERE i.objoid OPERATOR(pg_catalog.=) target::pg_catalog.oid
           AND i.classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass::pg_catalog.oid;
        INSERT INTO pg_catalog.pg_init_privs (objoid, classoid, objsubid, privtype, initprivs)
        SELECT target::pg_catalog.oid, i.classoid, i.objsubid, i.privtype, i.initprivs
          FROM pg_catalog.pg_init_privs i
         WHERE i.objoid OPERATOR(pg_catalog.=) source::pg_catalog.oid
           AND i.classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass::pg_catalog.oid;
    END LOOP;
END
$acl$;
CREATE OR REPLACE FUNCTION @extschema@.snowflake_registry_acquire(
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
CREATE OR REPLACE FUNCTION @extschema@.snowflake_registry_renew(
    namespace text, worker_id integer, lease_epoch bigint, holder_token bigint, node_tick bigint,
    horizon_ms bigint, OUT ceiling_tick bigint)
    LANGUAGE sql VOLATILE
BEGIN ATOMIC
    SELECT snowflake_id_internal.snowflake_registry_renew(
               snowflake_registry_renew.namespace, snowflake_registry_renew.worker_id,
               snowflake_registry_renew.lease_epoch, snowflake_registry_renew.holder_token,
               snowflake_registry_renew.node_tick, snowflake_registry_renew.horizon_ms);
END;
CREATE OR REPLACE FUNCTION @extschema@.snowflake_registry_release(
    namespace text, worker_id integer, lease_epoch bigint, holder_token bigint, last_tick bigint)
    RETURNS boolean
    LANGUAGE sql VOLATILE
BEGIN ATOMIC
    SELECT snowflake_id_internal.snowflake_registry_release(
               snowflake_registry_release.namespace, snowflake_registry_release.worker_id,
               snowflake_registry_release.lease_epoch, snowflake_registry_release.holder_token,
               snowflake_registry_release.last_tick);
END;
CREATE OR REPLACE FUNCTION @extschema@.snowflake_registry_history_of(
    namespace text, worker_id integer, lease_epoch bigint, holder_token bigint)
    RETURNS TABLE (claim_epoch bigint, from_tick bigint, to_tick bigint, level integer)
    LANGUAGE sql VOLATILE
BEGIN ATOMIC
    SELECT h.claim_epoch, h.from_tick, h.to_tick, h.level
      FROM snowflake_id_internal.snowflake_registry_history_of(
               snowflake_registry_history_of.namespace, snowflake_registry_history_of.worker_id,
               snowflake_registry_history_of.lease_epoch, snowflake_registry_history_of.holder_token) h;
END;
CREATE OR REPLACE FUNCTION @extschema@.snowflake_registry_record_history(
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
COMMENT ON FUNCTION @extschema@.snowflake_registry_acquire(text, integer, integer, bigint, integer, text, integer, text, bigint, bigint, bigint, bigint) IS NULL;
COMMENT ON FUNCTION @extschema@.snowflake_registry_renew(text, integer, bigint, bigint, bigint, bigint) IS NULL;
COMMENT ON FUNCTION @extschema@.snowflake_registry_release(text, integer, bigint, bigint, bigint) IS NULL;
COMMENT ON FUNCTION @extschema@.snowflake_registry_history_of(text, integer, bigint, bigint) IS NULL;
COMMENT ON FUNCTION @extschema@.snowflake_registry_record_history(text, integer, bigint, bigint, bigint, bigint, integer) IS NULL;

-- The logical guard the same way: 0.7.0's two entry points in
-- snowflake_id_internal become the implementation and its every-table
-- form, the public function an entry point into them (all in place), and
-- the DDL trigger's function moves beside them (the event trigger follows
-- it) and calls the guard instead of repeating its loop.
CREATE OR REPLACE FUNCTION snowflake_id_internal.snowflake_logical_guard(tbl pg_catalog.regclass)
    RETURNS TABLE (table_name pg_catalog.regclass, columns pg_catalog.name[])
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    SET lock_timeout = '50ms'
AS $guard$
DECLARE
    r record;
    args text;
    done boolean;
    lookalikes text;
    waits_end timestamptz := pg_catalog.clock_timestamp() + interval '2 s';
BEGIN
    FOR r IN
        SELECT a.attrelid AS rel, pg_catalog.array_agg(a.attname ORDER BY a.attnum) AS cols
          FROM pg_catalog.pg_attrdef d
          JOIN pg_catalog.pg_depend dep
            ON dep.classid = 'pg_catalog.pg_attrdef'::pg_catalog.regclass AND dep.objid = d.oid
           AND dep.refclassid = 'pg_catalog.pg_proc'::pg_catalog.regclass
           AND dep.refobjid = '@extschema@.snowflake_nextval()'::pg_catalog.regprocedure
          JOIN pg_catalog.pg_attribute a
            ON a.attrelid = d.adrelid AND a.attnum = d.adnum AND NOT a.attisdropped
           AND a.atttypid = 'pg_catalog.int8'::pg_catalog.regtype
          JOIN pg_catalog.pg_class c ON c.oid = d.adrelid AND c.relkind = 'r'
         WHERE tbl IS NULL OR d.adrelid = tbl
         GROUP BY a.attrelid
         ORDER BY a.attrelid
    LOOP
        -- A trigger already there with these columns, enabled as REPLICA (or
        -- ALWAYS, or disabled: the DBA's choice, kept): done. One enabled
        -- for local sessions ('O', as CREATE TRIGGER leaves it) is made anew.
        CONTINUE WHEN EXISTS (
            SELECT FROM pg_catalog.pg_trigger t
             WHERE t.tgrelid = r.rel AND t.tgname = 'snowflake_id_received' AND t.tgenabled <> 'O'
               AND t.tgfoid = '@extschema@.snowflake_id_received()'::pg_catalog.regprocedure
               AND t.tgargs = (SELECT pg_catalog.string_agg(
                                             pg_catalog.convert_to(col::pg_catalog.text, pg_catalog.getdatabaseencoding())
                                             || pg_catalog.decode('00', 'hex'), ''::pg_catalog.bytea ORDER BY ord)
                                 FROM pg_catalog.unnest(r.cols) WITH ORDINALITY AS u(col, ord)));
        SELECT pg_catalog.string_agg(pg_catalog.quote_literal(col), ', ') INTO args
          FROM pg_catalog.unnest(r.cols) AS col;
        done := false;
        BEGIN
            PERFORM pg_catalog.set_config('lock_timeout', GREATEST(1, LEAST(50, (pg_catalog.date_part('epoch',
                        waits_end - pg_catalog.clock_timestamp()) * 1000)::integer))::text || 'ms', true);
            -- (Dropped only when there: DROP ... IF EXISTS says NOTICE at every new table.)
            IF EXISTS (SELECT FROM pg_catalog.pg_trigger t
                        WHERE t.tgrelid = r.rel AND t.tgname = 'snowflake_id_received') THEN
                EXECUTE pg_catalog.format('DROP TRIGGER snowflake_id_received ON %s', r.rel::pg_catalog.regclass);
            END IF;
            EXECUTE pg_catalog.format(
                'CREATE TRIGGER snowflake_id_received BEFORE INSERT ON %s FOR EACH ROW EXECUTE FUNCTION %s.snowflake_id_received(%s)',
                r.rel::pg_catalog.regclass, '@extschema@', args);
            EXECUTE pg_catalog.format('ALTER TABLE %s ENABLE REPLICA TRIGGER snowflake_id_received',
                                      r.rel::pg_catalog.regclass);
            done := true;
        EXCEPTION WHEN OTHERS THEN
            -- Functions of this name that are not the extension's make the
            -- hint's call ambiguous: named, so that the DBA drops them first.
            SELECT pg_catalog.string_agg(pg_catalog.format('%s (owned by role %s)', p.oid::pg_catalog.regprocedure,
                                                           p.proowner::pg_catalog.regrole), ', ' ORDER BY p.oid)
              INTO lookalikes
              FROM pg_catalog.pg_proc p
             WHERE p.proname = 'snowflake_logical_guard'
               AND p.pronamespace = (SELECT e.extnamespace FROM pg_catalog.pg_extension e WHERE e.extname = 'snowflake_id')
               AND NOT EXISTS (SELECT FROM pg_catalog.pg_depend m
                                WHERE m.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND m.objid = p.oid
                                  AND m.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass AND m.deptype = 'e');
            RAISE WARNING 'snowflake_id: the logical replication guard is not on table %: %',
                          r.rel::pg_catalog.regclass, SQLERRM
                USING HINT = pg_catalog.format(
                    'Once that is resolved, run SELECT * FROM snowflake_id_internal.snowflake_logical_guard(%L::pg_catalog.regclass); '
                    'as the table''s owner or a superuser.%s',
                    r.rel::pg_catalog.regclass::pg_catalog.text,
                    CASE WHEN lookalikes IS NOT NULL
                         THEN pg_catalog.format(' Also drop %s: not the extension''s, it makes calls of '
                                                'snowflake_logical_guard by name ambiguous for every role.',
                                                lookalikes) ELSE '' END);
        END;
        CONTINUE WHEN NOT done;
        table_name := r.rel;
        columns := r.cols;
        RETURN NEXT;
    END LOOP;
END;
$guard$;
COMMENT ON FUNCTION snowflake_id_internal.snowflake_logical_guard(pg_catalog.regclass) IS
    'snowflake_id: puts the logical replication guard on one table, or with NULL on every table whose bigint key defaults to snowflake_nextval()';
CREATE OR REPLACE FUNCTION snowflake_id_internal.snowflake_logical_guard()
    RETURNS TABLE (table_name pg_catalog.regclass, columns pg_catalog.name[])
    LANGUAGE sql VOLATILE
BEGIN ATOMIC
    SELECT g.table_name, g.columns FROM snowflake_id_internal.snowflake_logical_guard(NULL::pg_catalog.regclass) g;
END;
COMMENT ON FUNCTION snowflake_id_internal.snowflake_logical_guard() IS
    'snowflake_id: puts the logical replication guard on every table whose bigint key defaults to snowflake_nextval()';
ALTER FUNCTION @extschema@.snowflake_logical_guard_ddl() SET SCHEMA snowflake_id_internal;
CREATE OR REPLACE FUNCTION snowflake_id_internal.snowflake_logical_guard_ddl()
    RETURNS event_trigger
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
AS $ddl$
DECLARE
    r record;
BEGIN
    -- A restore: pg_dump's scripts (and pg_restore, and pg_upgrade's) turn
    -- check_function_bodies off, which sessions otherwise hardly ever do.
    IF NOT pg_catalog.current_setting('check_function_bodies')::pg_catalog.bool THEN
        RETURN;
    END IF;
    -- Citus refuses to distribute a table that has a trigger: with Citus in
    -- this database the guard is the DBA's call, table by table
    -- (snowflake_logical_guard(tbl)), on tables that stay local.
    IF EXISTS (SELECT FROM pg_catalog.pg_extension WHERE extname OPERATOR(pg_catalog.=) 'citus'::pg_catalog.name) THEN
        RETURN;
    END IF;
    -- The tables made or changed, and the leaf partitions of a partitioned
    -- one (a default set, a partition attached, on the parent reaches them),
    -- with their bigint columns defaulting to the extension's
    -- snowflake_nextval(): read from the catalogs alone, so that other
    -- tables cost nothing and need no USAGE on the extension's schema.
    FOR r IN
        SELECT a.attrelid AS rel, pg_catalog.array_agg(a.attname ORDER BY a.attnum) AS cols
          FROM (SELECT DISTINCT t.relid
                  FROM pg_catalog.pg_event_trigger_ddl_commands() c
                 CROSS JOIN LATERAL (SELECT c.objid AS relid
                                     UNION
                                     SELECT p.relid FROM pg_catalog.pg_partition_tree(c.objid) p WHERE p.isleaf) t
                 WHERE c.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND c.object_type = 'table') t
          JOIN pg_catalog.pg_class rc ON rc.oid = t.relid AND rc.relkind = 'r'
          JOIN pg_catalog.pg_attrdef d ON d.adrelid = t.relid
          JOIN pg_catalog.pg_depend dep
            ON dep.classid = 'pg_catalog.pg_attrdef'::pg_catalog.regclass AND dep.objid = d.oid
           AND dep.refclassid = 'pg_catalog.pg_proc'::pg_catalog.regclass
          JOIN pg_catalog.pg_proc f ON f.oid = dep.refobjid AND f.proname = 'snowflake_nextval' AND f.pronargs = 0
          JOIN pg_catalog.pg_depend member
            ON member.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND member.objid = f.oid
           AND member.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass AND member.deptype = 'e'
          JOIN pg_catalog.pg_extension e ON e.oid = member.refobjid AND e.extname = 'snowflake_id'
          JOIN pg_catalog.pg_attribute a
            ON a.attrelid = d.adrelid AND a.attnum = d.adnum AND NOT a.attisdropped
           AND a.atttypid = 'pg_catalog.int8'::pg_catalog.regtype
         GROUP BY a.attrelid
         ORDER BY a.attrelid
    LOOP
        PERFORM snowflake_id_internal.snowflake_logical_guard(r.rel);
    END LOOP;
END;
$ddl$;
CREATE OR REPLACE FUNCTION @extschema@.snowflake_logical_guard(tbl pg_catalog.regclass DEFAULT NULL)
    RETURNS TABLE (table_name pg_catalog.regclass, columns pg_catalog.name[])
    LANGUAGE sql VOLATILE
BEGIN ATOMIC
    SELECT g.table_name, g.columns FROM snowflake_id_internal.snowflake_logical_guard(snowflake_logical_guard.tbl) g;
END;
COMMENT ON FUNCTION @extschema@.snowflake_logical_guard(pg_catalog.regclass) IS
    'snowflake_id: puts the logical replication guard on every table (or one) whose bigint key defaults to snowflake_nextval()';

-- snowflake_convert and snowflake_cluster_check move with their identity
-- (the snowflake_cluster_problems view follows the check), and the
-- extension's schema gets entry points into them.
ALTER FUNCTION @extschema@.snowflake_convert(pg_catalog.regclass, pg_catalog.name, boolean, pg_catalog.name) SET SCHEMA snowflake_id_internal;
-- Its body as a fresh install has it: the same work, with hints that call
-- schema-qualified, typed names.
CREATE OR REPLACE FUNCTION snowflake_id_internal.snowflake_convert(tbl regclass, col name, dry_run boolean DEFAULT false,
                                                       rekey_by name DEFAULT NULL)
    RETURNS SETOF text
    LANGUAGE plpgsql
    -- Statements name every object schema-qualified, whatever the caller's search_path.
    SET search_path = pg_catalog, pg_temp
AS $convert$
DECLARE
    att record;
    seq regclass;
    widen record;
    w_rels oid[];
    w_atts int2[];
    stmts text[] := '{}';
    blockers text;
    max_value bigint;
    next_id bigint;
    stmt text;
    time_type regtype;
    nulls bigint;
    map text;
    fk record;
    fk_adds text[] := '{}';
    touched oid[];
    foreign_owned record;
BEGIN
    SELECT a.attnum, a.atttypid, a.attidentity, a.attgenerated, d.oid AS defoid,
           pg_get_expr(d.adbin, d.adrelid) AS def
      INTO att
      FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
     WHERE a.attrelid = tbl AND a.attname = col AND a.attnum > 0 AND NOT a.attisdropped;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'column "%" of relation % does not exist', col, tbl USING ERRCODE = '42703';
    END IF;

    -- A partition's column follows its partitioned table's: widening or a
    -- default there alone is refused by PostgreSQL or leaves siblings behind.
    IF (SELECT relispartition FROM pg_class WHERE oid = tbl) THEN
        RAISE EXCEPTION '% is a partition of %', tbl, pg_partition_root(tbl)
            USING ERRCODE = '42809',
                  HINT = format('Convert the partitioned table: SELECT * FROM snowflake_id_internal.snowflake_convert(%L::pg_catalog.regclass, %L::pg_catalog.name);',
                                pg_partition_root(tbl)::regclass::text, col);
    END IF;
    IF att.atttypid NOT IN ('smallint'::regtype, 'integer'::regtype, 'bigint'::regtype) THEN
        RAISE EXCEPTION 'column "%" of % is of type %, not an integer', col, tbl, format_type(att.atttypid, NULL)
            USING ERRCODE = '42804', HINT = 'Snowflake IDs are bigint; only smallint, integer and bigint keys can be converted.';
    END IF;

    -- The chain: every foreign-key column that references the key, and those
    -- that reference them. On a partitioned table PostgreSQL keeps a copy of
    -- each foreign key per partition (conparentid names the parent's) and
    -- refuses to alter a partition's inherited column alone: the copies are
    -- skipped, and each column is named on the top of its partition tree,
    -- whose ALTER TABLE reaches every partition. Only catalogs are read here:
    -- nothing of any table runs before the owners are checked.
    WITH RECURSIVE cols(rel, attnum) AS (
        SELECT tbl::oid, att.attnum
        UNION
        SELECT c.conrelid, c.conkey[k.i]
          FROM cols
          JOIN pg_constraint c ON c.contype = 'f' AND c.confrelid = cols.rel AND c.conparentid = 0
          JOIN LATERAL generate_subscripts(c.confkey, 1) AS k(i) ON c.confkey[k.i] = cols.attnum
    ), tops AS (
        SELECT DISTINCT coalesce(pg_partition_root(cols.rel), cols.rel) AS rel, a.attname
          FROM cols JOIN pg_attribute a ON a.attrelid = cols.rel AND a.attnum = cols.attnum
    )
    SELECT array_agg(a.attrelid), array_agg(a.attnum) INTO w_rels, w_atts
      FROM tops JOIN pg_attribute a ON a.attrelid = tops.rel AND a.attname = tops.attname;

    -- The tables the statements below alter, lock or update: this one; the
    -- chain when it is widened or re-keyed; with rekey_by, every table whose
    -- foreign key into the chain is dropped and added back; and every
    -- partition or inheritance child of those, which ALTER TABLE and UPDATE
    -- reach too. Each must be the caller's: its owner, or a member of its
    -- owner that is not a superuser (a superuser passes every ownership
    -- check, so membership says nothing; it must SET ROLE to the owner, and
    -- the owner's code then runs with the owner's rights only).
    touched := ARRAY[tbl::oid];
    IF att.atttypid <> 'bigint'::regtype OR rekey_by IS NOT NULL THEN
        touched := touched || w_rels;
    END IF;
    IF rekey_by IS NOT NULL THEN
        touched := touched || ARRAY(
            SELECT c.conrelid FROM pg_constraint c
             WHERE c.contype = 'f' AND c.conparentid = 0
               AND EXISTS (SELECT 1 FROM unnest(w_rels) AS w(rel)
                            WHERE w.rel IN (c.confrelid, coalesce(pg_partition_root(c.confrelid), c.confrelid))));
    END IF;
    WITH RECURSIVE rels(rel) AS (
        SELECT unnest(touched)
        UNION
        SELECT i.inhrelid FROM pg_inherits i JOIN rels ON i.inhparent = rels.rel
    ), me AS (
        SELECT r.oid, r.rolsuper FROM pg_roles r WHERE r.rolname = current_user
    )
    SELECT c.oid::regclass AS rel, c.relowner::regrole AS owner, pg_get_userbyid(c.relowner) AS owner_name,
           c.oid = tbl::oid AS is_tbl
      INTO foreign_owned
      FROM rels JOIN pg_class c ON c.oid = rels.rel CROSS JOIN me
     WHERE c.relowner <> me.oid AND (me.rolsuper OR NOT pg_has_role(c.relowner, 'USAGE'))
     ORDER BY c.oid <> tbl::oid, c.oid::regclass::text
     LIMIT 1;
    IF FOUND AND foreign_owned.is_tbl THEN
        RAISE EXCEPTION 'cannot convert %: table % is owned by role %, not by %', tbl, tbl, foreign_owned.owner,
                        quote_ident(current_user)
            USING ERRCODE = '42501',
                  DETAIL = 'snowflake_convert() alters only tables the calling role owns, or whose owning role it is a '
                           'member of without being a superuser: their CHECK constraints, index expressions and '
                           'triggers run as the caller.',
                  HINT = format('Run it as the owner: SET ROLE %I; SELECT * FROM snowflake_id_internal.snowflake_convert(%L::pg_catalog.regclass, %L::pg_catalog.name); RESET ROLE;',
                                foreign_owned.owner_name, tbl::text, col);
    ELSIF FOUND THEN
        RAISE EXCEPTION 'cannot convert %: table % is owned by role %, not by %', tbl, foreign_owned.rel,
                        foreign_owned.owner, quote_ident(current_user)
            USING ERRCODE = '42501',
                  DETAIL = format('The conversion would alter %s (in the key''s foreign-key chain, or a partition or '
                                  'inheritance child of a table there) as %I, running its CHECK constraints, index expressions '
                                  'and triggers with %I''s rights. snowflake_convert() alters only tables the calling '
                                  'role owns, or whose owning role it is a member of without being a superuser.',
                                  foreign_owned.rel, current_user, current_user),
                  HINT = format('Have one role own every table of the chain and convert as that role (SET ROLE %I '
                                'if it owns them all; or ALTER TABLE %s OWNER TO ...), or drop that foreign key, '
                                'convert, and let %I add it back.',
                                foreign_owned.owner_name, foreign_owned.rel, foreign_owned.owner_name);
    END IF;

    -- Already converted: nothing to do, and say so.
    IF att.def ~ '(^|\.)snowflake_nextval\(\)$' THEN
        RAISE NOTICE 'column "%" of % already defaults to snowflake_nextval(); nothing to do', col, tbl;
        RETURN;
    END IF;

    -- 1. Stop the sequence from feeding the column.
    IF att.attidentity IN ('a', 'd') THEN
        -- Dropping the identity drops its internal sequence with it.
        stmts := stmts || format('ALTER TABLE %s ALTER COLUMN %I DROP IDENTITY', tbl, col);
    ELSIF att.def ~ '^nextval\(' THEN
        SELECT refobjid::regclass INTO seq
          FROM pg_depend
         WHERE classid = 'pg_attrdef'::regclass AND objid = att.defoid
           AND refclassid = 'pg_class'::regclass AND deptype = 'n';
        stmts := stmts || format('ALTER TABLE %s ALTER COLUMN %I DROP DEFAULT', tbl, col);
        -- A serial's own sequence (owned by this column, used by no other
        -- default) goes with it; a shared sequence stays for its other users.
        -- The partitions' copies of this default are not other users: DROP
        -- DEFAULT on a partitioned table drops them too.
        IF EXISTS (SELECT 1 FROM pg_depend
                    WHERE classid = 'pg_class'::regclass AND objid = seq AND refobjid = tbl
                      AND refobjsubid = att.attnum AND deptype = 'a')
           AND NOT EXISTS (SELECT 1 FROM pg_depend d JOIN pg_attrdef ad ON ad.oid = d.objid
                            WHERE d.classid = 'pg_attrdef'::regclass AND d.objid <> att.defoid
                              AND d.refclassid = 'pg_class'::regclass AND d.refobjid = seq
                              AND ad.adrelid NOT IN (SELECT relid FROM pg_partition_tree(tbl))) THEN
            stmts := stmts || format('DROP SEQUENCE %s', seq);
        END IF;
    ELSE
        RAISE EXCEPTION 'column "%" of % is not fed by a sequence (default: %)', col, tbl, coalesce(att.def, 'none')
            USING ERRCODE = '55000',
                  HINT = 'snowflake_convert() converts serial, identity and DEFAULT nextval(...) columns; for others run '
                         'ALTER TABLE ... ALTER COLUMN ... SET DEFAULT snowflake_nextval().';
    END IF;

    -- The time column of a re-key: a timestamp, on every row.
    IF rekey_by IS NOT NULL THEN
        SELECT a.atttypid INTO time_type FROM pg_attribute a
         WHERE a.attrelid = tbl AND a.attname = rekey_by AND a.attnum > 0 AND NOT a.attisdropped;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'column "%" of relation % does not exist', rekey_by, tbl USING ERRCODE = '42703';
        END IF;
        IF time_type NOT IN ('timestamptz'::regtype, 'timestamp'::regtype) THEN
            RAISE EXCEPTION 'column "%" of % is of type %, not a timestamp', rekey_by, tbl, time_type
                USING ERRCODE = '42804',
                      HINT = 'rekey_by names the column that holds when each row happened: timestamptz, or timestamp '
                             '(read in the session''s TimeZone).';
        END IF;
        -- No row may come or change while its key is re-keyed (rows
        -- committed between the map and the UPDATE would keep old keys).
        IF NOT dry_run THEN
            EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', tbl);
        END IF;
        EXECUTE format('SELECT count(*) FROM %s WHERE %I IS NULL', tbl, rekey_by) INTO nulls;
        IF nulls > 0 THEN
            RAISE EXCEPTION '% rows of % have no time in column "%"', nulls, tbl, rekey_by
                USING ERRCODE = '23502',
                      HINT = format('Give them one first, for example: UPDATE %s SET %I = <when they happened> '
                                    'WHERE %I IS NULL;', tbl, rekey_by, rekey_by);
        END IF;
        -- Times no past-instant ID can have, counted, before anything runs.
        EXECUTE format('SELECT count(*) FROM %s WHERE %I::timestamptz >= clock_timestamp() - interval ''1 ms'' '
                       'OR %I::timestamptz < (SELECT snowflake_id_internal.snowflake_timestamp(0::bigint))', tbl, rekey_by, rekey_by)
           INTO nulls;
        IF nulls > 0 THEN
            RAISE EXCEPTION '% rows of % have a time in column "%" that is not in the past or is before the epoch',
                            nulls, tbl, rekey_by
                USING ERRCODE = '22023',
                      HINT = 'An ID can tell a time from the layout''s epoch up to the present; fix those times, or '
                             'give those rows live IDs after the conversion.';
        END IF;
    END IF;

    -- 2. New IDs must be above every existing value (re-keyed values are
    -- replaced, and past-instant IDs never meet live ones).
    EXECUTE format('SELECT max(%I)::bigint FROM %s', col, tbl) INTO max_value;
    IF rekey_by IS NOT NULL THEN
        max_value := NULL;
    END IF;
    next_id := snowflake_id_internal.snowflake_from_timestamp(clock_timestamp());
    BEGIN
        next_id := greatest(next_id, (SELECT s.last_id + 1 FROM @extschema@.snowflake_id_status s));
    EXCEPTION WHEN OTHERS THEN
        NULL;  -- no generator here (not preloaded): the clock's bound stands
    END;
    IF max_value >= next_id THEN
        RAISE EXCEPTION 'existing value % in %.% is not below the IDs snowflake_nextval() issues now (from %)',
                        max_value, tbl, quote_ident(col), next_id
            USING ERRCODE = '22023',
                  HINT = format('New IDs must be above old ones. If these values are snowflake IDs of this worker id, '
                                'move the generator past them first (as a superuser): '
                                'SELECT snowflake_id_internal.snowflake_advance_past(max(%I)::bigint) FROM %s;', col, tbl);
    END IF;

    -- 3. Widen to bigint, with the chain (above).
    IF att.atttypid <> 'bigint'::regtype OR rekey_by IS NOT NULL THEN
        SELECT string_agg(DISTINCT format('%s (on %s.%I)', r.ev_class::regclass, d.refobjid::regclass, a.attname), ', ')
          INTO blockers
          FROM pg_depend d
          JOIN pg_rewrite r ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid
          JOIN unnest(w_rels, w_atts) AS w(rel, attnum) ON d.refclassid = 'pg_class'::regclass
                                             AND d.refobjid = w.rel AND d.refobjsubid = w.attnum
          JOIN pg_attribute a ON a.attrelid = w.rel AND a.attnum = w.attnum
         WHERE r.ev_class <> d.refobjid;
        -- A dry run shows the plan with what blocks it, as a comment line
        -- first; a real run stops there.
        IF blockers IS NOT NULL AND dry_run THEN
            RETURN NEXT format('-- blocked: cannot widen %s to bigint: used by view or rule %s; drop those views '
                               '(pg_get_viewdef() shows their definitions), convert, then recreate them', tbl, blockers);
        ELSIF blockers IS NOT NULL THEN
            RAISE EXCEPTION 'cannot widen % to bigint: used by view or rule %', tbl, blockers
                USING ERRCODE = '0A000',
                      HINT = 'Drop those views (pg_get_viewdef() shows their definitions), convert, then recreate them.';
        END IF;

        FOR widen IN
            SELECT w.rel::regclass AS rel, a.attname
              FROM unnest(w_rels, w_atts) AS w(rel, attnum)
              JOIN pg_attribute a ON a.attrelid = w.rel AND a.attnum = w.attnum
             WHERE a.atttypid IN ('smallint'::regtype, 'integer'::regtype)
             ORDER BY w.rel <> tbl, w.rel::regclass::text, a.attname
        LOOP
            stmts := stmts || format('ALTER TABLE %s ALTER COLUMN %I TYPE bigint', widen.rel, widen.attname);
        END LOOP;
    END IF;

    -- 3b. Re-key: a map from each old key to a past-instant ID at its row's
    -- time, made in (time, old key) order so that ties in one millisecond
    -- keep the old order; every column of the chain rewritten through it,
    -- with the chain's foreign keys dropped meanwhile and added back after
    -- (validated then, in one pass each).
    IF rekey_by IS NOT NULL THEN
        map := format('pg_temp.snowflake_rekey_%s', tbl::oid);
        FOR fk IN
            SELECT c.conrelid::regclass AS rel, c.conname, pg_get_constraintdef(c.oid) AS def
              FROM pg_constraint c
             WHERE c.contype = 'f' AND c.conparentid = 0
               AND EXISTS (SELECT 1 FROM unnest(w_rels) AS w(rel)
                            WHERE w.rel IN (c.confrelid, coalesce(pg_partition_root(c.confrelid), c.confrelid)))
             ORDER BY c.conrelid::regclass::text, c.conname
        LOOP
            stmts := stmts || format('ALTER TABLE %s DROP CONSTRAINT %I', fk.rel, fk.conname);
            fk_adds := fk_adds || format('ALTER TABLE %s ADD CONSTRAINT %I %s', fk.rel, fk.conname, fk.def);
        END LOOP;
        -- Every table of the chain, before the map is made.
        FOR widen IN
            SELECT DISTINCT w.rel::regclass AS rel FROM unnest(w_rels) AS w(rel) ORDER BY 1
        LOOP
            stmts := stmts || format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', widen.rel);
        END LOOP;
        -- A map left by an earlier re-key of this table in this session (a
        -- plain DROP ... IF EXISTS says NOTICE when there is no temp schema).
        IF to_regclass(map) IS NOT NULL THEN
            stmts := stmts || format('DROP TABLE %s', map);
        END IF;
        stmts := stmts || format(
            'CREATE TEMP TABLE %s ON COMMIT DROP AS SELECT old, snowflake_id_internal.snowflake_nextval_at(at) AS new '
            'FROM (SELECT %I AS old, %I::timestamptz AS at FROM %s ORDER BY %I, %I OFFSET 0) s',
            map, col, rekey_by, tbl, rekey_by, col);
        stmts := stmts || format('ALTER TABLE %s ADD PRIMARY KEY (old)', map);
        stmts := stmts || format('ANALYZE %s', map);
        FOR widen IN
            SELECT w.rel::regclass AS rel, a.attname
              FROM unnest(w_rels, w_atts) AS w(rel, attnum)
              JOIN pg_attribute a ON a.attrelid = w.rel AND a.attnum = w.attnum
             ORDER BY w.rel <> tbl, w.rel::regclass::text, a.attname
        LOOP
            stmts := stmts || format('UPDATE %s AS t SET %I = m.new FROM %s AS m WHERE t.%I = m.old',
                                     widen.rel, widen.attname, map, widen.attname);
        END LOOP;
        stmts := stmts || fk_adds;
    END IF;

    -- 4. The new default.
    stmts := stmts || format('ALTER TABLE %s ALTER COLUMN %I SET DEFAULT %s.snowflake_nextval()',
                             tbl, col, '@extschema@');

    FOREACH stmt IN ARRAY stmts LOOP
        IF NOT dry_run THEN
            EXECUTE stmt;
        END IF;
        RETURN NEXT stmt;
    END LOOP;
END
$convert$;
COMMENT ON FUNCTION snowflake_id_internal.snowflake_convert(pg_catalog.regclass, pg_catalog.name, boolean, pg_catalog.name) IS
    'snowflake_id: the implementation of snowflake_convert()';
CREATE FUNCTION @extschema@.snowflake_convert(tbl pg_catalog.regclass, col pg_catalog.name,
                                              dry_run boolean DEFAULT false, rekey_by pg_catalog.name DEFAULT NULL)
    RETURNS SETOF text
    LANGUAGE sql VOLATILE
BEGIN ATOMIC
    SELECT s FROM snowflake_id_internal.snowflake_convert(snowflake_convert.tbl, snowflake_convert.col,
                                                          snowflake_convert.dry_run, snowflake_convert.rekey_by) s;
END;
COMMENT ON FUNCTION @extschema@.snowflake_convert(pg_catalog.regclass, pg_catalog.name, boolean, pg_catalog.name) IS
    'moves a serial, identity or nextval() key column to DEFAULT snowflake_nextval(), widening it and its foreign keys to bigint, and with rekey_by re-keys the rows to IDs of their own time';
ALTER FUNCTION @extschema@.snowflake_cluster_check() SET SCHEMA snowflake_id_internal;
COMMENT ON FUNCTION snowflake_id_internal.snowflake_cluster_check() IS
    'snowflake_id: the implementation of snowflake_cluster_check()';
CREATE FUNCTION @extschema@.snowflake_cluster_check()
    RETURNS TABLE (node text, worker_id bigint, layout text, problem text)
    LANGUAGE sql VOLATILE
BEGIN ATOMIC
    SELECT c.node, c.worker_id, c.layout, c.problem FROM snowflake_id_internal.snowflake_cluster_check() c;
END;
COMMENT ON FUNCTION @extschema@.snowflake_cluster_check() IS
    'snowflake_id on Citus and among logical peers: one row per node with an unset or shared worker id, another layout than the coordinator''s (this node''s), no answer or another problem';
