-- The managed edition's accessors: what the native edition implements in
-- Rust (src/api/functions.rs over core/src/layout.rs), as SQL the planner
-- inlines, with the native results and errors for every input
-- (tests/managed_decode.rs compares the two editions).
--
-- Every body is one SQL expression without a subquery, so that the planner
-- puts it in place of the call; with the layout known (the server-layout
-- forms read it from the IMMUTABLE literal functions of layout.sql, and an
-- index or partition key gives constants) it folds everything derived from
-- the layout into constants, and what is left per row is a shift, a mask and
-- a comparison or two. SQL-standard bodies, parsed once at CREATE with the
-- install's search_path, so they name snowflake_id_internal and pg_catalog
-- for every function, operator and type, with exact argument types, and
-- never call a function of the extension's schema: nothing another role
-- creates later, there or anywhere, is ever called in their place.
--
-- Not STRICT, unlike the native functions, and this is the one label that
-- differs: PostgreSQL inlines a STRICT SQL function only if its body is
-- made of strict constructs alone, and a CASE is not one, yet a CASE is the
-- only way an expression can raise an error for some rows and not others.
-- The first arm of each CASE gives NULL when any argument is NULL, before
-- any check, so the results are a STRICT function's (NULL in, NULL out,
-- never an error). Errors come from small PL/pgSQL functions called only in
-- the arm that raises; they are IMMUTABLE (an IMMUTABLE body may call
-- nothing less, or it is not inlined) and each takes the values its arm's
-- condition tests, so that the planner never folds a raise whose condition
-- it cannot decide into a plan-time error.

-- The helpers live in snowflake_id_internal (schemas.sql: only the owner
-- creates there): the PL/pgSQL ones call each other by name when they run,
-- and a look-alike with a defaulted argument beside them in the extension's
-- schema (public, often) would make those calls "not unique". So are the
-- three layout functions (layout.sql) and the implementations of the
-- accessors, below.

-- Errors, worded as the native edition's (src/refusal.rs, core/src/error.rs).
-- The first argument only carries the type of the arm that calls them; the
-- others are all the arguments of the function whose arm calls them, even
-- those the message does not need: the planner evaluates a call whose
-- arguments are all constants when it plans, and an arm's call must not be
-- evaluated before the earlier arms' conditions (a NULL ID with a constant
-- bad layout is NULL, not an error).
CREATE FUNCTION snowflake_id_internal.snowflake_managed_layout_refusal(result anyelement, id bigint, epoch timestamptz, worker_bits integer,
                                                 sequence_bits integer) RETURNS anyelement
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION USING
        ERRCODE = '22023',
        MESSAGE = pg_catalog.format('snowflake_id: worker_bits (%s) + sequence_bits (%s) must be at most 22, each between 0 and 22',
                                    worker_bits, sequence_bits),
        HINT = 'worker_bits and sequence_bits must each be 0..22 with a sum of at most 22.';
END
$$;

CREATE FUNCTION snowflake_id_internal.snowflake_managed_negative_refusal(result anyelement, id bigint, epoch timestamptz, worker_bits integer,
                                                   sequence_bits integer) RETURNS anyelement
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION USING
        ERRCODE = '22003',
        MESSAGE = pg_catalog.format('snowflake_id: snowflake ID %s is negative', id),
        HINT = 'Snowflake IDs always have the sign bit 0; a negative bigint was not made by a snowflake generator.';
END
$$;

-- An ID whose instant, the epoch's Unix ms + the tick, PostgreSQL cannot
-- hold. The native edition adds with saturation and names the sum.
CREATE FUNCTION snowflake_id_internal.snowflake_managed_time_refusal(result anyelement, id bigint, epoch timestamptz, worker_bits integer,
                                               sequence_bits integer) RETURNS anyelement
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION USING
        ERRCODE = '22008',
        MESSAGE = pg_catalog.format('snowflake_id: timestamp out of range: %s ms after 1970',
                                    LEAST(snowflake_id_internal.snowflake_managed_unix_ms(epoch)::numeric
                                          + (id >> (worker_bits + sequence_bits))::numeric,
                                          9223372036854775807::numeric)),
        HINT = 'The epoch given to snowflake_decode() puts this ID outside PostgreSQL''s timestamp range.';
