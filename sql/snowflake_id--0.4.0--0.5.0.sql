-- snowflake_id 0.4.0 -> 0.5.0: the SQL changes of 0.5.0 (no role gains
-- through the extension, invariant 11; short text forms and blocks of IDs;
-- the logical replication guard).
-- Install the 0.5.0 library first (it serves 0.4.0's definitions as they
-- are), then ALTER EXTENSION snowflake_id UPDATE. Tables, defaults, rows,
-- grants and views are untouched: every statement below replaces the body of
-- an object the extension has, with the text of a fresh install of 0.5.0
-- (tests/upgrade.rs compares the catalogs), or creates a function new in
-- 0.5.0 (the last sections), after section 0 checked that nothing another
-- role created is in the way.
\echo Use "ALTER EXTENSION snowflake_id UPDATE" to load this file. \quit

-- The two views replaced below: an open transaction that read one holds a
-- lock the replacement must wait for, and a wait with no end would stop
-- every later reader too. Taken first, 5 s at most, naming the sessions
-- that hold them.
DO $views$
DECLARE
    v pg_catalog.regclass;
    holders pg_catalog.text;
    saved pg_catalog.text := pg_catalog.current_setting('lock_timeout');
BEGIN
    PERFORM pg_catalog.set_config('lock_timeout', '5s', true);
    FOREACH v IN ARRAY ARRAY['@extschema@.snowflake_id_status', '@extschema@.snowflake_registry']::pg_catalog.regclass[] LOOP
        BEGIN
            EXECUTE pg_catalog.format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', v);
        EXCEPTION WHEN lock_not_available THEN
            SELECT pg_catalog.string_agg(pg_catalog.format('pid %s (role %s, %s since %s)', a.pid, a.usename, a.state,
                                                           a.xact_start), ', ' ORDER BY a.pid)
              INTO holders
              FROM pg_catalog.pg_locks l JOIN pg_catalog.pg_stat_activity a ON a.pid OPERATOR(pg_catalog.=) l.pid
             WHERE l.locktype OPERATOR(pg_catalog.=) 'relation' AND l.relation OPERATOR(pg_catalog.=) v::pg_catalog.oid
               AND l.granted AND l.pid OPERATOR(pg_catalog.<>) pg_catalog.pg_backend_pid();
            RAISE EXCEPTION 'cannot update extension snowflake_id: view % is in use', v
                USING ERRCODE = '55P03',
                      DETAIL = pg_catalog.format('Sessions holding it: %s.', coalesce(holders, 'none any more')),
                      HINT = 'End those transactions (SELECT pg_catalog.pg_terminate_backend(pid); if they are idle), then run ALTER EXTENSION snowflake_id UPDATE again.';
        END;
    END LOOP;
    PERFORM pg_catalog.set_config('lock_timeout', saved, true);
END
$views$;

-- ============================================================================
-- 0. Nothing of another role's where this update creates the extension's
--    own objects, nor beside a function its bodies call where it would
--    make the call ambiguous. An object of one of these names in
--    @extschema@ outside the extension makes a CREATE below fail with a bare
--    "already exists", or (a function of another signature) stays beside the
--    extension's to be called in its place by an untyped call. Refused here,
--    naming the object, its owner and the fix. This block runs with the
--    script's search_path (@extschema@, often public, where ordinary roles may
--    create): it names pg_catalog for every function and operator it calls.
-- ============================================================================
DO $guard$
DECLARE
    functions pg_catalog.name[] := ARRAY[
        'snowflake_to_base62', 'snowflake_to_base32', 'snowflake_from_base62', 'snowflake_from_base32',
        'snowflake_nextval_block', 'snowflake_nextval_array', 'snowflake_id_received', 'snowflake_logical_guard',
        'snowflake_logical_guard_ddl'
    ]::pg_catalog.name[];
    relations pg_catalog.name[] := ARRAY[]::pg_catalog.name[];
    ext pg_catalog.oid;
    ns pg_catalog.oid;
    clash record;
BEGIN
    SELECT e.oid, e.extnamespace INTO ext, ns
      FROM pg_catalog.pg_extension e WHERE e.extname OPERATOR(pg_catalog.=) 'snowflake_id'::pg_catalog.name;
    SELECT o.kind, o.what, o.owner INTO clash
      FROM (SELECT 'FUNCTION'::pg_catalog.text AS kind,
                   pg_catalog.format('%I.%I(%s)', n.nspname, p.proname,
                                     pg_catalog.pg_get_function_identity_arguments(p.oid)) AS what,
                   p.proowner AS owner, 'pg_catalog.pg_proc'::pg_catalog.regclass::pg_catalog.oid AS classid,
                   p.oid AS objid
              FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace
             WHERE p.pronamespace OPERATOR(pg_catalog.=) ns AND p.proname OPERATOR(pg_catalog.=) ANY (functions)
            UNION ALL
            SELECT CASE c.relkind WHEN 'r'::pg_catalog."char" THEN 'TABLE' WHEN 'p'::pg_catalog."char" THEN 'TABLE'
                                  WHEN 'v'::pg_catalog."char" THEN 'VIEW'
                                  WHEN 'm'::pg_catalog."char" THEN 'MATERIALIZED VIEW'
                                  WHEN 'i'::pg_catalog."char" THEN 'INDEX' WHEN 'I'::pg_catalog."char" THEN 'INDEX'
                                  WHEN 'S'::pg_catalog."char" THEN 'SEQUENCE'
                                  WHEN 'f'::pg_catalog."char" THEN 'FOREIGN TABLE' ELSE 'TYPE' END::pg_catalog.text,
                   pg_catalog.format('%I.%I', n.nspname, c.relname),
                   c.relowner, 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid, c.oid
              FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
             WHERE c.relnamespace OPERATOR(pg_catalog.=) ns AND c.relname OPERATOR(pg_catalog.=) ANY (relations)
            UNION ALL
            -- A function of another role under the name of one of the
            -- extension's, with a defaulted or variadic argument: it makes
            -- the bodies' exactly typed calls of the extension's function
            -- "not unique", and the update would stop there with
            -- PostgreSQL's bare words, keeping 0.4.0's bodies.
            SELECT 'FUNCTION'::pg_catalog.text,
                   pg_catalog.format('%I.%I(%s)', n.nspname, p.proname,
                                     pg_catalog.pg_get_function_identity_arguments(p.oid)),
                   p.proowner, 'pg_catalog.pg_proc'::pg_catalog.regclass::pg_catalog.oid, p.oid
              FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace
             WHERE p.pronamespace OPERATOR(pg_catalog.=) ns
               AND (p.pronargdefaults OPERATOR(pg_catalog.>) 0::pg_catalog.int2
                    OR p.provariadic OPERATOR(pg_catalog.<>) 0::pg_catalog.oid)
               AND p.proname OPERATOR(pg_catalog.=) ANY (ARRAY(
                   SELECT q.proname FROM pg_catalog.pg_proc q JOIN pg_catalog.pg_depend qd
                       ON qd.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass::pg_catalog.oid
                      AND qd.objid OPERATOR(pg_catalog.=) q.oid
                      AND qd.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass::pg_catalog.oid
                      AND qd.refobjid OPERATOR(pg_catalog.=) ext
                      AND qd.deptype OPERATOR(pg_catalog.=) 'e'::pg_catalog."char"))
            UNION ALL
            -- Types of their own (a relation's row type is the relation's).
            SELECT 'TYPE'::pg_catalog.text, pg_catalog.format('%I.%I', n.nspname, t.typname),
                   t.typowner, 'pg_catalog.pg_type'::pg_catalog.regclass::pg_catalog.oid, t.oid
              FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) t.typnamespace
             WHERE t.typnamespace OPERATOR(pg_catalog.=) ns AND t.typname OPERATOR(pg_catalog.=) ANY (relations)
               AND t.typrelid OPERATOR(pg_catalog.=) 0::pg_catalog.oid) o
     WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_depend d
                        WHERE d.classid OPERATOR(pg_catalog.=) o.classid AND d.objid OPERATOR(pg_catalog.=) o.objid
                          AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass::pg_catalog.oid
                          AND d.refobjid OPERATOR(pg_catalog.=) ext
                          AND d.deptype OPERATOR(pg_catalog.=) 'e'::pg_catalog."char")
     ORDER BY o.what
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'cannot update extension snowflake_id: % %, owned by role %, is in the way',
                        pg_catalog.lower(clash.kind), clash.what, clash.owner::pg_catalog.regrole
            USING ERRCODE = '42710',
                  DETAIL = pg_catalog.format('This update creates or calls the extension''s own object of that name '
                                             'in schema %s; the one there is not part of the extension. Were it '
                                             'kept, the update would fail on it (already exists, or a call made '
                                             'ambiguous), or it would be called in place of the extension''s '
                                             'function.', '@extschema@'),
                  HINT = pg_catalog.format('Check what uses it, then drop it (DROP %s %s;) or move it out of the '
                                           'way (ALTER %s %s RENAME TO ..., or SET SCHEMA ...), as its owner or a '
                                           'superuser, and run ALTER EXTENSION snowflake_id UPDATE again.',
                                           clash.kind, clash.what, clash.kind, clash.what);
    END IF;
