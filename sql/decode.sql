-- snowflake_decode is plain SQL over the C accessors so that the planner
-- inlines it: (snowflake_decode(id)).ts becomes snowflake_timestamp(id), and
-- no composite value is built per row. It is not STRICT (that would stop the
-- inlining): NULL in gives a row of NULLs, for which `IS NULL` is true.
CREATE FUNCTION snowflake_decode(id bigint) RETURNS snowflake_parts
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN ROW(snowflake_timestamp(id), snowflake_worker_id(id), snowflake_sequence(id))::snowflake_parts;
COMMENT ON FUNCTION snowflake_decode(bigint) IS
    'the instant, worker id and sequence of a snowflake ID, with this server''s layout';

CREATE FUNCTION snowflake_decode(id bigint, epoch timestamptz, worker_bits integer, sequence_bits integer)
    RETURNS snowflake_parts
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN ROW(snowflake_timestamp(id, epoch, worker_bits, sequence_bits),
               snowflake_worker_id(id, epoch, worker_bits, sequence_bits),
               snowflake_sequence(id, epoch, worker_bits, sequence_bits))::snowflake_parts;
COMMENT ON FUNCTION snowflake_decode(bigint, timestamptz, integer, integer) IS
    'the instant, worker id and sequence of a snowflake ID made with the given epoch and bit split';

-- The set-returning twins of snowflake_decode, one row each. PostgreSQL
-- inlines an SQL function in FROM only if it returns a set; the extension's
-- planner hook puts these in place of snowflake_decode in FROM
-- (`FROM t, snowflake_decode(t.id) d`), so that form costs the accessors too
-- rather than a tuplestore per row. Call snowflake_decode, not these.
CREATE FUNCTION snowflake_decode_rows(id bigint) RETURNS SETOF snowflake_parts
    LANGUAGE sql STABLE PARALLEL SAFE ROWS 1
    BEGIN ATOMIC
        SELECT snowflake_timestamp(id), snowflake_worker_id(id), snowflake_sequence(id);
    END;
CREATE FUNCTION snowflake_decode_rows(id bigint, epoch timestamptz, worker_bits integer, sequence_bits integer)
    RETURNS SETOF snowflake_parts
    LANGUAGE sql IMMUTABLE PARALLEL SAFE ROWS 1
    BEGIN ATOMIC
        SELECT snowflake_timestamp(id, epoch, worker_bits, sequence_bits),
               snowflake_worker_id(id, epoch, worker_bits, sequence_bits),
               snowflake_sequence(id, epoch, worker_bits, sequence_bits);
    END;
