-- snowflake_id 0.8.0 -> 0.9.0.
-- Install the 0.9.0 library first (it serves 0.8.0's definitions as they
-- are), then ALTER EXTENSION snowflake_id UPDATE.
\echo Use "ALTER EXTENSION snowflake_id UPDATE" to load this file. \quit
