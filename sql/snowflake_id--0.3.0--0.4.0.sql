-- snowflake_id 0.3.0 -> 0.4.0: the SQL changes of 0.4.0.
-- Install the 0.4.0 library first (it serves 0.3.0's definitions as they
-- are), then ALTER EXTENSION snowflake_id UPDATE. Defaults, rows and views
-- are untouched; one table is new (section 3), the registry's leases gain a
-- column (section 4). Every SQL change of 0.4.0 goes in this file, each under
-- its own heading; the result must equal a fresh install of 0.4.0
-- (tests/upgrade.rs compares the catalogs).
\echo Use "ALTER EXTENSION snowflake_id UPDATE" to load this file. \quit

-- ============================================================================
-- 0. Nothing of another role's where this update creates the extension's
--    own objects. An object of one of these names in
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
        'snowflake_nextval_at', 'snowflake_convert', 'snowflake_registry_check_holder',
        'snowflake_registry_history_of', 'snowflake_registry_record_history', 'snowflake_cluster_check'
    ]::pg_catalog.name[];
    relations pg_catalog.name[] := ARRAY[
        'snowflake_registry_history', 'snowflake_registry_history_pkey'
    ]::pg_catalog.name[];
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
                  DETAIL = pg_catalog.format('This update creates the extension''s own object of that name in schema '
                                             '%s; the one there is not part of the extension. Were it kept, the '
                                             'update would fail on it, or it would be called in place of the '
                                             'extension''s function.', '@extschema@'),
                  HINT = pg_catalog.format('Check what uses it, then drop it (DROP %s %s;) or move it out of the '
                                           'way (ALTER %s %s RENAME TO ..., or SET SCHEMA ...), as its owner or a '
                                           'superuser, and run ALTER EXTENSION snowflake_id UPDATE again.',
                                           clash.kind, clash.what, clash.kind, clash.what);
    END IF;
END
$guard$;


-- ============================================================================
-- 1. snowflake_nextval_at(ts): IDs for past instants (invariant 9).
-- ============================================================================
CREATE  FUNCTION "snowflake_nextval_at"(
	"ts" timestamp with time zone /* pgrx::datum::time_stamp_with_timezone::TimestampWithTimeZone */
) RETURNS bigint /* i64 */
STRICT VOLATILE PARALLEL UNSAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'snowflake_nextval_at_wrapper';
-- History slots are finite (a sixteenth of each millisecond per worker id):
-- who may spend them is the DBA's choice, as for snowflake_advance_past.
REVOKE EXECUTE ON FUNCTION snowflake_nextval_at(timestamptz) FROM PUBLIC;

