-- The managed edition's layout, as three IMMUTABLE functions with literal
-- bodies: the same default as the native edition (snowflake_id.epoch,
-- worker_bits, sequence_bits in src/settings; 2025-01-01 00:00:00+00, 10, 12).
--
-- Literals, not a table read, so that the planner inlines them into the
-- server-layout accessors (snowflake_timestamp(id) and the others) and folds
-- every layout-derived quantity into a constant: the accessors then cost
-- what the explicit-layout forms with constants cost. IMMUTABLE is true for
-- as long as the layout holds, and the layout may change only before the
-- first ID (snowflake_set_layout refuses afterwards, 55000): the
-- configuration rewrites these bodies, with literals again, when a DBA sets
-- another layout, together with the generator's baked constants, so that
-- what an ID decodes to never changes once IDs exist. In
-- snowflake_id_internal, where only the owner creates, since 0.9.0 (0.8.0
-- had them in the extension's schema): the bodies that call them are
-- created again from their text by pg_dump and pg_upgrade, and a look-alike
-- with one more defaulted argument beside them there would make those calls
-- "not unique" and stop the restore.
CREATE FUNCTION snowflake_id_internal.snowflake_managed_epoch() RETURNS timestamptz
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN '2025-01-01 00:00:00+00'::pg_catalog.timestamptz;
COMMENT ON FUNCTION snowflake_id_internal.snowflake_managed_epoch() IS
    'the instant timestamp 0 of this database''s IDs stands for (set by snowflake_set_layout)';

CREATE FUNCTION snowflake_id_internal.snowflake_managed_worker_bits() RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN 10;
COMMENT ON FUNCTION snowflake_id_internal.snowflake_managed_worker_bits() IS
    'the bits of this database''s IDs that hold the worker id (set by snowflake_set_layout)';

CREATE FUNCTION snowflake_id_internal.snowflake_managed_sequence_bits() RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN 12;
COMMENT ON FUNCTION snowflake_id_internal.snowflake_managed_sequence_bits() IS
    'the bits of this database''s IDs that number the IDs of one millisecond (set by snowflake_set_layout)';

-- The same three in the extension's schema, as in 0.8.0, for whoever reads
-- the layout there: entry points calling the ones above (bound when
-- created; the planner inlines both). The edition's own bodies call the
-- ones above.
CREATE FUNCTION snowflake_managed_epoch() RETURNS timestamptz
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN snowflake_id_internal.snowflake_managed_epoch();
COMMENT ON FUNCTION snowflake_managed_epoch() IS
    'the instant timestamp 0 of this database''s IDs stands for (set by snowflake_set_layout)';
CREATE FUNCTION snowflake_managed_worker_bits() RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN snowflake_id_internal.snowflake_managed_worker_bits();
COMMENT ON FUNCTION snowflake_managed_worker_bits() IS
    'the bits of this database''s IDs that hold the worker id (set by snowflake_set_layout)';
CREATE FUNCTION snowflake_managed_sequence_bits() RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN snowflake_id_internal.snowflake_managed_sequence_bits();
COMMENT ON FUNCTION snowflake_managed_sequence_bits() IS
    'the bits of this database''s IDs that number the IDs of one millisecond (set by snowflake_set_layout)';