END
$guard$;

-- ============================================================================
-- 1. snowflake_convert calls the extension's functions with exact types (a
--    planted public.snowflake_timestamp(integer) won the bare 0 of 0.4.0, as
--    the caller), and converts only tables the caller owns: a table of
--    another role in the foreign-key chain is refused with 42501 naming it
--    and its owner, before anything runs, dry runs too (sql/install/convert.sql).
-- ============================================================================
CREATE OR REPLACE FUNCTION snowflake_convert(tbl regclass, col name, dry_run boolean DEFAULT false, rekey_by name DEFAULT NULL)
    RETURNS SETOF text
    LANGUAGE plpgsql
    -- Statements name every object schema-qualified, whatever the caller's search_path.
    SET search_path = pg_catalog, pg_temp
AS $convert$
DECLARE
    att record;
    seq regclass;
    widen record;
    w_rels oid[];
    w_atts int2[];
    stmts text[] := '{}';
    blockers text;
    max_value bigint;
    next_id bigint;
    stmt text;
    time_type regtype;
    nulls bigint;
    map text;
    fk record;
    fk_adds text[] := '{}';
    touched oid[];
    foreign_owned record;
BEGIN
    SELECT a.attnum, a.atttypid, a.attidentity, a.attgenerated, d.oid AS defoid,
           pg_get_expr(d.adbin, d.adrelid) AS def
      INTO att
      FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
     WHERE a.attrelid = tbl AND a.attname = col AND a.attnum > 0 AND NOT a.attisdropped;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'column "%" of relation % does not exist', col, tbl USING ERRCODE = '42703';
    END IF;

    -- A partition's column follows its partitioned table's: widening or a
    -- default there alone is refused by PostgreSQL or leaves siblings behind.
    IF (SELECT relispartition FROM pg_class WHERE oid = tbl) THEN
        RAISE EXCEPTION '% is a partition of %', tbl, pg_partition_root(tbl)
            USING ERRCODE = '42809',
                  HINT = format('Convert the partitioned table: SELECT snowflake_convert(%L, %L);',
                                pg_partition_root(tbl)::regclass::text, col);
    END IF;
    IF att.atttypid NOT IN ('smallint'::regtype, 'integer'::regtype, 'bigint'::regtype) THEN
        RAISE EXCEPTION 'column "%" of % is of type %, not an integer', col, tbl, format_type(att.atttypid, NULL)
            USING ERRCODE = '42804', HINT = 'Snowflake IDs are bigint; only smallint, integer and bigint keys can be converted.';
    END IF;

    -- The chain: every foreign-key column that references the key, and those
    -- that reference them. On a partitioned table PostgreSQL keeps a copy of
    -- each foreign key per partition (conparentid names the parent's) and
    -- refuses to alter a partition's inherited column alone: the copies are
    -- skipped, and each column is named on the top of its partition tree,
    -- whose ALTER TABLE reaches every partition. Only catalogs are read here:
    -- nothing of any table runs before the owners are checked.
    WITH RECURSIVE cols(rel, attnum) AS (
        SELECT tbl::oid, att.attnum
        UNION
        SELECT c.conrelid, c.conkey[k.i]
          FROM cols
          JOIN pg_constraint c ON c.contype = 'f' AND c.confrelid = cols.rel AND c.conparentid = 0
          JOIN LATERAL generate_subscripts(c.confkey, 1) AS k(i) ON c.confkey[k.i] = cols.attnum
    ), tops AS (
        SELECT DISTINCT coalesce(pg_partition_root(cols.rel), cols.rel) AS rel, a.attname
          FROM cols JOIN pg_attribute a ON a.attrelid = cols.rel AND a.attnum = cols.attnum
    )
    SELECT array_agg(a.attrelid), array_agg(a.attnum) INTO w_rels, w_atts
      FROM tops JOIN pg_attribute a ON a.attrelid = tops.rel AND a.attname = tops.attname;

    -- The tables the statements below alter, lock or update: this one; the
    -- chain when it is widened or re-keyed; with rekey_by, every table whose
    -- foreign key into the chain is dropped and added back; and every
    -- partition or inheritance child of those, which ALTER TABLE and UPDATE
    -- reach too. Each must be the caller's: its owner, or a member of its
    -- owner that is not a superuser (a superuser passes every ownership
    -- check, so membership says nothing; it must SET ROLE to the owner, and
    -- the owner's code then runs with the owner's rights only).
    touched := ARRAY[tbl::oid];
    IF att.atttypid <> 'bigint'::regtype OR rekey_by IS NOT NULL THEN
        touched := touched || w_rels;
    END IF;
    IF rekey_by IS NOT NULL THEN
        touched := touched || ARRAY(
            SELECT c.conrelid FROM pg_constraint c
             WHERE c.contype = 'f' AND c.conparentid = 0
               AND EXISTS (SELECT 1 FROM unnest(w_rels) AS w(rel)
                            WHERE w.rel IN (c.confrelid, coalesce(pg_partition_root(c.confrelid), c.confrelid))));
    END IF;
    WITH RECURSIVE rels(rel) AS (
        SELECT unnest(touched)
        UNION
        SELECT i.inhrelid FROM pg_inherits i JOIN rels ON i.inhparent = rels.rel
    ), me AS (
        SELECT r.oid, r.rolsuper FROM pg_roles r WHERE r.rolname = current_user
    )
    SELECT c.oid::regclass AS rel, c.relowner::regrole AS owner, pg_get_userbyid(c.relowner) AS owner_name,
           c.oid = tbl::oid AS is_tbl
      INTO foreign_owned
      FROM rels JOIN pg_class c ON c.oid = rels.rel CROSS JOIN me
     WHERE c.relowner <> me.oid AND (me.rolsuper OR NOT pg_has_role(c.relowner, 'USAGE'))
     ORDER BY c.oid <> tbl::oid, c.oid::regclass::text
     LIMIT 1;
    IF FOUND AND foreign_owned.is_tbl THEN
        RAISE EXCEPTION 'cannot convert %: table % is owned by role %, not by %', tbl, tbl, foreign_owned.owner,
                        quote_ident(current_user)
            USING ERRCODE = '42501',
                  DETAIL = 'snowflake_convert() alters only tables the calling role owns, or whose owning role it is a '
                           'member of without being a superuser: their CHECK constraints, index expressions and '
                           'triggers run as the caller.',
                  HINT = format('Run it as the owner: SET ROLE %I; SELECT snowflake_convert(%L, %L); RESET ROLE;',
                                foreign_owned.owner_name, tbl::text, col);
    ELSIF FOUND THEN
        RAISE EXCEPTION 'cannot convert %: table % is owned by role %, not by %', tbl, foreign_owned.rel,
                        foreign_owned.owner, quote_ident(current_user)
            USING ERRCODE = '42501',
                  DETAIL = format('The conversion would alter %s (in the key''s foreign-key chain, or a partition or '
                                  'inheritance child of a table there) as %I, running its CHECK constraints, index expressions '
                                  'and triggers with %I''s rights. snowflake_convert() alters only tables the calling '
                                  'role owns, or whose owning role it is a member of without being a superuser.',
                                  foreign_owned.rel, current_user, current_user),
                  HINT = format('Have one role own every table of the chain and convert as that role (SET ROLE %I '
                                'if it owns them all; or ALTER TABLE %s OWNER TO ...), or drop that foreign key, '
                                'convert, and let %I add it back.',
                                foreign_owned.owner_name, foreign_owned.rel, foreign_owned.owner_name);
    END IF;

    -- Already converted: nothing to do, and say so.
    IF att.def ~ '(^|\.)snowflake_nextval\(\)$' THEN
        RAISE NOTICE 'column "%" of % already defaults to snowflake_nextval(); nothing to do', col, tbl;
        RETURN;
    END IF;

    -- 1. Stop the sequence from feeding the column.
    IF att.attidentity IN ('a', 'd') THEN
        -- Dropping the identity drops its internal sequence with it.
        stmts := stmts || format('ALTER TABLE %s ALTER COLUMN %I DROP IDENTITY', tbl, col);
    ELSIF att.def ~ '^nextval\(' THEN
        SELECT refobjid::regclass INTO seq
          FROM pg_depend
         WHERE classid = 'pg_attrdef'::regclass AND objid = att.defoid
           AND refclassid = 'pg_class'::regclass AND deptype = 'n';
        stmts := stmts || format('ALTER TABLE %s ALTER COLUMN %I DROP DEFAULT', tbl, col);
        -- A serial's own sequence (owned by this column, used by no other
        -- default) goes with it; a shared sequence stays for its other users.
        -- The partitions' copies of this default are not other users: DROP
        -- DEFAULT on a partitioned table drops them too.
        IF EXISTS (SELECT 1 FROM pg_depend
                    WHERE classid = 'pg_class'::regclass AND objid = seq AND refobjid = tbl
                      AND refobjsubid = att.attnum AND deptype = 'a')
           AND NOT EXISTS (SELECT 1 FROM pg_depend d JOIN pg_attrdef ad ON ad.oid = d.objid
                            WHERE d.classid = 'pg_attrdef'::regclass AND d.objid <> att.defoid
                              AND d.refclassid = 'pg_class'::regclass AND d.refobjid = seq
                              AND ad.adrelid NOT IN (SELECT relid FROM pg_partition_tree(tbl))) THEN
            stmts := stmts || format('DROP SEQUENCE %s', seq);
        END IF;
    ELSE
        RAISE EXCEPTION 'column "%" of % is not fed by a sequence (default: %)', col, tbl, coalesce(att.def, 'none')
            USING ERRCODE = '55000',
                  HINT = 'snowflake_convert() converts serial, identity and DEFAULT nextval(...) columns; for others run '
                         'ALTER TABLE ... ALTER COLUMN ... SET DEFAULT snowflake_nextval().';
    END IF;

    -- The time column of a re-key: a timestamp, on every row.
    IF rekey_by IS NOT NULL THEN
        SELECT a.atttypid INTO time_type FROM pg_attribute a
         WHERE a.attrelid = tbl AND a.attname = rekey_by AND a.attnum > 0 AND NOT a.attisdropped;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'column "%" of relation % does not exist', rekey_by, tbl USING ERRCODE = '42703';
        END IF;
        IF time_type NOT IN ('timestamptz'::regtype, 'timestamp'::regtype) THEN
            RAISE EXCEPTION 'column "%" of % is of type %, not a timestamp', rekey_by, tbl, time_type
                USING ERRCODE = '42804',
                      HINT = 'rekey_by names the column that holds when each row happened: timestamptz, or timestamp '
                             '(read in the session''s TimeZone).';
        END IF;
        -- No row may come or change while its key is re-keyed (rows
        -- committed between the map and the UPDATE would keep old keys).
        IF NOT dry_run THEN
            EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', tbl);
        END IF;
        EXECUTE format('SELECT count(*) FROM %s WHERE %I IS NULL', tbl, rekey_by) INTO nulls;
        IF nulls > 0 THEN
            RAISE EXCEPTION '% rows of % have no time in column "%"', nulls, tbl, rekey_by
                USING ERRCODE = '23502',
                      HINT = format('Give them one first, for example: UPDATE %s SET %I = <when they happened> '
                                    'WHERE %I IS NULL;', tbl, rekey_by, rekey_by);
        END IF;
        -- Times no past-instant ID can have, counted, before anything runs.
        EXECUTE format('SELECT count(*) FROM %s WHERE %I::timestamptz >= clock_timestamp() - interval ''1 ms'' '
                       'OR %I::timestamptz < (SELECT @extschema@.snowflake_timestamp(0::bigint))', tbl, rekey_by, rekey_by)
           INTO nulls;
        IF nulls > 0 THEN
            RAISE EXCEPTION '% rows of % have a time in column "%" that is not in the past or is before the epoch',
                            nulls, tbl, rekey_by
                USING ERRCODE = '22023',
                      HINT = 'An ID can tell a time from the layout''s epoch up to the present; fix those times, or '
                             'give those rows live IDs after the conversion.';
        END IF;
    END IF;

    -- 2. New IDs must be above every existing value (re-keyed values are
    -- replaced, and past-instant IDs never meet live ones).
    EXECUTE format('SELECT max(%I)::bigint FROM %s', col, tbl) INTO max_value;
    IF rekey_by IS NOT NULL THEN
        max_value := NULL;
    END IF;
    next_id := @extschema@.snowflake_from_timestamp(clock_timestamp());
    BEGIN
        next_id := greatest(next_id, (SELECT last_id + 1 FROM @extschema@.snowflake_id_status()));
    EXCEPTION WHEN OTHERS THEN
        NULL;  -- no generator here (not preloaded): the clock's bound stands
    END;
    IF max_value >= next_id THEN
        RAISE EXCEPTION 'existing value % in %.% is not below the IDs snowflake_nextval() issues now (from %)',
                        max_value, tbl, quote_ident(col), next_id
            USING ERRCODE = '22023',
                  HINT = format('New IDs must be above old ones. If these values are snowflake IDs of this worker id, '
                                'move the generator past them first (as a superuser): '
                                'SELECT snowflake_advance_past(max(%I)) FROM %s;', col, tbl);
    END IF;

    -- 3. Widen to bigint, with the chain (above).
    IF att.atttypid <> 'bigint'::regtype OR rekey_by IS NOT NULL THEN
        SELECT string_agg(DISTINCT format('%s (on %s.%I)', r.ev_class::regclass, d.refobjid::regclass, a.attname), ', ')
          INTO blockers
          FROM pg_depend d
          JOIN pg_rewrite r ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid
          JOIN unnest(w_rels, w_atts) AS w(rel, attnum) ON d.refclassid = 'pg_class'::regclass
                                             AND d.refobjid = w.rel AND d.refobjsubid = w.attnum
          JOIN pg_attribute a ON a.attrelid = w.rel AND a.attnum = w.attnum
         WHERE r.ev_class <> d.refobjid;
        -- A dry run shows the plan with what blocks it, as a comment line
        -- first; a real run stops there.
        IF blockers IS NOT NULL AND dry_run THEN
            RETURN NEXT format('-- blocked: cannot widen %s to bigint: used by view or rule %s; drop those views '
                               '(pg_get_viewdef() shows their definitions), convert, then recreate them', tbl, blockers);
        ELSIF blockers IS NOT NULL THEN
            RAISE EXCEPTION 'cannot widen % to bigint: used by view or rule %', tbl, blockers
                USING ERRCODE = '0A000',
                      HINT = 'Drop those views (pg_get_viewdef() shows their definitions), convert, then recreate them.';
        END IF;

        FOR widen IN
            SELECT w.rel::regclass AS rel, a.attname
              FROM unnest(w_rels, w_atts) AS w(rel, attnum)
              JOIN pg_attribute a ON a.attrelid = w.rel AND a.attnum = w.attnum
             WHERE a.atttypid IN ('smallint'::regtype, 'integer'::regtype)
             ORDER BY w.rel <> tbl, w.rel::regclass::text, a.attname
        LOOP
            stmts := stmts || format('ALTER TABLE %s ALTER COLUMN %I TYPE bigint', widen.rel, widen.attname);
        END LOOP;
    END IF;

    -- 3b. Re-key: a map from each old key to a past-instant ID at its row's
    -- time, made in (time, old key) order so that ties in one millisecond
    -- keep the old order; every column of the chain rewritten through it,
    -- with the chain's foreign keys dropped meanwhile and added back after
    -- (validated then, in one pass each).
    IF rekey_by IS NOT NULL THEN
        map := format('pg_temp.snowflake_rekey_%s', tbl::oid);
        FOR fk IN
            SELECT c.conrelid::regclass AS rel, c.conname, pg_get_constraintdef(c.oid) AS def
              FROM pg_constraint c
             WHERE c.contype = 'f' AND c.conparentid = 0
               AND EXISTS (SELECT 1 FROM unnest(w_rels) AS w(rel)
                            WHERE w.rel IN (c.confrelid, coalesce(pg_partition_root(c.confrelid), c.confrelid)))
             ORDER BY c.conrelid::regclass::text, c.conname
        LOOP
            stmts := stmts || format('ALTER TABLE %s DROP CONSTRAINT %I', fk.rel, fk.conname);
            fk_adds := fk_adds || format('ALTER TABLE %s ADD CONSTRAINT %I %s', fk.rel, fk.conname, fk.def);
        END LOOP;
        -- Every table of the chain, before the map is made.
        FOR widen IN
            SELECT DISTINCT w.rel::regclass AS rel FROM unnest(w_rels) AS w(rel) ORDER BY 1
        LOOP
            stmts := stmts || format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', widen.rel);
        END LOOP;
        -- A map left by an earlier re-key of this table in this session (a
        -- plain DROP ... IF EXISTS says NOTICE when there is no temp schema).
        IF to_regclass(map) IS NOT NULL THEN
            stmts := stmts || format('DROP TABLE %s', map);
        END IF;
        stmts := stmts || format(
            'CREATE TEMP TABLE %s ON COMMIT DROP AS SELECT old, %s.snowflake_nextval_at(at) AS new '
            'FROM (SELECT %I AS old, %I::timestamptz AS at FROM %s ORDER BY %I, %I OFFSET 0) s',
            map, '@extschema@', col, rekey_by, tbl, rekey_by, col);
        stmts := stmts || format('ALTER TABLE %s ADD PRIMARY KEY (old)', map);
        stmts := stmts || format('ANALYZE %s', map);
        FOR widen IN
            SELECT w.rel::regclass AS rel, a.attname
              FROM unnest(w_rels, w_atts) AS w(rel, attnum)
              JOIN pg_attribute a ON a.attrelid = w.rel AND a.attnum = w.attnum
             ORDER BY w.rel <> tbl, w.rel::regclass::text, a.attname
        LOOP
            stmts := stmts || format('UPDATE %s AS t SET %I = m.new FROM %s AS m WHERE t.%I = m.old',
                                     widen.rel, widen.attname, map, widen.attname);
        END LOOP;
        stmts := stmts || fk_adds;
    END IF;

    -- 4. The new default.
    stmts := stmts || format('ALTER TABLE %s ALTER COLUMN %I SET DEFAULT %s.snowflake_nextval()',
                             tbl, col, '@extschema@');

    FOREACH stmt IN ARRAY stmts LOOP
        IF NOT dry_run THEN
            EXECUTE stmt;
        END IF;
        RETURN NEXT stmt;
    END LOOP;
