-- snowflake_id 0.6.0 -> 0.7.0: the SQL changes of 0.7.0 (issue 40: calls
-- inside installed bodies bound when created; the logical guard and the
-- update scripts handle each table on its own).
-- Install the 0.7.0 library first (it serves 0.6.0's definitions as they
-- are), then ALTER EXTENSION snowflake_id UPDATE.
\echo Use "ALTER EXTENSION snowflake_id UPDATE" to load this file. \quit

-- ==== section: bound calls (registry, cluster check, convert) ====

-- ==== section: logical guard ====
-- Issue 40: snowflake_logical_guard() guards each table in a subtransaction
-- of its own with a short lock_timeout, naming in a WARNING a table it
-- cannot guard instead of aborting as a whole; the event trigger's function
-- does the guard's work itself instead of calling it by name (another
-- role's overload with a defaulted argument made that call "not unique").
-- The bodies of sql/logical.sql, word for word (tests/upgrade.rs compares
-- the catalogs with a fresh install's). Same signatures: replaced in place,
-- so that the event trigger keeps its function.

CREATE OR REPLACE FUNCTION snowflake_logical_guard(tbl pg_catalog.regclass DEFAULT NULL)
    RETURNS TABLE (table_name pg_catalog.regclass, columns pg_catalog.name[])
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    SET lock_timeout = '2s'
AS $guard$
DECLARE
    r record;
    args text;
    done boolean;
    lookalikes text;
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
                    '%sOnce that is resolved, run SELECT * FROM %s.snowflake_logical_guard(%L::pg_catalog.regclass); '
                    'as the table''s owner or a superuser.',
                    CASE WHEN lookalikes IS NOT NULL
                         THEN pg_catalog.format('First drop %s: not the extension''s, it makes that call ambiguous. ',
                                                lookalikes) ELSE '' END,
                    '@extschema@', r.rel::pg_catalog.regclass::pg_catalog.text);
        END;
        CONTINUE WHEN NOT done;
        table_name := r.rel;
        columns := r.cols;
        RETURN NEXT;
    END LOOP;
END;
$guard$;

CREATE OR REPLACE FUNCTION snowflake_logical_guard_ddl()
    RETURNS event_trigger
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
AS $ddl$
DECLARE
    r record;
    args text;
    lookalikes text;
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
        -- As in snowflake_logical_guard(): a right trigger is left alone.
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
        BEGIN
            IF EXISTS (SELECT FROM pg_catalog.pg_trigger t
                        WHERE t.tgrelid = r.rel AND t.tgname = 'snowflake_id_received') THEN
                EXECUTE pg_catalog.format('DROP TRIGGER snowflake_id_received ON %s', r.rel::pg_catalog.regclass);
            END IF;
            EXECUTE pg_catalog.format(
                'CREATE TRIGGER snowflake_id_received BEFORE INSERT ON %s FOR EACH ROW EXECUTE FUNCTION %s.snowflake_id_received(%s)',
                r.rel::pg_catalog.regclass, '@extschema@', args);
            EXECUTE pg_catalog.format('ALTER TABLE %s ENABLE REPLICA TRIGGER snowflake_id_received',
                                      r.rel::pg_catalog.regclass);
        EXCEPTION WHEN OTHERS THEN
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
                    '%sOnce that is resolved, run SELECT * FROM %s.snowflake_logical_guard(%L::pg_catalog.regclass); '
                    'as the table''s owner or a superuser.',
                    CASE WHEN lookalikes IS NOT NULL
                         THEN pg_catalog.format('First drop %s: not the extension''s, it makes that call ambiguous. ',
                                                lookalikes) ELSE '' END,
                    '@extschema@', r.rel::pg_catalog.regclass::pg_catalog.text);
        END;
    END LOOP;
END;
$ddl$;
