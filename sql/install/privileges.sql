-- The end of the install: who may call what, and who may create beside it.
-- Moving the generator's mark is for superusers (the function checks too).
REVOKE EXECUTE ON FUNCTION snowflake_advance_past(bigint, boolean) FROM PUBLIC;
-- History slots are finite (a sixteenth of each millisecond per worker id):
-- who may spend them is the DBA's choice (GRANT EXECUTE to an import role).
REVOKE EXECUTE ON FUNCTION snowflake_nextval_at(timestamptz) FROM PUBLIC;

-- Said once, where the DBA installs or updates: roles other than the
-- schema's owner (and its members) and superusers that may create in
-- @extschema@ (docs/security.md, trust rule 1). A WARNING, not a refusal:
-- the extension's own calls are bound; what such a role can still do is
-- make other roles' unqualified calls of the extension's names ambiguous.
DO $writers$
DECLARE
    writers pg_catalog.text;
BEGIN
    SELECT pg_catalog.string_agg(pg_catalog.quote_ident(r.rolname), ', ' ORDER BY r.rolname) INTO writers
      FROM pg_catalog.pg_roles r, pg_catalog.pg_namespace n
     WHERE n.oid OPERATOR(pg_catalog.=) (SELECT e.extnamespace FROM pg_catalog.pg_extension e
                                          WHERE e.extname OPERATOR(pg_catalog.=) 'snowflake_id'::pg_catalog.name)
       AND NOT r.rolsuper AND NOT pg_catalog.pg_has_role(r.oid, n.nspowner, 'USAGE')
       AND r.rolname OPERATOR(pg_catalog.!~) '^pg_'
       AND pg_catalog.has_schema_privilege(r.oid, n.oid, 'CREATE');
    IF writers IS NOT NULL THEN
        RAISE WARNING 'snowflake_id: roles other than the owner of schema % may create in it: %', '@extschema@', writers
            USING DETAIL = 'They cannot change what the extension''s own calls run, but a function they create '
                           'there under one of its names makes other roles'' unqualified calls of that name '
                           'ambiguous, or is called in place of the extension''s by untyped calls.',
                  HINT = 'Revoke CREATE on that schema from them, or install the extension into a schema only its '
                         'owner can create in (docs/security.md).';
    END IF;
END
$writers$;

-- Nothing but what this script grants: what the installing role's ALTER
-- DEFAULT PRIVILEGES gave other roles on the objects just made goes
-- (EXECUTE on the registry's SECURITY DEFINER functions and on
-- snowflake_nextval_at, write access to the registry's tables: a role
-- with either could lease any worker id or rewrite a ceiling). PUBLIC's
-- grants are the script's own, and stay.
DO $defaults$
DECLARE
    o record;
BEGIN
    FOR o IN
        SELECT 'FUNCTION'::pg_catalog.text AS kind, p.oid::pg_catalog.regprocedure::pg_catalog.text AS what, a.grantee
          FROM pg_catalog.pg_depend d
          JOIN pg_catalog.pg_proc p ON p.oid OPERATOR(pg_catalog.=) d.objid
         CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) a
         WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass::pg_catalog.oid
           AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass::pg_catalog.oid
           AND d.refobjid OPERATOR(pg_catalog.=) (SELECT e.oid FROM pg_catalog.pg_extension e
                                                   WHERE e.extname OPERATOR(pg_catalog.=) 'snowflake_id'::pg_catalog.name)
           AND d.deptype OPERATOR(pg_catalog.=) 'e'::pg_catalog."char"
           AND a.grantee OPERATOR(pg_catalog.<>) p.proowner AND a.grantee OPERATOR(pg_catalog.<>) 0::pg_catalog.oid
        UNION
        SELECT 'TABLE'::pg_catalog.text, c.oid::pg_catalog.regclass::pg_catalog.text, a.grantee
          FROM pg_catalog.pg_depend d
          JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) d.objid
         CROSS JOIN LATERAL pg_catalog.aclexplode(c.relacl) a
         WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
           AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass::pg_catalog.oid
           AND d.refobjid OPERATOR(pg_catalog.=) (SELECT e.oid FROM pg_catalog.pg_extension e
                                                   WHERE e.extname OPERATOR(pg_catalog.=) 'snowflake_id'::pg_catalog.name)
           AND d.deptype OPERATOR(pg_catalog.=) 'e'::pg_catalog."char"
           AND a.grantee OPERATOR(pg_catalog.<>) c.relowner AND a.grantee OPERATOR(pg_catalog.<>) 0::pg_catalog.oid
    LOOP
        EXECUTE pg_catalog.format('REVOKE ALL ON %s %s FROM %I', o.kind, o.what, pg_catalog.pg_get_userbyid(o.grantee));
    END LOOP;
END
$defaults$;
