-- These bodies are parsed once, at CREATE (SQL-standard bodies), with the
-- search_path of the install or update script: @extschema@ first, often
-- public, where another role may have planted look-alikes. So they name
-- @extschema@ and call only with exact argument types, which nothing planted
-- can beat. They pin no search_path: a SET clause would stop the inlining
-- the planner hook and the decoding benchmarks rely on (docs/benchmarks.md,
-- section 2), and a body parsed at CREATE does not need one.
--
-- snowflake_decode is plain SQL over the C accessors so that the planner
-- inlines it. It is not STRICT (that would stop the inlining), yet NULL in
-- gives NULL out, as 0.1.0's STRICT function did (not a row of NULLs, which
-- count() counts and coalesce() keeps): the CASE says so. A field of it,
-- (snowflake_decode(id)).ts, is the same NULL either way, so the extension's
-- planner hook calls the field twins below there instead, whose bare ROW the
-- planner reduces to the one accessor asked for: snowflake_timestamp(id), no
-- composite value built per row.
CREATE FUNCTION snowflake_decode(id bigint) RETURNS snowflake_parts
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN CASE WHEN id IS NULL THEN NULL
                ELSE ROW(snowflake_id_internal.snowflake_timestamp(id), snowflake_id_internal.snowflake_worker_id(id),
                         snowflake_id_internal.snowflake_sequence(id))::@extschema@.snowflake_parts
           END;
COMMENT ON FUNCTION snowflake_decode(bigint) IS
    'the instant, worker id and sequence of a snowflake ID, with this server''s layout';

CREATE FUNCTION snowflake_decode(id bigint, epoch timestamptz, worker_bits integer, sequence_bits integer)
    RETURNS snowflake_parts
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE WHEN id IS NULL OR epoch IS NULL OR worker_bits IS NULL OR sequence_bits IS NULL THEN NULL
                ELSE ROW(snowflake_id_internal.snowflake_timestamp(id, epoch, worker_bits, sequence_bits),
                         snowflake_id_internal.snowflake_worker_id(id, epoch, worker_bits, sequence_bits),
                         snowflake_id_internal.snowflake_sequence(id, epoch, worker_bits, sequence_bits))::@extschema@.snowflake_parts
           END;
COMMENT ON FUNCTION snowflake_decode(bigint, timestamptz, integer, integer) IS
    'the instant, worker id and sequence of a snowflake ID made with the given epoch and bit split';

-- The field twins of snowflake_decode: the bare ROW, a row of NULLs for a
-- NULL argument. The planner hook puts them in place of snowflake_decode
-- under a field selection only, where the two agree. Call snowflake_decode,
-- not these.
CREATE FUNCTION snowflake_decode_fields(id bigint) RETURNS snowflake_parts
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN ROW(snowflake_id_internal.snowflake_timestamp(id), snowflake_id_internal.snowflake_worker_id(id),
               snowflake_id_internal.snowflake_sequence(id))::@extschema@.snowflake_parts;
CREATE FUNCTION snowflake_decode_fields(id bigint, epoch timestamptz, worker_bits integer, sequence_bits integer)
    RETURNS snowflake_parts
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN ROW(snowflake_id_internal.snowflake_timestamp(id, epoch, worker_bits, sequence_bits),
               snowflake_id_internal.snowflake_worker_id(id, epoch, worker_bits, sequence_bits),
               snowflake_id_internal.snowflake_sequence(id, epoch, worker_bits, sequence_bits))::@extschema@.snowflake_parts;

-- The set-returning twins of snowflake_decode, one row each. PostgreSQL
-- inlines an SQL function in FROM only if it returns a set; the extension's
-- planner hook puts these in place of snowflake_decode in FROM
-- (`FROM t, snowflake_decode(t.id) d`), so that form costs the accessors too
-- rather than a tuplestore per row. Call snowflake_decode, not these.
CREATE FUNCTION snowflake_decode_rows(id bigint) RETURNS SETOF snowflake_parts
    LANGUAGE sql STABLE PARALLEL SAFE ROWS 1
    BEGIN ATOMIC
        SELECT snowflake_id_internal.snowflake_timestamp(id), snowflake_id_internal.snowflake_worker_id(id),
               snowflake_id_internal.snowflake_sequence(id);
    END;
CREATE FUNCTION snowflake_decode_rows(id bigint, epoch timestamptz, worker_bits integer, sequence_bits integer)
    RETURNS SETOF snowflake_parts
    LANGUAGE sql IMMUTABLE PARALLEL SAFE ROWS 1
    BEGIN ATOMIC
        SELECT snowflake_id_internal.snowflake_timestamp(id, epoch, worker_bits, sequence_bits),
               snowflake_id_internal.snowflake_worker_id(id, epoch, worker_bits, sequence_bits),
               snowflake_id_internal.snowflake_sequence(id, epoch, worker_bits, sequence_bits);
    END;