END
$convert$;

-- ============================================================================
-- 2. The decoders name @extschema@ for everything they call. Their bodies
--    are bound when created: replacing them binds them again to the
--    extension's accessors, whatever a schema on the update's path holds
--    (sql/install/decode.sql). They stay inlinable: no SET clause.
-- ============================================================================
CREATE OR REPLACE FUNCTION snowflake_decode(id bigint) RETURNS snowflake_parts
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN CASE WHEN id IS NULL THEN NULL
                ELSE ROW(@extschema@.snowflake_timestamp(id), @extschema@.snowflake_worker_id(id),
                         @extschema@.snowflake_sequence(id))::@extschema@.snowflake_parts
           END;

CREATE OR REPLACE FUNCTION snowflake_decode(id bigint, epoch timestamptz, worker_bits integer, sequence_bits integer)
    RETURNS snowflake_parts
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE WHEN id IS NULL OR epoch IS NULL OR worker_bits IS NULL OR sequence_bits IS NULL THEN NULL
                ELSE ROW(@extschema@.snowflake_timestamp(id, epoch, worker_bits, sequence_bits),
                         @extschema@.snowflake_worker_id(id, epoch, worker_bits, sequence_bits),
                         @extschema@.snowflake_sequence(id, epoch, worker_bits, sequence_bits))::@extschema@.snowflake_parts
           END;

