-- snowflake_id 0.2.0 -> 0.3.0: the SQL changes of 0.3.0.
-- Install the 0.3.0 library first (it serves 0.2.0's definitions as they
-- are), then ALTER EXTENSION snowflake_id UPDATE (from 0.1.0, PostgreSQL
-- runs snowflake_id--0.1.0--0.2.0.sql and then this file). Tables, defaults,
-- rows and views on snowflake_decode are untouched.
-- Every SQL change of 0.3.0 goes in this file, each under its own heading;
-- the result must equal a fresh install of 0.3.0 (tests/upgrade.rs compares
-- the catalogs).
\echo Use "ALTER EXTENSION snowflake_id UPDATE" to load this file. \quit

-- ============================================================================
-- 1. snowflake_decode(NULL) is NULL again, as in 0.1.0 (0.2.0 gave a row of
--    NULLs), with field twins that keep (snowflake_decode(id)).ts a plain
--    accessor call (sql/decode.sql).
-- ============================================================================

-- snowflake_decode is plain SQL over the C accessors so that the planner
-- inlines it. It is not STRICT (that would stop the inlining), yet NULL in
-- gives NULL out, as 0.1.0's STRICT function did (not a row of NULLs, which
-- count() counts and coalesce() keeps): the CASE says so. A field of it,
-- (snowflake_decode(id)).ts, is the same NULL either way, so the extension's
-- planner hook calls the field twins below there instead, whose bare ROW the
-- planner reduces to the one accessor asked for: snowflake_timestamp(id), no
-- composite value built per row.
CREATE OR REPLACE FUNCTION snowflake_decode(id bigint) RETURNS snowflake_parts
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN CASE WHEN id IS NULL THEN NULL
                ELSE ROW(snowflake_timestamp(id), snowflake_worker_id(id), snowflake_sequence(id))::snowflake_parts
           END;
COMMENT ON FUNCTION snowflake_decode(bigint) IS
    'the instant, worker id and sequence of a snowflake ID, with this server''s layout';

CREATE OR REPLACE FUNCTION snowflake_decode(id bigint, epoch timestamptz, worker_bits integer, sequence_bits integer)
    RETURNS snowflake_parts
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE WHEN id IS NULL OR epoch IS NULL OR worker_bits IS NULL OR sequence_bits IS NULL THEN NULL
                ELSE ROW(snowflake_timestamp(id, epoch, worker_bits, sequence_bits),
                         snowflake_worker_id(id, epoch, worker_bits, sequence_bits),
                         snowflake_sequence(id, epoch, worker_bits, sequence_bits))::snowflake_parts
           END;
COMMENT ON FUNCTION snowflake_decode(bigint, timestamptz, integer, integer) IS
    'the instant, worker id and sequence of a snowflake ID made with the given epoch and bit split';

-- The field twins of snowflake_decode: the bare ROW, a row of NULLs for a
-- NULL argument. The planner hook puts them in place of snowflake_decode
-- under a field selection only, where the two agree. Call snowflake_decode,
-- not these.
CREATE FUNCTION snowflake_decode_fields(id bigint) RETURNS snowflake_parts
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN ROW(snowflake_timestamp(id), snowflake_worker_id(id), snowflake_sequence(id))::snowflake_parts;
CREATE FUNCTION snowflake_decode_fields(id bigint, epoch timestamptz, worker_bits integer, sequence_bits integer)
    RETURNS snowflake_parts
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN ROW(snowflake_timestamp(id, epoch, worker_bits, sequence_bits),
               snowflake_worker_id(id, epoch, worker_bits, sequence_bits),
               snowflake_sequence(id, epoch, worker_bits, sequence_bits))::snowflake_parts;

-- ============================================================================
-- 2. snowflake_convert widens foreign keys of partitioned tables on the
--    partitioned table (not on each partition), converts a partitioned table's
--    key, and refuses a lone partition (sql/convert.sql).
-- ============================================================================

