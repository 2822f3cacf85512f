-- snowflake_id 0.1.0 -> 0.2.0: every SQL change of 0.2.0.
-- Install the 0.2.0 library first (it still serves 0.1.0's definitions),
-- then ALTER EXTENSION snowflake_id UPDATE. Tables, defaults and rows are
-- untouched; the status view is recreated (a view of yours built on it must
-- be dropped first and recreated after).
\echo Use "ALTER EXTENSION snowflake_id UPDATE" to load this file. \quit

-- Scalar accessors, time spans and moving the mark past restored IDs.
CREATE  FUNCTION "snowflake_advance_past"(
	"id" bigint /* i64 */
) RETURNS bigint /* i64 */
STRICT VOLATILE PARALLEL UNSAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'snowflake_advance_past_wrapper';

CREATE  FUNCTION "snowflake_id_span"(
	"span" interval /* Interval */
) RETURNS bigint /* i64 */
STRICT STABLE PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'snowflake_id_span_wrapper';

CREATE  FUNCTION "snowflake_timestamp"(
	"id" bigint /* i64 */
) RETURNS timestamp with time zone /* TimestampWithTimeZone */
STRICT STABLE PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'snowflake_timestamp_wrapper';

CREATE  FUNCTION "snowflake_timestamp"(
	"id" bigint, /* i64 */
	"epoch" timestamp with time zone, /* TimestampWithTimeZone */
	"worker_bits" INT, /* i32 */
	"sequence_bits" INT /* i32 */
) RETURNS timestamp with time zone /* TimestampWithTimeZone */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'snowflake_timestamp_with_layout_wrapper';

CREATE  FUNCTION "snowflake_worker_id"(
	"id" bigint /* i64 */
) RETURNS INT /* i32 */
STRICT STABLE PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'snowflake_worker_id_wrapper';

CREATE  FUNCTION "snowflake_worker_id"(
	"id" bigint, /* i64 */
	"epoch" timestamp with time zone, /* TimestampWithTimeZone */
	"worker_bits" INT, /* i32 */
	"sequence_bits" INT /* i32 */
) RETURNS INT /* i32 */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'snowflake_worker_id_with_layout_wrapper';

CREATE  FUNCTION "snowflake_sequence"(
	"id" bigint /* i64 */
) RETURNS INT /* i32 */
STRICT STABLE PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'snowflake_sequence_wrapper';

CREATE  FUNCTION "snowflake_sequence"(
	"id" bigint, /* i64 */
	"epoch" timestamp with time zone, /* TimestampWithTimeZone */
	"worker_bits" INT, /* i32 */
	"sequence_bits" INT /* i32 */
) RETURNS INT /* i32 */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'snowflake_sequence_with_layout_wrapper';

-- Moving the generator's mark is for superusers (the function checks too).
REVOKE EXECUTE ON FUNCTION snowflake_advance_past(bigint) FROM PUBLIC;

-- snowflake_decode: from C functions building a composite per call (with a
-- SET search_path) to inlinable SQL over the accessors; same arguments and
-- result type, so views and queries that use it keep working.
-- snowflake_decode is plain SQL over the C accessors so that the planner
-- inlines it: (snowflake_decode(id)).ts becomes snowflake_timestamp(id), and
-- no composite value is built per row. It is not STRICT (that would stop the
-- inlining): NULL in gives a row of NULLs, for which `IS NULL` is true.
CREATE OR REPLACE FUNCTION snowflake_decode(id bigint) RETURNS snowflake_parts
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN ROW(snowflake_timestamp(id), snowflake_worker_id(id), snowflake_sequence(id))::snowflake_parts;
COMMENT ON FUNCTION snowflake_decode(bigint) IS
    'the instant, worker id and sequence of a snowflake ID, with this server''s layout';

CREATE OR REPLACE FUNCTION snowflake_decode(id bigint, epoch timestamptz, worker_bits integer, sequence_bits integer)
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

-- The status gains in_recovery, mark_lsn and keeper_pid: a new result type,
-- so the function and its view are recreated.
DROP VIEW snowflake_id_status;
DROP FUNCTION snowflake_id_status();
CREATE  FUNCTION "snowflake_id_status"() RETURNS TABLE (
	"worker_id" bigint,  /* i64 */
	"worker_bits" INT,  /* i32 */
	"sequence_bits" INT,  /* i32 */
	"epoch" timestamp with time zone,  /* Ts */
	"started_at" timestamp with time zone,  /* Option < Ts > */
	"last_id" bigint,  /* Option < i64 > */
	"logical_clock" timestamp with time zone,  /* Option < Ts > */
	"wall_clock" timestamp with time zone,  /* Ts */
	"drift_ms" bigint,  /* Option < i64 > */
	"durable_mark" timestamp with time zone,  /* Option < Ts > */
	"max_drift_ms" bigint,  /* i64 */
	"ids_issued" bigint,  /* i64 */
	"ms_borrowed" bigint,  /* i64 */
	"waits" bigint,  /* i64 */
	"clock_steps_back" bigint,  /* i64 */
	"largest_step_back_ms" bigint,  /* i64 */
	"mark_writes" bigint,  /* i64 */
	"mark_writes_by_keeper" bigint,  /* i64 */
	"in_recovery" bool,  /* bool */
	"mark_lsn" pg_lsn,  /* Option < Lsn > */
	"keeper_pid" INT  /* Option < i32 > */
)
STRICT VOLATILE PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'snowflake_id_status_wrapper';

-- The generator's state as a view, for monitoring: SELECT * FROM snowflake_id_status;
CREATE VIEW snowflake_id_status AS SELECT * FROM snowflake_id_status();
COMMENT ON VIEW snowflake_id_status IS
    'snowflake_id generator: layout, logical vs wall clock, durable mark and counters since server start';
