-- The logical replication guard's entry points, in the extension's schema
-- snowflake_id_internal (sql/install/internal.sql), where no role but the
-- extension's owner may create. A role that may create in @extschema@
-- (often public) can put snowflake_logical_guard() and
-- snowflake_logical_guard(tbl regclass, x integer DEFAULT 0) beside the
-- extension's function there: every call of that name in @extschema@, the
-- DBA's included, is then "not unique" (42725). The calls the WARNINGs'
-- hints and the docs give go here instead: each body is SQL-standard, so
-- its call of the extension's function is bound when it is created, and
-- nothing planted later changes what it runs. Not SECURITY DEFINER: the
-- guard runs as its caller, as before (only a table's owner can put a
-- trigger on it). The same columns as the function they call.

-- One table (the form every hint gives).
CREATE FUNCTION snowflake_id_internal.snowflake_logical_guard(tbl pg_catalog.regclass)
    RETURNS TABLE (table_name pg_catalog.regclass, columns pg_catalog.name[])
    LANGUAGE sql VOLATILE
BEGIN ATOMIC
    SELECT g.table_name, g.columns
      FROM @extschema@.snowflake_logical_guard(snowflake_logical_guard.tbl) g;
END;
COMMENT ON FUNCTION snowflake_id_internal.snowflake_logical_guard(pg_catalog.regclass) IS
    'snowflake_id: puts the logical replication guard on one table (a call no other role can make ambiguous)';

-- Every table whose bigint key defaults to snowflake_nextval().
CREATE FUNCTION snowflake_id_internal.snowflake_logical_guard()
    RETURNS TABLE (table_name pg_catalog.regclass, columns pg_catalog.name[])
    LANGUAGE sql VOLATILE
BEGIN ATOMIC
    SELECT g.table_name, g.columns
      FROM @extschema@.snowflake_logical_guard(NULL::pg_catalog.regclass) g;
END;
COMMENT ON FUNCTION snowflake_id_internal.snowflake_logical_guard() IS
    'snowflake_id: puts the logical replication guard on every table whose bigint key defaults to snowflake_nextval() (a call no other role can make ambiguous)';
