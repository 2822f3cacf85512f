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
        'snowflake_decode_fields', 'snowflake_advance_past', 'snowflake_registry_free',
        'snowflake_registry_acquire', 'snowflake_registry_renew', 'snowflake_registry_release'
    ]::pg_catalog.name[];
    relations pg_catalog.name[] := ARRAY[
        'snowflake_registry_namespaces', 'snowflake_registry_namespaces_pkey', 'snowflake_registry_leases',
        'snowflake_registry_leases_pkey', 'snowflake_registry'
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
-- 1. snowflake_decode(NULL) is NULL again, as in 0.1.0 (0.2.0 gave a row of
--    NULLs), with field twins that keep (snowflake_decode(id)).ts a plain
--    accessor call (sql/install/decode.sql).
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
--    key, and refuses a lone partition (sql/install/convert.sql).
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
--    nothing waits), and the worker id's registry lease (lease_state,
--    lease_epoch, lease_floor, lease_ceiling, lease_renewed_at,
--    registry_error). A new result type, so the function and its view are
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
	"sync_standby_wait_since" timestamp with time zone,  /* Option < Ts > */
	"lease_state" TEXT,  /* String */
	"lease_epoch" bigint,  /* Option < i64 > */
	"lease_floor" timestamp with time zone,  /* Option < Ts > */
	"lease_ceiling" timestamp with time zone,  /* Option < Ts > */
	"lease_renewed_at" timestamp with time zone,  /* Option < Ts > */
	"registry_error" TEXT  /* Option < String > */
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

-- ============================================================================
-- 4. The worker id registry (sql/install/registry.sql, the same text): the tables,
--    functions and view a registry database serves to a fleet of nodes.
-- ============================================================================

