-- The generator's state as a view, for monitoring: SELECT * FROM snowflake_id_status;
-- It reads the function's twin in snowflake_id_internal, where no other
-- role can put a look-alike that would make the view's text ambiguous when
-- pg_upgrade or pg_dump re-create it (sql/install/library_functions.sql).
CREATE VIEW snowflake_id_status AS SELECT * FROM snowflake_id_internal.snowflake_id_status();
COMMENT ON VIEW snowflake_id_status IS
    'snowflake_id generator: layout, logical vs wall clock, durable mark and counters since server start';
-- Readable by every role, like PostgreSQL's own statistics views (the
-- function it reads is executable by everyone too): monitoring roles such as
-- pg_monitor members need no superuser. Nothing in it is secret.
GRANT SELECT ON snowflake_id_status TO PUBLIC;
