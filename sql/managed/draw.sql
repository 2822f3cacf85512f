-- The managed edition's generator: SQL and PL/pgSQL only, on PostgreSQL's
-- own durable objects (docs/managed.md says what that keeps and what not).
--
-- The counter: a sequence holding an ID without its worker bits, that is
-- (milliseconds since the epoch) << sequence_bits | sequence. nextval() makes
-- it unique and increasing across every session and durable in WAL (a
-- promoted standby continues above it); an ID is a counter value with the
-- worker id spliced in. The clock enters only as a floor: a value behind the
-- clock's millisecond is not used, the counter is raised to the clock first.
--
-- The raise is the one delicate part. "read the counter, setval(clock)"
-- races with the nextval() calls of other sessions: a value drawn between
-- the read and the setval may be at or above the clock and be issued again
-- after it. So raises are fenced by a seqlock: the generation sequence is
-- bumped to an odd value before a raise reads the counter and to an even
-- value after its setval, and a draw keeps its value only if it read the same
-- even generation before and after its nextval(). A value drawn while a
-- raise ran is thrown away (the sequence moves on), never issued. Raisers
-- are serialized by a row lock on an owner-only table, taken in a
-- subtransaction that is rolled back on purpose so the lock goes at once
-- (an advisory lock would do, but any role can take any advisory key and
-- hold it: a denial of service). A raiser that dies between its two bumps
-- leaves the generation odd: draws then fail over to this slow path, whose
-- next raiser finishes the raise (read the counter again, setval, bump).
--
-- Every name is schema-qualified and every call has exact types: the bodies
-- are bound at CREATE (SQL-standard bodies) or run with a pinned search_path
-- (PL/pgSQL), so that an object another role creates later changes nothing.

-- The slow path: a draw that the inlined fast path could not keep (the
-- counter behind the clock, a raise in its way, a burst ahead of max_drift),
-- the refusals (standby, no worker id), and every draw after a restore
-- until the owner sets the worker id (`unbaked`: the fast path is not yet
-- built from the configuration).
CREATE FUNCTION snowflake_id_internal.snowflake_managed_draw(unbaked boolean) RETURNS bigint
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    counter regclass;
    generation regclass;
    cfg snowflake_id_private.snowflake_managed_config;
    lim bigint;
    last bigint;
    f bigint;
    v bigint;
    g1 bigint;
    g2 bigint;
