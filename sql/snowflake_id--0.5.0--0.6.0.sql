-- snowflake_id 0.5.0 -> 0.6.0: the SQL changes of 0.6.0
-- (snowflake_cluster_check() reports the publishers of this database's
-- subscriptions too, through the new snowflake_logical_peers()).
-- Install the 0.6.0 library first (it serves 0.5.0's definitions as they
-- are), then ALTER EXTENSION snowflake_id UPDATE. Tables, defaults, rows,
-- grants and existing views are untouched: the update creates one function
-- and two views over it and over snowflake_cluster_check() (what the check
-- and the cluster watch read, bound when created: no overload another role
-- adds can make their calls ambiguous), replaces the body of
-- snowflake_cluster_check() with the text of a fresh install of 0.6.0, and
-- marks the two block functions PARALLEL RESTRICTED (tests/upgrade.rs compares the catalogs), after section
-- 0 checked that nothing another role created is in the way.
\echo Use "ALTER EXTENSION snowflake_id UPDATE" to load this file. \quit

-- ============================================================================
-- 0. Nothing of another role's where this update creates the extension's
--    own function, nor beside a function its bodies call where it would make
--    the call ambiguous (as in the 0.4.0 -> 0.5.0 update). Refused here,
--    naming the object, its owner and the fix. This block runs with the
--    script's search_path (@extschema@, often public, where ordinary roles
--    may create): it names pg_catalog for every function and operator it
--    calls.
-- ============================================================================
DO $guard$
DECLARE
    functions pg_catalog.name[] := ARRAY['snowflake_logical_peers']::pg_catalog.name[];
    relations pg_catalog.name[] := ARRAY['snowflake_logical_peer_answers',
                                         'snowflake_cluster_problems']::pg_catalog.name[];
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
            -- PostgreSQL's bare words, keeping 0.5.0's bodies.
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
-- 1. The publishers of this database's subscriptions, asked for their status
--    (src/api/cluster.rs, src/service/logical_peers.rs): a C function of the
--    0.6.0 library, defined as pgrx defines it in a fresh install. Its own
--    search_path: it reads the catalogs through SPI.
-- ============================================================================
CREATE FUNCTION @extschema@.snowflake_logical_peers() RETURNS TABLE (
    node pg_catalog.text,
    status pg_catalog.text,
    trouble pg_catalog.text
)
    STRICT VOLATILE PARALLEL UNSAFE
    SET search_path TO pg_catalog, pg_temp
    LANGUAGE c
    AS 'MODULE_PATHNAME', 'snowflake_logical_peers_wrapper';

-- ============================================================================
-- 2. snowflake_cluster_check() checks logical peers too (sql/install/cluster.sql).
-- ============================================================================
-- What snowflake_logical_peers() answers, as the check reads it: through a
-- view, bound to the function itself when the extension is created. A call
-- by name would be resolved at each call, and a role that may create in
-- the extension's schema could add snowflake_logical_peers(integer DEFAULT
-- 0) and make every call ambiguous, the cluster watch's too; a relation's
-- name has no overloads.
CREATE VIEW snowflake_logical_peer_answers AS
    SELECT p.node, p.status, p.trouble FROM @extschema@.snowflake_logical_peers() p;
GRANT SELECT ON snowflake_logical_peer_answers TO PUBLIC;

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
                      'problem', s.problem,
                      -- Which server answered: its postmaster's start, to
                      -- the microsecond, and port, so that two answers of
                      -- one server (one publisher behind two subscriptions,
                      -- a database of this very server) count once, and a
                      -- physical clone turned subscriber (its own start)
                      -- counts apart. Both are every role's to read (not
                      -- pg_control_system(), whose EXECUTE a DBA may revoke:
                      -- the whole status would fail, not the field).
                      'server', pg_catalog.to_char(pg_catalog.timezone('UTC', pg_catalog.pg_postmaster_start_time()),
                                                   'YYYY-MM-DD HH24:MI:SS.US')
                                OPERATOR(pg_catalog.||) '/' OPERATOR(pg_catalog.||)
                                pg_catalog.current_setting('port')) AS pg_catalog.text)
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
    -- Without Citus, its part of the query below answers nothing.
    no_citus text := $q$citus_answers (node, groupid, isactive, success, result) AS (
        SELECT NULL::text, NULL::integer, NULL::boolean, NULL::boolean, NULL::text WHERE false),$q$;
    has_citus boolean;
    own_status text;
    own_group integer;
    peer_nodes text[];
    peer_statuses text[];
    peer_troubles text[];
