-- internal: sync_decode_row's decoder, which answers instead of raising
-- (error is the refusal, naming the column and the byte offset, and value
-- is NULL), so sync_decode_logged can try several layouts for one payload.
-- See sync_decode_row for the jsonb shape and what is refused.
--
-- No exception block (a subtransaction, which a parallel worker may not
-- start): UTF-8 and JSON are checked before the casts that would fail. One
-- pass over the columns; a value is read with substring, not byte by byte.
CREATE OR REPLACE FUNCTION sync_codec_decode(payload bytea, columns jsonb, OUT value jsonb, OUT error text)
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
BEGIN
  IF payload IS NULL OR columns IS NULL THEN
    RETURN;
  END IF;
  value := '{}';
  IF jsonb_typeof(columns) IS DISTINCT FROM 'array' THEN
    RAISE EXCEPTION 'sync_decode_row: columns must be a JSON array of {"name","type","nullable"}'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  n := jsonb_array_length(columns);
  nb := (n + 7) / 8;
  IF len < nb THEN
    error := format('at byte %s: truncated input: needed %s bytes, have %s', len, nb, len);
    value := NULL;
    RETURN;
  END IF;
  IF n % 8 <> 0 AND get_byte(payload, nb - 1) >> (n % 8) <> 0 THEN
    error := format('at byte %s: non-zero padding bit in row null bitmap', nb - 1);
    value := NULL;
    RETURN;
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
        value := NULL;
        RETURN;
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
              reason := sync_codec_check_json(ctype, s);
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
      value := NULL;
      RETURN;
    END IF;
    value := value || jsonb_build_object(cname, v);
  END LOOP;
  IF off <> len THEN
    error := format('at byte %s: trailing bytes after row payload', off);
    value := NULL;
    RETURN;
  END IF;
  RETURN;
END;
$$;
REVOKE ALL ON FUNCTION sync_codec_decode(bytea,jsonb) FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
GRANT EXECUTE ON FUNCTION sync_codec_decode(bytea,jsonb) TO sync_reader;
COMMENT ON FUNCTION sync_codec_decode(bytea,jsonb) IS 'internal: sync_decode_row''s decoder: (value, NULL) for a payload that decodes, (NULL, the refusal naming column and byte) for one that does not.';
