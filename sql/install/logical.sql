-- The logical replication guard (docs/replication.md, "Logical replication").
--
-- A subscriber learns nothing from the rows it applies, so a blue/green
-- successor on the same worker id, its clock behind, would issue IDs below
-- rows it holds, and a clone issuing with the same worker id goes unnoticed
-- until a duplicate key stops the apply. The guard is a row trigger, enabled
-- as REPLICA: it fires only in sessions with session_replication_role =
-- replica, which is how the apply workers of native subscriptions and of
-- pglogical run, so local inserts never call it. It reads the key and hands
-- it to the generator (src/service/logical_guard.rs): IDs of this server's worker
-- id are moved past (durably), and named as a problem when this server
-- issues IDs too. It never raises for a row.
--
-- snowflake_logical_guard() puts it on every table with a bigint column whose
-- DEFAULT calls snowflake_nextval() (or on one table), and an event trigger
-- does it at every CREATE TABLE / ALTER TABLE, so nothing is left to the DBA.

CREATE FUNCTION snowflake_id_received()
    RETURNS trigger
    LANGUAGE c VOLATILE
AS 'MODULE_PATHNAME', 'snowflake_id_received';
COMMENT ON FUNCTION snowflake_id_received() IS
    'snowflake_id: row trigger of the logical replication guard (made by snowflake_logical_guard())';

-- Returns the tables whose trigger it made or remade, with the columns it
-- watches. A table whose trigger is already right is left alone (so that
-- the event trigger below, which the ALTER TABLE here fires again, stops).
-- Runs as its caller: only a table's owner can put a trigger on it.
--
-- Each table on its own: a table it cannot guard (a trigger of
-- that name cloned from a partitioned parent, another session's temporary
-- table, a table of another role, a lock not granted within the function's
-- lock_timeout) is named in a WARNING and left, in a subtransaction of its
-- own, so that one such table does not abort the whole call. A table it
-- guarded stays locked until the caller commits, so every wait here blocks
-- writers of the tables already done: a table's lock is waited for 50 ms at
-- most, and all of them together 2 s at most (then 1 ms each), however
-- many tables other sessions keep locked. The SET clause restores the
-- caller's lock_timeout on return.
CREATE FUNCTION snowflake_id_internal.snowflake_logical_guard(tbl pg_catalog.regclass)
    RETURNS TABLE (table_name pg_catalog.regclass, columns pg_catalog.name[])
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    SET lock_timeout = '50ms'
AS $guard$
DECLARE
    r record;
    args text;
    done boolean;
    lookalikes text;
    waits_end timestamptz := pg_catalog.clock_timestamp() + interval '2 s';
