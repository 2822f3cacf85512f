-- snowflake_id 0.8.0 -> 0.9.0, managed edition under pg_tle (ALTER EXTENSION
-- snowflake_id UPDATE), the pg_tle counterpart of the plain script's update
-- in place (scripts/managed.sh, plain()).
--
-- 0.8.0 named its schemas snowflake_id_managed (internal functions),
-- snowflake_id_managed_lock (the owner-only configuration and worker id in
-- force) and snowflake_id_managed_state (the counter, outside the
-- extension); this version names them as the native edition names its
-- own: snowflake_id_internal, snowflake_id_private and snowflake_id_state.
-- So: the counter's schema is renamed (its sequences, their values and
-- every grant on them go with it, so the roles that drew still draw), the
-- earlier internals are renamed out of the way, this version's install
-- runs with its functions and view replaced in place (column defaults and
-- views that use them stay), the earlier configuration is set again (the
-- layout, the worker id, and where the worker id was set, so that a copy
-- is still named one), and the earlier internals go.
--
-- The internals renamed out of the way may also be this version's own:
-- the path from 0.7.0 of this release (snowflake_id--0.7.0--0.8.0.sql)
-- runs this version's install, and this script runs after it in the same
-- ALTER EXTENSION.

DO $rename$
DECLARE
    ext pg_catalog.oid := (SELECT e.oid FROM pg_catalog.pg_extension e
                            WHERE e.extname::pg_catalog.text OPERATOR(pg_catalog.~) '^(.+[@-])?snowflake_id$'
                              AND e.extnamespace OPERATOR(pg_catalog.=) '@extschema@'::pg_catalog.regnamespace::pg_catalog.oid);
    -- The earlier internals: the extension's own schemas of either name.
    old_internal pg_catalog.name := (
        SELECT n.nspname FROM pg_catalog.pg_namespace n JOIN pg_catalog.pg_depend d
            ON d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_namespace'::pg_catalog.regclass::pg_catalog.oid
           AND d.objid OPERATOR(pg_catalog.=) n.oid AND d.deptype OPERATOR(pg_catalog.=) 'e'::pg_catalog."char"
           AND d.refobjid OPERATOR(pg_catalog.=) ext
         WHERE n.nspname OPERATOR(pg_catalog.=) ANY (ARRAY['snowflake_id_managed', 'snowflake_id_internal']::pg_catalog.name[])
         ORDER BY n.nspname LIMIT 1);
    old_private pg_catalog.name := CASE old_internal WHEN 'snowflake_id_managed' THEN 'snowflake_id_managed_lock'
                                                     WHEN 'snowflake_id_internal' THEN 'snowflake_id_private' END;
    suffix pg_catalog.text := pg_catalog.substr(pg_catalog.md5(pg_catalog.random()::pg_catalog.text
        OPERATOR(pg_catalog.||) pg_catalog.clock_timestamp()::pg_catalog.text
        OPERATOR(pg_catalog.||) pg_catalog.pg_backend_pid()::pg_catalog.text), 1, 24);
    found pg_catalog.name;
    owner pg_catalog.text;
