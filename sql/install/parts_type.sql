-- The fields of a decoded ID: the instant of its millisecond, the worker id
-- that made it, and its number within that millisecond.
CREATE TYPE snowflake_parts AS (
    ts        timestamptz,
    worker_id integer,
    sequence  integer
);
