-- snowflake_id 0.7.0 -> 0.8.0, managed edition under pg_tle (ALTER EXTENSION
-- snowflake_id UPDATE), the pg_tle counterpart of the plain script's update
-- in place (scripts/managed.sh, plain()).
--
-- 0.7.0 kept the counter, the generation and the offset with its internal
-- functions in snowflake_id_managed, members of the extension (so DROP
-- EXTENSION took them, and a reinstall repeated stored IDs), and its
-- configuration there too. The install this path runs (that of the release
-- that registers it: scripts/managed.sh puts the install of its own version
-- at the marker below) keeps the counter in snowflake_id_state, outside the
-- extension, the configuration in the owner-only snowflake_id_private and
-- its internal functions in snowflake_id_internal. So: the three sequences
-- move (values and all) to the state schema, the earlier internals are
-- renamed out of the way, the install runs with its functions and view
-- replaced in place (column defaults and views that use them stay), the
-- earlier layout and worker id are set again (the first
-- snowflake_set_worker_id takes the state schema out of the extension and
-- strips grants beyond what drawing needs), and the earlier internals go.

-- The counter's schema is never another role's: the sequences go nowhere
-- else (a role with CREATE on the database may have made one first).
DO $state_owner$
DECLARE
    owner pg_catalog.text := (SELECT n.nspowner::pg_catalog.regrole::pg_catalog.text FROM pg_catalog.pg_namespace n
                               WHERE n.nspname OPERATOR(pg_catalog.=) 'snowflake_id_state'::pg_catalog.name
                                 AND n.nspowner OPERATOR(pg_catalog.<>) CURRENT_USER::pg_catalog.regrole::pg_catalog.oid);
BEGIN
    IF owner IS NOT NULL THEN
        RAISE EXCEPTION 'snowflake_id: schema snowflake_id_state exists already and belongs to role %', owner
            USING ERRCODE = '42P06',
                  DETAIL = 'The managed edition keeps its counter there; the update moves the counter there, and takes over only a schema of the extension''s owner.',
                  HINT = 'Have a superuser or its owner drop or rename that schema, then update again.';
    END IF;
END
$state_owner$;
CREATE SCHEMA IF NOT EXISTS snowflake_id_state;
-- The generation first, then the counter, then the offset: the order in
-- which 0.7.0's draws lock them, so that a draw running as the update
-- starts waits for it rather than deadlock with it (docs/managed.md still
-- asks to stop drawing during the update).
ALTER SEQUENCE snowflake_id_managed.snowflake_managed_generation SET SCHEMA snowflake_id_state;
ALTER SEQUENCE snowflake_id_managed.snowflake_managed_counter SET SCHEMA snowflake_id_state;
ALTER SEQUENCE snowflake_id_managed.snowflake_managed_offset SET SCHEMA snowflake_id_state;
-- 0.7.0 let every role draw (PUBLIC had USAGE on the schema and the
-- counter, SELECT on the generation and the offset); the sequences keep
-- those grants as they move, and the schema gets the same, so that the
-- applications that drew before still draw after the update. A fresh
-- install grants nothing: the NOTICE at the end says how to narrow it.
GRANT USAGE ON SCHEMA snowflake_id_state TO PUBLIC;
-- Renamed to names no role can create in advance (a random suffix, kept in
-- a transaction-local setting): a role with CREATE on the database that
-- made a schema of the fixed name first would stop the update.
DO $rename$
DECLARE
    suffix pg_catalog.text := pg_catalog.substr(pg_catalog.md5(pg_catalog.random()::pg_catalog.text
        OPERATOR(pg_catalog.||) pg_catalog.clock_timestamp()::pg_catalog.text
        OPERATOR(pg_catalog.||) pg_catalog.pg_backend_pid()::pg_catalog.text), 1, 24);
BEGIN
    EXECUTE pg_catalog.format('ALTER SCHEMA snowflake_id_managed RENAME TO %I', 'snowflake_id_internal_previous_' OPERATOR(pg_catalog.||) suffix);
    EXECUTE pg_catalog.format('ALTER SCHEMA snowflake_id_managed_lock RENAME TO %I', 'snowflake_id_private_previous_' OPERATOR(pg_catalog.||) suffix);
    PERFORM pg_catalog.set_config('snowflake_id_managed.previous', suffix, true);
END
$rename$;

-- @snowflake_id_install_in_place@

DO $kept$
DECLARE
    cfg record;
    suffix pg_catalog.text := pg_catalog.current_setting('snowflake_id_managed.previous');
BEGIN
    EXECUTE pg_catalog.format('SELECT c.worker_id, c.epoch, c.worker_bits, c.sequence_bits FROM %I.snowflake_managed_config c',
                              'snowflake_id_internal_previous_' OPERATOR(pg_catalog.||) suffix) INTO cfg;
    IF cfg.epoch IS NOT NULL THEN
        PERFORM snowflake_id_internal.snowflake_set_layout(cfg.epoch, cfg.worker_bits, cfg.sequence_bits);
        IF cfg.worker_id IS NOT NULL THEN
            PERFORM snowflake_id_internal.snowflake_set_worker_id(cfg.worker_id);
        END IF;
    END IF;
    EXECUTE pg_catalog.format('DROP SCHEMA %I CASCADE', 'snowflake_id_internal_previous_' OPERATOR(pg_catalog.||) suffix);
    EXECUTE pg_catalog.format('DROP SCHEMA %I CASCADE', 'snowflake_id_private_previous_' OPERATOR(pg_catalog.||) suffix);
END
$kept$;
DO $narrow$
BEGIN
    RAISE NOTICE 'snowflake_id: every role may still draw IDs, as with 0.7.0 (PUBLIC keeps its privileges on schema snowflake_id_state)'
        USING HINT = 'To keep drawing to the roles that need it, revoke them from PUBLIC and grant them to those roles (docs/managed.md, "Drawing roles").';
END
$narrow$;
