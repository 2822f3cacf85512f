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
-- A node names its postmaster start's random instance in the session
-- setting snowflake_registry.instance (set once per connection, like
-- synchronous_commit): the registry records it with a grant, and refuses a
-- start of the same lease by another instance while the recorded one runs
-- (a copy of a running node's data directory). A setting rather than an
-- argument keeps the functions' signatures, and so the grants DBAs gave
-- them and the nodes of 0.3.0, which name no instance and are not fenced.
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
    -- The postmaster start it was granted to or first renewed by
    -- (snowflake_registry.instance; NULL: a node older than 0.4.0).
    instance bigint,
    PRIMARY KEY (namespace, worker_id),
    CHECK (ceiling_tick >= floor_tick - 1)
);
COMMENT ON TABLE snowflake_registry_leases IS
    'snowflake_id registry: the lease of each worker id ever granted; ceiling_tick only grows while one holder has it';

-- Registry data must survive pg_dump and pg_restore of the registry
-- database: a lost ceiling would let a new holder start below IDs issued.
SELECT pg_catalog.pg_extension_config_dump('snowflake_registry_namespaces', '');
SELECT pg_catalog.pg_extension_config_dump('snowflake_registry_leases', '');

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