BEGIN
    IF old_internal IS NULL THEN
        RAISE EXCEPTION 'snowflake_id: no internal schema of the managed edition 0.8.0 to update'
            USING ERRCODE = '42704',
                  HINT = 'Its schema snowflake_id_managed was dropped or renamed: reinstall (DROP EXTENSION, then CREATE EXTENSION: the counter is kept).';
    END IF;
    -- A schema of this version's names in the way, made by a role with
    -- CREATE on the database (or left by hand): refused, naming it, before
    -- anything moves.
    SELECT n.nspname, n.nspowner::pg_catalog.regrole::pg_catalog.text INTO found, owner
      FROM pg_catalog.pg_namespace n
     WHERE (n.nspname OPERATOR(pg_catalog.=) ANY (ARRAY['snowflake_id_internal', 'snowflake_id_private']::pg_catalog.name[])
            AND n.nspname OPERATOR(pg_catalog.<>) ALL (ARRAY[old_internal, old_private]))
        OR (n.nspname OPERATOR(pg_catalog.=) 'snowflake_id_state'::pg_catalog.name
            AND pg_catalog.to_regnamespace('snowflake_id_managed_state') IS NOT NULL)
        OR (n.nspname OPERATOR(pg_catalog.=) 'snowflake_id_state'::pg_catalog.name
            AND n.nspowner OPERATOR(pg_catalog.<>) CURRENT_USER::pg_catalog.regrole::pg_catalog.oid)
     ORDER BY n.nspname
     LIMIT 1;
    IF found IS NOT NULL THEN
        RAISE EXCEPTION 'snowflake_id: schema % exists already (owner %)', found, owner
            USING ERRCODE = '42P06',
                  DETAIL = '0.9.0 renames the managed edition''s schemas to snowflake_id_internal, snowflake_id_private and snowflake_id_state, which only the extension''s owner may create in.',
                  HINT = pg_catalog.format('Check what is in schema %s, then have its owner or a superuser drop or rename it, and update again.', found);
    END IF;
    IF pg_catalog.to_regnamespace('snowflake_id_managed_state') IS NOT NULL THEN
        ALTER SCHEMA snowflake_id_managed_state RENAME TO snowflake_id_state;
    END IF;
    -- Whatever the path from 0.7.0 queued on the configuration it set (its
    -- worker id comes into force as the transaction commits) runs now: the
    -- table goes with the schema below, and a table with trigger events
    -- pending cannot be dropped.
    IF old_internal OPERATOR(pg_catalog.=) 'snowflake_id_internal' THEN
        SET CONSTRAINTS snowflake_id_private.snowflake_managed_config_commit IMMEDIATE;
    END IF;
    EXECUTE pg_catalog.format('ALTER SCHEMA %I RENAME TO %I', old_internal, 'snowflake_id_internal_previous_' OPERATOR(pg_catalog.||) suffix);
    EXECUTE pg_catalog.format('ALTER SCHEMA %I RENAME TO %I', old_private, 'snowflake_id_private_previous_' OPERATOR(pg_catalog.||) suffix);
    PERFORM pg_catalog.set_config('snowflake_id_managed.previous', suffix, true);
END
$rename$;

-- @snowflake_id_install_in_place@

DO $kept$
DECLARE
    cfg record;
    suffix pg_catalog.text := pg_catalog.current_setting('snowflake_id_managed.previous');
BEGIN
    EXECUTE pg_catalog.format('SELECT c.worker_id, c.epoch, c.worker_bits, c.sequence_bits, c.set_in, c.set_on FROM %I.snowflake_managed_config c',
                              'snowflake_id_private_previous_' OPERATOR(pg_catalog.||) suffix) INTO cfg;
    IF cfg.epoch IS NOT NULL THEN
        PERFORM snowflake_id_internal.snowflake_set_layout(cfg.epoch, cfg.worker_bits, cfg.sequence_bits);
        IF cfg.worker_id IS NOT NULL THEN
            PERFORM snowflake_id_internal.snowflake_set_worker_id(cfg.worker_id);
            -- Where it was set, as it was: a database restored from a dump
            -- is still named a copy in snowflake_id_status.
            UPDATE snowflake_id_private.snowflake_managed_config SET set_in = cfg.set_in, set_on = cfg.set_on;
        END IF;
    END IF;
    EXECUTE pg_catalog.format('DROP SCHEMA %I CASCADE', 'snowflake_id_internal_previous_' OPERATOR(pg_catalog.||) suffix);
    EXECUTE pg_catalog.format('DROP SCHEMA %I CASCADE', 'snowflake_id_private_previous_' OPERATOR(pg_catalog.||) suffix);
END
$kept$;
