-- snowflake_id 0.1.0 -> 0.2.0: every SQL change of 0.2.0.
-- Install the 0.2.0 library first (it still serves 0.1.0's definitions),
-- then ALTER EXTENSION snowflake_id UPDATE. Tables, defaults and rows are
-- untouched; the status view is recreated (a view of yours built on it must
-- be dropped first and recreated after).
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
        'snowflake_advance_past', 'snowflake_id_span', 'snowflake_timestamp', 'snowflake_worker_id',
        'snowflake_sequence', 'snowflake_decode_rows', 'snowflake_convert'
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


-- Scalar accessors, time spans and moving the mark past restored IDs.
CREATE  FUNCTION "snowflake_advance_past"(
	"id" bigint /* i64 */
) RETURNS bigint /* i64 */
STRICT VOLATILE PARALLEL UNSAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'snowflake_advance_past_wrapper';

CREATE  FUNCTION "snowflake_id_span"(
	"span" interval /* Interval */
) RETURNS bigint /* i64 */
STRICT STABLE PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'snowflake_id_span_wrapper';

CREATE  FUNCTION "snowflake_timestamp"(
	"id" bigint /* i64 */
) RETURNS timestamp with time zone /* TimestampWithTimeZone */
STRICT STABLE PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'snowflake_timestamp_wrapper';

CREATE  FUNCTION "snowflake_timestamp"(
	"id" bigint, /* i64 */
	"epoch" timestamp with time zone, /* TimestampWithTimeZone */
	"worker_bits" INT, /* i32 */
	"sequence_bits" INT /* i32 */
) RETURNS timestamp with time zone /* TimestampWithTimeZone */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'snowflake_timestamp_with_layout_wrapper';

CREATE  FUNCTION "snowflake_worker_id"(
	"id" bigint /* i64 */
) RETURNS INT /* i32 */
STRICT STABLE PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'snowflake_worker_id_wrapper';

CREATE  FUNCTION "snowflake_worker_id"(
	"id" bigint, /* i64 */
	"epoch" timestamp with time zone, /* TimestampWithTimeZone */
	"worker_bits" INT, /* i32 */
	"sequence_bits" INT /* i32 */
) RETURNS INT /* i32 */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'snowflake_worker_id_with_layout_wrapper';

CREATE  FUNCTION "snowflake_sequence"(
	"id" bigint /* i64 */
) RETURNS INT /* i32 */
STRICT STABLE PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'snowflake_sequence_wrapper';

CREATE  FUNCTION "snowflake_sequence"(
	"id" bigint, /* i64 */
	"epoch" timestamp with time zone, /* TimestampWithTimeZone */
	"worker_bits" INT, /* i32 */
	"sequence_bits" INT /* i32 */
) RETURNS INT /* i32 */
IMMUTABLE STRICT PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'snowflake_sequence_with_layout_wrapper';

-- Moving the generator's mark is for superusers (the function checks too).
REVOKE EXECUTE ON FUNCTION snowflake_advance_past(bigint) FROM PUBLIC;

-- snowflake_decode: from C functions building a composite per call (with a
-- SET search_path) to inlinable SQL over the accessors; same arguments and
-- result type, so views and queries that use it keep working.
-- snowflake_decode is plain SQL over the C accessors so that the planner
-- inlines it: (snowflake_decode(id)).ts becomes snowflake_timestamp(id), and
-- no composite value is built per row. It is not STRICT (that would stop the
-- inlining): NULL in gives a row of NULLs, for which `IS NULL` is true.
CREATE OR REPLACE FUNCTION snowflake_decode(id bigint) RETURNS snowflake_parts
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN ROW(snowflake_timestamp(id), snowflake_worker_id(id), snowflake_sequence(id))::snowflake_parts;
COMMENT ON FUNCTION snowflake_decode(bigint) IS
    'the instant, worker id and sequence of a snowflake ID, with this server''s layout';

CREATE OR REPLACE FUNCTION snowflake_decode(id bigint, epoch timestamptz, worker_bits integer, sequence_bits integer)
    RETURNS snowflake_parts
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN ROW(snowflake_timestamp(id, epoch, worker_bits, sequence_bits),
               snowflake_worker_id(id, epoch, worker_bits, sequence_bits),
               snowflake_sequence(id, epoch, worker_bits, sequence_bits))::snowflake_parts;
COMMENT ON FUNCTION snowflake_decode(bigint, timestamptz, integer, integer) IS
    'the instant, worker id and sequence of a snowflake ID made with the given epoch and bit split';

-- The set-returning twins of snowflake_decode, one row each. PostgreSQL
-- inlines an SQL function in FROM only if it returns a set; the extension's
-- planner hook puts these in place of snowflake_decode in FROM
-- (`FROM t, snowflake_decode(t.id) d`), so that form costs the accessors too
-- rather than a tuplestore per row. Call snowflake_decode, not these.
CREATE FUNCTION snowflake_decode_rows(id bigint) RETURNS SETOF snowflake_parts
    LANGUAGE sql STABLE PARALLEL SAFE ROWS 1
    BEGIN ATOMIC
        SELECT snowflake_timestamp(id), snowflake_worker_id(id), snowflake_sequence(id);
    END;
CREATE FUNCTION snowflake_decode_rows(id bigint, epoch timestamptz, worker_bits integer, sequence_bits integer)
    RETURNS SETOF snowflake_parts
    LANGUAGE sql IMMUTABLE PARALLEL SAFE ROWS 1
    BEGIN ATOMIC
        SELECT snowflake_timestamp(id, epoch, worker_bits, sequence_bits),
               snowflake_worker_id(id, epoch, worker_bits, sequence_bits),
               snowflake_sequence(id, epoch, worker_bits, sequence_bits);
    END;

-- Converting existing serial, identity and nextval() keys.
-- snowflake_convert: moves one key column of an existing table from a
-- sequence (serial, identity, DEFAULT nextval(...)) to snowflake_nextval(),
-- widening it and every foreign-key column that references it (through
-- further tables) to bigint. Returns the statements it ran, or with dry_run
-- would run. It runs in the caller's transaction, as the caller: all or
-- nothing, and only a table's owner can alter it.
CREATE FUNCTION snowflake_convert(tbl regclass, col name, dry_run boolean DEFAULT false)
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
        IF EXISTS (SELECT 1 FROM pg_depend
                    WHERE classid = 'pg_class'::regclass AND objid = seq AND refobjid = tbl
                      AND refobjsubid = att.attnum AND deptype = 'a')
           AND NOT EXISTS (SELECT 1 FROM pg_depend
                            WHERE classid = 'pg_attrdef'::regclass AND objid <> att.defoid
                              AND refclassid = 'pg_class'::regclass AND refobjid = seq) THEN
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
    -- key, and those that reference them.
    IF att.atttypid <> 'bigint'::regtype THEN
        WITH RECURSIVE cols(rel, attnum) AS (
            SELECT tbl::oid, att.attnum
            UNION
            SELECT c.conrelid, c.conkey[k.i]
              FROM cols
              JOIN pg_constraint c ON c.contype = 'f' AND c.confrelid = cols.rel
              JOIN LATERAL generate_subscripts(c.confkey, 1) AS k(i) ON c.confkey[k.i] = cols.attnum
        )
        SELECT array_agg(rel), array_agg(attnum) INTO w_rels, w_atts FROM cols;

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

-- The status gains in_recovery, mark_lsn, keeper_pid and problem (and no
-- longer raises an ERROR when something is wrong): a new result type, so the
-- function and its view are recreated, now readable by every role.
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
	"problem" TEXT  /* Option < String > */
)
STRICT VOLATILE PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'snowflake_id_status_wrapper';

-- The generator's state as a view, for monitoring: SELECT * FROM snowflake_id_status;
CREATE VIEW snowflake_id_status AS SELECT * FROM snowflake_id_status();
COMMENT ON VIEW snowflake_id_status IS
    'snowflake_id generator: layout, logical vs wall clock, durable mark and counters since server start';
-- Readable by every role, like PostgreSQL's own statistics views (the
-- function it reads is executable by everyone too): monitoring roles such as
-- pg_monitor members need no superuser. Nothing in it is secret.
GRANT SELECT ON snowflake_id_status TO PUBLIC;