CREATE OR REPLACE FUNCTION snowflake_decode_fields(id bigint) RETURNS snowflake_parts
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN ROW(@extschema@.snowflake_timestamp(id), @extschema@.snowflake_worker_id(id),
               @extschema@.snowflake_sequence(id))::@extschema@.snowflake_parts;

CREATE OR REPLACE FUNCTION snowflake_decode_fields(id bigint, epoch timestamptz, worker_bits integer, sequence_bits integer)
    RETURNS snowflake_parts
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN ROW(@extschema@.snowflake_timestamp(id, epoch, worker_bits, sequence_bits),
               @extschema@.snowflake_worker_id(id, epoch, worker_bits, sequence_bits),
               @extschema@.snowflake_sequence(id, epoch, worker_bits, sequence_bits))::@extschema@.snowflake_parts;

CREATE OR REPLACE FUNCTION snowflake_decode_rows(id bigint) RETURNS SETOF snowflake_parts
    LANGUAGE sql STABLE PARALLEL SAFE ROWS 1
    BEGIN ATOMIC
        SELECT @extschema@.snowflake_timestamp(id), @extschema@.snowflake_worker_id(id),
               @extschema@.snowflake_sequence(id);
    END;

CREATE OR REPLACE FUNCTION snowflake_decode_rows(id bigint, epoch timestamptz, worker_bits integer, sequence_bits integer)
    RETURNS SETOF snowflake_parts
    LANGUAGE sql IMMUTABLE PARALLEL SAFE ROWS 1
    BEGIN ATOMIC
        SELECT @extschema@.snowflake_timestamp(id, epoch, worker_bits, sequence_bits),
               @extschema@.snowflake_worker_id(id, epoch, worker_bits, sequence_bits),
               @extschema@.snowflake_sequence(id, epoch, worker_bits, sequence_bits);
    END;

