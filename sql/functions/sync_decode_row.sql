-- Decode an upstream row codec payload (a change's payload, a current row's
-- _sync_payload) against its layout's columns, as gosync.DecodeRow does:
-- the null bitmap (ceil(n/8) bytes, LSB first, padding bits 0), then the
-- non-null values in column order. columns is a layout's column list,
-- [{"name","type","nullable"}] in the codec's vocabulary (the value of one
-- table in sync_schema_meta.layouts).
--
-- The result is one jsonb object: string -> JSON string, integer -> number,
-- float -> number (NaN, Infinity, -Infinity and -0, which JSON numbers do
-- not carry, are strings: (v->>'c')::float8 recovers every value exactly),
-- boolean -> true/false, json -> the document as parsed jsonb, blob_ref ->
-- the document's text as a JSON string (upstream materializes it as text),
-- bytes and crdt -> a string in bytea's hex form ("\x00ff":
-- (v->>'c')::bytea). A NULL column is an absent key, so v->'c' IS NULL for
-- NULL while the json document null is 'null'::jsonb, as upstream's
-- materialized jsonb columns keep them apart.
--
-- It refuses (22023, naming the column and the byte offset) every payload
-- upstream's decoder refuses, and, because Postgres text and jsonb cannot
-- hold them, a string with U+0000 and a json document with a \u0000 or an
-- unpaired surrogate escape, which upstream's decoder accepts (and its
-- materialized text/jsonb columns cannot store). NULL for a NULL payload.
-- refuse => false answers NULL instead of raising (sync_decode_logged tries
-- layouts with it); a malformed column list is refused either way.
--
-- It runs per change in a backfill: one function call (its pinned
-- search_path costs microseconds per call, so the JSON check is inline),
-- one pass over the columns, values read with substring, and no exception
-- block (a subtransaction, which a parallel worker may not start): UTF-8
-- and JSON are checked before the casts that would fail. json (RFC 8259,
-- JSON.parse's grammar): strings and scalars are replaced by one character
-- each, and innermost arrays and objects reduced to one until a single
-- value is left, or something that is no JSON. blob_ref: such a document whose
-- keys (first occurrence order, the last duplicate's value, as JSON.parse
-- builds the object) are blobId, byteLength, then optional mediaType and
-- name, in that order; byteLength read as JavaScript reads a number (the
-- nearest double) must be an integer in [0, 2^53-1].
CREATE OR REPLACE FUNCTION sync_decode_row(payload bytea, columns jsonb, refuse boolean DEFAULT true)
RETURNS jsonb
LANGUAGE plpgsql
IMMUTABLE
PARALLEL SAFE
SET search_path = pg_catalog, @extschema@, pg_temp
SET extra_float_digits = 1
AS $$
DECLARE
  n integer;
  nb integer;
  len integer := octet_length(payload);
  off integer;
  col jsonb;
  cname text;
  ctype text;
  k bigint;
  x bigint;
  e integer;
  f float8;
  body bytea;
  s text;
  reason text;
  v jsonb;
  value jsonb;
  error text;
  str constant text := '"(?:[^"\\\x01-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"';
  num constant text := '-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?';
  t text;
  prev text;
  esc text;
  j json;
  keys text[];
  what text;
  bl numeric;
BEGIN
  IF payload IS NULL OR columns IS NULL THEN
    RETURN NULL;
  END IF;
  value := '{}';
  <<decode>>
  BEGIN
  IF jsonb_typeof(columns) IS DISTINCT FROM 'array' THEN
    RAISE EXCEPTION 'sync_decode_row: columns must be a JSON array of {"name","type","nullable"}'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  n := jsonb_array_length(columns);
  nb := (n + 7) / 8;
  IF len < nb THEN
    error := format('at byte %s: truncated input: needed %s bytes, have %s', len, nb, len);
    EXIT decode;
  END IF;
  IF n % 8 <> 0 AND get_byte(payload, nb - 1) >> (n % 8) <> 0 THEN
    error := format('at byte %s: non-zero padding bit in row null bitmap', nb - 1);
    EXIT decode;
  END IF;
  off := nb;
  FOR i IN 0 .. n - 1 LOOP
    col := columns -> i;
    cname := col ->> 'name';
    ctype := col ->> 'type';
    IF jsonb_typeof(col) IS DISTINCT FROM 'object' OR cname IS NULL OR jsonb_typeof(col -> 'nullable') IS DISTINCT FROM 'boolean'
       OR ctype IS NULL OR ctype NOT IN ('string', 'integer', 'float', 'boolean', 'json', 'bytes', 'blob_ref', 'crdt') THEN
      RAISE EXCEPTION 'sync_decode_row: column % of the layout is not {"name","type","nullable"} with a row codec type: %', i, col
        USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF get_byte(payload, i / 8) & (1 << (i % 8)) <> 0 THEN
      IF NOT (col -> 'nullable')::boolean THEN
        error := format('column %s at byte %s: null bit set for non-nullable column', quote_ident(cname), i / 8);
        EXIT decode;
      END IF;
      CONTINUE;
    END IF;
    reason := NULL;
    IF ctype IN ('integer', 'float') THEN
      IF len - off < 8 THEN
        reason := format('truncated input: needed 8 bytes, have %s', len - off);
      ELSE
        x := get_byte(payload, off)::bigint | (get_byte(payload, off + 1)::bigint << 8)
           | (get_byte(payload, off + 2)::bigint << 16) | (get_byte(payload, off + 3)::bigint << 24)
           | (get_byte(payload, off + 4)::bigint << 32) | (get_byte(payload, off + 5)::bigint << 40)
           | (get_byte(payload, off + 6)::bigint << 48) | (get_byte(payload, off + 7)::bigint << 56);
        IF ctype = 'integer' THEN
          IF x > 9007199254740991 OR x < -9007199254740991 THEN
            reason := format('i64 outside the safe-integer contract: %s', x);
          ELSE
            v := to_jsonb(x);
          END IF;
        ELSE
          -- IEEE-754 binary64 from its bits: exact (a power of two scales
          -- the 53-bit significand).
          e := ((x >> 52) & 2047)::integer;
          k := x & 4503599627370495;
          IF e = 2047 THEN
            v := to_jsonb(CASE WHEN k <> 0 THEN 'NaN' WHEN x < 0 THEN '-Infinity' ELSE 'Infinity' END);
          ELSE
            IF e = 0 THEN
              f := k::float8 * '4.9406564584124654e-324'::float8;
            ELSE
              f := (k + 4503599627370496)::float8 * power(2::float8, e - 1075);
            END IF;
            IF x < 0 THEN
              f := -f;
            END IF;
            v := CASE WHEN f = 0 AND x < 0 THEN to_jsonb('-0'::text) ELSE to_jsonb(f) END;
          END IF;
        END IF;
        IF reason IS NULL THEN
          off := off + 8;
        END IF;
      END IF;
    ELSIF ctype = 'boolean' THEN
      IF len - off < 1 THEN
        reason := 'truncated input: needed 1 bytes, have 0';
      ELSIF get_byte(payload, off) > 1 THEN
        reason := format('invalid bool byte 0x%s', to_hex(get_byte(payload, off)));
      ELSE
        v := to_jsonb(get_byte(payload, off) = 1);
        off := off + 1;
      END IF;
    ELSIF len - off < 4 THEN
      reason := format('truncated input: needed 4 bytes, have %s', len - off);
    ELSE
      k := get_byte(payload, off)::bigint | (get_byte(payload, off + 1)::bigint << 8)
         | (get_byte(payload, off + 2)::bigint << 16) | (get_byte(payload, off + 3)::bigint << 24);
      IF len - off - 4 < k THEN
        off := off + 4;
        reason := format('truncated input: needed %s bytes, have %s', k, len - off);
      ELSE
        body := substring(payload FROM off + 5 FOR k::integer);
        IF ctype IN ('bytes', 'crdt') THEN
          v := to_jsonb('\x' || encode(body, 'hex'));
        ELSIF position('\x00'::bytea IN body) > 0 THEN
          reason := 'string holds U+0000, which Postgres text cannot store';
        ELSE
          -- LATIN1 maps each byte to one character: an ASCII body comes
          -- back as long as it went in and is its own UTF-8; otherwise the
          -- bytes must match UTF-8's grammar (no overlong forms, no
          -- surrogates, nothing above U+10FFFF) before convert_from.
          s := convert_from(body, 'LATIN1');
          IF octet_length(s) <> k THEN
            IF s !~ '^(?:[\x01-\x7f]|[\xc2-\xdf][\x80-\xbf]|\xe0[\xa0-\xbf][\x80-\xbf]|[\xe1-\xec\xee\xef][\x80-\xbf]{2}|\xed[\x80-\x9f][\x80-\xbf]|\xf0[\x90-\xbf][\x80-\xbf]{2}|[\xf1-\xf3][\x80-\xbf]{3}|\xf4[\x80-\x8f][\x80-\xbf]{2})*$' THEN
              reason := 'invalid UTF-8 in string';
            ELSE
              s := convert_from(body, 'UTF8');
              IF left(s, 1) = U&'\FEFF' THEN
                s := substr(s, 2);  -- upstream's TextDecoder drops a leading BOM
              END IF;
            END IF;
          END IF;
          IF reason IS NULL THEN
            IF ctype = 'string' THEN
              v := to_jsonb(s);
            ELSE
              what := CASE ctype WHEN 'json' THEN 'json column does not parse as a JSON document'
                                 ELSE 'blob_ref value does not parse as a JSON document (§5.9.1)' END;
              <<chk>>
              BEGIN
                -- Strings become \x01 and scalars \x02 (neither may appear
                -- raw in a document), whitespace goes; what is left must be
                -- punctuation that reduces to one value.
                IF strpos(s, chr(1)) > 0 OR strpos(s, chr(2)) > 0 THEN
                  reason := what;
                  EXIT chk;
                END IF;
                t := regexp_replace(regexp_replace(regexp_replace(s, str, chr(1), 'g'), num || '|true|false|null', chr(2), 'g'), '[ \t\n\r]+', '', 'g');
                IF t !~ '^[\x01\x02{}\[\]:,]*$' THEN
                  reason := what;
                  EXIT chk;
                END IF;
                LOOP
                  prev := t;
                  t := regexp_replace(t, '\[(?:[\x01\x02](?:,[\x01\x02])*)?\]|\{(?:\x01:[\x01\x02](?:,\x01:[\x01\x02])*)?\}', chr(2), 'g');
                  EXIT WHEN t = prev;
                END LOOP;
                IF t NOT IN (chr(1), chr(2)) THEN
                  reason := what;
                  EXIT chk;
                END IF;
                IF strpos(s, '\') > 0 THEN
                  -- The escapes left once escaped backslashes are gone are real ones.
                  esc := regexp_replace(s, '\\\\', '', 'g');
                  esc := regexp_replace(esc, '\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}', '', 'g');
                  IF esc ~ '\\u0000|\\u[dD][89a-fA-F]' THEN
                    reason := ctype || ' value holds a \u0000 or unpaired surrogate escape, which Postgres jsonb cannot store';
                    EXIT chk;
                  END IF;
                END IF;
                IF ctype = 'json' THEN
                  EXIT chk;
                END IF;
                j := s::json;
                IF json_typeof(j) <> 'object' THEN
                  reason := 'blob_ref value must be a JSON object (§5.9.1)';
                  EXIT chk;
                END IF;
                SELECT array_agg(o.key ORDER BY o.first) INTO keys
                  FROM (SELECT k.key, min(k.n) AS first FROM json_object_keys(j) WITH ORDINALITY k(key, n) GROUP BY k.key) o;
                keys := coalesce(keys, '{}');
                IF NOT keys <@ ARRAY['blobId', 'byteLength', 'mediaType', 'name'] THEN
                  SELECT 'blob_ref has unknown key ' || to_json(u.key)::text || ' (§5.9.1)' INTO reason
                    FROM unnest(keys) WITH ORDINALITY u(key, n)
                   WHERE u.key NOT IN ('blobId', 'byteLength', 'mediaType', 'name') ORDER BY u.n LIMIT 1;
                  EXIT chk;
                END IF;
                IF keys <> array_remove(ARRAY[CASE WHEN 'blobId' = ANY (keys) THEN 'blobId' END,
                                              CASE WHEN 'byteLength' = ANY (keys) THEN 'byteLength' END,
                                              CASE WHEN 'mediaType' = ANY (keys) THEN 'mediaType' END,
                                              CASE WHEN 'name' = ANY (keys) THEN 'name' END], NULL) THEN
                  reason := 'blob_ref keys are not in canonical order (§5.9.1)';
                  EXIT chk;
                END IF;
                IF json_typeof(j -> 'blobId') IS DISTINCT FROM 'string' OR (j ->> 'blobId') !~ '^sha256:[0-9a-f]{64}$' THEN
                  reason := 'blob_ref.blobId must be "sha256:<64 hex>" (§5.9.1)';
                  EXIT chk;
                END IF;
                IF json_typeof(j -> 'byteLength') IS DISTINCT FROM 'number' THEN
                  reason := 'blob_ref.byteLength must be a non-negative safe integer (§5.9.1)';
                  EXIT chk;
                END IF;
                bl := (j ->> 'byteLength')::numeric;
                IF bl <> trunc(bl) THEN
                  -- JavaScript reads the nearest double: below 1e-300 that is ±0 or a
                  -- fraction; between, float8's own (correctly rounded) reading.
                  IF abs(bl) < 1e-300 THEN
                    bl := CASE WHEN abs(bl) * (2::numeric ^ 1074) <= 0.5 THEN 0 ELSE 0.5 END;
                  ELSIF bl > 0 AND bl < 9007199254740992 THEN
                    f := bl::float8;
                    bl := CASE WHEN f = trunc(f) THEN f::numeric ELSE 0.5 END;
                  END IF;
                END IF;
                IF bl <> trunc(bl) OR bl < 0 OR bl > 9007199254740991 THEN
                  reason := 'blob_ref.byteLength must be a non-negative safe integer (§5.9.1)';
                  EXIT chk;
                END IF;
                IF 'mediaType' = ANY (keys) AND json_typeof(j -> 'mediaType') <> 'string' THEN
                  reason := 'blob_ref.mediaType must be a string when present (§5.9.1)';
                  EXIT chk;
                END IF;
                IF 'name' = ANY (keys) AND json_typeof(j -> 'name') <> 'string' THEN
                  reason := 'blob_ref.name must be a string when present (§5.9.1)';
                  EXIT chk;
                END IF;
              END chk;
              IF reason IS NULL THEN
                v := CASE ctype WHEN 'json' THEN s::jsonb ELSE to_jsonb(s) END;
              END IF;
            END IF;
          END IF;
        END IF;
        IF reason IS NULL THEN
          off := off + 4 + k::integer;
        END IF;
      END IF;
    END IF;
    IF reason IS NOT NULL THEN
      error := format('column %s at byte %s: %s', quote_ident(cname), off, reason);
      EXIT decode;
    END IF;
    value := value || jsonb_build_object(cname, v);
  END LOOP;
  IF off <> len THEN
    error := format('at byte %s: trailing bytes after row payload', off);
    EXIT decode;
  END IF;
  RETURN value;
  END decode;
  IF refuse THEN
    RAISE EXCEPTION 'sync_decode_row: %', error USING ERRCODE = 'invalid_parameter_value';
  END IF;
  RETURN NULL;
END;
$$;
REVOKE ALL ON FUNCTION sync_decode_row(bytea,jsonb,boolean) FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
GRANT EXECUTE ON FUNCTION sync_decode_row(bytea,jsonb,boolean) TO sync_reader;
COMMENT ON FUNCTION sync_decode_row(bytea,jsonb,boolean) IS 'Decode a row codec payload against a layout''s columns ([{"name","type","nullable"}]) into a jsonb object; NULL columns are absent, bytes are "\x<hex>", NaN/Infinity/-0 are strings; refuses what upstream''s decoder refuses (22023, naming the column and byte), or answers NULL when refuse is false.';
-- Example:
--   SELECT sync_decode_row('\x0203000000742d31'::bytea,
--     '[{"name": "id", "type": "string", "nullable": false}, {"name": "n", "type": "integer", "nullable": true}]');
--   -- {"id": "t-1"}  (bitmap 0x02: n is NULL)
