-- The managed edition's configuration: what postgresql.conf holds for the
-- native edition (worker id, layout) is set here by the extension's owner,
-- kept in snowflake_managed_config (owner-only, dumped by pg_dump) and baked
-- as literals into the inlined fast path and the decoders' layout functions.
-- Nothing an ordinary role can SET changes which IDs are drawn.

-- The extension's owner (the owner of its configuration table, which is the
-- role that ran CREATE EXTENSION or the plain script) or a superuser
-- (pg_has_role counts superusers as members of every role); anyone else
-- gets 42501. The functions are also not executable by PUBLIC: this names
-- the rule for a role the owner granted EXECUTE to by mistake.
CREATE FUNCTION snowflake_id_internal.snowflake_managed_require_owner(what text) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    owner pg_catalog.oid := (SELECT c.relowner FROM pg_catalog.pg_class c
                              WHERE c.oid = 'snowflake_id_private.snowflake_managed_config'::pg_catalog.regclass);
BEGIN
    IF NOT pg_catalog.pg_has_role(current_user, owner, 'MEMBER') THEN
        RAISE EXCEPTION 'permission denied for function %', what
            USING ERRCODE = '42501',
                  DETAIL = pg_catalog.format('It changes which IDs every role of this database gets; only the extension''s owner (%s) may.',
                                             pg_catalog.quote_ident(owner::pg_catalog.regrole::pg_catalog.text)),
                  HINT = 'Run it as the role that created the extension (on a managed service, its admin role).';
    END IF;
END
$body$;