BEGIN
    IF pg_catalog.pg_is_in_recovery() THEN
        PERFORM snowflake_id_internal.snowflake_managed_refuse_standby('snowflake_nextval()');
    END IF;
    -- A configuration restored (pg_dump) into a new database, and no worker
    -- id in force yet: bring the restored one into force (the sequences
    -- only, under the raisers' lock, which goes at once). Any role may get
    -- here, so nothing that outlasts the call: no row lock and no DDL (the
    -- inlined fast path stays unbuilt, every draw takes this slow path,
    -- until the owner's snowflake_set_worker_id builds it at its commit),
    -- else a role holding its transaction open would stop the owner's
    -- change of the copy's worker id. Not in a transaction that set the
    -- worker id: that one comes into force at its commit
    -- (snowflake_managed_config_commit), not before.
    IF unbaked AND pg_catalog.current_setting('snowflake_id_managed.switch_at_commit', true) IS DISTINCT FROM 'on'
       AND pg_catalog.pg_sequence_last_value('snowflake_id_private.snowflake_managed_worker'::pg_catalog.regclass) < 0 THEN
        SELECT * INTO cfg FROM snowflake_id_private.snowflake_managed_config;
        IF FOUND AND cfg.worker_id IS NOT NULL
           AND snowflake_id_internal.snowflake_managed_state_ready(cfg.epoch, cfg.worker_bits, cfg.sequence_bits) THEN
            PERFORM snowflake_id_internal.snowflake_managed_switch_locked(cfg.worker_id, cfg.epoch, cfg.worker_bits,
                                                                         cfg.sequence_bits, true);
        END IF;
    END IF;
    -- The counter's schema exists once a worker id was set.
    IF pg_catalog.pg_sequence_last_value('snowflake_id_private.snowflake_managed_worker'::pg_catalog.regclass) >= 0 THEN
        counter := 'snowflake_id_state.snowflake_managed_counter'::pg_catalog.regclass;
        generation := 'snowflake_id_state.snowflake_managed_generation'::pg_catalog.regclass;
    END IF;
    LOOP
        -- The worker id and layout are read between the two reads of the
        -- generation, like the value: they change only while it is odd.
        g1 := CASE WHEN generation IS NOT NULL THEN pg_catalog.pg_sequence_last_value(generation) END;
        cfg := snowflake_id_internal.snowflake_managed_live();
        IF cfg.worker_id IS NULL OR generation IS NULL THEN
            RAISE EXCEPTION 'snowflake_id: no worker id is set for this database'
                USING ERRCODE = '55000',
                      DETAIL = 'The managed edition keeps its worker id in the database, set by the extension''s owner.',
                      HINT = CASE WHEN pg_catalog.current_setting('snowflake_id_managed.switch_at_commit', true) OPERATOR(pg_catalog.=) 'on'
                                  THEN 'The worker id set in this transaction comes into force when it commits: commit, then draw.'
                                  ELSE 'As the extension''s owner, run SELECT snowflake_id_internal.snowflake_set_worker_id(n); with n unique among the servers and databases issuing IDs together (0 to 1023 with the default layout).' END;
        END IF;
        lim := snowflake_id_internal.snowflake_managed_max_drift_ms() << cfg.sequence_bits;
        last := snowflake_id_internal.snowflake_managed_last(cfg.worker_bits);
        f := snowflake_id_internal.snowflake_managed_floor(cfg.epoch, cfg.sequence_bits);
        v := pg_catalog.nextval(counter);
        g2 := pg_catalog.pg_sequence_last_value(generation);
        IF v > last THEN
            -- Past the layout's end (the counter only gets here by nextval()
            -- from its last value: raises stop below it).
            PERFORM snowflake_id_internal.snowflake_managed_refuse_end();
        END IF;
        IF g1 = g2 AND g1 % 2 = 0 AND v >= f THEN
            IF v - f - snowflake_id_internal.snowflake_managed_offset_now(f, v, lim, cfg.epoch, cfg.sequence_bits) < lim THEN
                RETURN snowflake_id_internal.snowflake_managed_compose(v, cfg.worker_id, cfg.worker_bits, cfg.sequence_bits);
            END IF;
            PERFORM snowflake_id_internal.snowflake_managed_wait_lead(cfg, 0::pg_catalog.int8);
        ELSE
            PERFORM snowflake_id_internal.snowflake_managed_raise(f, 0::pg_catalog.int8, last, 0::pg_catalog.int8);
        END IF;
    END LOOP;
END
$body$;

-- Before a worker id is set (and after a restore, until the owner sets or
-- confirms the worker id) the fast path is this: every call takes the slow
-- path, which refuses, or brings the restored worker id into force and
-- draws.
CREATE FUNCTION snowflake_nextval() RETURNS bigint
    LANGUAGE sql VOLATILE PARALLEL UNSAFE
    RETURN snowflake_id_internal.snowflake_managed_draw(true::pg_catalog.bool);

-- Builds the fast path from the configuration: an SQL function of one
-- expression with the layout and worker id as literals, which the planner
-- inlines into the caller's query (no function call, no table read):
--   1. pg_is_in_recovery(): a standby takes the slow path for its own error;
--   2. g1: the generation before;
--   3. nextval(counter), kept if d = v - floor - offset is in [0, L): less
--      than max_drift L ahead of the reference (snowflake_managed_offset),
--      and not behind it (behind the clock: the slow path raises; behind the
--      reference: the slow path shrinks the offset). (d + L) / L is 1
--      exactly then (integer division truncates toward zero), which tests it
--      with v used once (twice would need a variable);
--   4. g2: the generation after, read only if 3 held (CASE orders it);
--   5. g1 / 2 = (g2 + 1) / 2: g1 = g2 and even, each read used once (the
--      generation only grows: with g1 <= g2, equality of the halves holds
--      exactly when g2 is even and g1 = g2);
--   6. the ID from currval(counter) (the value of 3, without a variable);
--      its time part multiplied into place rather than shifted, so that a
--      counter past the layout's end (reached only by nextval() at the end,
--      with the counter ahead of the clock) fails (22003) rather than lose
--      the time's high bits.
-- The order 2, 3, 4 rests on PostgreSQL evaluating an operator's operands
-- left to right (the executor's steps compute a function's arguments in
-- order; nothing volatile is folded or moved) and a CASE's condition before
-- its result. Anything else takes the slow path, which draws again. Also sets the three
-- layout functions the server-layout decoders read (layout.sql).
CREATE FUNCTION snowflake_id_internal.snowflake_managed_bake(fast boolean) RETURNS void
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    cfg snowflake_id_private.snowflake_managed_config;
    live snowflake_id_private.snowflake_managed_config;
    body text;
    epoch_literal text;
    g bigint;
