-- The managed edition's short text forms: fixed-width base62 and Crockford
-- base32, with the native edition's exact results and errors (the rules are
-- core/src/id_text.rs; docs/text-forms.md; tests/managed_decode.rs compares
-- the two editions).
--
-- As the accessors (accessors.sql, whose header says why): one inlined SQL
-- expression each, naming @extschema@ and pg_catalog, NULL in NULL out
-- without the STRICT label (a STRICT SQL function with a CASE is not
-- inlined). Encoding is a digit per symbol, looked up in the alphabet.
-- Decoding takes the text that needs no care, matched by one regular
-- expression (the symbols of the form, not more than fit a bigint), and
-- reads each symbol's value from a table indexed by its code; all other
-- text (hyphens, a stray character, empty, too long, too large) goes to a
-- PL/pgSQL function that reads it as the native decoder does, symbol by
-- symbol, and returns its value or raises the native error.

-- A character as messages quote it, by the project's rule (core/src/quote.rs,
-- docs/text-forms.md): printable ASCII as itself, a quote or backslash
-- escaped, \t \n \r \0, and any other character as \u{hex}; ASCII in any
-- database encoding, and no Unicode table that a new release would change.
-- Every operator named by schema: a body bound when it is created.
CREATE FUNCTION snowflake_id_internal.snowflake_managed_quoted_char(c text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN ''''::text OPERATOR(pg_catalog.||) CASE
        WHEN pg_catalog.ascii(c) OPERATOR(pg_catalog.=) 0 THEN '\0'::text
        WHEN pg_catalog.ascii(c) OPERATOR(pg_catalog.=) 9 THEN '\t'::text
        WHEN pg_catalog.ascii(c) OPERATOR(pg_catalog.=) 10 THEN '\n'::text
        WHEN pg_catalog.ascii(c) OPERATOR(pg_catalog.=) 13 THEN '\r'::text
        WHEN pg_catalog.ascii(c) OPERATOR(pg_catalog.=) 39 THEN '\'''::text
        WHEN pg_catalog.ascii(c) OPERATOR(pg_catalog.=) 92 THEN '\\'::text
        WHEN pg_catalog.ascii(c) OPERATOR(pg_catalog.>=) 32 AND pg_catalog.ascii(c) OPERATOR(pg_catalog.<=) 126 THEN c
        ELSE '\u{'::text OPERATOR(pg_catalog.||) pg_catalog.to_hex(pg_catalog.ascii(c)) OPERATOR(pg_catalog.||) '}'::text
    END OPERATOR(pg_catalog.||) ''''::text;

-- Reads text of a form (62 or 32) as core's id_text::decode: every character
-- checked before the length, a hyphen only between two base32 symbols, the
-- first problem raised with its SQLSTATE, HINT and a DETAIL quoting the text.
CREATE FUNCTION snowflake_id_internal.snowflake_managed_from_text(text text, radix integer) RETURNS bigint
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    name text := CASE radix WHEN 62 THEN 'base62' ELSE 'Crockford base32' END;
    width integer := CASE radix WHEN 62 THEN 11 ELSE 13 END;
    alphabet text := CASE radix
        WHEN 62 THEN '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
        ELSE '0123456789ABCDEFGHJKMNPQRSTVWXYZ0123456789abcdefghjkmnpqrstvwxyzIiLlOo' END;
    -- The values of the base32 aliases after the two cases: I i L l 1, O o 0.
    aliases integer[] := ARRAY[1, 1, 1, 1, 0, 0];
    hint text := CASE radix
        WHEN 62 THEN 'Base62 text is 1 to 11 of 0-9, A-Z and a-z (case matters).'
        ELSE 'Crockford base32 text is 1 to 13 of 0-9 and A-Z less U, in any case; I and L read as 1, O as 0, '
             'and single hyphens between symbols are ignored.' END;
    detail text := 'The text was "' || left(text, 40) || CASE WHEN char_length(text) > 40 THEN '...' ELSE '' END || '".';
    len integer := char_length(text);
    value numeric := 0;
    symbols integer := 0;
    c text;
    at integer;
    bad integer;
BEGIN
    FOR i IN 1 .. len LOOP
        c := substr(text, i, 1);
        bad := NULL;
        IF radix = 32 AND c COLLATE "C" = '-' THEN
            -- Only between two symbols: a leading one would read "-5" as 5.
            IF symbols = 0 OR i = len OR strpos(alphabet COLLATE "C", substr(text, i + 1, 1) COLLATE "C") = 0
               OR substr(text, i + 1, 1) COLLATE "C" = '-' THEN
                bad := i;
            ELSE
                CONTINUE;
            END IF;
        ELSE
            at := strpos(alphabet COLLATE "C", c COLLATE "C");
            IF at = 0 THEN
                bad := i;
            END IF;
        END IF;
        IF bad IS NOT NULL THEN
            RAISE EXCEPTION USING
                ERRCODE = '22P02',
                MESSAGE = format('snowflake_id: invalid character %s at position %s in %s text',
                                 snowflake_id_internal.snowflake_managed_quoted_char(c), bad, name),
                DETAIL = detail, HINT = hint;
        END IF;
        symbols := symbols + 1;
        value := value * radix + CASE
            WHEN radix = 62 THEN at - 1
            WHEN at <= 64 THEN (at - 1) % 32
            ELSE aliases[at - 64] END;
    END LOOP;
    IF symbols = 0 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22P02', MESSAGE = format('snowflake_id: empty %s text is not a snowflake ID', name),
            DETAIL = detail, HINT = hint;
    END IF;
    IF symbols > width THEN
        RAISE EXCEPTION USING
            ERRCODE = '22P02',
            MESSAGE = format('snowflake_id: %s text of %s symbols is too long for a snowflake ID (at most %s)',
                             name, symbols, width),
            DETAIL = detail, HINT = hint;
    END IF;
    IF value > 9223372036854775807 THEN
        RAISE EXCEPTION USING
            ERRCODE = '22003', MESSAGE = format('snowflake_id: %s text is above the largest bigint', name),
            DETAIL = detail,
            HINT = format('The largest ID, 9223372036854775807, is %s in %s.',
                          CASE radix WHEN 62 THEN 'AzL8n0Y58m7' ELSE '7ZZZZZZZZZZZZ' END, name);
    END IF;
    RETURN value::bigint;
END
$$;

CREATE FUNCTION snowflake_to_base62(id bigint) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE
        WHEN id IS NULL THEN NULL::pg_catalog.text
        WHEN id OPERATOR(pg_catalog.<) 0::bigint THEN snowflake_id_internal.snowflake_managed_negative_refusal(NULL::pg_catalog.text, id, NULL::pg_catalog.timestamptz, NULL::integer, NULL::integer)
        ELSE pg_catalog.substr('0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'::pg_catalog.text,
                 ((id OPERATOR(pg_catalog./) 839299365868340224::bigint) OPERATOR(pg_catalog.+) 1::bigint)::integer, 1)
             OPERATOR(pg_catalog.||) pg_catalog.substr('0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'::pg_catalog.text,
                 (((id OPERATOR(pg_catalog./) 13537086546263552::bigint) OPERATOR(pg_catalog.%) 62::bigint) OPERATOR(pg_catalog.+) 1::bigint)::integer, 1)
             OPERATOR(pg_catalog.||) pg_catalog.substr('0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'::pg_catalog.text,
                 (((id OPERATOR(pg_catalog./) 218340105584896::bigint) OPERATOR(pg_catalog.%) 62::bigint) OPERATOR(pg_catalog.+) 1::bigint)::integer, 1)
             OPERATOR(pg_catalog.||) pg_catalog.substr('0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'::pg_catalog.text,
                 (((id OPERATOR(pg_catalog./) 3521614606208::bigint) OPERATOR(pg_catalog.%) 62::bigint) OPERATOR(pg_catalog.+) 1::bigint)::integer, 1)
             OPERATOR(pg_catalog.||) pg_catalog.substr('0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'::pg_catalog.text,
                 (((id OPERATOR(pg_catalog./) 56800235584::bigint) OPERATOR(pg_catalog.%) 62::bigint) OPERATOR(pg_catalog.+) 1::bigint)::integer, 1)
             OPERATOR(pg_catalog.||) pg_catalog.substr('0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'::pg_catalog.text,
                 (((id OPERATOR(pg_catalog./) 916132832::bigint) OPERATOR(pg_catalog.%) 62::bigint) OPERATOR(pg_catalog.+) 1::bigint)::integer, 1)
             OPERATOR(pg_catalog.||) pg_catalog.substr('0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'::pg_catalog.text,
                 (((id OPERATOR(pg_catalog./) 14776336::bigint) OPERATOR(pg_catalog.%) 62::bigint) OPERATOR(pg_catalog.+) 1::bigint)::integer, 1)
             OPERATOR(pg_catalog.||) pg_catalog.substr('0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'::pg_catalog.text,
                 (((id OPERATOR(pg_catalog./) 238328::bigint) OPERATOR(pg_catalog.%) 62::bigint) OPERATOR(pg_catalog.+) 1::bigint)::integer, 1)
             OPERATOR(pg_catalog.||) pg_catalog.substr('0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'::pg_catalog.text,
                 (((id OPERATOR(pg_catalog./) 3844::bigint) OPERATOR(pg_catalog.%) 62::bigint) OPERATOR(pg_catalog.+) 1::bigint)::integer, 1)
             OPERATOR(pg_catalog.||) pg_catalog.substr('0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'::pg_catalog.text,
                 (((id OPERATOR(pg_catalog./) 62::bigint) OPERATOR(pg_catalog.%) 62::bigint) OPERATOR(pg_catalog.+) 1::bigint)::integer, 1)
             OPERATOR(pg_catalog.||) pg_catalog.substr('0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'::pg_catalog.text,
                 ((id OPERATOR(pg_catalog.%) 62::bigint) OPERATOR(pg_catalog.+) 1::bigint)::integer, 1)
    END;
COMMENT ON FUNCTION snowflake_to_base62(bigint) IS 'an ID as 11 base62 symbols (0-9A-Za-z), sorting as the IDs';

CREATE FUNCTION snowflake_to_base32(id bigint) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE
        WHEN id IS NULL THEN NULL::pg_catalog.text
        WHEN id OPERATOR(pg_catalog.<) 0::bigint THEN snowflake_id_internal.snowflake_managed_negative_refusal(NULL::pg_catalog.text, id, NULL::pg_catalog.timestamptz, NULL::integer, NULL::integer)
        ELSE pg_catalog.substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ'::pg_catalog.text,
                 ((id OPERATOR(pg_catalog.>>) 60) OPERATOR(pg_catalog.+) 1::bigint)::integer, 1)
             OPERATOR(pg_catalog.||) pg_catalog.substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ'::pg_catalog.text,
                 (((id OPERATOR(pg_catalog.>>) 55) OPERATOR(pg_catalog.&) 31::bigint) OPERATOR(pg_catalog.+) 1::bigint)::integer, 1)
             OPERATOR(pg_catalog.||) pg_catalog.substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ'::pg_catalog.text,
                 (((id OPERATOR(pg_catalog.>>) 50) OPERATOR(pg_catalog.&) 31::bigint) OPERATOR(pg_catalog.+) 1::bigint)::integer, 1)
             OPERATOR(pg_catalog.||) pg_catalog.substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ'::pg_catalog.text,
                 (((id OPERATOR(pg_catalog.>>) 45) OPERATOR(pg_catalog.&) 31::bigint) OPERATOR(pg_catalog.+) 1::bigint)::integer, 1)
             OPERATOR(pg_catalog.||) pg_catalog.substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ'::pg_catalog.text,
                 (((id OPERATOR(pg_catalog.>>) 40) OPERATOR(pg_catalog.&) 31::bigint) OPERATOR(pg_catalog.+) 1::bigint)::integer, 1)
             OPERATOR(pg_catalog.||) pg_catalog.substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ'::pg_catalog.text,
                 (((id OPERATOR(pg_catalog.>>) 35) OPERATOR(pg_catalog.&) 31::bigint) OPERATOR(pg_catalog.+) 1::bigint)::integer, 1)
             OPERATOR(pg_catalog.||) pg_catalog.substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ'::pg_catalog.text,
                 (((id OPERATOR(pg_catalog.>>) 30) OPERATOR(pg_catalog.&) 31::bigint) OPERATOR(pg_catalog.+) 1::bigint)::integer, 1)
             OPERATOR(pg_catalog.||) pg_catalog.substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ'::pg_catalog.text,
                 (((id OPERATOR(pg_catalog.>>) 25) OPERATOR(pg_catalog.&) 31::bigint) OPERATOR(pg_catalog.+) 1::bigint)::integer, 1)
             OPERATOR(pg_catalog.||) pg_catalog.substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ'::pg_catalog.text,
                 (((id OPERATOR(pg_catalog.>>) 20) OPERATOR(pg_catalog.&) 31::bigint) OPERATOR(pg_catalog.+) 1::bigint)::integer, 1)
             OPERATOR(pg_catalog.||) pg_catalog.substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ'::pg_catalog.text,
                 (((id OPERATOR(pg_catalog.>>) 15) OPERATOR(pg_catalog.&) 31::bigint) OPERATOR(pg_catalog.+) 1::bigint)::integer, 1)
             OPERATOR(pg_catalog.||) pg_catalog.substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ'::pg_catalog.text,
                 (((id OPERATOR(pg_catalog.>>) 10) OPERATOR(pg_catalog.&) 31::bigint) OPERATOR(pg_catalog.+) 1::bigint)::integer, 1)
             OPERATOR(pg_catalog.||) pg_catalog.substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ'::pg_catalog.text,
                 (((id OPERATOR(pg_catalog.>>) 5) OPERATOR(pg_catalog.&) 31::bigint) OPERATOR(pg_catalog.+) 1::bigint)::integer, 1)
             OPERATOR(pg_catalog.||) pg_catalog.substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ'::pg_catalog.text,
                 ((id OPERATOR(pg_catalog.&) 31::bigint) OPERATOR(pg_catalog.+) 1::bigint)::integer, 1)
    END;
