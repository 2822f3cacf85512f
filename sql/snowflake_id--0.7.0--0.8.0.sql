-- snowflake_id 0.7.0 -> 0.8.0: no change to the native edition's SQL. 0.8.0
-- is the managed edition's second pass (its counter outlives a reinstall,
-- worker id changes never go down, its own update paths); the native
-- objects stay as 0.7.0 made them. The script exists so that every released
-- version updates to the current one.
-- Install the 0.8.0 library first (it serves 0.7.0's definitions as they
-- are), then ALTER EXTENSION snowflake_id UPDATE.
\echo Use "ALTER EXTENSION snowflake_id UPDATE" to load this file. \quit
