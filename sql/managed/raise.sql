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