-- The worker id registry: any PostgreSQL 15+ database with this extension
-- can be the registry of a fleet of snowflake_id servers (it issues no IDs
-- itself). Each node leases a worker id as a range of ID time: it may issue
-- IDs whose timestamp part (a tick: milliseconds since the namespace's
-- epoch) lies in [floor_tick, ceiling_tick] of its lease, and never above.
-- Renewals raise the ceiling; a new holder of a worker id starts above the
-- last ceiling ever granted for it, and each grant bumps lease_epoch, so the
-- old holder's renewals fail and it stops at its ceiling. Two holders of one
-- worker id therefore issue from disjoint ranges of time, whatever their
-- clocks do: clocks decide only when a takeover may happen.
--
-- Nodes call the three functions below, each one transaction; the tables
-- are written by them alone (SECURITY DEFINER), so a node's role needs
-- EXECUTE on them and nothing else (see the README, "Fleets"). Grants must
-- be durable before a node uses them: the keeper sets synchronous_commit =
-- on for its sessions, and the registry must run with fsync on (and, with a
-- standby it may fail over to, synchronous replication).
--
-- A node's clock only decides how far its ceiling reaches, never whether
-- ranges overlap; still, a node's tick is taken at most a day past the
-- registry's own clock, so that one node with a clock far ahead cannot
-- push the ceilings (and so the next holders' floors) far into the future.

CREATE TABLE snowflake_registry_namespaces (
    namespace text PRIMARY KEY,
    worker_bits integer NOT NULL,
    sequence_bits integer NOT NULL,
    -- The layout's epoch in Unix milliseconds: ticks count from it.
    epoch_ms bigint NOT NULL,
    -- A lease not renewed for its horizon plus this margin, by the registry's
    -- clock, is stale: its worker id may be granted to another node (above
    -- its ceiling). The margin covers a renewal in flight and a slow node; it
    -- decides only how soon a takeover may happen, never whether IDs overlap.
    stale_margin interval NOT NULL DEFAULT interval '10 seconds' CHECK (stale_margin >= interval '0'),
    created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
COMMENT ON TABLE snowflake_registry_namespaces IS
    'snowflake_id registry: one layout per namespace of worker ids; nodes with another layout are refused';

CREATE TABLE snowflake_registry_leases (
    namespace text NOT NULL REFERENCES snowflake_registry_namespaces ON DELETE CASCADE,
    worker_id integer NOT NULL CHECK (worker_id >= 0),
    -- Bumped at every grant: which grant of this worker id this is.
    lease_epoch bigint NOT NULL CHECK (lease_epoch > 0),
    -- The fencing token: random at every grant. A renewal or release names
    -- it and fails once another grant has replaced it, also when a registry
    -- crash lost a grant and the same epoch was handed out again.
    holder_token bigint NOT NULL,
    -- The holder: its cluster (pg_control_system().system_identifier, as
    -- text since it is an unsigned 64-bit number), timeline, and a name for humans.
    system_identifier text NOT NULL,
    timeline integer NOT NULL,
    node_name text NOT NULL,
    floor_tick bigint NOT NULL CHECK (floor_tick >= 0),
    ceiling_tick bigint NOT NULL,
    horizon_ms bigint NOT NULL CHECK (horizon_ms > 0),
    granted_at timestamptz NOT NULL,
    renewed_at timestamptz NOT NULL,
    released_at timestamptz,
    PRIMARY KEY (namespace, worker_id),
    CHECK (ceiling_tick >= floor_tick - 1)
);
COMMENT ON TABLE snowflake_registry_leases IS
    'snowflake_id registry: the lease of each worker id ever granted; ceiling_tick only grows while one holder has it';

-- Registry data must survive pg_dump and pg_restore of the registry
-- database: a lost ceiling would let a new holder start below IDs issued.
SELECT pg_catalog.pg_extension_config_dump('snowflake_registry_namespaces', '');
SELECT pg_catalog.pg_extension_config_dump('snowflake_registry_leases', '');

-- Whether a lease may be granted to another node: released, or not renewed
-- for its horizon plus the namespace's margin by the registry's clock.
CREATE FUNCTION snowflake_registry_free(l snowflake_registry_leases, stale_margin interval, at timestamptz)
    RETURNS boolean
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN l.released_at IS NOT NULL OR l.renewed_at + make_interval(secs => l.horizon_ms / 1000.0) + stale_margin < at;

-- Takes a worker id for a node: `wanted`, or with NULL the lowest free one.
-- A worker id is free when never granted, released, or stale; it may also be
-- taken at once by the node that holds it when that node resumes its own
-- lease (`resume_epoch` = the lease it has on disk) or is a promoted standby
-- of its holder (same system identifier, a later timeline). The new lease
-- starts above every ceiling granted before: floor_tick = old ceiling + 1.
CREATE FUNCTION snowflake_registry_acquire(
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
       AND NOT (old.system_identifier = snowflake_registry_acquire.system_identifier
                AND (snowflake_registry_acquire.timeline > old.timeline
                     OR (snowflake_registry_acquire.timeline = old.timeline AND old.lease_epoch = resume_epoch
                         AND old.holder_token = resume_token))) THEN
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

    worker_id := wanted;
    lease_epoch := coalesce(old.lease_epoch, 0) + 1;
    -- Never 0: a node writes 0 for a lease it released.
    holder_token := greatest(1, (random() * 9223372036854775807)::bigint);
    floor_tick := coalesce(old.ceiling_tick + 1, 0);
    ceiling_tick := greatest(floor_tick, tick) + horizon_ms;
    INSERT INTO @extschema@.snowflake_registry_leases AS l
        VALUES (ns.namespace, worker_id, lease_epoch, holder_token, snowflake_registry_acquire.system_identifier,
                snowflake_registry_acquire.timeline, node_name, floor_tick, ceiling_tick, horizon_ms,
                now_ts, now_ts, NULL)
        ON CONFLICT ON CONSTRAINT snowflake_registry_leases_pkey DO UPDATE
        SET lease_epoch = excluded.lease_epoch, holder_token = excluded.holder_token,
            system_identifier = excluded.system_identifier,
            timeline = excluded.timeline, node_name = excluded.node_name, floor_tick = excluded.floor_tick,
            ceiling_tick = excluded.ceiling_tick, horizon_ms = excluded.horizon_ms,
            granted_at = excluded.granted_at, renewed_at = excluded.renewed_at, released_at = NULL;
END
$acquire$;
COMMENT ON FUNCTION snowflake_registry_acquire(text, integer, integer, bigint, integer, text, integer, text, bigint, bigint, bigint, bigint) IS
    'snowflake_id registry: grants a worker id (wanted, or the lowest free one) above every ceiling granted before';

-- Raises the ceiling of a lease still held (same lease_epoch, not released):
-- to the node's tick (at least the floor) plus the horizon, never lower.
-- Fails with SQLSTATE SFL01 once the lease was replaced or released: the
-- node then stops at the ceiling it has.
CREATE FUNCTION snowflake_registry_renew(
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
BEGIN
    IF horizon_ms NOT BETWEEN 1 AND 86400000 THEN
        RAISE EXCEPTION 'snowflake_registry_renew: a horizon of % ms is not between 1 ms and a day', horizon_ms
            USING ERRCODE = '22023';
    END IF;
    SELECT * INTO l FROM @extschema@.snowflake_registry_leases r
        WHERE r.namespace = snowflake_registry_renew.namespace AND r.worker_id = snowflake_registry_renew.worker_id
        FOR UPDATE;
    IF NOT FOUND OR l.lease_epoch <> snowflake_registry_renew.lease_epoch
       OR l.holder_token <> snowflake_registry_renew.holder_token OR l.released_at IS NOT NULL THEN
        RAISE EXCEPTION 'the lease on worker id % of namespace "%" (epoch %) is lost', worker_id, namespace, lease_epoch
            USING ERRCODE = 'SFL01',
                  DETAIL = CASE WHEN NOT FOUND THEN 'The registry has no lease on that worker id.'
                                WHEN l.released_at IS NOT NULL THEN format('It was released at %s.', l.released_at)
                                WHEN l.lease_epoch = snowflake_registry_renew.lease_epoch
                                    THEN 'The registry has another grant under that epoch (it lost the one this node holds).' 
                                ELSE format('Node "%s" (system %s, timeline %s) holds it with epoch %s since %s.',
                                            l.node_name, l.system_identifier, l.timeline, l.lease_epoch, l.granted_at)
                           END;
    END IF;
    SELECT least(node_tick, (extract(epoch FROM clock_timestamp()) * 1000)::bigint - n.epoch_ms + 86400000) INTO tick
      FROM @extschema@.snowflake_registry_namespaces n WHERE n.namespace = l.namespace;
    ceiling_tick := greatest(l.ceiling_tick, greatest(tick, l.floor_tick) + horizon_ms);
    UPDATE @extschema@.snowflake_registry_leases r
       SET ceiling_tick = snowflake_registry_renew.ceiling_tick, horizon_ms = snowflake_registry_renew.horizon_ms,
           renewed_at = clock_timestamp()
     WHERE r.namespace = l.namespace AND r.worker_id = l.worker_id;
END
$renew$;
COMMENT ON FUNCTION snowflake_registry_renew(text, integer, bigint, bigint, bigint, bigint) IS
    'snowflake_id registry: raises the ceiling of a lease still held; SQLSTATE SFL01 once it is lost';

-- A clean stop: the ceiling comes down to the last tick the node issued (it
-- has made that its own ceiling first), so the next holder starts right above
-- it rather than a horizon ahead. Releasing a lease no longer held does nothing.
CREATE FUNCTION snowflake_registry_release(
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
       AND r.holder_token = snowflake_registry_release.holder_token AND r.released_at IS NULL;
    RETURN FOUND;
END
$release$;
COMMENT ON FUNCTION snowflake_registry_release(text, integer, bigint, bigint, bigint) IS
    'snowflake_id registry: ends a lease at a clean stop, lowering its ceiling to the last tick issued';

-- What a DBA reads: each worker id ever granted, its holder and its range.
CREATE VIEW snowflake_registry AS
SELECT l.namespace, l.worker_id, l.node_name, l.system_identifier, l.timeline, l.lease_epoch,
       to_timestamp((n.epoch_ms + l.floor_tick) / 1000.0) AS floor,
       to_timestamp((n.epoch_ms + l.ceiling_tick) / 1000.0) AS ceiling,
       l.granted_at, l.renewed_at, l.released_at,
       CASE WHEN l.released_at IS NOT NULL THEN 'free'
            WHEN snowflake_registry_free(l, n.stale_margin, clock_timestamp()) THEN 'stale'
            ELSE 'live'
       END AS state
  FROM snowflake_registry_leases l
  JOIN snowflake_registry_namespaces n USING (namespace);
COMMENT ON VIEW snowflake_registry IS
    'snowflake_id registry: each worker id granted, its holder, its ID time range and whether it is live, stale or free';

REVOKE EXECUTE ON FUNCTION snowflake_registry_acquire(text, integer, integer, bigint, integer, text, integer, text, bigint, bigint, bigint, bigint) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION snowflake_registry_renew(text, integer, bigint, bigint, bigint, bigint) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION snowflake_registry_release(text, integer, bigint, bigint, bigint) FROM PUBLIC;