-- ============================================================================
-- 3. The registry's staleness test and its view name pg_catalog for every
--    built-in not called with exact types (bigint / numeric, to_timestamp,
--    make_interval): bound at CREATE, they would keep whatever overload a
--    schema on the install's path offered (sql/install/registry.sql).
-- ============================================================================
CREATE OR REPLACE FUNCTION snowflake_registry_free(l snowflake_registry_leases, stale_margin interval, at timestamptz)
    RETURNS boolean
    LANGUAGE sql STABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    RETURN l.released_at IS NOT NULL
           OR l.renewed_at + pg_catalog.make_interval(secs => l.horizon_ms OPERATOR(pg_catalog./) 1000.0)
              + stale_margin < at;

CREATE OR REPLACE VIEW snowflake_registry AS
SELECT l.namespace, l.worker_id, l.node_name, l.system_identifier, l.timeline, l.lease_epoch,
       pg_catalog.to_timestamp((n.epoch_ms + l.floor_tick) OPERATOR(pg_catalog./) 1000.0) AS floor,
       pg_catalog.to_timestamp((n.epoch_ms + l.ceiling_tick) OPERATOR(pg_catalog./) 1000.0) AS ceiling,
       l.granted_at, l.renewed_at, l.released_at,
       CASE WHEN l.released_at IS NOT NULL THEN 'free'
            WHEN @extschema@.snowflake_registry_free(l, n.stale_margin, pg_catalog.clock_timestamp()) THEN 'stale'
            ELSE 'live'
       END AS state
  FROM @extschema@.snowflake_registry_leases l
  JOIN @extschema@.snowflake_registry_namespaces n USING (namespace);

