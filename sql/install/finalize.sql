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
-- Moving the generator's mark is for superusers (the function checks too).
REVOKE EXECUTE ON FUNCTION snowflake_advance_past(bigint, boolean) FROM PUBLIC;
-- History slots are finite (a sixteenth of each millisecond per worker id):
-- who may spend them is the DBA's choice (GRANT EXECUTE to an import role).
REVOKE EXECUTE ON FUNCTION snowflake_nextval_at(timestamptz) FROM PUBLIC;