BEGIN
    FOR r IN
        SELECT a.attrelid AS rel, pg_catalog.array_agg(a.attname ORDER BY a.attnum) AS cols
          FROM pg_catalog.pg_attrdef d
          JOIN pg_catalog.pg_depend dep
            ON dep.classid = 'pg_catalog.pg_attrdef'::pg_catalog.regclass AND dep.objid = d.oid
           AND dep.refclassid = 'pg_catalog.pg_proc'::pg_catalog.regclass
           AND dep.refobjid = '@extschema@.snowflake_nextval()'::pg_catalog.regprocedure
          JOIN pg_catalog.pg_attribute a
            ON a.attrelid = d.adrelid AND a.attnum = d.adnum AND NOT a.attisdropped
           AND a.atttypid = 'pg_catalog.int8'::pg_catalog.regtype
          JOIN pg_catalog.pg_class c ON c.oid = d.adrelid AND c.relkind = 'r'
         WHERE tbl IS NULL OR d.adrelid = tbl
         GROUP BY a.attrelid
         ORDER BY a.attrelid
    LOOP
        -- A trigger already there with these columns, enabled as REPLICA (or
        -- ALWAYS, or disabled: the DBA's choice, kept): done. One enabled
        -- for local sessions ('O', as CREATE TRIGGER leaves it) is made anew.
        CONTINUE WHEN EXISTS (
            SELECT FROM pg_catalog.pg_trigger t
             WHERE t.tgrelid = r.rel AND t.tgname = 'snowflake_id_received' AND t.tgenabled <> 'O'
               AND t.tgfoid = '@extschema@.snowflake_id_received()'::pg_catalog.regprocedure
               AND t.tgargs = (SELECT pg_catalog.string_agg(
                                             pg_catalog.convert_to(col::pg_catalog.text, pg_catalog.getdatabaseencoding())
                                             || pg_catalog.decode('00', 'hex'), ''::pg_catalog.bytea ORDER BY ord)
                                 FROM pg_catalog.unnest(r.cols) WITH ORDINALITY AS u(col, ord)));
        SELECT pg_catalog.string_agg(pg_catalog.quote_literal(col), ', ') INTO args
          FROM pg_catalog.unnest(r.cols) AS col;
        done := false;
        BEGIN
            PERFORM pg_catalog.set_config('lock_timeout', GREATEST(1, LEAST(50, (pg_catalog.date_part('epoch',
                        waits_end - pg_catalog.clock_timestamp()) * 1000)::integer))::text || 'ms', true);
            -- (Dropped only when there: DROP ... IF EXISTS says NOTICE at every new table.)
            IF EXISTS (SELECT FROM pg_catalog.pg_trigger t
                        WHERE t.tgrelid = r.rel AND t.tgname = 'snowflake_id_received') THEN
                EXECUTE pg_catalog.format('DROP TRIGGER snowflake_id_received ON %s', r.rel::pg_catalog.regclass);
            END IF;
            EXECUTE pg_catalog.format(
                'CREATE TRIGGER snowflake_id_received BEFORE INSERT ON %s FOR EACH ROW EXECUTE FUNCTION %s.snowflake_id_received(%s)',
                r.rel::pg_catalog.regclass, '@extschema@', args);
            EXECUTE pg_catalog.format('ALTER TABLE %s ENABLE REPLICA TRIGGER snowflake_id_received',
                                      r.rel::pg_catalog.regclass);
            done := true;
        EXCEPTION WHEN OTHERS THEN
            -- Functions of this name that are not the extension's make the
            -- hint's call ambiguous: named, so that the DBA drops them first.
            SELECT pg_catalog.string_agg(pg_catalog.format('%s (owned by role %s)', p.oid::pg_catalog.regprocedure,
                                                           p.proowner::pg_catalog.regrole), ', ' ORDER BY p.oid)
              INTO lookalikes
              FROM pg_catalog.pg_proc p
             WHERE p.proname = 'snowflake_logical_guard'
               AND p.pronamespace = (SELECT e.extnamespace FROM pg_catalog.pg_extension e WHERE e.extname = 'snowflake_id')
               AND NOT EXISTS (SELECT FROM pg_catalog.pg_depend m
                                WHERE m.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND m.objid = p.oid
                                  AND m.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass AND m.deptype = 'e');
            RAISE WARNING 'snowflake_id: the logical replication guard is not on table %: %',
                          r.rel::pg_catalog.regclass, SQLERRM
                USING HINT = pg_catalog.format(
                    'Once that is resolved, run SELECT * FROM snowflake_id_internal.snowflake_logical_guard(%L::pg_catalog.regclass); '
                    'as the table''s owner or a superuser.%s',
                    r.rel::pg_catalog.regclass::pg_catalog.text,
                    CASE WHEN lookalikes IS NOT NULL
                         THEN pg_catalog.format(' Also drop %s: not the extension''s, it makes calls of '
                                                'snowflake_logical_guard by name ambiguous for every role.',
                                                lookalikes) ELSE '' END);
        END;
        CONTINUE WHEN NOT done;
        table_name := r.rel;
        columns := r.cols;
        RETURN NEXT;
    END LOOP;
END;
$guard$;
COMMENT ON FUNCTION snowflake_id_internal.snowflake_logical_guard(pg_catalog.regclass) IS
    'snowflake_id: puts the logical replication guard on one table, or with NULL on every table whose bigint key defaults to snowflake_nextval()';

-- Every table whose bigint key defaults to snowflake_nextval(): the form
-- the docs give a DBA.
CREATE FUNCTION snowflake_id_internal.snowflake_logical_guard()
    RETURNS TABLE (table_name pg_catalog.regclass, columns pg_catalog.name[])
    LANGUAGE sql VOLATILE
BEGIN ATOMIC
    SELECT g.table_name, g.columns FROM snowflake_id_internal.snowflake_logical_guard(NULL::pg_catalog.regclass) g;
END;
COMMENT ON FUNCTION snowflake_id_internal.snowflake_logical_guard() IS
    'snowflake_id: puts the logical replication guard on every table whose bigint key defaults to snowflake_nextval()';

-- The public entry point, as 0.5.0 made it: bound to the implementation
-- when created (a look-alike planted beside it changes nothing it runs).
CREATE FUNCTION @extschema@.snowflake_logical_guard(tbl pg_catalog.regclass DEFAULT NULL)
    RETURNS TABLE (table_name pg_catalog.regclass, columns pg_catalog.name[])
    LANGUAGE sql VOLATILE
BEGIN ATOMIC
    SELECT g.table_name, g.columns FROM snowflake_id_internal.snowflake_logical_guard(snowflake_logical_guard.tbl) g;
END;
COMMENT ON FUNCTION @extschema@.snowflake_logical_guard(pg_catalog.regclass) IS
    'snowflake_id: puts the logical replication guard on every table (or one) whose bigint key defaults to snowflake_nextval()';

-- At the end of every CREATE TABLE / ALTER TABLE: the guard on the tables it
-- made or changed. Never fails the DDL (a WARNING says what went wrong). A
-- restore (pg_dump's scripts set check_function_bodies = off) is left alone:
-- the dump carries the triggers of the tables it restores, and a trigger
-- made here first would make the dump's CREATE TRIGGER fail.
--
-- Each table goes through snowflake_id_internal.snowflake_logical_guard(tbl),
-- called by name: no role but the extension's owner creates in that schema,
-- so no overload can make the call ambiguous or take its place.
CREATE FUNCTION snowflake_id_internal.snowflake_logical_guard_ddl()
    RETURNS event_trigger
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
AS $ddl$
DECLARE
    r record;
BEGIN
    -- A restore: pg_dump's scripts (and pg_restore, and pg_upgrade's) turn
    -- check_function_bodies off, which sessions otherwise hardly ever do.
    IF NOT pg_catalog.current_setting('check_function_bodies')::pg_catalog.bool THEN
        RETURN;
    END IF;
    -- Citus refuses to distribute a table that has a trigger: with Citus in
    -- this database the guard is the DBA's call, table by table
    -- (snowflake_logical_guard(tbl)), on tables that stay local.
    IF EXISTS (SELECT FROM pg_catalog.pg_extension WHERE extname OPERATOR(pg_catalog.=) 'citus'::pg_catalog.name) THEN
        RETURN;
    END IF;
    -- The tables made or changed, and the leaf partitions of a partitioned
    -- one (a default set, a partition attached, on the parent reaches them),
    -- with their bigint columns defaulting to the extension's
    -- snowflake_nextval(): read from the catalogs alone, so that other
    -- tables cost nothing and need no USAGE on the extension's schema.
    FOR r IN
        SELECT a.attrelid AS rel, pg_catalog.array_agg(a.attname ORDER BY a.attnum) AS cols
          FROM (SELECT DISTINCT t.relid
                  FROM pg_catalog.pg_event_trigger_ddl_commands() c
                 CROSS JOIN LATERAL (SELECT c.objid AS relid
                                     UNION
                                     SELECT p.relid FROM pg_catalog.pg_partition_tree(c.objid) p WHERE p.isleaf) t
                 WHERE c.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND c.object_type = 'table') t
          JOIN pg_catalog.pg_class rc ON rc.oid = t.relid AND rc.relkind = 'r'
          JOIN pg_catalog.pg_attrdef d ON d.adrelid = t.relid
          JOIN pg_catalog.pg_depend dep
            ON dep.classid = 'pg_catalog.pg_attrdef'::pg_catalog.regclass AND dep.objid = d.oid
           AND dep.refclassid = 'pg_catalog.pg_proc'::pg_catalog.regclass
          JOIN pg_catalog.pg_proc f ON f.oid = dep.refobjid AND f.proname = 'snowflake_nextval' AND f.pronargs = 0
          JOIN pg_catalog.pg_depend member
            ON member.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND member.objid = f.oid
           AND member.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass AND member.deptype = 'e'
          JOIN pg_catalog.pg_extension e ON e.oid = member.refobjid AND e.extname = 'snowflake_id'
          JOIN pg_catalog.pg_attribute a
            ON a.attrelid = d.adrelid AND a.attnum = d.adnum AND NOT a.attisdropped
           AND a.atttypid = 'pg_catalog.int8'::pg_catalog.regtype
         GROUP BY a.attrelid
         ORDER BY a.attrelid
    LOOP
        PERFORM snowflake_id_internal.snowflake_logical_guard(r.rel);
    END LOOP;
END;
$ddl$;

CREATE EVENT TRIGGER snowflake_id_logical_guard ON ddl_command_end
    WHEN TAG IN ('CREATE TABLE', 'ALTER TABLE', 'CREATE TABLE AS', 'SELECT INTO')
    EXECUTE FUNCTION snowflake_id_internal.snowflake_logical_guard_ddl();
