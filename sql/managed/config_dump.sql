-- pg_tle only (an extension's objects are not dumped by pg_dump; a plain
-- script's are, as they are): the configuration and the counter travel with
-- the database's data, so that a restore into a new database issues with the
-- same worker id and layout, above every ID of the old one; and the offset
-- and reference (generator.sql), so that a lead from a clock step or an
-- advance is not taken for a burst there.
SELECT pg_catalog.pg_extension_config_dump('snowflake_id_managed.snowflake_managed_config'::pg_catalog.regclass, '');
SELECT pg_catalog.pg_extension_config_dump('snowflake_id_managed.snowflake_managed_counter'::pg_catalog.regclass, '');
SELECT pg_catalog.pg_extension_config_dump('snowflake_id_managed.snowflake_managed_offset'::pg_catalog.regclass, '');
SELECT pg_catalog.pg_extension_config_dump('snowflake_id_managed.snowflake_managed_reference'::pg_catalog.regclass, '');
