-- pg_tle only (an extension's objects are not dumped by pg_dump; a plain
-- script's are, as they are): the configuration travels with the database's
-- data, so that a restore into a new database issues with the same layout
-- (and the worker id, which status names as a copy's until the owner sets
-- one). The counter, the generation and the offset need no mark: they are
-- not the extension's (generator.sql, snowflake_managed_state_ensure), so
-- pg_dump dumps them, with their values, as the owner's own sequences.
SELECT pg_catalog.pg_extension_config_dump('snowflake_id_private.snowflake_managed_config'::pg_catalog.regclass, '');