-- ============================================================================
-- 4. The query snowflake_cluster_check sends to every Citus node (run there
--    as the caller: the cluster watch's bootstrap superuser) names
--    pg_catalog for every function, operator and type, and goes only to a
--    node whose snowflake_id_status is the extension's view: a node without
--    the extension had another role's view of that name queried as a
--    superuser (sql/install/cluster.sql).
-- ============================================================================
CREATE OR REPLACE FUNCTION snowflake_cluster_check()
    RETURNS TABLE (node text, worker_id bigint, layout text, problem text)
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
AS $check$
DECLARE
    -- What each node says: its status as one JSON object (Citus returns
    -- text), the layout as worker_bits/sequence_bits/epoch in UTC, to the
    -- millisecond (so whatever each node's TimeZone). The text runs on each
    -- node under the search_path the node gives the connecting role (its
    -- database owner may put public first), as the caller: the cluster
    -- watch calls this as the bootstrap superuser every 10 s. So every
    -- function, operator and type in it is named in its schema: nothing an
    -- ordinary role planted on a node can be called instead. %s: the
    -- node's schema of the extension, quoted by the node (probe_query).
    status_template text := $q$SELECT CAST(pg_catalog.json_build_object(
                      'worker_id', s.worker_id,
                      'layout', s.worker_bits OPERATOR(pg_catalog.||) '/' OPERATOR(pg_catalog.||) s.sequence_bits
                                OPERATOR(pg_catalog.||) '/' OPERATOR(pg_catalog.||)
                                pg_catalog.to_char(pg_catalog.timezone('UTC', s.epoch), 'YYYY-MM-DD HH24:MI:SS.MS')
                                OPERATOR(pg_catalog.||) '+00',
                      'problem', s.problem) AS pg_catalog.text)
             FROM %s.snowflake_id_status s$q$;
    -- Asked of each node first: the schema its snowflake_id lives in, if
    -- its snowflake_id_status there is the extension's view (quoted; empty
    -- otherwise). A node without the extension (created on the coordinator
    -- before Citus, say) has no such view, and one an ordinary role created
    -- under that name would run its functions as the caller, a superuser
    -- for the watch: such a node is named, never queried. (COALESCE is
    -- grammar, not a function: nothing to qualify.)
    probe_query text := $q$SELECT COALESCE((
        SELECT pg_catalog.quote_ident(n.nspname)
          FROM pg_catalog.pg_extension e
          JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) e.extnamespace
          JOIN pg_catalog.pg_class c ON c.relnamespace OPERATOR(pg_catalog.=) n.oid
                                    AND c.relname OPERATOR(pg_catalog.=) 'snowflake_id_status'::pg_catalog.name
          JOIN pg_catalog.pg_depend d ON d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
                                     AND d.objid OPERATOR(pg_catalog.=) c.oid
                                     AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
                                     AND d.refobjid OPERATOR(pg_catalog.=) e.oid
                                     AND d.deptype OPERATOR(pg_catalog.=) 'e'::pg_catalog."char"
         WHERE e.extname OPERATOR(pg_catalog.=) 'snowflake_id'::pg_catalog.name), '')$q$;
    own_status text;
    own_group integer;
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_extension WHERE extname = 'citus') THEN
        RAISE EXCEPTION 'snowflake_cluster_check() needs Citus: extension "citus" is not created in database "%"',
                        current_database()
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Run it on the Citus coordinator, in the database Citus runs in. On a server without '
                         'Citus, snowflake_id_status shows its worker id and problem; with a registry, '
                         'snowflake_registry shows every node''s lease.';
    END IF;
    EXECUTE format(status_template, '@extschema@') INTO own_status;
    EXECUTE 'SELECT groupid FROM pg_catalog.pg_dist_local_group' INTO own_group;
    RETURN QUERY EXECUTE $q$
    WITH nodes AS (
        -- Every primary in pg_dist_node, inactive ones and other
        -- nodeclusters included: run_command_on_all_nodes skips a node
        -- disabled with citus_disable_node, which keeps its metadata and
        -- goes on evaluating the DEFAULT of whatever is sent to it.
        -- (Secondaries are standbys: they issue nothing, and share their
        -- primary's worker id.)
        SELECT n.nodename, n.nodeport, n.groupid, n.isactive
          FROM pg_catalog.pg_dist_node n
         WHERE n.noderole = 'primary'),
    probes AS (
        SELECT r.node_name, r.node_port, r.success, r.result
          FROM pg_catalog.master_run_on_worker(
                   ARRAY(SELECT d.nodename FROM nodes d ORDER BY d.nodename, d.nodeport),
                   ARRAY(SELECT d.nodeport FROM nodes d ORDER BY d.nodename, d.nodeport),
                   ARRAY(SELECT $4 FROM nodes d ORDER BY d.nodename, d.nodeport), true) r),
    statuses AS (
        SELECT r.node_name, r.node_port, r.success, r.result
          FROM pg_catalog.master_run_on_worker(
                   ARRAY(SELECT p.node_name FROM probes p WHERE p.success AND p.result <> ''
                          ORDER BY p.node_name, p.node_port),
                   ARRAY(SELECT p.node_port FROM probes p WHERE p.success AND p.result <> ''
                          ORDER BY p.node_name, p.node_port),
                   ARRAY(SELECT format($1, p.result) FROM probes p WHERE p.success AND p.result <> ''
                          ORDER BY p.node_name, p.node_port), true) r),
    answers AS (
        SELECT n.nodename || ':' || n.nodeport AS node, n.groupid, n.isactive,
               coalesce(s.success, false) AS success,
               coalesce(s.result, CASE WHEN p.success
                                       THEN 'snowflake_id is not created in this database on the node, or its '
                                            'snowflake_id_status is not the extension''s'
                                       ELSE p.result END) AS result
          FROM nodes n
          JOIN probes p ON p.node_name = n.nodename AND p.node_port = n.nodeport
          LEFT JOIN statuses s ON s.node_name = n.nodename AND s.node_port = n.nodeport
        -- The node running the check, when Citus has no row for it (a
        -- coordinator never given citus_set_coordinator_host): it evaluates
        -- DEFAULTs too.
        UNION ALL
        SELECT 'this node (group ' || $3 || ', not in pg_dist_node)', $3, true, true, $2
         WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_dist_node d WHERE d.groupid = $3)),
    parsed AS (
        SELECT a.node, a.isactive, a.success, a.result, s,
               (s ->> 'worker_id')::bigint AS worker_id, s ->> 'layout' AS layout
          FROM answers a
          -- A CASE, so that a failure's text is never cast: the planner may
          -- evaluate a subquery's output before its WHERE.
          CROSS JOIN LATERAL (SELECT CASE WHEN a.success THEN a.result::json END AS s) j),
    shared AS (
        SELECT p.worker_id, string_agg(p.node, ', ' ORDER BY p.node) AS nodes
          FROM parsed p WHERE p.worker_id IS NOT NULL GROUP BY p.worker_id HAVING count(*) > 1),
    own AS (SELECT $2::json ->> 'layout' AS layout),
    checked AS (
        SELECT p.node, p.worker_id, p.layout,
               concat_ws('; ',
                   -- A disabled node is usually down: named only when it answers.
                   CASE WHEN NOT p.success AND p.isactive THEN 'no answer: ' || p.result END,
                   CASE WHEN p.success AND p.worker_id IS NULL THEN 'no worker id' END,
                   CASE WHEN sh.nodes IS NOT NULL THEN 'worker id ' || p.worker_id || ' shared by ' || sh.nodes END,
                   CASE WHEN p.success AND p.layout IS DISTINCT FROM own.layout
                        THEN 'layout ' || coalesce(p.layout, 'unknown') || ', not '
                             || CASE WHEN $3 = 0 THEN 'the coordinator''s ' ELSE 'this node''s ' END
                             || coalesce(own.layout, 'unknown') END,
                   p.s ->> 'problem') AS problem
          FROM parsed p
          LEFT JOIN shared sh ON sh.worker_id = p.worker_id
          CROSS JOIN own)
    SELECT c.node, c.worker_id, c.layout, c.problem
      FROM checked c
     WHERE c.problem <> ''
     ORDER BY c.node
    $q$ USING status_template, own_status, own_group, probe_query;