END
$$;

CREATE FUNCTION snowflake_id_internal.snowflake_managed_infinity_refusal(result anyelement, ts timestamptz) RETURNS anyelement
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION USING
        ERRCODE = '22008',
        MESSAGE = 'snowflake_id: timestamp infinity has no ID',
        HINT = 'For an open-ended partition bound write MAXVALUE; for a range, leave the upper bound out.';
END
$$;

-- Unix milliseconds as the native edition writes them in messages (chrono's
-- RFC 3339 with milliseconds: 2094-09-07T15:47:35.551Z, +10000-01-01T...
-- past year 9999, and the bare number past chrono's last year, 262142).
CREATE FUNCTION snowflake_id_internal.snowflake_managed_format_ms(unix_ms bigint) RETURNS text
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- 262143-01-01T00:00:00Z (past chrono's last year, 262142) and 0001-01-01T00:00:00Z in Unix ms: outside
    -- them, the bare number (years before 1 never reach a message here:
    -- only instants past a layout's end, after today, are written).
    IF unix_ms >= 8210266876800000 OR unix_ms < -62135596800000 THEN
        RETURN unix_ms::text || ' ms after 1970';
    END IF;
    RETURN CASE WHEN unix_ms >= 253402300800000 THEN '+' ELSE '' END
           || to_char(snowflake_id_internal.snowflake_managed_timestamptz_of(unix_ms) AT TIME ZONE 'UTC',
                      'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');
END
$$;

-- An instant past the layout's end (snowflake_from_timestamp).
CREATE FUNCTION snowflake_id_internal.snowflake_managed_past_end_refusal(result anyelement, unix_ms bigint, epoch_ms bigint,
                                                   node_bits integer) RETURNS anyelement
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION USING
        ERRCODE = '22008',
        MESSAGE = pg_catalog.format('snowflake_id: timestamp %s is past the last one this layout can encode (%s)',
                                    snowflake_id_internal.snowflake_managed_format_ms(unix_ms),
                                    snowflake_id_internal.snowflake_managed_format_ms(LEAST(
                                        epoch_ms::numeric + (9223372036854775807 >> node_bits)::numeric,
                                        9223372036854775807::numeric)::bigint)),
        HINT = 'Instants past the layout''s end have no ID; a later snowflake_id.epoch moves the end.';
END
$$;

-- Every error of snowflake_id_span, in the native edition's order: months,
-- then a span that is not whole milliseconds (or overflows microseconds),
-- then one outside 1 ms .. the layout's last tick. Called only when the
-- inlined test of a valid span fails; a valid span gets its value here too.
CREATE FUNCTION snowflake_id_internal.snowflake_managed_span_refusal(result anyelement, span interval, worker_bits integer,
                                               sequence_bits integer) RETURNS anyelement
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    months numeric;
    days numeric;
    micros numeric;
    ms bigint;
    max_tick bigint := 9223372036854775807 >> (worker_bits + sequence_bits);
BEGIN
    IF NOT pg_catalog.isfinite(span) THEN
        -- An infinite interval (17 and later) holds the extreme month count.
        months := CASE WHEN span > interval '0' THEN 2147483647 ELSE -2147483648 END;
    ELSE
        months := EXTRACT(year FROM span) * 12 + EXTRACT(month FROM span);
    END IF;
    IF months <> 0 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = pg_catalog.format('snowflake_id: a span of months has no fixed number of IDs: %s months', months),
            HINT = 'Give the span in days or smaller units; bound calendar months with snowflake_from_timestamp().';
    END IF;
    days := EXTRACT(day FROM span);
    micros := EXTRACT(epoch FROM span) * 1000000;
    IF days * 86400000000 NOT BETWEEN -9223372036854775808 AND 9223372036854775807
       OR micros NOT BETWEEN -9223372036854775808 AND 9223372036854775807
       OR pg_catalog.mod(micros, 1000) <> 0 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = 'snowflake_id: the span is not a whole number of milliseconds',
            HINT = 'IDs count milliseconds; give a span such as ''1 day'' or ''15 minutes''.';
    END IF;
    ms := pg_catalog.div(micros, 1000);
    IF ms <= 0 OR ms > max_tick THEN
        RAISE EXCEPTION USING
            ERRCODE = '22023',
            MESSAGE = pg_catalog.format('snowflake_id: a span of %s ms is not between 1 ms and the layout''s %s ms',
                                        ms, max_tick),
            HINT = 'Give a positive span such as ''1 day'', shorter than the layout''s whole range.';
    END IF;
    RETURN (ms << (worker_bits + sequence_bits));
END
$$;

-- An instant as the native edition reads one: Unix milliseconds, rounded
-- down (the epoch's microseconds are dropped), infinity as the extreme
-- microsecond counts divided the same way. Exact: numeric, not float.
CREATE FUNCTION snowflake_id_internal.snowflake_managed_unix_ms(ts timestamptz) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE
        WHEN ts OPERATOR(pg_catalog.=) 'infinity'::pg_catalog.timestamptz THEN 9224318721654775::bigint
        WHEN ts OPERATOR(pg_catalog.=) '-infinity'::pg_catalog.timestamptz THEN (-9222425352054776)::bigint
        ELSE (pg_catalog.floor(EXTRACT(epoch FROM ts OPERATOR(pg_catalog.-) '2000-01-01 00:00:00+00'::pg_catalog.timestamptz)
                               OPERATOR(pg_catalog.*) 1000::numeric))::bigint
             OPERATOR(pg_catalog.+) 946684800000::bigint
    END;

-- Unix milliseconds (within PostgreSQL's range) as a timestamptz, exactly:
-- counted from 2000-01-01 (PostgreSQL's zero, so that the microseconds of
-- the last instants still fit a bigint), as two products of an interval and
-- a number below 2^53, so no float rounding; timestamp arithmetic and a
-- zero offset, which are IMMUTABLE where timestamptz + interval is not.
CREATE FUNCTION snowflake_id_internal.snowflake_managed_timestamptz_of(unix_ms bigint) RETURNS timestamptz
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN pg_catalog.timezone('00:00'::pg_catalog.interval,
        ('2000-01-01 00:00:00'::pg_catalog.timestamp
         OPERATOR(pg_catalog.+) ('1 millisecond'::pg_catalog.interval
                                 OPERATOR(pg_catalog.*) ((unix_ms OPERATOR(pg_catalog.-) 946684800000::bigint)
                                                         OPERATOR(pg_catalog.&) 4294967295::bigint)::pg_catalog.float8))
        OPERATOR(pg_catalog.+) ('4294967296 milliseconds'::pg_catalog.interval
                                OPERATOR(pg_catalog.*) ((unix_ms OPERATOR(pg_catalog.-) 946684800000::bigint)
                                                        OPERATOR(pg_catalog.>>) 32)::pg_catalog.float8));

-- The implementations, in snowflake_id_internal (only the owner creates
-- there): the decoders of sql/install/decode.sql, shared with the native
-- edition, call these by exact signature, so that a look-alike planted in
-- the extension's schema cannot make their bodies "not unique" when
-- pg_dump or pg_upgrade creates them again from their text. The functions
-- in the extension's schema (below) are entry points calling these.
--
-- The explicit-layout forms: IMMUTABLE, for expression indexes, generated
-- columns and partition keys. Checks in the native order: the layout, then
-- the sign, then the instant.
CREATE FUNCTION snowflake_id_internal.snowflake_timestamp(id bigint, epoch timestamptz, worker_bits integer, sequence_bits integer)
    RETURNS timestamptz
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE
        WHEN id IS NULL OR epoch IS NULL OR worker_bits IS NULL OR sequence_bits IS NULL THEN NULL::pg_catalog.timestamptz
        WHEN worker_bits OPERATOR(pg_catalog.<) 0 OR worker_bits OPERATOR(pg_catalog.>) 22
             OR sequence_bits OPERATOR(pg_catalog.<) 0 OR sequence_bits OPERATOR(pg_catalog.>) 22
             OR (worker_bits OPERATOR(pg_catalog.+) sequence_bits) OPERATOR(pg_catalog.>) 22
            THEN snowflake_id_internal.snowflake_managed_layout_refusal(NULL::pg_catalog.timestamptz, id, epoch, worker_bits, sequence_bits)
        WHEN id OPERATOR(pg_catalog.<) 0::bigint
            THEN snowflake_id_internal.snowflake_managed_negative_refusal(NULL::pg_catalog.timestamptz, id, epoch, worker_bits, sequence_bits)
        -- PostgreSQL's range, -210866803200000 .. 9224318016000000 (excluded)
        -- in Unix ms, as bounds on the tick: no addition that can overflow.
        WHEN (id OPERATOR(pg_catalog.>>) (worker_bits OPERATOR(pg_catalog.+) sequence_bits))
                 OPERATOR(pg_catalog.>=) (9224318016000000::bigint OPERATOR(pg_catalog.-) snowflake_id_internal.snowflake_managed_unix_ms(epoch))
             OR (id OPERATOR(pg_catalog.>>) (worker_bits OPERATOR(pg_catalog.+) sequence_bits))
                 OPERATOR(pg_catalog.<) ((-210866803200000)::bigint OPERATOR(pg_catalog.-) snowflake_id_internal.snowflake_managed_unix_ms(epoch))
            THEN snowflake_id_internal.snowflake_managed_time_refusal(NULL::pg_catalog.timestamptz, id, epoch, worker_bits, sequence_bits)
        ELSE snowflake_id_internal.snowflake_managed_timestamptz_of(snowflake_id_internal.snowflake_managed_unix_ms(epoch)
                 OPERATOR(pg_catalog.+) (id OPERATOR(pg_catalog.>>) (worker_bits OPERATOR(pg_catalog.+) sequence_bits)))
    END;

CREATE FUNCTION snowflake_id_internal.snowflake_worker_id(id bigint, epoch timestamptz, worker_bits integer, sequence_bits integer)
    RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE
        WHEN id IS NULL OR epoch IS NULL OR worker_bits IS NULL OR sequence_bits IS NULL THEN NULL::integer
        WHEN worker_bits OPERATOR(pg_catalog.<) 0 OR worker_bits OPERATOR(pg_catalog.>) 22
             OR sequence_bits OPERATOR(pg_catalog.<) 0 OR sequence_bits OPERATOR(pg_catalog.>) 22
             OR (worker_bits OPERATOR(pg_catalog.+) sequence_bits) OPERATOR(pg_catalog.>) 22
            THEN snowflake_id_internal.snowflake_managed_layout_refusal(NULL::integer, id, epoch, worker_bits, sequence_bits)
        WHEN id OPERATOR(pg_catalog.<) 0::bigint
            THEN snowflake_id_internal.snowflake_managed_negative_refusal(NULL::integer, id, epoch, worker_bits, sequence_bits)
        ELSE ((id OPERATOR(pg_catalog.>>) sequence_bits)
              OPERATOR(pg_catalog.&) ((1::bigint OPERATOR(pg_catalog.<<) worker_bits) OPERATOR(pg_catalog.-) 1::bigint))::integer
    END;

CREATE FUNCTION snowflake_id_internal.snowflake_sequence(id bigint, epoch timestamptz, worker_bits integer, sequence_bits integer)
    RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE
        WHEN id IS NULL OR epoch IS NULL OR worker_bits IS NULL OR sequence_bits IS NULL THEN NULL::integer
        WHEN worker_bits OPERATOR(pg_catalog.<) 0 OR worker_bits OPERATOR(pg_catalog.>) 22
             OR sequence_bits OPERATOR(pg_catalog.<) 0 OR sequence_bits OPERATOR(pg_catalog.>) 22
             OR (worker_bits OPERATOR(pg_catalog.+) sequence_bits) OPERATOR(pg_catalog.>) 22
            THEN snowflake_id_internal.snowflake_managed_layout_refusal(NULL::integer, id, epoch, worker_bits, sequence_bits)
        WHEN id OPERATOR(pg_catalog.<) 0::bigint
            THEN snowflake_id_internal.snowflake_managed_negative_refusal(NULL::integer, id, epoch, worker_bits, sequence_bits)
        ELSE (id OPERATOR(pg_catalog.&) ((1::bigint OPERATOR(pg_catalog.<<) sequence_bits) OPERATOR(pg_catalog.-) 1::bigint))::integer
    END;

-- The server-layout forms: the explicit ones with this database's layout.
-- STABLE as in the native edition (there a restart may change the layout;
-- here snowflake_set_layout may, before the first ID).
CREATE FUNCTION snowflake_id_internal.snowflake_timestamp(id bigint) RETURNS timestamptz
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN snowflake_id_internal.snowflake_timestamp(id, snowflake_id_internal.snowflake_managed_epoch(),
                                                      snowflake_id_internal.snowflake_managed_worker_bits(),
                                                      snowflake_id_internal.snowflake_managed_sequence_bits());

CREATE FUNCTION snowflake_id_internal.snowflake_worker_id(id bigint) RETURNS integer
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN snowflake_id_internal.snowflake_worker_id(id, snowflake_id_internal.snowflake_managed_epoch(),
                                                      snowflake_id_internal.snowflake_managed_worker_bits(),
                                                      snowflake_id_internal.snowflake_managed_sequence_bits());

CREATE FUNCTION snowflake_id_internal.snowflake_sequence(id bigint) RETURNS integer
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN snowflake_id_internal.snowflake_sequence(id, snowflake_id_internal.snowflake_managed_epoch(),
                                                     snowflake_id_internal.snowflake_managed_worker_bits(),
                                                     snowflake_id_internal.snowflake_managed_sequence_bits());

-- The entry points applications call, in the extension's schema: each one
-- call of its implementation above, bound when created (SQL-standard
-- bodies, no SET clause), so that the planner inlines the entry point and
-- then the implementation, and decoding costs what it did with the bodies
-- here.
CREATE FUNCTION snowflake_timestamp(id bigint, epoch timestamptz, worker_bits integer, sequence_bits integer)
    RETURNS timestamptz
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN snowflake_id_internal.snowflake_timestamp(id, epoch, worker_bits, sequence_bits);
CREATE FUNCTION snowflake_worker_id(id bigint, epoch timestamptz, worker_bits integer, sequence_bits integer)
    RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN snowflake_id_internal.snowflake_worker_id(id, epoch, worker_bits, sequence_bits);
CREATE FUNCTION snowflake_sequence(id bigint, epoch timestamptz, worker_bits integer, sequence_bits integer)
    RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN snowflake_id_internal.snowflake_sequence(id, epoch, worker_bits, sequence_bits);
CREATE FUNCTION snowflake_timestamp(id bigint) RETURNS timestamptz
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN snowflake_id_internal.snowflake_timestamp(id);
COMMENT ON FUNCTION snowflake_timestamp(bigint) IS 'the instant of the millisecond an ID was made in';
CREATE FUNCTION snowflake_worker_id(id bigint) RETURNS integer
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN snowflake_id_internal.snowflake_worker_id(id);
COMMENT ON FUNCTION snowflake_worker_id(bigint) IS 'the worker id that made an ID';
CREATE FUNCTION snowflake_sequence(id bigint) RETURNS integer
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN snowflake_id_internal.snowflake_sequence(id);
COMMENT ON FUNCTION snowflake_sequence(bigint) IS 'an ID''s number within its millisecond';

-- The smallest ID of the millisecond holding unix_ms in a layout (core's
-- Layout::smallest_id_at): 0 before the epoch, an error past the layout's
-- end. unix_ms is finite and within PostgreSQL's range, epoch_ms any.
CREATE FUNCTION snowflake_id_internal.snowflake_managed_smallest_id_at(unix_ms bigint, epoch_ms bigint, worker_bits integer,
                                                 sequence_bits integer) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE
        WHEN (unix_ms OPERATOR(pg_catalog.-) epoch_ms) OPERATOR(pg_catalog.<=) 0::bigint THEN 0::bigint
        WHEN (unix_ms OPERATOR(pg_catalog.-) epoch_ms)
             OPERATOR(pg_catalog.>) (9223372036854775807::bigint OPERATOR(pg_catalog.>>) (worker_bits OPERATOR(pg_catalog.+) sequence_bits))
            THEN snowflake_id_internal.snowflake_managed_past_end_refusal(NULL::bigint, unix_ms, epoch_ms,
                                                                worker_bits OPERATOR(pg_catalog.+) sequence_bits)
        ELSE (unix_ms OPERATOR(pg_catalog.-) epoch_ms) OPERATOR(pg_catalog.<<) (worker_bits OPERATOR(pg_catalog.+) sequence_bits)
    END;

CREATE FUNCTION snowflake_from_timestamp(ts timestamptz) RETURNS bigint
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN CASE
        WHEN ts IS NULL THEN NULL::bigint
        WHEN ts OPERATOR(pg_catalog.=) '-infinity'::pg_catalog.timestamptz THEN 0::bigint
        WHEN ts OPERATOR(pg_catalog.=) 'infinity'::pg_catalog.timestamptz
            THEN snowflake_id_internal.snowflake_managed_infinity_refusal(NULL::bigint, ts)
        ELSE snowflake_id_internal.snowflake_managed_smallest_id_at(snowflake_id_internal.snowflake_managed_unix_ms(ts),
                                                          snowflake_id_internal.snowflake_managed_unix_ms(snowflake_id_internal.snowflake_managed_epoch()),
                                                          snowflake_id_internal.snowflake_managed_worker_bits(),
                                                          snowflake_id_internal.snowflake_managed_sequence_bits())
    END;
COMMENT ON FUNCTION snowflake_from_timestamp(timestamptz) IS
    'the smallest ID of the millisecond holding an instant, with this database''s layout';

-- A whole, positive number of milliseconds within the layout's range is
-- computed here; anything else (months, infinity, a fraction of a
-- millisecond, too long) goes to the PL/pgSQL function, which words the
-- native error.
CREATE FUNCTION snowflake_id_span(span interval) RETURNS bigint
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN CASE
        WHEN span IS NULL THEN NULL::bigint
        WHEN pg_catalog.isfinite(span)
             AND EXTRACT(year FROM span) OPERATOR(pg_catalog.=) 0::numeric
             AND EXTRACT(month FROM span) OPERATOR(pg_catalog.=) 0::numeric
             AND EXTRACT(day FROM span) OPERATOR(pg_catalog.<=) 106751991::numeric
             AND pg_catalog.mod(EXTRACT(epoch FROM span), 0.001::numeric) OPERATOR(pg_catalog.=) 0::numeric
             AND EXTRACT(epoch FROM span) OPERATOR(pg_catalog.>=) 0.001::numeric
             AND EXTRACT(epoch FROM span) OPERATOR(pg_catalog.*) 1000::numeric
                 OPERATOR(pg_catalog.<=) (9223372036854775807::bigint OPERATOR(pg_catalog.>>)
                                          (snowflake_id_internal.snowflake_managed_worker_bits() OPERATOR(pg_catalog.+)
                                           snowflake_id_internal.snowflake_managed_sequence_bits()))::numeric
             AND EXTRACT(epoch FROM span) OPERATOR(pg_catalog.<=) 9223372036854.775807::numeric
            THEN (EXTRACT(epoch FROM span) OPERATOR(pg_catalog.*) 1000::numeric)::bigint
                 OPERATOR(pg_catalog.<<) (snowflake_id_internal.snowflake_managed_worker_bits() OPERATOR(pg_catalog.+)
                                          snowflake_id_internal.snowflake_managed_sequence_bits())
        ELSE snowflake_id_internal.snowflake_managed_span_refusal(NULL::bigint, span, snowflake_id_internal.snowflake_managed_worker_bits(),
                                                        snowflake_id_internal.snowflake_managed_sequence_bits())
    END;
COMMENT ON FUNCTION snowflake_id_span(interval) IS
    'how many IDs of one worker''s numbering a span of time covers, with this database''s layout';
