-- snowflake_id 0.6.0 -> 0.7.0: the SQL changes of 0.7.0 (issue 40: calls
-- inside installed bodies bound when created; the logical guard and the
-- update scripts handle each table on its own).
-- Install the 0.7.0 library first (it serves 0.6.0's definitions as they
-- are), then ALTER EXTENSION snowflake_id UPDATE.
\echo Use "ALTER EXTENSION snowflake_id UPDATE" to load this file. \quit

-- ==== section: bound calls (registry, cluster check, convert) ====

-- ==== section: logical guard ====