-- Bakes the decoders' layout functions again whenever the configuration
-- changes, including when pg_restore loads it into a new database, and
-- leaves the fast path unbuilt (a restore loads the counter's value after
-- the configuration; the first draw brings the restored worker id into
-- force, and the owner's snowflake_set_worker_id builds the fast path).
CREATE FUNCTION snowflake_id_internal.snowflake_managed_config_changed() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $body$
BEGIN
    PERFORM snowflake_id_internal.snowflake_managed_bake(false::pg_catalog.bool);
    RETURN NULL;
END
$body$;
CREATE TRIGGER snowflake_managed_config_changed AFTER INSERT OR UPDATE ON snowflake_id_private.snowflake_managed_config
    FOR EACH ROW EXECUTE FUNCTION snowflake_id_internal.snowflake_managed_config_changed();

-- At the commit of a transaction that ran snowflake_set_worker_id (a
-- deferred trigger fires as the transaction commits, never when it rolls
-- back): the worker id comes into force (snowflake_managed_bake switches to
-- the configuration) and the fast path is built for it. Only after
-- snowflake_set_worker_id (its transaction-local mark): a restore's load of
-- the configuration leaves the switch to the first draw, after the
-- counter's value is loaded.
CREATE FUNCTION snowflake_id_internal.snowflake_managed_config_commit() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $body$
BEGIN
    IF pg_catalog.current_setting('snowflake_id_managed.switch_at_commit', true) OPERATOR(pg_catalog.=) 'on' THEN
        PERFORM pg_catalog.set_config('snowflake_id_managed.switch_at_commit', 'off', true);
        PERFORM snowflake_id_internal.snowflake_managed_bake(true::pg_catalog.bool);
    END IF;
    RETURN NULL;
END
$body$;
CREATE CONSTRAINT TRIGGER snowflake_managed_config_commit AFTER INSERT OR UPDATE ON snowflake_id_private.snowflake_managed_config
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION snowflake_id_internal.snowflake_managed_config_commit();

-- A reinstall (DROP and CREATE EXTENSION, or the plain script run again
-- after its uninstall) finds the counter of the earlier install and the
-- layout it counts in: that layout is this install's from the start, so
-- that stored IDs decode as they did (the decoders' layout functions are
-- baked from it by the trigger above), and the owner sets only the worker
-- id again. Not during a restore: its dump brings the configuration.
DO $seed$
DECLARE
    l bigint := pg_catalog.pg_sequence_last_value(pg_catalog.to_regclass('snowflake_id_state.snowflake_managed_layout'));
    m bigint := ((l % 1024) + 1024) % 1024;
BEGIN
    IF l IS NOT NULL AND NOT EXISTS (SELECT FROM snowflake_id_private.snowflake_managed_config) THEN
        INSERT INTO snowflake_id_private.snowflake_managed_config (epoch, worker_bits, sequence_bits)
            VALUES (pg_catalog.to_timestamp(((l - m) / 1024)::pg_catalog.float8 / 1000::pg_catalog.float8),
                    (m / 32)::integer, (m % 32)::integer);
    END IF;
END
$seed$;

-- This database's worker id: unique among every server and database that
-- issues IDs for the same tables (native servers included). May change at
-- any time: every ID of the new worker id is in a later millisecond than
-- every ID returned before (snowflake_managed_switch), so no ID is ever
-- smaller than one returned before it; IDs stay unique only if no other
-- issuer has the new one. Takes effect when the calling transaction
-- commits (for running statements too), and not at all if it rolls back:
-- until then every draw, the caller's included, uses the worker id in
-- force before.
CREATE FUNCTION snowflake_id_internal.snowflake_set_worker_id(worker_id integer) RETURNS void
    LANGUAGE plpgsql VOLATILE STRICT
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    cfg snowflake_id_private.snowflake_managed_config;
    written bigint;
BEGIN
    PERFORM snowflake_id_internal.snowflake_managed_require_owner('snowflake_set_worker_id');
    SELECT * INTO cfg FROM snowflake_id_private.snowflake_managed_config c FOR UPDATE;
    IF NOT FOUND THEN
        cfg := ROW(true, NULL, '2025-01-01 00:00:00+00', 10, 12, NULL, NULL)::snowflake_id_private.snowflake_managed_config;
    END IF;
    IF worker_id < 0 OR worker_id >= (1 << cfg.worker_bits) THEN
        RAISE EXCEPTION 'snowflake_id: worker id % is out of range for % worker bits', worker_id, cfg.worker_bits
            USING ERRCODE = '22023',
                  HINT = pg_catalog.format('Give a worker id from 0 to %s, unique among the servers issuing IDs together.',
                                           (1 << cfg.worker_bits) - 1);
    END IF;
    -- Checked now (the counter's schema, its owner, its layout), so that a
    -- refusal comes from this call; the switch itself waits for the commit
    -- (snowflake_managed_config_commit): the sequences it sets are not
    -- transactional, and a worker id whose transaction rolled back stayed
    -- in force, unseen by the configuration, with every draw on the slow
    -- path from then on.
    PERFORM snowflake_id_internal.snowflake_managed_state_ensure(cfg.epoch, cfg.worker_bits, cfg.sequence_bits);
    -- Marked before the write below fires the trigger (at once under SET
    -- CONSTRAINTS ... IMMEDIATE, which brings the change into force at
    -- once, as before, and status names it if it is then rolled back).
    PERFORM pg_catalog.set_config('snowflake_id_managed.switch_at_commit', 'on', true);
    -- Written first, and only over the layout read above (a layout set by a
    -- transaction that committed after that read had no row to lock), so
    -- that the switch at commit brings the layout that is stored into force.
    INSERT INTO snowflake_id_private.snowflake_managed_config AS c (worker_id, epoch, worker_bits, sequence_bits, set_in, set_on)
        VALUES (worker_id, cfg.epoch, cfg.worker_bits, cfg.sequence_bits,
                (SELECT d.oid FROM pg_catalog.pg_database d WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database()),
                snowflake_id_internal.snowflake_managed_system_id())
        ON CONFLICT (one) DO UPDATE SET worker_id = excluded.worker_id, set_in = excluded.set_in, set_on = excluded.set_on
        WHERE c.epoch = excluded.epoch AND c.worker_bits = excluded.worker_bits AND c.sequence_bits = excluded.sequence_bits;
    GET DIAGNOSTICS written = ROW_COUNT;
    IF written = 0 THEN
        RAISE EXCEPTION 'snowflake_id: the layout changed while the worker id was being set'
            USING ERRCODE = '40001', HINT = 'Run snowflake_set_worker_id again.';
    END IF;
END
$body$;
COMMENT ON FUNCTION snowflake_id_internal.snowflake_set_worker_id(integer) IS
    'sets this database''s worker id (managed edition; the extension''s owner only)';

-- The layout, only while no worker id is set: what an ID decodes to must not
-- change (invariant 6), and no draw succeeds without a worker id, so none
-- can have read the old layout and issue with it after the change (a rule
-- on "has the counter moved" would race a first draw, and any role with
-- USAGE on the counter could move it). Same checks as the native settings.
CREATE FUNCTION snowflake_id_internal.snowflake_set_layout(epoch timestamptz, worker_bits integer, sequence_bits integer) RETURNS void
    LANGUAGE plpgsql VOLATILE STRICT
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    worker integer;
    reach_ms numeric;
    written bigint;
BEGIN
    PERFORM snowflake_id_internal.snowflake_managed_require_owner('snowflake_set_layout');
    -- The row, locked to the end of the transaction: snowflake_set_worker_id
    -- waits for this change (and then checks the new layout's range).
    worker := (SELECT c.worker_id FROM snowflake_id_private.snowflake_managed_config c FOR UPDATE);
    IF worker IS NOT NULL THEN
        RAISE EXCEPTION 'snowflake_id: the layout cannot change once a worker id is set'
            USING ERRCODE = '55000',
                  DETAIL = pg_catalog.format('Worker id %s is set: IDs may have been issued, and stored IDs decode with the layout they were made with.', worker),
                  HINT = 'Set the layout before the worker id (in a new database: snowflake_set_layout, then snowflake_set_worker_id); to decode IDs of another layout, use the decoders that take a layout.';
    END IF;
    IF worker_bits < 0 OR sequence_bits < 0 OR worker_bits + sequence_bits > 22 THEN
        RAISE EXCEPTION 'snowflake_id: worker_bits % and sequence_bits % are not a layout', worker_bits, sequence_bits
            USING ERRCODE = '22023', HINT = 'Both at least 0, together at most 22 (the default is 10 and 12).';
    END IF;
    IF pg_catalog.date_part('microseconds', epoch)::pg_catalog.int8 % 1000 <> 0 THEN
        -- As the native snowflake_id.epoch: the timestamp field counts whole
        -- milliseconds from the epoch.
        RAISE EXCEPTION 'snowflake_id: epoch % is not a whole millisecond', epoch
            USING ERRCODE = '22023', HINT = 'Give the epoch in whole milliseconds, such as ''2025-01-01 00:00:00+00'' (the default).';
    END IF;
    IF epoch > pg_catalog.now() OR pg_catalog.isfinite(epoch) IS NOT TRUE THEN
        RAISE EXCEPTION 'snowflake_id: epoch % is not a past instant', epoch
            USING ERRCODE = '22023', HINT = 'Give an instant before now, such as ''2025-01-01 00:00:00+00'' (the default).';
    END IF;
    reach_ms := pg_catalog.power(2::numeric, 63 - worker_bits - sequence_bits);
    IF (pg_catalog.date_part('epoch', pg_catalog.now()) - pg_catalog.date_part('epoch', epoch)) * 1000 >= reach_ms THEN
        RAISE EXCEPTION 'snowflake_id: the timestamp bits of this layout cannot reach past today from epoch %', epoch
            USING ERRCODE = '22023', HINT = 'Give a later epoch or fewer worker and sequence bits.';
    END IF;
    -- Not over a counter that counts in another layout (a reinstall's, whose
    -- layout the install took over): the decoders would be baked for this
    -- one and decode the stored IDs wrongly.
    PERFORM snowflake_id_internal.snowflake_managed_check_layout(epoch, worker_bits, sequence_bits);
    -- Checked again on the row as it is when written: a worker id set by a
    -- transaction that committed after the check above (its row was not
    -- there to lock) wins, and this change is refused.
    INSERT INTO snowflake_id_private.snowflake_managed_config AS c (epoch, worker_bits, sequence_bits)
        VALUES (epoch, worker_bits, sequence_bits)
        ON CONFLICT (one) DO UPDATE SET epoch = excluded.epoch, worker_bits = excluded.worker_bits,
                                        sequence_bits = excluded.sequence_bits
        WHERE c.worker_id IS NULL;
    GET DIAGNOSTICS written = ROW_COUNT;
    IF written = 0 THEN
        RAISE EXCEPTION 'snowflake_id: the layout cannot change once a worker id is set'
            USING ERRCODE = '55000',
                  DETAIL = 'A worker id was set while this layout change ran: IDs may have been issued since.',
                  HINT = 'Set the layout before the worker id (in a new database: snowflake_set_layout, then snowflake_set_worker_id); to decode IDs of another layout, use the decoders that take a layout.';
    END IF;
END
$body$;
COMMENT ON FUNCTION snowflake_id_internal.snowflake_set_layout(timestamptz, integer, integer) IS
    'sets the epoch and bit split of this database''s IDs, before the first one (managed edition; the extension''s owner only)';

-- Moves the counter past `id`: every later ID is greater (IDs restored from
-- a dump of another database or edition). Past its whole millisecond, since
-- an ID of another worker id in that millisecond may be above ours. More than
-- a day ahead of the clock only with force: a move cannot be taken back.
-- Returns the smallest ID the next call may return.
CREATE FUNCTION snowflake_id_internal.snowflake_advance_past(id bigint, force boolean DEFAULT false) RETURNS bigint
    LANGUAGE plpgsql VOLATILE STRICT
    SET search_path = pg_catalog, pg_temp
    AS $body$
DECLARE
    cfg snowflake_id_private.snowflake_managed_config;
    tick bigint;
    target bigint;
    f bigint;
    off bigint;
BEGIN
    PERFORM snowflake_id_internal.snowflake_managed_require_owner('snowflake_advance_past');
    IF pg_catalog.pg_is_in_recovery() THEN
        PERFORM snowflake_id_internal.snowflake_managed_refuse_standby('snowflake_advance_past()');
    END IF;
    cfg := snowflake_id_internal.snowflake_managed_live();
    IF cfg.worker_id IS NULL THEN
        -- The refusal of a draw without a worker id.
        PERFORM snowflake_id_internal.snowflake_managed_draw(false::pg_catalog.bool);
    END IF;
    IF id < 0 THEN
        RAISE EXCEPTION 'snowflake_id: % is not an ID (negative)', id
            USING ERRCODE = '22003', HINT = 'IDs are positive bigints.';
    END IF;
    tick := id >> (cfg.worker_bits + cfg.sequence_bits);
    IF NOT force AND cfg.epoch + pg_catalog.make_interval(secs => tick / 1000.0) > pg_catalog.clock_timestamp() + interval '1 day' THEN
        RAISE EXCEPTION 'snowflake_id: ID % decodes to %, more than a day ahead of the clock', id,
                        cfg.epoch + pg_catalog.make_interval(secs => tick / 1000.0)
            USING ERRCODE = '22023',
                  DETAIL = 'A move cannot be taken back: every later ID of this database would decode to that instant or later.',
                  HINT = pg_catalog.format('Check the ID. If it is right (IDs copied from a server whose clock ran ahead), run SELECT snowflake_advance_past(%s, force => true);', id);
    END IF;
    IF tick >= snowflake_id_internal.snowflake_managed_last(cfg.worker_bits) >> cfg.sequence_bits THEN
        -- Past the layout's last millisecond there is no next one.
        PERFORM snowflake_id_internal.snowflake_managed_refuse_end();
    END IF;
    target := (tick + 1) << cfg.sequence_bits;
    PERFORM snowflake_id_internal.snowflake_managed_raise(target, 0::pg_catalog.int8,
                                                         snowflake_id_internal.snowflake_managed_last(cfg.worker_bits),
                                                         0::pg_catalog.int8);
    -- The whole lead this leaves is the offset, not a burst: no wait for it
    -- (snowflake_managed_offset).
    f := snowflake_id_internal.snowflake_managed_floor(cfg.epoch, cfg.sequence_bits);
    off := greatest(pg_catalog.pg_sequence_last_value('snowflake_id_state.snowflake_managed_counter'::pg_catalog.regclass) - f, 0);
    PERFORM pg_catalog.setval('snowflake_id_state.snowflake_managed_offset'::pg_catalog.regclass, off, true);
    PERFORM pg_catalog.setval('snowflake_id_private.snowflake_managed_reference'::pg_catalog.regclass, f + off, true);
    RETURN snowflake_id_internal.snowflake_managed_compose(
        pg_catalog.pg_sequence_last_value('snowflake_id_state.snowflake_managed_counter'::pg_catalog.regclass) + 1,
        cfg.worker_id, cfg.worker_bits, cfg.sequence_bits);
END
$body$;
COMMENT ON FUNCTION snowflake_id_internal.snowflake_advance_past(bigint, boolean) IS
    'moves the generator past an ID: every later ID is greater (managed edition; the extension''s owner only)';

REVOKE EXECUTE ON FUNCTION snowflake_id_internal.snowflake_managed_require_owner(text), snowflake_id_internal.snowflake_managed_config_changed(),
    snowflake_id_internal.snowflake_managed_config_commit(),
    snowflake_id_internal.snowflake_set_worker_id(integer), snowflake_id_internal.snowflake_set_layout(timestamptz, integer, integer),
    snowflake_id_internal.snowflake_advance_past(bigint, boolean) FROM PUBLIC;

-- The same three in the extension's schema, where applications and the
-- native edition have them. They call the ones above, bound when created.
-- Another role that can create in the extension's schema can put a
-- look-alike beside them after the install (an untyped literal that
-- prefers text, or one more argument with a default), which an unqualified
-- call would reach or find "not unique": docs/managed.md gives the owner
-- the calls qualified with snowflake_id_internal, where only the owner
-- creates.
CREATE FUNCTION snowflake_set_worker_id(worker_id integer) RETURNS void
    LANGUAGE sql VOLATILE STRICT
    BEGIN ATOMIC
        SELECT snowflake_id_internal.snowflake_set_worker_id(worker_id);
    END;
COMMENT ON FUNCTION snowflake_set_worker_id(integer) IS
    'sets this database''s worker id (managed edition; the extension''s owner only)';
CREATE FUNCTION snowflake_set_layout(epoch timestamptz, worker_bits integer, sequence_bits integer) RETURNS void
    LANGUAGE sql VOLATILE STRICT
    BEGIN ATOMIC
        SELECT snowflake_id_internal.snowflake_set_layout(epoch, worker_bits, sequence_bits);
    END;
COMMENT ON FUNCTION snowflake_set_layout(timestamptz, integer, integer) IS
    'sets the epoch and bit split of this database''s IDs, before the first one (managed edition; the extension''s owner only)';
CREATE FUNCTION snowflake_advance_past(id bigint, force boolean DEFAULT false) RETURNS bigint
    LANGUAGE sql VOLATILE STRICT
    RETURN snowflake_id_internal.snowflake_advance_past(id, force);
COMMENT ON FUNCTION snowflake_advance_past(bigint, boolean) IS
    'moves the generator past an ID: every later ID is greater (managed edition; the extension''s owner only)';
REVOKE EXECUTE ON FUNCTION snowflake_set_worker_id(integer), snowflake_set_layout(timestamptz, integer, integer),
    snowflake_advance_past(bigint, boolean) FROM PUBLIC;
