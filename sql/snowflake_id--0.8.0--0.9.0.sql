-- snowflake_id 0.8.0 -> 0.9.0: the extension's SQL implementations move
-- into the owner-only schema snowflake_id_internal, and its public names
-- become entry points bound to them (docs/upgrading.md, "From 0.8.0 to
-- 0.9.0"). pg_upgrade and pg_dump re-create bodies and views from their
-- text; a body that called a function in @extschema@ by name stopped the
-- restore once another role had put a look-alike with one more defaulted
-- argument there. After this update no body or view of the extension names
-- a function of @extschema@.
--
-- The implementations move with ALTER FUNCTION ... SET SCHEMA: they keep
-- their identity, so the grants a DBA gave (the nodes' roles' EXECUTE on
-- the registry's functions), the views and the event trigger that use them
-- follow, and their bodies need no change. Every statement names exact
-- argument types, which a look-alike cannot make ambiguous.
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

-- 0.7.0's SQL wrappers of the library's functions in snowflake_id_internal
-- called them in @extschema@ by name: replaced by the C functions
-- themselves, as a fresh install declares them (sql/install/library_functions.sql).
-- 0.7.0's entry points in snowflake_id_internal: SQL wrappers of the
-- library's functions, of the registry's and of the logical guard, each
-- calling the function of its name in @extschema@. A database updated
-- from 0.6.0 with a look-alike in the way has none of them (the 0.7.0 step
-- leaves them to this one): each is dropped where it is.
DO $drop$
DECLARE
    f pg_catalog.regprocedure;
BEGIN
    FOREACH f IN ARRAY ARRAY[
        pg_catalog.to_regprocedure('snowflake_id_internal.snowflake_timestamp(bigint)'),
        pg_catalog.to_regprocedure('snowflake_id_internal.snowflake_from_timestamp(timestamptz)'),
        pg_catalog.to_regprocedure('snowflake_id_internal.snowflake_nextval_at(timestamptz)'),
        pg_catalog.to_regprocedure('snowflake_id_internal.snowflake_registry_acquire(text, integer, integer, bigint, integer, text, integer, text, bigint, bigint, bigint, bigint)'),
        pg_catalog.to_regprocedure('snowflake_id_internal.snowflake_registry_renew(text, integer, bigint, bigint, bigint, bigint)'),
        pg_catalog.to_regprocedure('snowflake_id_internal.snowflake_registry_release(text, integer, bigint, bigint, bigint)'),
        pg_catalog.to_regprocedure('snowflake_id_internal.snowflake_registry_history_of(text, integer, bigint, bigint)'),
        pg_catalog.to_regprocedure('snowflake_id_internal.snowflake_registry_record_history(text, integer, bigint, bigint, bigint, bigint, integer)'),
        pg_catalog.to_regprocedure('snowflake_id_internal.snowflake_logical_guard(pg_catalog.regclass)'),
        pg_catalog.to_regprocedure('snowflake_id_internal.snowflake_logical_guard()')]
    LOOP
        IF f IS NOT NULL THEN
            EXECUTE pg_catalog.format('DROP FUNCTION %s', f);
        END IF;
    END LOOP;
END
$drop$;
CREATE FUNCTION snowflake_id_internal.snowflake_timestamp(id bigint) RETURNS timestamptz
    LANGUAGE c STRICT STABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'snowflake_timestamp_wrapper';
CREATE FUNCTION snowflake_id_internal.snowflake_worker_id(id bigint) RETURNS integer
    LANGUAGE c STRICT STABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'snowflake_worker_id_wrapper';
CREATE FUNCTION snowflake_id_internal.snowflake_sequence(id bigint) RETURNS integer
    LANGUAGE c STRICT STABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'snowflake_sequence_wrapper';
CREATE FUNCTION snowflake_id_internal.snowflake_timestamp(id bigint, epoch timestamptz, worker_bits integer,
                                                          sequence_bits integer) RETURNS timestamptz
    LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', 'snowflake_timestamp_with_layout_wrapper';
CREATE FUNCTION snowflake_id_internal.snowflake_worker_id(id bigint, epoch timestamptz, worker_bits integer,
                                                          sequence_bits integer) RETURNS integer
    LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', 'snowflake_worker_id_with_layout_wrapper';
CREATE FUNCTION snowflake_id_internal.snowflake_sequence(id bigint, epoch timestamptz, worker_bits integer,
                                                         sequence_bits integer) RETURNS integer
    LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', 'snowflake_sequence_with_layout_wrapper';
-- What snowflake_convert() runs (sql/install/convert.sql): the epoch's
-- lookup and the generators its statements call.
CREATE FUNCTION snowflake_id_internal.snowflake_from_timestamp(ts timestamptz) RETURNS bigint
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
CREATE FUNCTION snowflake_id_internal.snowflake_nextval_at(ts timestamptz) RETURNS bigint
    LANGUAGE sql VOLATILE STRICT
    RETURN OPERATOR(snowflake_id_internal.#@#) ts;
-- What the status view (sql/install/finalize.sql) and the cluster check's
-- view of the publishers' answers (sql/install/cluster.sql) read.
CREATE FUNCTION snowflake_id_internal.snowflake_id_status()
    RETURNS TABLE (worker_id bigint, worker_bits integer, sequence_bits integer, epoch timestamptz,
                   started_at timestamptz, last_id bigint, logical_clock timestamptz, wall_clock timestamptz,
                   drift_ms bigint, durable_mark timestamptz, max_drift_ms bigint, ids_issued bigint,
                   ms_borrowed bigint, waits bigint, clock_steps_back bigint, largest_step_back_ms bigint,
                   mark_writes bigint, mark_writes_by_keeper bigint, in_recovery boolean, mark_lsn pg_lsn,
                   keeper_pid integer, problem text, sync_standby_wait_since timestamptz, lease_state text,
                   lease_epoch bigint, lease_floor timestamptz, lease_ceiling timestamptz,
                   lease_renewed_at timestamptz, registry_error text)
    LANGUAGE c STRICT VOLATILE PARALLEL SAFE AS 'MODULE_PATHNAME', 'snowflake_id_status_wrapper';
CREATE FUNCTION snowflake_id_internal.snowflake_logical_peers() RETURNS TABLE (node text, status text, trouble text)
    LANGUAGE c STRICT VOLATILE PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp
    AS 'MODULE_PATHNAME', 'snowflake_logical_peers_wrapper';

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

-- The registry: 0.7.0's entry points in snowflake_id_internal went (above), the
-- implementations take their place (with the grants the DBA gave them),
-- and @extschema@ gets entry points bound to them, for 0.6.0's nodes and
-- the DBA. snowflake_registry_history_of and _record_history call
-- snowflake_registry_check_holder and the snowflake_registry view calls
-- snowflake_registry_free by identity: they follow.
ALTER FUNCTION @extschema@.snowflake_registry_free(@extschema@.snowflake_registry_leases, interval, timestamptz) SET SCHEMA snowflake_id_internal;
ALTER FUNCTION @extschema@.snowflake_registry_check_holder(text, integer, bigint, bigint) SET SCHEMA snowflake_id_internal;
ALTER FUNCTION @extschema@.snowflake_registry_acquire(text, integer, integer, bigint, integer, text, integer, text, bigint, bigint, bigint, bigint) SET SCHEMA snowflake_id_internal;
ALTER FUNCTION @extschema@.snowflake_registry_renew(text, integer, bigint, bigint, bigint, bigint) SET SCHEMA snowflake_id_internal;
ALTER FUNCTION @extschema@.snowflake_registry_release(text, integer, bigint, bigint, bigint) SET SCHEMA snowflake_id_internal;
ALTER FUNCTION @extschema@.snowflake_registry_history_of(text, integer, bigint, bigint) SET SCHEMA snowflake_id_internal;
ALTER FUNCTION @extschema@.snowflake_registry_record_history(text, integer, bigint, bigint, bigint, bigint, integer) SET SCHEMA snowflake_id_internal;
-- The two history functions' bodies, as a fresh install has them: 0.7.0's
-- call snowflake_registry_check_holder by identity and follow it, but a
-- database updated from 0.6.0 with a look-alike in the way kept 0.6.0's.
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


-- The logical guard: 0.7.0's two entry points in snowflake_id_internal went,
-- the implementation takes their place (its DEFAULT NULL serves both forms
-- they had), the DDL trigger's function moves beside it (the event trigger
-- follows) and calls it instead of repeating its loop, and @extschema@
-- gets an entry point bound to it.
ALTER FUNCTION @extschema@.snowflake_logical_guard(pg_catalog.regclass) SET SCHEMA snowflake_id_internal;
ALTER FUNCTION @extschema@.snowflake_logical_guard_ddl() SET SCHEMA snowflake_id_internal;
COMMENT ON FUNCTION snowflake_id_internal.snowflake_logical_guard(pg_catalog.regclass) IS
    'snowflake_id: puts the logical replication guard on one table, or with NULL on every table whose bigint key defaults to snowflake_nextval()';
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

CREATE FUNCTION @extschema@.snowflake_logical_guard(tbl pg_catalog.regclass DEFAULT NULL)
    RETURNS TABLE (table_name pg_catalog.regclass, columns pg_catalog.name[])
    LANGUAGE sql VOLATILE
BEGIN ATOMIC
    SELECT g.table_name, g.columns FROM snowflake_id_internal.snowflake_logical_guard(snowflake_logical_guard.tbl) g;
END;
COMMENT ON FUNCTION @extschema@.snowflake_logical_guard(pg_catalog.regclass) IS
    'snowflake_id: puts the logical replication guard on every table (or one) whose bigint key defaults to snowflake_nextval()';


-- snowflake_convert and snowflake_cluster_check the same way (the
-- snowflake_cluster_problems view follows the check).
ALTER FUNCTION @extschema@.snowflake_convert(pg_catalog.regclass, pg_catalog.name, boolean, pg_catalog.name) SET SCHEMA snowflake_id_internal;
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

-- The public entry point, bound to the implementation when created.
CREATE FUNCTION @extschema@.snowflake_cluster_check()
    RETURNS TABLE (node text, worker_id bigint, layout text, problem text)
    LANGUAGE sql VOLATILE
BEGIN ATOMIC
    SELECT c.node, c.worker_id, c.layout, c.problem FROM snowflake_id_internal.snowflake_cluster_check() c;
END;
COMMENT ON FUNCTION @extschema@.snowflake_cluster_check() IS
    'snowflake_id on Citus and among logical peers: one row per node with an unset or shared worker id, another layout than the coordinator''s (this node''s), no answer or another problem';

