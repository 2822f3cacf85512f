-- snowflake_convert: moves one key column of an existing table from a
-- sequence (serial, identity, DEFAULT nextval(...)) to snowflake_nextval(),
-- widening it and every foreign-key column that references it (through
-- further tables) to bigint. With rekey_by, every existing key becomes a
-- past-instant ID at that row's time (snowflake_nextval_at), in every column
-- of that chain too. Returns the statements it ran, or with dry_run would
-- run. It runs in the caller's transaction, as the caller: all or nothing.
-- It touches only tables the caller owns (or, unless a superuser, whose
-- owning role it is a member of): ALTER TYPE and UPDATE run a table's CHECK
-- constraints, index expressions and triggers as the caller, so another
-- role's table in the chain would run that role's code with the caller's
-- rights (PostgreSQL's own ON UPDATE CASCADE runs as the table's owner).
-- Every call of the extension's own functions names its schema and exact
-- argument types: @extschema@ is often public, where an overload planted
-- with a closer match (snowflake_timestamp(integer) for a bare 0) would
-- win. And since a PL/pgSQL body and the statements it runs look their
-- calls up by name at run time, where one more overload with a defaulted
-- argument makes a call "not unique", they call the extension's functions
-- in snowflake_id_internal (sql/install/library_functions.sql: no other
-- role creates there) or read the status view (bound to its function).
-- This implementation lives there too; the public snowflake_convert() below
-- is a bound entry point into it. The one call left by name is the column's new
-- DEFAULT, which must be the extension's own snowflake_nextval(): an
-- overload of it planted in @extschema@ makes that statement fail, as it
-- makes every role's own unqualified calls fail (docs/security.md).
CREATE FUNCTION snowflake_id_internal.snowflake_convert(tbl regclass, col name, dry_run boolean DEFAULT false,
                                                       rekey_by name DEFAULT NULL)
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
                  HINT = format('Convert the partitioned table: SELECT * FROM snowflake_id_internal.snowflake_convert(%L::pg_catalog.regclass, %L::pg_catalog.name);',
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
                  HINT = format('Run it as the owner: SET ROLE %I; SELECT * FROM snowflake_id_internal.snowflake_convert(%L::pg_catalog.regclass, %L::pg_catalog.name); RESET ROLE;',
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
                       'OR %I::timestamptz < (SELECT snowflake_id_internal.snowflake_timestamp(0::bigint))', tbl, rekey_by, rekey_by)
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
    next_id := snowflake_id_internal.snowflake_from_timestamp(clock_timestamp());
    BEGIN
        next_id := greatest(next_id, (SELECT s.last_id + 1 FROM @extschema@.snowflake_id_status s));
    EXCEPTION WHEN OTHERS THEN
        NULL;  -- no generator here (not preloaded): the clock's bound stands
    END;
    IF max_value >= next_id THEN
        RAISE EXCEPTION 'existing value % in %.% is not below the IDs snowflake_nextval() issues now (from %)',
                        max_value, tbl, quote_ident(col), next_id
            USING ERRCODE = '22023',
                  HINT = format('New IDs must be above old ones. If these values are snowflake IDs of this worker id, '
                                'move the generator past them first (as a superuser): '
                                'SELECT snowflake_id_internal.snowflake_advance_past(max(%I)::bigint) FROM %s;', col, tbl);
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
            'CREATE TEMP TABLE %s ON COMMIT DROP AS SELECT old, snowflake_id_internal.snowflake_nextval_at(at) AS new '
            'FROM (SELECT %I AS old, %I::timestamptz AS at FROM %s ORDER BY %I, %I OFFSET 0) s',
            map, col, rekey_by, tbl, rekey_by, col);
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
COMMENT ON FUNCTION snowflake_id_internal.snowflake_convert(pg_catalog.regclass, pg_catalog.name, boolean, pg_catalog.name) IS
    'snowflake_id: the implementation of snowflake_convert()';

CREATE FUNCTION @extschema@.snowflake_convert(tbl pg_catalog.regclass, col pg_catalog.name,
                                              dry_run boolean DEFAULT false, rekey_by pg_catalog.name DEFAULT NULL)
    RETURNS SETOF text
    LANGUAGE sql VOLATILE
BEGIN ATOMIC
    SELECT s FROM snowflake_id_internal.snowflake_convert(snowflake_convert.tbl, snowflake_convert.col,
                                                          snowflake_convert.dry_run, snowflake_convert.rekey_by) s;
END;
COMMENT ON FUNCTION @extschema@.snowflake_convert(pg_catalog.regclass, pg_catalog.name, boolean, pg_catalog.name) IS
    'moves a serial, identity or nextval() key column to DEFAULT snowflake_nextval(), widening it and its foreign keys to bigint, and with rekey_by re-keys the rows to IDs of their own time';
