-- n IDs in ascending order. Taken in chunks, each reserved by a raise that
-- keeps the counter within max_drift of the clock (waiting for the clock in
-- between, like single draws), so that blocks cannot push the lead past it
-- whatever their size or number.
CREATE FUNCTION snowflake_id_internal.snowflake_managed_block(n integer, what text) RETURNS bigint[]
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    cfg snowflake_id_private.snowflake_managed_config;
    lim bigint;
    last bigint;
    r record;
    f bigint;
    bases bigint[];
    gots bigint[];
    left_ bigint;
    g0 bigint;
BEGIN
    IF n < 1 OR n > 1000000 THEN
        RAISE EXCEPTION 'snowflake_id: % takes 1 to 1000000 IDs, not %', what, n
            USING ERRCODE = '22023', HINT = 'Ask for at most 1000000 IDs per call; call it again for more.';
    END IF;
    IF pg_catalog.pg_is_in_recovery() THEN
        PERFORM snowflake_id_internal.snowflake_managed_refuse_standby(what);
    END IF;
    <<whole>>
    LOOP
    cfg := snowflake_id_internal.snowflake_managed_live();
    IF cfg.worker_id IS NULL THEN
        -- The refusal without a worker id.
        PERFORM snowflake_id_internal.snowflake_managed_draw(false::pg_catalog.bool);
    END IF;
    -- The worker id's range of generations: a change while the block is
    -- reserved makes its values belong to no single worker id, so it starts
    -- again (the values reserved are burnt, never issued).
    g0 := pg_catalog.pg_sequence_last_value('snowflake_id_state.snowflake_managed_generation'::pg_catalog.regclass) >> 40;
    cfg := snowflake_id_internal.snowflake_managed_live();
    bases := '{}';
    gots := '{}';
    left_ := n;
    lim := snowflake_id_internal.snowflake_managed_max_drift_ms() << cfg.sequence_bits;
    last := snowflake_id_internal.snowflake_managed_last(cfg.worker_bits);
    WHILE left_ > 0 LOOP
        PERFORM snowflake_id_internal.snowflake_managed_wait_lead(cfg, 0::pg_catalog.int8);
        f := snowflake_id_internal.snowflake_managed_floor(cfg.epoch, cfg.sequence_bits);
        SELECT * INTO r FROM snowflake_id_internal.snowflake_managed_raise(f, left_, last,
            f + lim + coalesce(pg_catalog.pg_sequence_last_value('snowflake_id_state.snowflake_managed_offset'::pg_catalog.regclass), 0));
        IF r.got > 0 THEN
            bases := bases || r.base;
            gots := gots || r.got;
            left_ := left_ - r.got;
        ELSE
            PERFORM pg_catalog.pg_sleep(0.001);
        END IF;
    END LOOP;
    EXIT whole WHEN pg_catalog.pg_sequence_last_value('snowflake_id_state.snowflake_managed_generation'::pg_catalog.regclass) >> 40 = g0;
    END LOOP;
    RETURN ARRAY(SELECT snowflake_id_internal.snowflake_managed_compose(c, cfg.worker_id, cfg.worker_bits, cfg.sequence_bits)
                   FROM ROWS FROM (pg_catalog.unnest(bases), pg_catalog.unnest(gots)) AS k(b, g),
                        pg_catalog.generate_series(k.b + 1, k.b + k.g) AS c
                  ORDER BY c);
END
$body$;

CREATE FUNCTION snowflake_nextval_block(n integer) RETURNS SETOF bigint
    LANGUAGE sql VOLATILE STRICT PARALLEL RESTRICTED
    BEGIN ATOMIC
        SELECT pg_catalog.unnest(snowflake_id_internal.snowflake_managed_block(n, 'snowflake_nextval_block(integer)'));
    END;
COMMENT ON FUNCTION snowflake_nextval_block(integer) IS
    'n new IDs in ascending order, one row each (managed edition)';

CREATE FUNCTION snowflake_nextval_array(n integer) RETURNS bigint[]
    LANGUAGE sql VOLATILE STRICT PARALLEL RESTRICTED
    RETURN snowflake_id_internal.snowflake_managed_block(n, 'snowflake_nextval_array(integer)');
COMMENT ON FUNCTION snowflake_nextval_array(integer) IS
    'n new IDs in ascending order in one array (managed edition)';