COMMENT ON FUNCTION snowflake_to_base32(bigint) IS 'an ID as 13 Crockford base32 symbols, sorting as the IDs';

-- The ID a text stands for. The symbols' values come from a table of 128
-- bytes indexed by character code (ascii('') is 0, and 0 is the value of a
-- position before the text's first symbol), the last symbol first. Each
-- term is parenthesized: OPERATOR(pg_catalog.x) forms share one precedence.
CREATE FUNCTION snowflake_from_base62(text text) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE
        WHEN text IS NULL THEN NULL::bigint
        WHEN (text COLLATE pg_catalog."C") OPERATOR(pg_catalog.~) '^[0-9A-Za-z]{1,11}$'::pg_catalog.text
             AND (pg_catalog.char_length(text) OPERATOR(pg_catalog.<) 11
                  OR (text COLLATE pg_catalog."C") OPERATOR(pg_catalog.<=) 'AzL8n0Y58m7'::pg_catalog.text)
            THEN ((pg_catalog.get_byte(pg_catalog.decode('00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010203040506070809000000000000000a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122230000000000002425262728292a2b2c2d2e2f303132333435363738393a3b3c3d0000000000'::pg_catalog.text, 'hex'::pg_catalog.text),
                     pg_catalog.ascii(pg_catalog.substr(text, pg_catalog.char_length(text) OPERATOR(pg_catalog.-) 0, 1))))::bigint OPERATOR(pg_catalog.*) 1::bigint)
                 OPERATOR(pg_catalog.+) ((pg_catalog.get_byte(pg_catalog.decode('00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010203040506070809000000000000000a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122230000000000002425262728292a2b2c2d2e2f303132333435363738393a3b3c3d0000000000'::pg_catalog.text, 'hex'::pg_catalog.text),
                     pg_catalog.ascii(pg_catalog.substr(text, pg_catalog.char_length(text) OPERATOR(pg_catalog.-) 1, 1))))::bigint OPERATOR(pg_catalog.*) 62::bigint)
                 OPERATOR(pg_catalog.+) ((pg_catalog.get_byte(pg_catalog.decode('00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010203040506070809000000000000000a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122230000000000002425262728292a2b2c2d2e2f303132333435363738393a3b3c3d0000000000'::pg_catalog.text, 'hex'::pg_catalog.text),
                     pg_catalog.ascii(pg_catalog.substr(text, pg_catalog.char_length(text) OPERATOR(pg_catalog.-) 2, 1))))::bigint OPERATOR(pg_catalog.*) 3844::bigint)
                 OPERATOR(pg_catalog.+) ((pg_catalog.get_byte(pg_catalog.decode('00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010203040506070809000000000000000a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122230000000000002425262728292a2b2c2d2e2f303132333435363738393a3b3c3d0000000000'::pg_catalog.text, 'hex'::pg_catalog.text),
                     pg_catalog.ascii(pg_catalog.substr(text, pg_catalog.char_length(text) OPERATOR(pg_catalog.-) 3, 1))))::bigint OPERATOR(pg_catalog.*) 238328::bigint)
                 OPERATOR(pg_catalog.+) ((pg_catalog.get_byte(pg_catalog.decode('00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010203040506070809000000000000000a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122230000000000002425262728292a2b2c2d2e2f303132333435363738393a3b3c3d0000000000'::pg_catalog.text, 'hex'::pg_catalog.text),
                     pg_catalog.ascii(pg_catalog.substr(text, pg_catalog.char_length(text) OPERATOR(pg_catalog.-) 4, 1))))::bigint OPERATOR(pg_catalog.*) 14776336::bigint)
                 OPERATOR(pg_catalog.+) ((pg_catalog.get_byte(pg_catalog.decode('00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010203040506070809000000000000000a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122230000000000002425262728292a2b2c2d2e2f303132333435363738393a3b3c3d0000000000'::pg_catalog.text, 'hex'::pg_catalog.text),
                     pg_catalog.ascii(pg_catalog.substr(text, pg_catalog.char_length(text) OPERATOR(pg_catalog.-) 5, 1))))::bigint OPERATOR(pg_catalog.*) 916132832::bigint)
                 OPERATOR(pg_catalog.+) ((pg_catalog.get_byte(pg_catalog.decode('00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010203040506070809000000000000000a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122230000000000002425262728292a2b2c2d2e2f303132333435363738393a3b3c3d0000000000'::pg_catalog.text, 'hex'::pg_catalog.text),
                     pg_catalog.ascii(pg_catalog.substr(text, pg_catalog.char_length(text) OPERATOR(pg_catalog.-) 6, 1))))::bigint OPERATOR(pg_catalog.*) 56800235584::bigint)
                 OPERATOR(pg_catalog.+) ((pg_catalog.get_byte(pg_catalog.decode('00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010203040506070809000000000000000a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122230000000000002425262728292a2b2c2d2e2f303132333435363738393a3b3c3d0000000000'::pg_catalog.text, 'hex'::pg_catalog.text),
                     pg_catalog.ascii(pg_catalog.substr(text, pg_catalog.char_length(text) OPERATOR(pg_catalog.-) 7, 1))))::bigint OPERATOR(pg_catalog.*) 3521614606208::bigint)
                 OPERATOR(pg_catalog.+) ((pg_catalog.get_byte(pg_catalog.decode('00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010203040506070809000000000000000a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122230000000000002425262728292a2b2c2d2e2f303132333435363738393a3b3c3d0000000000'::pg_catalog.text, 'hex'::pg_catalog.text),
                     pg_catalog.ascii(pg_catalog.substr(text, pg_catalog.char_length(text) OPERATOR(pg_catalog.-) 8, 1))))::bigint OPERATOR(pg_catalog.*) 218340105584896::bigint)
                 OPERATOR(pg_catalog.+) ((pg_catalog.get_byte(pg_catalog.decode('00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010203040506070809000000000000000a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122230000000000002425262728292a2b2c2d2e2f303132333435363738393a3b3c3d0000000000'::pg_catalog.text, 'hex'::pg_catalog.text),
                     pg_catalog.ascii(pg_catalog.substr(text, pg_catalog.char_length(text) OPERATOR(pg_catalog.-) 9, 1))))::bigint OPERATOR(pg_catalog.*) 13537086546263552::bigint)
                 OPERATOR(pg_catalog.+) ((pg_catalog.get_byte(pg_catalog.decode('00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010203040506070809000000000000000a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122230000000000002425262728292a2b2c2d2e2f303132333435363738393a3b3c3d0000000000'::pg_catalog.text, 'hex'::pg_catalog.text),
                     pg_catalog.ascii(pg_catalog.substr(text, pg_catalog.char_length(text) OPERATOR(pg_catalog.-) 10, 1))))::bigint OPERATOR(pg_catalog.*) 839299365868340224::bigint)
        ELSE snowflake_id_internal.snowflake_managed_from_text(text, 62)
    END;
COMMENT ON FUNCTION snowflake_from_base62(text) IS 'the ID base62 text stands for';

CREATE FUNCTION snowflake_from_base32(text text) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE
        WHEN text IS NULL THEN NULL::bigint
        WHEN (text COLLATE pg_catalog."C") OPERATOR(pg_catalog.~) '^([0-9A-TV-Za-tv-z]{1,12}|[0-7IiLlOo][0-9A-TV-Za-tv-z]{12})$'::pg_catalog.text
            THEN ((pg_catalog.get_byte(pg_catalog.decode('00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010203040506070809000000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000'::pg_catalog.text, 'hex'::pg_catalog.text),
                     pg_catalog.ascii(pg_catalog.substr(text, pg_catalog.char_length(text) OPERATOR(pg_catalog.-) 0, 1))))::bigint OPERATOR(pg_catalog.<<) 0)
                 OPERATOR(pg_catalog.+) ((pg_catalog.get_byte(pg_catalog.decode('00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010203040506070809000000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000'::pg_catalog.text, 'hex'::pg_catalog.text),
                     pg_catalog.ascii(pg_catalog.substr(text, pg_catalog.char_length(text) OPERATOR(pg_catalog.-) 1, 1))))::bigint OPERATOR(pg_catalog.<<) 5)
                 OPERATOR(pg_catalog.+) ((pg_catalog.get_byte(pg_catalog.decode('00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010203040506070809000000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000'::pg_catalog.text, 'hex'::pg_catalog.text),
                     pg_catalog.ascii(pg_catalog.substr(text, pg_catalog.char_length(text) OPERATOR(pg_catalog.-) 2, 1))))::bigint OPERATOR(pg_catalog.<<) 10)
                 OPERATOR(pg_catalog.+) ((pg_catalog.get_byte(pg_catalog.decode('00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010203040506070809000000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000'::pg_catalog.text, 'hex'::pg_catalog.text),
                     pg_catalog.ascii(pg_catalog.substr(text, pg_catalog.char_length(text) OPERATOR(pg_catalog.-) 3, 1))))::bigint OPERATOR(pg_catalog.<<) 15)
                 OPERATOR(pg_catalog.+) ((pg_catalog.get_byte(pg_catalog.decode('00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010203040506070809000000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000'::pg_catalog.text, 'hex'::pg_catalog.text),
                     pg_catalog.ascii(pg_catalog.substr(text, pg_catalog.char_length(text) OPERATOR(pg_catalog.-) 4, 1))))::bigint OPERATOR(pg_catalog.<<) 20)
                 OPERATOR(pg_catalog.+) ((pg_catalog.get_byte(pg_catalog.decode('00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010203040506070809000000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000'::pg_catalog.text, 'hex'::pg_catalog.text),
                     pg_catalog.ascii(pg_catalog.substr(text, pg_catalog.char_length(text) OPERATOR(pg_catalog.-) 5, 1))))::bigint OPERATOR(pg_catalog.<<) 25)
                 OPERATOR(pg_catalog.+) ((pg_catalog.get_byte(pg_catalog.decode('00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010203040506070809000000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000'::pg_catalog.text, 'hex'::pg_catalog.text),
                     pg_catalog.ascii(pg_catalog.substr(text, pg_catalog.char_length(text) OPERATOR(pg_catalog.-) 6, 1))))::bigint OPERATOR(pg_catalog.<<) 30)
                 OPERATOR(pg_catalog.+) ((pg_catalog.get_byte(pg_catalog.decode('00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010203040506070809000000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000'::pg_catalog.text, 'hex'::pg_catalog.text),
                     pg_catalog.ascii(pg_catalog.substr(text, pg_catalog.char_length(text) OPERATOR(pg_catalog.-) 7, 1))))::bigint OPERATOR(pg_catalog.<<) 35)
                 OPERATOR(pg_catalog.+) ((pg_catalog.get_byte(pg_catalog.decode('00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010203040506070809000000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000'::pg_catalog.text, 'hex'::pg_catalog.text),
                     pg_catalog.ascii(pg_catalog.substr(text, pg_catalog.char_length(text) OPERATOR(pg_catalog.-) 8, 1))))::bigint OPERATOR(pg_catalog.<<) 40)
                 OPERATOR(pg_catalog.+) ((pg_catalog.get_byte(pg_catalog.decode('00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010203040506070809000000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000'::pg_catalog.text, 'hex'::pg_catalog.text),
                     pg_catalog.ascii(pg_catalog.substr(text, pg_catalog.char_length(text) OPERATOR(pg_catalog.-) 9, 1))))::bigint OPERATOR(pg_catalog.<<) 45)
                 OPERATOR(pg_catalog.+) ((pg_catalog.get_byte(pg_catalog.decode('00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010203040506070809000000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000'::pg_catalog.text, 'hex'::pg_catalog.text),
                     pg_catalog.ascii(pg_catalog.substr(text, pg_catalog.char_length(text) OPERATOR(pg_catalog.-) 10, 1))))::bigint OPERATOR(pg_catalog.<<) 50)
                 OPERATOR(pg_catalog.+) ((pg_catalog.get_byte(pg_catalog.decode('00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010203040506070809000000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000'::pg_catalog.text, 'hex'::pg_catalog.text),
                     pg_catalog.ascii(pg_catalog.substr(text, pg_catalog.char_length(text) OPERATOR(pg_catalog.-) 11, 1))))::bigint OPERATOR(pg_catalog.<<) 55)
                 OPERATOR(pg_catalog.+) ((pg_catalog.get_byte(pg_catalog.decode('00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000010203040506070809000000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000000a0b0c0d0e0f101101121301141500161718191a001b1c1d1e1f0000000000'::pg_catalog.text, 'hex'::pg_catalog.text),
                     pg_catalog.ascii(pg_catalog.substr(text, pg_catalog.char_length(text) OPERATOR(pg_catalog.-) 12, 1))))::bigint OPERATOR(pg_catalog.<<) 60)
        ELSE snowflake_id_internal.snowflake_managed_from_text(text, 32)
    END;
COMMENT ON FUNCTION snowflake_from_base32(text) IS 'the ID Crockford base32 text stands for (any case, I and L as 1, O as 0, hyphens between symbols)';