END
$check$;

-- ============================================================================
-- 5. The status view names the function it reads (sql/install/status_view.sql).
-- ============================================================================
CREATE OR REPLACE VIEW snowflake_id_status AS SELECT * FROM @extschema@.snowflake_id_status();

-- ============================================================================
-- 6. Look-alikes already beside the extension's functions. A fresh install
--    of 0.5.0 refuses to start next to a function of another role under one
--    of its names (sql/install/objects_in_the_way.sql); a database that has one since before gets
--    a WARNING naming each, rather than a refused security update: the
--    bodies above no longer call them, but an untyped call of yours may
--    (snowflake_timestamp(0) calls a planted snowflake_timestamp(integer)).
--    Named in pg_catalog throughout: this runs with @extschema@ on the path.
-- ============================================================================
DO $lookalikes$
DECLARE
    found_ones text;
BEGIN
    SELECT pg_catalog.string_agg(pg_catalog.format('%I.%I(%s) owned by %s', n.nspname, p.proname,
                                                   pg_catalog.pg_get_function_identity_arguments(p.oid),
                                                   p.proowner::pg_catalog.regrole),
                                 '; ' ORDER BY p.proname, p.oid)
      INTO found_ones
      FROM pg_catalog.pg_proc p
      JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace
      JOIN pg_catalog.pg_extension e ON e.extname OPERATOR(pg_catalog.=) 'snowflake_id'::pg_catalog.name
                                    AND e.extnamespace OPERATOR(pg_catalog.=) p.pronamespace
     WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_depend d
                        WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass::pg_catalog.oid
                          AND d.objid OPERATOR(pg_catalog.=) p.oid
                          AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass::pg_catalog.oid
                          AND d.refobjid OPERATOR(pg_catalog.=) e.oid
                          AND d.deptype OPERATOR(pg_catalog.=) 'e'::pg_catalog."char")
       AND EXISTS (SELECT FROM pg_catalog.pg_depend d JOIN pg_catalog.pg_proc q ON q.oid OPERATOR(pg_catalog.=) d.objid
                    WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass::pg_catalog.oid
                      AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass::pg_catalog.oid
                      AND d.refobjid OPERATOR(pg_catalog.=) e.oid
                      AND d.deptype OPERATOR(pg_catalog.=) 'e'::pg_catalog."char"
                      AND q.proname OPERATOR(pg_catalog.=) p.proname);
    IF found_ones IS NOT NULL THEN
        RAISE WARNING 'functions not of the extension snowflake_id share its function names in schema %: %',
                      '@extschema@', found_ones
            USING DETAIL = 'An untyped call of such a name (a bare integer literal, say) may run one of them in place '
                           'of the extension''s function, as the calling role. The extension''s own bodies do not '
                           'call them.',
                  HINT = 'Unless they are yours and meant to be there, drop them (DROP FUNCTION ...) as their owner '
                         'or a superuser, and check what they did.';
    END IF;
END
$lookalikes$;

-- ============================================================================
-- 7. Short text forms of IDs: base62 and Crockford base32, both ways
-- (src/api/id_text.rs, rules in core/src/id_text.rs). C functions of the
-- 0.5.0 library, defined as pgrx defines them in a fresh install (the
-- wrapper symbols, IMMUTABLE STRICT PARALLEL SAFE, argument names), so that
-- tests/upgrade.rs finds the two installs equal. No search_path: C code
-- resolves no names.
-- ============================================================================
CREATE FUNCTION @extschema@.snowflake_to_base62(id pg_catalog.int8) RETURNS pg_catalog.text
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c
    AS 'MODULE_PATHNAME', 'snowflake_to_base62_wrapper';
CREATE FUNCTION @extschema@.snowflake_to_base32(id pg_catalog.int8) RETURNS pg_catalog.text
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c
    AS 'MODULE_PATHNAME', 'snowflake_to_base32_wrapper';
CREATE FUNCTION @extschema@.snowflake_from_base62(text pg_catalog.text) RETURNS pg_catalog.int8
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c
    AS 'MODULE_PATHNAME', 'snowflake_from_base62_wrapper';
CREATE FUNCTION @extschema@.snowflake_from_base32(text pg_catalog.text) RETURNS pg_catalog.int8
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c
    AS 'MODULE_PATHNAME', 'snowflake_from_base32_wrapper';

-- ============================================================================
-- 8. Blocks of IDs in one call: n ascending IDs, each with
--    every guarantee of snowflake_nextval(), for keys assigned before an
--    insert (src/api/functions.rs). Like snowflake_nextval(), open to PUBLIC.
-- ============================================================================
CREATE FUNCTION @extschema@.snowflake_nextval_block(n pg_catalog.int4) RETURNS SETOF pg_catalog.int8
    STRICT VOLATILE PARALLEL SAFE
    LANGUAGE c
    AS 'MODULE_PATHNAME', 'snowflake_nextval_block_wrapper';
CREATE FUNCTION @extschema@.snowflake_nextval_array(n pg_catalog.int4) RETURNS pg_catalog.int8[]
    STRICT VOLATILE PARALLEL SAFE
    LANGUAGE c
    AS 'MODULE_PATHNAME', 'snowflake_nextval_array_wrapper';

-- ============================================================================
-- 9. The logical replication guard: the objects of sql/install/logical.sql,
--    word for word, then the guard put on every existing table whose key
--    defaults to snowflake_nextval() (a fresh install has no such table yet;
--    the event trigger covers every table made afterwards).
-- ============================================================================

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
CREATE FUNCTION snowflake_logical_guard(tbl pg_catalog.regclass DEFAULT NULL)
    RETURNS TABLE (table_name pg_catalog.regclass, columns pg_catalog.name[])
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
AS $guard$
DECLARE
    r record;
    args text;
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
        table_name := r.rel;
        columns := r.cols;
        RETURN NEXT;
    END LOOP;