-- snowflake_convert: moves one key column of an existing table from a
-- sequence (serial, identity, DEFAULT nextval(...)) to snowflake_nextval(),
-- widening it and every foreign-key column that references it (through
-- further tables) to bigint. Returns the statements it ran, or with dry_run
-- would run. It runs in the caller's transaction, as the caller: all or
-- nothing, and only a table's owner can alter it.
CREATE OR REPLACE FUNCTION snowflake_convert(tbl regclass, col name, dry_run boolean DEFAULT false)
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

    -- 2. New IDs must be above every existing value.
    EXECUTE format('SELECT max(%I)::bigint FROM %s', col, tbl) INTO max_value;
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
    IF att.atttypid <> 'bigint'::regtype THEN
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
        IF blockers IS NOT NULL THEN
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
COMMENT ON FUNCTION snowflake_convert(regclass, name, boolean) IS
    'moves a serial, identity or nextval() key column to DEFAULT snowflake_nextval(), widening it and its foreign keys to bigint';

-- snowflake_advance_past gains `force`: an ID more than a day ahead of the
-- clock is refused without it (a typo would push every later ID of the
-- server into the future, for good). Until this runs, 0.2.0's one-argument
-- definition calls the library's compatibility entry point, which refuses
-- the same way.
DROP FUNCTION snowflake_advance_past(bigint);
CREATE  FUNCTION "snowflake_advance_past"(
	"id" bigint, /* i64 */
	"force" bool DEFAULT false /* bool */
) RETURNS bigint /* i64 */
STRICT VOLATILE PARALLEL UNSAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'snowflake_advance_past_checked_wrapper';
-- Moving the generator's mark is for superusers (the function checks too).
REVOKE EXECUTE ON FUNCTION snowflake_advance_past(bigint, boolean) FROM PUBLIC;

-- ============================================================================
-- 3. snowflake_id_status gains sync_standby_wait_since: since when IDs have
--    waited for synchronous standbys to flush the durable mark (NULL when
--    nothing waits). A new result type, so the function and its view are
--    recreated, with the same comment and grant as a fresh install.
-- ============================================================================

DROP VIEW snowflake_id_status;
DROP FUNCTION snowflake_id_status();
CREATE  FUNCTION "snowflake_id_status"() RETURNS TABLE (
	"worker_id" bigint,  /* Option < i64 > */
	"worker_bits" INT,  /* Option < i32 > */
	"sequence_bits" INT,  /* Option < i32 > */
	"epoch" timestamp with time zone,  /* Option < Ts > */
	"started_at" timestamp with time zone,  /* Option < Ts > */
	"last_id" bigint,  /* Option < i64 > */
	"logical_clock" timestamp with time zone,  /* Option < Ts > */
	"wall_clock" timestamp with time zone,  /* Ts */
	"drift_ms" bigint,  /* Option < i64 > */
	"durable_mark" timestamp with time zone,  /* Option < Ts > */
	"max_drift_ms" bigint,  /* i64 */
	"ids_issued" bigint,  /* i64 */
	"ms_borrowed" bigint,  /* i64 */
	"waits" bigint,  /* i64 */
	"clock_steps_back" bigint,  /* i64 */
	"largest_step_back_ms" bigint,  /* i64 */
	"mark_writes" bigint,  /* i64 */
	"mark_writes_by_keeper" bigint,  /* i64 */
	"in_recovery" bool,  /* bool */
	"mark_lsn" pg_lsn,  /* Option < Lsn > */
	"keeper_pid" INT,  /* Option < i32 > */
	"problem" TEXT,  /* Option < String > */
	"sync_standby_wait_since" timestamp with time zone  /* Option < Ts > */
)
STRICT VOLATILE PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'snowflake_id_status_wrapper';

-- The generator's state as a view, for monitoring: SELECT * FROM snowflake_id_status;
CREATE VIEW snowflake_id_status AS SELECT * FROM snowflake_id_status();
COMMENT ON VIEW snowflake_id_status IS
    'snowflake_id generator: layout, logical vs wall clock, durable mark and counters since server start';
-- Readable by every role, like PostgreSQL's own statistics views.
GRANT SELECT ON snowflake_id_status TO PUBLIC;