-- ============================================================================
-- 2. snowflake_convert gains rekey_by: existing keys become past-instant IDs
--    at their rows' time, through the foreign-key chain (sql/install/convert.sql).
-- ============================================================================
DROP FUNCTION snowflake_convert(regclass, name, boolean);
-- snowflake_convert: moves one key column of an existing table from a
-- sequence (serial, identity, DEFAULT nextval(...)) to snowflake_nextval(),
-- widening it and every foreign-key column that references it (through
-- further tables) to bigint. With rekey_by, every existing key becomes a
-- past-instant ID at that row's time (snowflake_nextval_at), in every column
-- of that chain too. Returns the statements it ran, or with dry_run would
-- run. It runs in the caller's transaction, as the caller: all or nothing,
-- and only a table's owner can alter it.
CREATE FUNCTION snowflake_convert(tbl regclass, col name, dry_run boolean DEFAULT false, rekey_by name DEFAULT NULL)
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
BEGIN
    IF NOT pg_has_role((SELECT relowner FROM pg_class WHERE oid = tbl), 'USAGE') THEN
        RAISE EXCEPTION 'must be owner of table %', tbl
            USING ERRCODE = '42501', HINT = 'Only the owner of a table (or a member of its owning role) may convert its key.';
    END IF;
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
                       'OR %I::timestamptz < (SELECT @extschema@.snowflake_timestamp(0))', tbl, rekey_by, rekey_by)
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

    -- 3. Widen to bigint, with every foreign-key column that references the
    -- key, and those that reference them. On a partitioned table PostgreSQL
    -- keeps a copy of each foreign key per partition (conparentid names the
    -- parent's) and refuses to alter a partition's inherited column alone:
    -- the copies are skipped, and each column is widened on the top of its
    -- partition tree, whose ALTER TABLE reaches every partition.
    IF att.atttypid <> 'bigint'::regtype OR rekey_by IS NOT NULL THEN
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
COMMENT ON FUNCTION snowflake_convert(regclass, name, boolean, name) IS
    'moves a serial, identity or nextval() key column to DEFAULT snowflake_nextval(), widening it and its foreign keys to bigint, and with rekey_by re-keys the rows to IDs of their own time';

-- ============================================================================
-- 3. Past-instant IDs under a worker id leased from a registry: the registry
--    records every claim of history slots (sql/install/registry.sql).
-- ============================================================================
-- Past-instant IDs (snowflake_nextval_at) under a lease: every claim of
-- history slots a holder made, recorded before the holder used it, so that
-- the worker id's next holders start above it (only where it was). A
-- holder's own later claim over the same interval replaces its earlier one.
CREATE TABLE snowflake_registry_history (
    namespace text NOT NULL,
    worker_id integer NOT NULL,
    lease_epoch bigint NOT NULL,
    from_tick bigint NOT NULL,
    to_tick bigint NOT NULL,
    -- Every history slot below this level of every millisecond of
    -- [from_tick, to_tick) may have been used.
    level integer NOT NULL CHECK (level > 0),
    PRIMARY KEY (namespace, worker_id, lease_epoch, from_tick, to_tick),
    FOREIGN KEY (namespace, worker_id) REFERENCES snowflake_registry_leases ON DELETE CASCADE,
    CHECK (to_tick > from_tick)
);
COMMENT ON TABLE snowflake_registry_history IS
    'snowflake_id registry: the history slots (past-instant IDs) each lease of a worker id claimed, by interval';
SELECT pg_catalog.pg_extension_config_dump('snowflake_registry_history', '');

-- Fails with SFL01 unless the caller holds the lease (epoch and token, not
-- released). Called by the renewal and the history functions, as their
-- owner: not SECURITY DEFINER itself, and not granted to anyone.
CREATE FUNCTION snowflake_registry_check_holder(
    namespace text, worker_id integer, lease_epoch bigint, holder_token bigint)
    RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
AS $holder$
DECLARE
    l @extschema@.snowflake_registry_leases;
BEGIN
    SELECT * INTO l FROM @extschema@.snowflake_registry_leases r
        WHERE r.namespace = snowflake_registry_check_holder.namespace
          AND r.worker_id = snowflake_registry_check_holder.worker_id
        FOR UPDATE;
    -- IS DISTINCT FROM: a NULL epoch or token names no lease, and must not
    -- pass as one (a NULL comparison would skip the refusal).
    IF NOT FOUND OR l.lease_epoch IS DISTINCT FROM snowflake_registry_check_holder.lease_epoch
       OR l.holder_token IS DISTINCT FROM snowflake_registry_check_holder.holder_token OR l.released_at IS NOT NULL THEN
        RAISE EXCEPTION 'the lease on worker id % of namespace "%" (epoch %) is lost', worker_id, namespace, lease_epoch
            USING ERRCODE = 'SFL01',
                  DETAIL = CASE WHEN NOT FOUND THEN 'The registry has no lease on that worker id.'
                                WHEN l.released_at IS NOT NULL THEN format('It was released at %s.', l.released_at)
                                WHEN l.lease_epoch = snowflake_registry_check_holder.lease_epoch
                                    THEN 'The registry has another grant under that epoch (it lost the one this node holds).'
                                ELSE format('Node "%s" (system %s, timeline %s) holds it with epoch %s since %s.',
                                            l.node_name, l.system_identifier, l.timeline, l.lease_epoch, l.granted_at)
                           END;
    END IF;
END
$holder$;
COMMENT ON FUNCTION snowflake_registry_check_holder(text, integer, bigint, bigint) IS
    'snowflake_id registry: SQLSTATE SFL01 unless the caller holds the lease (epoch and token)';

-- The claims of a worker id's history slots, for its holder: what its map
-- must be raised by before its first claim under the lease.
CREATE FUNCTION snowflake_registry_history_of(
    namespace text, worker_id integer, lease_epoch bigint, holder_token bigint)
    RETURNS TABLE (claim_epoch bigint, from_tick bigint, to_tick bigint, level integer)
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $history$
BEGIN
    PERFORM @extschema@.snowflake_registry_check_holder(namespace, worker_id, lease_epoch, holder_token);
    RETURN QUERY
        SELECT h.lease_epoch, h.from_tick, h.to_tick, h.level FROM @extschema@.snowflake_registry_history h
         WHERE h.namespace = snowflake_registry_history_of.namespace
           AND h.worker_id = snowflake_registry_history_of.worker_id
         ORDER BY h.from_tick, h.to_tick;
END
$history$;
COMMENT ON FUNCTION snowflake_registry_history_of(text, integer, bigint, bigint) IS
    'snowflake_id registry: the history slots claimed on a worker id, for the holder of its lease';

-- Records a claim of history slots by the lease's holder, before the holder
-- uses it (committed: the node's connection sets synchronous_commit = on).
-- SFL01 once the lease is lost: the claim is then never used.
CREATE FUNCTION snowflake_registry_record_history(
    namespace text, worker_id integer, lease_epoch bigint, holder_token bigint,
    from_tick bigint, to_tick bigint, level integer)
    RETURNS void
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $record$
BEGIN
    PERFORM @extschema@.snowflake_registry_check_holder(namespace, worker_id, lease_epoch, holder_token);
    -- The same lease's claims that this one covers at a level at least
    -- theirs say nothing more.
    DELETE FROM @extschema@.snowflake_registry_history h
     WHERE h.namespace = snowflake_registry_record_history.namespace
       AND h.worker_id = snowflake_registry_record_history.worker_id
       AND h.lease_epoch = snowflake_registry_record_history.lease_epoch
       AND h.from_tick >= snowflake_registry_record_history.from_tick
       AND h.to_tick <= snowflake_registry_record_history.to_tick
       AND h.level <= snowflake_registry_record_history.level;
    INSERT INTO @extschema@.snowflake_registry_history AS h
        VALUES (namespace, worker_id, lease_epoch, from_tick, to_tick, level)
        ON CONFLICT ON CONSTRAINT snowflake_registry_history_pkey DO UPDATE SET level = greatest(h.level, excluded.level);
END
$record$;
COMMENT ON FUNCTION snowflake_registry_record_history(text, integer, bigint, bigint, bigint, bigint, integer) IS
    'snowflake_id registry: records a claim of history slots (past-instant IDs) by the holder of a lease; SQLSTATE SFL01 once it is lost';
REVOKE EXECUTE ON FUNCTION snowflake_registry_check_holder(text, integer, bigint, bigint) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION snowflake_registry_history_of(text, integer, bigint, bigint) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION snowflake_registry_record_history(text, integer, bigint, bigint, bigint, bigint, integer) FROM PUBLIC;

-- ============================================================================
-- 4. Copies of a running registry node are fenced: each postmaster start
--    names a random instance, which the registry records with the lease.
-- ============================================================================
-- A node names its postmaster start's random instance in the session
-- setting snowflake_registry.instance (set once per connection, like
-- synchronous_commit): the registry records it with a grant, and refuses a
-- start of the same lease by another instance while the recorded one runs
-- (a copy of a running node's data directory). A setting rather than an
-- argument keeps the functions' signatures, and so the grants DBAs gave
-- them and the nodes of 0.3.0, which name no instance and are not fenced.
--
ALTER TABLE snowflake_registry_leases ADD COLUMN instance bigint;

-- Takes a worker id for a node: `wanted`, or with NULL the lowest free one.
-- A worker id is free when never granted, released, or stale; it may also be
-- taken at once by a promoted standby of its holder (same system
-- identifier, a later timeline). The new lease starts above every ceiling
-- granted before: floor_tick = old ceiling + 1. A node presenting the lease
-- it has on disk (`resume_epoch`, `resume_token`, same cluster and
-- timeline) is answered that lease as it is when it is the instance the
-- lease was granted to; another instance is refused (SFL05) while that one
-- renewed within its silence (a quarter of its horizon, at least a tenth
-- plus 6 s: core/src/lease/copies.rs, silence_ms), and granted anew after it
-- (core/src/lease.rs, takeover).
CREATE OR REPLACE FUNCTION snowflake_registry_acquire(
    namespace text,
    worker_bits integer,
    sequence_bits integer,
    epoch_ms bigint,
    wanted integer,
    system_identifier text,
    timeline integer,
    node_name text,
    node_tick bigint,
    horizon_ms bigint,
    resume_epoch bigint DEFAULT NULL,
    resume_token bigint DEFAULT NULL,
    OUT worker_id integer,
    OUT lease_epoch bigint,
    OUT holder_token bigint,
    OUT floor_tick bigint,
    OUT ceiling_tick bigint)
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $acquire$
DECLARE
    ns @extschema@.snowflake_registry_namespaces;
    old @extschema@.snowflake_registry_leases;
    max_worker integer;
    now_ts timestamptz := clock_timestamp();
    tick bigint;
    caller_instance bigint := nullif(current_setting('snowflake_registry.instance', true), '')::bigint;
    silence interval;
BEGIN
    IF namespace IS NULL OR system_identifier IS NULL OR timeline IS NULL OR node_name IS NULL
       OR node_tick IS NULL OR horizon_ms IS NULL OR worker_bits IS NULL OR sequence_bits IS NULL
       OR epoch_ms IS NULL THEN
        RAISE EXCEPTION 'snowflake_registry_acquire: no argument but wanted and resume_epoch may be NULL'
            USING ERRCODE = '22004';
    END IF;
    IF horizon_ms NOT BETWEEN 1 AND 86400000 THEN
        RAISE EXCEPTION 'snowflake_registry_acquire: a horizon of % ms is not between 1 ms and a day', horizon_ms
            USING ERRCODE = '22023';
    END IF;
    -- One namespace's grants are serialised on its row: two nodes asking for
    -- "any free id" at once get different ones.
    INSERT INTO @extschema@.snowflake_registry_namespaces AS n (namespace, worker_bits, sequence_bits, epoch_ms)
        VALUES (snowflake_registry_acquire.namespace, snowflake_registry_acquire.worker_bits,
                snowflake_registry_acquire.sequence_bits, snowflake_registry_acquire.epoch_ms)
        ON CONFLICT DO NOTHING;
    SELECT * INTO ns FROM @extschema@.snowflake_registry_namespaces n
        WHERE n.namespace = snowflake_registry_acquire.namespace FOR UPDATE;
    IF (ns.worker_bits, ns.sequence_bits, ns.epoch_ms)
       IS DISTINCT FROM (snowflake_registry_acquire.worker_bits, snowflake_registry_acquire.sequence_bits,
                         snowflake_registry_acquire.epoch_ms) THEN
        RAISE EXCEPTION 'namespace "%" uses worker_bits=%, sequence_bits=%, epoch=%; node "%" has worker_bits=%, sequence_bits=%, epoch=%',
                        ns.namespace, ns.worker_bits, ns.sequence_bits,
                        to_char(to_timestamp(ns.epoch_ms / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                        node_name, snowflake_registry_acquire.worker_bits, snowflake_registry_acquire.sequence_bits,
                        to_char(to_timestamp(snowflake_registry_acquire.epoch_ms / 1000.0) AT TIME ZONE 'UTC',
                                'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
            USING ERRCODE = 'SFL03',
                  HINT = 'Every node of a namespace must use one layout: set the node''s snowflake_id.worker_bits, sequence_bits and epoch like the others, or give it its own snowflake_id.registry_namespace.';
    END IF;
    max_worker := (1 << ns.worker_bits) - 1;
    tick := least(node_tick, (extract(epoch FROM now_ts) * 1000)::bigint - ns.epoch_ms + 86400000);
    IF wanted IS NOT NULL AND wanted NOT BETWEEN 0 AND max_worker THEN
        RAISE EXCEPTION 'worker id % is out of range 0..% of namespace "%"', wanted, max_worker, ns.namespace
            USING ERRCODE = '22023';
    END IF;

    IF wanted IS NULL THEN
        -- The node's own lease first (a restart), then the lowest free id.
        SELECT l.worker_id INTO wanted FROM @extschema@.snowflake_registry_leases l
            WHERE l.namespace = ns.namespace AND l.system_identifier = snowflake_registry_acquire.system_identifier
              AND l.lease_epoch = resume_epoch AND l.holder_token = resume_token AND l.released_at IS NULL;
        IF wanted IS NULL THEN
            SELECT g.id INTO wanted
              FROM generate_series(0, max_worker) AS g(id)
              LEFT JOIN @extschema@.snowflake_registry_leases l ON l.namespace = ns.namespace AND l.worker_id = g.id
             WHERE l.worker_id IS NULL OR @extschema@.snowflake_registry_free(l, ns.stale_margin, now_ts)
             ORDER BY g.id
             LIMIT 1;
        END IF;
        IF wanted IS NULL THEN
            RAISE EXCEPTION 'no free worker id in namespace "%": all % are held by live nodes', ns.namespace, max_worker + 1
                USING ERRCODE = 'SFL04',
                      HINT = 'Stop a node, or give the namespace more worker_bits (a new namespace: the layout is fixed per namespace).';
        END IF;
    END IF;

    SELECT * INTO old FROM @extschema@.snowflake_registry_leases l
        WHERE l.namespace = ns.namespace AND l.worker_id = wanted FOR UPDATE;
    IF FOUND AND NOT @extschema@.snowflake_registry_free(old, ns.stale_margin, now_ts)
       -- IS NOT TRUE: without a lease on disk (resume_epoch NULL) the test is
       -- NULL, and NOT NULL would skip the refusal (0.3.0 did: a node of the
       -- holder's cluster and timeline with no lease on disk took it at once).
       AND (old.system_identifier = snowflake_registry_acquire.system_identifier
            AND (snowflake_registry_acquire.timeline > old.timeline
                 OR (snowflake_registry_acquire.timeline = old.timeline AND old.lease_epoch = resume_epoch
                     AND old.holder_token = resume_token))) IS NOT TRUE THEN
        RAISE EXCEPTION 'worker id % of namespace "%" is held by node "%" (system %, timeline %), renewed % ago',
                        wanted, ns.namespace, old.node_name, old.system_identifier, old.timeline,
                        date_trunc('second', now_ts - old.renewed_at)
            USING ERRCODE = 'SFL02',
                  DETAIL = format('Lease epoch %s reaches %s; it becomes free when that node stops cleanly or %s after its last renewal.',
                                  old.lease_epoch,
                                  to_char(to_timestamp((ns.epoch_ms + old.ceiling_tick) / 1000.0) AT TIME ZONE 'UTC',
                                          'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                                  make_interval(secs => old.horizon_ms / 1000.0) + ns.stale_margin),
                  HINT = 'Give this node another snowflake_id.worker_id, or auto.';
    END IF;
    IF FOUND AND NOT @extschema@.snowflake_registry_free(old, ns.stale_margin, now_ts) AND caller_instance IS NOT NULL
       AND snowflake_registry_acquire.timeline = old.timeline
       AND old.lease_epoch = resume_epoch AND old.holder_token = resume_token THEN
        IF old.instance = caller_instance THEN
            -- The same postmaster (its keeper restarted, or shared memory
            -- reinitialised after a crash): the lease goes on as it is.
            worker_id := wanted;
            lease_epoch := old.lease_epoch;
            holder_token := old.holder_token;
            floor_tick := old.floor_tick;
            ceiling_tick := old.ceiling_tick;
            RETURN;
        END IF;
        -- The silence (core/src/lease/copies.rs, silence_ms).
        silence := make_interval(secs => greatest(old.horizon_ms / 4, greatest(old.horizon_ms / 10, 1) + 6000) / 1000.0);
        IF old.renewed_at + silence >= now_ts THEN
            RAISE EXCEPTION 'worker id % of namespace "%" is in use by another running start of this server (node "%", renewed % ago)',
                            wanted, ns.namespace, old.node_name, now_ts - old.renewed_at
                USING ERRCODE = 'SFL05',
                      DETAIL = format('This server has the holder''s system identifier %s, timeline %s and lease (epoch %s) on disk, but another postmaster start renews it: this data directory is a copy of a running node (a VM snapshot, a base backup started as a primary), or the holder restarted less than %s after its last renewal.',
                                      old.system_identifier, old.timeline, old.lease_epoch,
                                      silence),
                      HINT = 'A copy must not issue under the original''s lease: give it its own snowflake_id.worker_id (or auto, which takes a free one) or its own snowflake_id.registry_namespace. A restarted holder needs nothing: it is granted the worker id anew once the old start has been silent that long.';
        END IF;
        -- Silent since: a new grant below, above the old ceiling (the old
        -- start may be paused, not gone, and issue up to it).
    END IF;

    worker_id := wanted;
    lease_epoch := coalesce(old.lease_epoch, 0) + 1;
    -- Never 0: a node writes 0 for a lease it released.
    holder_token := greatest(1, (random() * 9223372036854775807)::bigint);
    floor_tick := coalesce(old.ceiling_tick + 1, 0);
    -- A horizon past the node's tick, at least a quarter horizon past the
    -- floor (core/src/lease.rs, grant: takeovers in a row do not add up).
    ceiling_tick := greatest(floor_tick + greatest(horizon_ms / 4, 1), tick + horizon_ms);
    INSERT INTO @extschema@.snowflake_registry_leases AS l
        VALUES (ns.namespace, worker_id, lease_epoch, holder_token, snowflake_registry_acquire.system_identifier,
                snowflake_registry_acquire.timeline, node_name, floor_tick, ceiling_tick, horizon_ms,
                now_ts, now_ts, NULL, caller_instance)
        ON CONFLICT ON CONSTRAINT snowflake_registry_leases_pkey DO UPDATE
        SET lease_epoch = excluded.lease_epoch, holder_token = excluded.holder_token,
            system_identifier = excluded.system_identifier,
            timeline = excluded.timeline, node_name = excluded.node_name, floor_tick = excluded.floor_tick,
            ceiling_tick = excluded.ceiling_tick, horizon_ms = excluded.horizon_ms,
            granted_at = excluded.granted_at, renewed_at = excluded.renewed_at, released_at = NULL,
            instance = excluded.instance;
END
$acquire$;
-- Raises the ceiling of a lease still held (same lease_epoch, not released):
-- to the node's tick plus the horizon (at least a quarter horizon past the
-- floor), never lower.
-- Fails with SQLSTATE SFL01 once the lease was replaced or released: the
-- node then stops at the ceiling it has; with SFL05 when another start of
-- the same lease than the recorded one asks (it went on under its lease on
-- disk without the registry's answer): that node stops at once.
CREATE OR REPLACE FUNCTION snowflake_registry_renew(
    namespace text,
    worker_id integer,
    lease_epoch bigint,
    holder_token bigint,
    node_tick bigint,
    horizon_ms bigint,
    OUT ceiling_tick bigint)
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $renew$
DECLARE
    l @extschema@.snowflake_registry_leases;
    tick bigint;
    caller_instance bigint := nullif(current_setting('snowflake_registry.instance', true), '')::bigint;
BEGIN
    IF namespace IS NULL OR worker_id IS NULL OR lease_epoch IS NULL OR holder_token IS NULL OR node_tick IS NULL
       OR horizon_ms IS NULL THEN
        RAISE EXCEPTION 'snowflake_registry_renew: no argument may be NULL' USING ERRCODE = '22004';
    END IF;
    IF horizon_ms NOT BETWEEN 1 AND 86400000 THEN
        RAISE EXCEPTION 'snowflake_registry_renew: a horizon of % ms is not between 1 ms and a day', horizon_ms
            USING ERRCODE = '22023';
    END IF;
    PERFORM @extschema@.snowflake_registry_check_holder(namespace, worker_id, lease_epoch, holder_token);
    SELECT * INTO l FROM @extschema@.snowflake_registry_leases r
        WHERE r.namespace = snowflake_registry_renew.namespace AND r.worker_id = snowflake_registry_renew.worker_id;
    IF caller_instance IS NOT NULL AND l.instance IS NOT NULL AND l.instance <> caller_instance THEN
        RAISE EXCEPTION 'the lease on worker id % of namespace "%" (epoch %) is renewed by another start of this server', worker_id, namespace, lease_epoch
            USING ERRCODE = 'SFL05',
                  DETAIL = format('Node "%s" holds it under another postmaster start, last renewed %s ago: this server went on under the lease on disk without the registry''s answer, and is a copy of that node''s data directory or was replaced by a restart of it.',
                                  l.node_name, clock_timestamp() - l.renewed_at),
                  HINT = 'This server issues no more IDs under this lease. Give a copy its own snowflake_id.worker_id (or auto) or its own snowflake_id.registry_namespace.';
    END IF;
    SELECT least(node_tick, (extract(epoch FROM clock_timestamp()) * 1000)::bigint - n.epoch_ms + 86400000) INTO tick
      FROM @extschema@.snowflake_registry_namespaces n WHERE n.namespace = l.namespace;
    ceiling_tick := greatest(l.ceiling_tick, tick + horizon_ms, l.floor_tick + greatest(horizon_ms / 4, 1));
    UPDATE @extschema@.snowflake_registry_leases r
       SET ceiling_tick = snowflake_registry_renew.ceiling_tick, horizon_ms = snowflake_registry_renew.horizon_ms,
           renewed_at = clock_timestamp(), instance = coalesce(r.instance, caller_instance)
     WHERE r.namespace = l.namespace AND r.worker_id = l.worker_id;
END
$renew$;
-- A clean stop: the ceiling comes down to the last tick the node issued (it
-- has made that its own ceiling first), so the next holder starts right above
-- it rather than a horizon ahead. Releasing a lease no longer held does
-- nothing, nor does a release by another start than the recorded one: its
-- last tick says nothing of what the recorded one issued.
CREATE OR REPLACE FUNCTION snowflake_registry_release(
    namespace text, worker_id integer, lease_epoch bigint, holder_token bigint, last_tick bigint)
    RETURNS boolean
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $release$
BEGIN
    UPDATE @extschema@.snowflake_registry_leases r
       SET ceiling_tick = greatest(r.floor_tick - 1, least(r.ceiling_tick, last_tick)), released_at = clock_timestamp()
     WHERE r.namespace = snowflake_registry_release.namespace AND r.worker_id = snowflake_registry_release.worker_id
       AND r.lease_epoch = snowflake_registry_release.lease_epoch
       AND r.holder_token = snowflake_registry_release.holder_token AND r.released_at IS NULL
       AND (r.instance IS NULL OR r.instance = coalesce(nullif(current_setting('snowflake_registry.instance', true), '')::bigint, r.instance));
    RETURN FOUND;
END
$release$;

-- ============================================================================
-- 5. snowflake_cluster_check(): every node of a Citus cluster with an unset
--    or shared worker id or another layout, from the coordinator
--    (sql/install/cluster.sql).
-- ============================================================================
-- snowflake_cluster_check(): from a Citus coordinator, every node whose IDs
-- could repeat or decode wrongly, by name. Citus evaluates a column's
-- DEFAULT on the workers as well as on the coordinator (docs/citus.md), so
-- every node issues IDs: two nodes on one worker id repeat each other's IDs
-- and a node on another layout issues IDs that decode wrongly elsewhere,
-- both without an error. One row per node with a problem: a worker id
-- unset, shared with another node (every node sharing it is named), a
-- layout other than the coordinator's, no answer, or whatever else the
-- node's snowflake_id_status calls a problem. No rows: all well.
--
-- Citus is looked up when the function runs, not when the extension is
-- created (dynamic SQL), so the extension installs where there is no Citus;
-- there the function refuses with 55000 and a hint rather than answering
-- for one server as if it were a cluster. It reads only what the status
-- view shows, which every role may read: an ordinary function (not
-- SECURITY DEFINER), executable by everyone, whose run_command_on_all_nodes
-- connects to each node as the caller.
CREATE FUNCTION snowflake_cluster_check()
    RETURNS TABLE (node text, worker_id bigint, layout text, problem text)
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
AS $check$
DECLARE
    -- What each node says: its status as one JSON object (Citus returns
    -- text), the layout as worker_bits/sequence_bits/epoch in UTC, to the
    -- millisecond (so whatever each node's TimeZone).
    status_query text := format(
        $q$SELECT json_build_object(
                      'worker_id', worker_id,
                      'layout', worker_bits || '/' || sequence_bits || '/'
                                || to_char(epoch AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS') || '+00',
                      'problem', problem)::text
             FROM %I.snowflake_id_status$q$, '@extschema@');
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
    EXECUTE status_query INTO own_status;
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
    answers AS (
        SELECT n.nodename || ':' || n.nodeport AS node, n.groupid, n.isactive, r.success, r.result
          FROM pg_catalog.master_run_on_worker(
                   ARRAY(SELECT d.nodename FROM nodes d ORDER BY d.nodename, d.nodeport),
                   ARRAY(SELECT d.nodeport FROM nodes d ORDER BY d.nodename, d.nodeport),
                   ARRAY(SELECT $1 FROM nodes d ORDER BY d.nodename, d.nodeport), true) r
          JOIN nodes n ON n.nodename = r.node_name AND n.nodeport = r.node_port
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
    $q$ USING status_query, own_status, own_group;
END
$check$;
COMMENT ON FUNCTION snowflake_cluster_check() IS
    'snowflake_id on Citus: one row per node with an unset or shared worker id, another layout than the coordinator''s, no answer or another problem';