BEGIN
    SELECT * INTO cfg FROM snowflake_id_private.snowflake_managed_config;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    epoch_literal := pg_catalog.quote_literal(pg_catalog.to_char(cfg.epoch AT TIME ZONE 'UTC',
                                                                  'YYYY-MM-DD"T"HH24:MI:SS.US"+00"'));
    -- The server layout the decoders read (layout.sql), as literals.
    EXECUTE pg_catalog.format($f$CREATE OR REPLACE FUNCTION snowflake_id_internal.snowflake_managed_epoch() RETURNS timestamptz
        LANGUAGE sql IMMUTABLE PARALLEL SAFE RETURN %s::pg_catalog.timestamptz$f$, epoch_literal);
    EXECUTE pg_catalog.format($f$CREATE OR REPLACE FUNCTION snowflake_id_internal.snowflake_managed_worker_bits() RETURNS integer
        LANGUAGE sql IMMUTABLE PARALLEL SAFE RETURN %s$f$, cfg.worker_bits);
    EXECUTE pg_catalog.format($f$CREATE OR REPLACE FUNCTION snowflake_id_internal.snowflake_managed_sequence_bits() RETURNS integer
        LANGUAGE sql IMMUTABLE PARALLEL SAFE RETURN %s$f$, cfg.sequence_bits);
    IF NOT fast OR cfg.worker_id IS NULL THEN
        -- Until the owner sets a worker id, or after the configuration
        -- changed (a restore loads it before the counter's value), every
        -- call takes the slow path, until the commit of the owner's
        -- snowflake_set_worker_id bakes it.
        CREATE OR REPLACE FUNCTION @extschema@.snowflake_nextval() RETURNS bigint
            LANGUAGE sql VOLATILE PARALLEL UNSAFE
            RETURN snowflake_id_internal.snowflake_managed_draw(true::pg_catalog.bool);
        RETURN;
    END IF;
    -- The worker id and layout in force are the configuration's (at the
    -- commit of snowflake_set_worker_id, or after a restore).
    live := snowflake_id_internal.snowflake_managed_live();
    IF live.worker_id IS DISTINCT FROM cfg.worker_id OR live.epoch IS DISTINCT FROM cfg.epoch
       OR live.worker_bits IS DISTINCT FROM cfg.worker_bits OR live.sequence_bits IS DISTINCT FROM cfg.sequence_bits THEN
        PERFORM snowflake_id_internal.snowflake_managed_switch(cfg.worker_id, cfg.epoch, cfg.worker_bits, cfg.sequence_bits);
    END IF;
    g := pg_catalog.pg_sequence_last_value('snowflake_id_state.snowflake_managed_generation'::pg_catalog.regclass);
    body := $fast$