BEGIN
    has_citus := EXISTS (SELECT FROM pg_catalog.pg_extension WHERE extname = 'citus');
    SELECT array_agg(p.node ORDER BY p.node), array_agg(p.status ORDER BY p.node),
           array_agg(p.trouble ORDER BY p.node)
      INTO peer_nodes, peer_statuses, peer_troubles
      FROM @extschema@.snowflake_logical_peer_answers p;
    IF NOT has_citus AND peer_nodes IS NULL THEN
        RAISE EXCEPTION 'snowflake_cluster_check() needs Citus or a subscription: extension "citus" is not created '
                        'in database "%" and it has no subscription', current_database()
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Run it on the Citus coordinator, in the database Citus runs in, or on a logical '
                         'replication subscriber, in the database of its subscriptions. On a server without '
                         'either, snowflake_id_status shows its worker id and problem; with a registry, '
                         'snowflake_registry shows every node''s lease.';
    END IF;
    EXECUTE format(status_template, '@extschema@') INTO own_status;
    IF has_citus THEN
        EXECUTE 'SELECT groupid FROM pg_catalog.pg_dist_local_group' INTO own_group;
    END IF;
    RETURN QUERY EXECUTE format($q$
    WITH %s
    answers AS (
        SELECT c.node, c.isactive, c.success, c.result, 'no answer: ' AS prefix, false AS peer
          FROM citus_answers c
        -- The publishers of the subscriptions: a status, or what to report.
        UNION ALL
        SELECT l.node, true, l.status IS NOT NULL, coalesce(l.status, l.trouble), '', true
          FROM unnest($5::text[], $6::text[], $7::text[]) l (node, status, trouble)
        -- This node, compared with its publishers (with Citus, it is among
        -- the Citus nodes already).
        UNION ALL
        SELECT 'this node', true, true, $2, '', false WHERE NOT $8 AND $5 IS NOT NULL),
    parsed AS ($q$,
        CASE WHEN has_citus THEN $q$nodes AS (
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
    citus_answers AS (
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
         WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_dist_node d WHERE d.groupid = $3)),$q$
        ELSE no_citus END)
    || $q$
        SELECT a.node, a.isactive, a.success, a.result, a.prefix, s,
               (s ->> 'worker_id')::bigint AS worker_id, s ->> 'layout' AS layout,
               -- One key per server: its identity, else the row's own.
               coalesce(s ->> 'server', a.node) AS server
          FROM answers a
          -- A CASE, so that a failure's text is never cast: the planner may
          -- evaluate a subquery's output before its WHERE.
          CROSS JOIN LATERAL (SELECT CASE WHEN a.success THEN a.result::json END AS s) j
         -- A publisher that is this very server (a subscription to another
         -- of its databases) is this node: one generator, compared once.
         WHERE NOT (a.peer AND coalesce(s ->> 'server' = $2::json ->> 'server', false))),
    shared AS (
        -- Servers, not rows: one publisher behind two subscriptions shares
        -- nothing with itself.
        SELECT p.worker_id, string_agg(p.node, ', ' ORDER BY p.node) AS nodes
          FROM parsed p WHERE p.worker_id IS NOT NULL GROUP BY p.worker_id
        HAVING count(DISTINCT p.server) > 1),
    own AS (SELECT $2::json ->> 'layout' AS layout),
    checked AS (
        SELECT p.node, p.worker_id, p.layout,
               concat_ws('; ',
                   -- A disabled node is usually down: named only when it answers.
                   CASE WHEN NOT p.success AND p.isactive THEN p.prefix || p.result END,
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
    $q$ USING status_template, own_status, own_group, probe_query, peer_nodes, peer_statuses, peer_troubles,
              has_citus;
END
$check$;
COMMENT ON FUNCTION snowflake_cluster_check() IS
    'snowflake_id on Citus and among logical peers: one row per node with an unset or shared worker id, another layout than the coordinator''s (this node''s), no answer or another problem';

-- What the cluster watch reads (src/worker/cluster_watch.rs), for the same
-- reason: an overload of snowflake_cluster_check() with a defaulted
-- argument would make its call by name ambiguous, and the watch silent.
CREATE VIEW snowflake_cluster_problems AS
    SELECT c.node, c.worker_id, c.layout, c.problem FROM @extschema@.snowflake_cluster_check() c;
GRANT SELECT ON snowflake_cluster_problems TO PUBLIC;

-- ============================================================================
-- 3. The block functions are PARALLEL RESTRICTED (src/api/functions.rs): in
--    FROM under a Gather, the leader and every worker each called a
--    PARALLEL SAFE block, and one call for n IDs handed out up to 3n, a
--    different block to each part of the join. The leader now calls it once.
-- ============================================================================
ALTER FUNCTION @extschema@.snowflake_nextval_block(pg_catalog.int4) PARALLEL RESTRICTED;
ALTER FUNCTION @extschema@.snowflake_nextval_array(pg_catalog.int4) PARALLEL RESTRICTED;
