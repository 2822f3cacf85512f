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