CREATE OR REPLACE FUNCTION @extschema@.snowflake_nextval() RETURNS bigint
    LANGUAGE sql VOLATILE PARALLEL UNSAFE
    RETURN CASE
        WHEN pg_catalog.pg_is_in_recovery() THEN snowflake_id_internal.snowflake_managed_draw(false::pg_catalog.bool)
        WHEN (LEAST(pg_catalog.pg_sequence_last_value('snowflake_id_state.snowflake_managed_generation'::pg_catalog.regclass),
                    %GLIMIT%::pg_catalog.int8)
              OPERATOR(pg_catalog./) 2::pg_catalog.int8)
             OPERATOR(pg_catalog.=)
             ((CASE WHEN ((((pg_catalog.nextval('snowflake_id_state.snowflake_managed_counter'::pg_catalog.regclass)
                             OPERATOR(pg_catalog.-)
                             (((pg_catalog.date_part('epoch'::pg_catalog.text, pg_catalog.clock_timestamp())
                                OPERATOR(pg_catalog.*) 1000::pg_catalog.float8)
                               OPERATOR(pg_catalog.-) %EPOCH_MS_HALF%::pg_catalog.float8)::pg_catalog.int8
                              OPERATOR(pg_catalog.<<) %K%))
                            OPERATOR(pg_catalog.-)
                            pg_catalog.pg_sequence_last_value('snowflake_id_state.snowflake_managed_offset'::pg_catalog.regclass))
                           OPERATOR(pg_catalog.+) %LIM%::pg_catalog.int8)
                          OPERATOR(pg_catalog./) %LIM%::pg_catalog.int8)
                         OPERATOR(pg_catalog.=) 1::pg_catalog.int8
                    THEN pg_catalog.pg_sequence_last_value('snowflake_id_state.snowflake_managed_generation'::pg_catalog.regclass)
               END
               OPERATOR(pg_catalog.+) 1::pg_catalog.int8)
              OPERATOR(pg_catalog./) 2::pg_catalog.int8)
        THEN ((pg_catalog.currval('snowflake_id_state.snowflake_managed_counter'::pg_catalog.regclass)
               OPERATOR(pg_catalog.>>) %K%) OPERATOR(pg_catalog.*) %MUL%::pg_catalog.int8)
             OPERATOR(pg_catalog.|)
             ((pg_catalog.currval('snowflake_id_state.snowflake_managed_counter'::pg_catalog.regclass)
               OPERATOR(pg_catalog.&) %MASK%::pg_catalog.int8)
              OPERATOR(pg_catalog.|) %WORKER%::pg_catalog.int8)
        ELSE snowflake_id_internal.snowflake_managed_draw(false::pg_catalog.bool)
    END
$fast$;
    -- The floor's rounding: (ms - epoch - 0.5) rounded to nearest is the
    -- millisecond floor, without a floor() call in the fast path.
    body := pg_catalog.replace(body, '%EPOCH_MS_HALF%',
        pg_catalog.to_char(pg_catalog.date_part('epoch', cfg.epoch) * 1000 + 0.5, 'FM9999999999999990.0'));
    body := pg_catalog.replace(body, '%K%', cfg.sequence_bits::text);
    -- The last generation of this worker id's range (odd): a fast path baked
    -- before the next change reads a generation above it and takes the slow
    -- path, which composes with the worker id in force.
    body := pg_catalog.replace(body, '%GLIMIT%', ((((g >> 40) + 1) << 40) - 1)::text);
    body := pg_catalog.replace(body, '%MUL%', (1::bigint << (cfg.worker_bits + cfg.sequence_bits))::text);
    body := pg_catalog.replace(body, '%LIM%', (snowflake_id_internal.snowflake_managed_max_drift_ms() << cfg.sequence_bits)::text);
    body := pg_catalog.replace(body, '%MASK%', ((1::bigint << cfg.sequence_bits) - 1)::text);
    body := pg_catalog.replace(body, '%WORKER%', (cfg.worker_id::bigint << cfg.sequence_bits)::text);
    EXECUTE body;
END
$body$;

REVOKE EXECUTE ON FUNCTION snowflake_id_internal.snowflake_managed_bake(boolean) FROM PUBLIC;
