-- The library's C functions that the extension's own SQL calls, declared a
-- second time in snowflake_id_internal (sql/install/internal_schema.sql),
-- where no role but the extension's owner creates. A body that called them
-- in @extschema@ would be re-created from its text by pg_upgrade and
-- pg_dump, and a function of the same name with one more defaulted argument
-- planted there by another role would make that call "not unique" and stop
-- the restore; here nothing can join them. Each is the same C symbol as its
-- public twin, with the same attributes (tests/hostile_bindings.rs compares
-- the two): the public names stay what applications call.
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
-- What the status view (sql/install/status_view.sql) and the cluster check's
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
-- What the hints of the generator's refusals give a superuser to run
-- (snowflake_advance_past checks the caller is one, under either name).
CREATE FUNCTION snowflake_id_internal.snowflake_advance_past(id bigint, force boolean DEFAULT false) RETURNS bigint
    LANGUAGE c STRICT VOLATILE PARALLEL UNSAFE AS 'MODULE_PATHNAME', 'snowflake_advance_past_checked_wrapper';
REVOKE EXECUTE ON FUNCTION snowflake_id_internal.snowflake_advance_past(bigint, boolean) FROM PUBLIC;