END;
$guard$;
COMMENT ON FUNCTION snowflake_logical_guard(pg_catalog.regclass) IS
    'snowflake_id: puts the logical replication guard on every table (or one) whose bigint key defaults to snowflake_nextval()';

-- At the end of every CREATE TABLE / ALTER TABLE: the guard on the tables it
-- made or changed. Never fails the DDL (a WARNING says what went wrong). A
-- restore (pg_dump's scripts set check_function_bodies = off) is left alone:
-- the dump carries the triggers of the tables it restores, and a trigger
-- made here first would make the dump's CREATE TRIGGER fail.
CREATE FUNCTION snowflake_logical_guard_ddl()
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
    -- that have a column defaulting to the extension's snowflake_nextval():
    -- read from the catalogs alone, so that other tables cost nothing and
    -- need no USAGE on the extension's schema.
    FOR r IN
        SELECT DISTINCT t.relid AS objid
          FROM pg_catalog.pg_event_trigger_ddl_commands() c
         CROSS JOIN LATERAL (SELECT c.objid AS relid
                             UNION
                             SELECT p.relid FROM pg_catalog.pg_partition_tree(c.objid) p WHERE p.isleaf) t
         WHERE c.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND c.object_type = 'table'
           AND EXISTS (
               SELECT FROM pg_catalog.pg_attrdef d
                 JOIN pg_catalog.pg_depend dep
                   ON dep.classid = 'pg_catalog.pg_attrdef'::pg_catalog.regclass AND dep.objid = d.oid
                  AND dep.refclassid = 'pg_catalog.pg_proc'::pg_catalog.regclass
                 JOIN pg_catalog.pg_proc f ON f.oid = dep.refobjid AND f.proname = 'snowflake_nextval'
                 JOIN pg_catalog.pg_depend member
                   ON member.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND member.objid = f.oid
                  AND member.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass AND member.deptype = 'e'
                 JOIN pg_catalog.pg_extension e ON e.oid = member.refobjid AND e.extname = 'snowflake_id'
                WHERE d.adrelid = t.relid)
    LOOP
        BEGIN
            PERFORM @extschema@.snowflake_logical_guard(r.objid::pg_catalog.regclass);
        EXCEPTION WHEN OTHERS THEN
            RAISE WARNING 'snowflake_id: could not put the logical replication guard on table %: %',
                          r.objid::pg_catalog.regclass, SQLERRM
                USING HINT = 'Run SELECT snowflake_logical_guard(); as the table''s owner.';
        END;
    END LOOP;
END;
$ddl$;

CREATE EVENT TRIGGER snowflake_id_logical_guard ON ddl_command_end
    WHEN TAG IN ('CREATE TABLE', 'ALTER TABLE', 'CREATE TABLE AS', 'SELECT INTO')
    EXECUTE FUNCTION @extschema@.snowflake_logical_guard_ddl();

-- Not with Citus in the database: it refuses to distribute a table that has
-- a trigger (the event trigger above leaves such databases alone too).
--
-- Each table on its own (since 0.7.0): one the guard cannot be put on (a
-- trigger of that name cloned from a partitioned parent, another session's
-- temporary table, a lock another transaction holds) is named in a WARNING
-- and left for the DBA, in a subtransaction of its own, so that the update
-- still reaches its version. A subtransaction that guarded its table keeps
-- that table's lock until the update commits, so every wait here blocks
-- writers of the tables already guarded: a table's lock is waited for 50 ms
-- at most, and all of them together 2 s at most (then 1 ms each), however
-- many tables other roles keep locked. The lock_timeout set here is the
-- session's again afterwards.
DO $put$
DECLARE
    r record;
    saved pg_catalog.text := pg_catalog.current_setting('lock_timeout');
    waits_end pg_catalog.timestamptz := pg_catalog.clock_timestamp() OPERATOR(pg_catalog.+) '2 s'::pg_catalog.interval;
    wait_ms pg_catalog.int4;
BEGIN
    IF EXISTS (SELECT FROM pg_catalog.pg_extension WHERE extname OPERATOR(pg_catalog.=) 'citus'::pg_catalog.name) THEN
        RETURN;
    END IF;
    FOR r IN
        SELECT DISTINCT d.adrelid AS rel, pg_catalog.format('%I.%I', n.nspname, c.relname) AS shown
          FROM pg_catalog.pg_attrdef d
          JOIN pg_catalog.pg_depend dep
            ON dep.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_attrdef'::pg_catalog.regclass::pg_catalog.oid
           AND dep.objid OPERATOR(pg_catalog.=) d.oid
           AND dep.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass::pg_catalog.oid
           AND dep.refobjid OPERATOR(pg_catalog.=) '@extschema@.snowflake_nextval()'::pg_catalog.regprocedure::pg_catalog.oid
          JOIN pg_catalog.pg_attribute a
            ON a.attrelid OPERATOR(pg_catalog.=) d.adrelid AND a.attnum OPERATOR(pg_catalog.=) d.adnum
           AND NOT a.attisdropped
           AND a.atttypid OPERATOR(pg_catalog.=) 'pg_catalog.int8'::pg_catalog.regtype::pg_catalog.oid
          JOIN pg_catalog.pg_class c
            ON c.oid OPERATOR(pg_catalog.=) d.adrelid AND c.relkind OPERATOR(pg_catalog.=) 'r'::pg_catalog."char"
          JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
         ORDER BY d.adrelid
    LOOP
        BEGIN
            wait_ms := GREATEST(1, LEAST(50, (pg_catalog.date_part('epoch', waits_end OPERATOR(pg_catalog.-)
                                                                        pg_catalog.clock_timestamp())
                                               OPERATOR(pg_catalog.*) 1000::pg_catalog.float8)::pg_catalog.int4));
            PERFORM pg_catalog.set_config('lock_timeout', wait_ms::pg_catalog.text OPERATOR(pg_catalog.||) 'ms', true);
            PERFORM pg_catalog.count(*) FROM @extschema@.snowflake_logical_guard(r.rel::pg_catalog.regclass);
        EXCEPTION WHEN OTHERS THEN
            RAISE WARNING 'snowflake_id: the logical replication guard is not on table %: %',
                          r.shown, SQLERRM
                USING HINT = pg_catalog.format(
                    'Once that is resolved, run SELECT * FROM %s.snowflake_logical_guard(%L::pg_catalog.regclass); '
                    'as the table''s owner or a superuser (from 0.7.0 on: SELECT * FROM '
                    'snowflake_id_internal.snowflake_logical_guard(%L::pg_catalog.regclass);, a call no other '
                    'role can make ambiguous).',
                    '@extschema@', r.shown, r.shown);
        END;
        PERFORM pg_catalog.set_config('lock_timeout', saved, true);
    END LOOP;
END
$put$;
