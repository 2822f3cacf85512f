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
-- Logical peers too: the publisher of each subscription of this
-- database, native or pglogical's, is asked for its status the same way,
-- through snowflake_logical_peers() (src/service/logical_guard/peers.rs), and
-- this node is compared with them: a publisher issuing with this node's
-- worker id is named with this node, so is one on another layout, one that
-- does not answer or has no extension. Only a superuser's call connects,
-- and only with connection strings a superuser chose (a subscription a
-- superuser owns, pglogical's own catalog): any other subscription is a
-- row saying it was not checked and why. Connection strings are never
-- shown.
--
-- Citus is looked up when the function runs, not when the extension is
-- created (dynamic SQL), so the extension installs where there is no Citus;
-- where there is neither Citus nor a subscription the function refuses
-- with 55000 and a hint rather than answering for one server as if it were
-- a cluster. It reads only what the status view shows, which every role
-- may read: an ordinary function (not SECURITY DEFINER), executable by
-- everyone, whose run_command_on_all_nodes connects to each node as the
-- caller. Its status_template and probe_query are also what
-- src/service/logical_guard/peers.rs asks each publisher, read from this file:
-- they are written here only.
-- What snowflake_logical_peers() answers, as the check reads it: through a
-- view, bound to the function itself when the extension is created. A call
-- by name would be resolved at each call, and a role that may create in
-- the extension's schema could add snowflake_logical_peers(integer DEFAULT
-- 0) and make every call ambiguous, the cluster watch's too; a relation's
-- name has no overloads.
CREATE VIEW snowflake_logical_peer_answers AS
    SELECT p.node, p.status, p.trouble FROM snowflake_id_internal.snowflake_logical_peers() p;
GRANT SELECT ON snowflake_logical_peer_answers TO PUBLIC;

CREATE FUNCTION snowflake_id_internal.snowflake_cluster_check()
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
COMMENT ON FUNCTION snowflake_id_internal.snowflake_cluster_check() IS
    'snowflake_id: the implementation of snowflake_cluster_check()';

-- The public entry point, bound to the implementation when created.
CREATE FUNCTION @extschema@.snowflake_cluster_check()
    RETURNS TABLE (node text, worker_id bigint, layout text, problem text)
    LANGUAGE sql VOLATILE
BEGIN ATOMIC
    SELECT c.node, c.worker_id, c.layout, c.problem FROM snowflake_id_internal.snowflake_cluster_check() c;
END;
COMMENT ON FUNCTION @extschema@.snowflake_cluster_check() IS
    'snowflake_id on Citus and among logical peers: one row per node with an unset or shared worker id, another layout than the coordinator''s (this node''s), no answer or another problem';

-- What the cluster watch reads (src/worker/cluster_watch.rs): a relation,
-- whose name has no overloads, over the implementation in the owner-only
-- schema, so that nothing planted beside the public function makes the
-- watch silent or the view's re-creation by pg_upgrade fail.
CREATE VIEW snowflake_cluster_problems AS
    SELECT c.node, c.worker_id, c.layout, c.problem FROM snowflake_id_internal.snowflake_cluster_check() c;
GRANT SELECT ON snowflake_cluster_problems TO PUBLIC;
