-- sync_decode_row's check of a json or blob_ref value (NULL when it
-- passes, else the reason), without the casts' exceptions (no
-- subtransaction: sync_decode_row is parallel safe):
--   * json: one JSON document by RFC 8259's grammar, which is JSON.parse's:
--     every character must belong to a token (strings with only the legal
--     escapes and no raw control characters, numbers without leading zeros,
--     true/false/null, punctuation, the four whitespace characters); then,
--     strings as s and scalars as v, innermost arrays and objects are
--     reduced to v until one value is left. A document jsonb cannot hold
--     (\u0000, an unpaired surrogate escape) is refused by name.
--   * blob_ref: such a document that is the canonical BlobRef object: keys
--     (first occurrence order, the last duplicate's value, as JSON.parse
--     builds the object) blobId, byteLength, then optional mediaType and
--     name, in that order, nothing else; blobId "sha256:" + 64 lowercase
--     hex; byteLength a number that, read as the nearest double as
--     JavaScript reads it, is an integer in [0, 2^53-1].
CREATE OR REPLACE FUNCTION sync_codec_check_json(codec_type text, document text)
RETURNS text
LANGUAGE plpgsql
IMMUTABLE
PARALLEL SAFE
SET search_path = pg_catalog, @extschema@, pg_temp
AS $$
DECLARE
  str constant text := '"(?:[^"\\\x01-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"';
  num constant text := '-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?';
  t text;
  prev text;
  esc text;
  j json;
  keys text[];
  what text := CASE codec_type WHEN 'json' THEN 'json column does not parse as a JSON document'
                               ELSE 'blob_ref value does not parse as a JSON document (§5.9.1)' END;
  bl numeric;
  f float8;
BEGIN
  IF document !~ ('^[ \t\n\r]*(?:(?:' || str || '|' || num || '|true|false|null|[][{}:,])[ \t\n\r]*)*$') THEN
    RETURN what;
  END IF;
  t := regexp_replace(document, str, 's', 'g');
  t := regexp_replace(t, num || '|true|false|null', 'v', 'g');
  t := regexp_replace(t, '[ \t\n\r]+', '', 'g');
  LOOP
    prev := t;
    t := regexp_replace(t, '\[(?:[sv](?:,[sv])*)?\]|\{(?:s:[sv](?:,s:[sv])*)?\}', 'v', 'g');
    EXIT WHEN t = prev;
  END LOOP;
  IF t NOT IN ('s', 'v') THEN
    RETURN what;
  END IF;
  IF strpos(document, '\') > 0 THEN
    -- The escapes left once escaped backslashes are gone are real ones.
    esc := regexp_replace(document, '\\\\', '', 'g');
    esc := regexp_replace(esc, '\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}', '', 'g');
    IF esc ~ '\\u0000|\\u[dD][89a-fA-F]' THEN
      RETURN codec_type || ' value holds a \u0000 or unpaired surrogate escape, which Postgres jsonb cannot store';
    END IF;
  END IF;
  IF codec_type = 'json' THEN
    RETURN NULL;
  END IF;
  j := document::json;
  IF json_typeof(j) <> 'object' THEN
    RETURN 'blob_ref value must be a JSON object (§5.9.1)';
  END IF;
  SELECT array_agg(o.key ORDER BY o.first) INTO keys
    FROM (SELECT k.key, min(k.n) AS first FROM json_object_keys(j) WITH ORDINALITY k(key, n) GROUP BY k.key) o;
  keys := coalesce(keys, '{}');
  SELECT 'blob_ref has unknown key ' || to_json(u.key)::text || ' (§5.9.1)' INTO what
    FROM unnest(keys) WITH ORDINALITY u(key, n)
   WHERE u.key NOT IN ('blobId', 'byteLength', 'mediaType', 'name') ORDER BY u.n LIMIT 1;
  IF FOUND THEN
    RETURN what;
  END IF;
  IF keys <> ARRAY(SELECT c.key FROM unnest(ARRAY['blobId', 'byteLength', 'mediaType', 'name']) WITH ORDINALITY c(key, n)
                    WHERE c.key = ANY (keys) ORDER BY c.n) THEN
    RETURN 'blob_ref keys are not in canonical order (§5.9.1)';
  END IF;
  IF json_typeof(j -> 'blobId') IS DISTINCT FROM 'string' OR (j ->> 'blobId') !~ '^sha256:[0-9a-f]{64}$' THEN
    RETURN 'blob_ref.blobId must be "sha256:<64 hex>" (§5.9.1)';
  END IF;
  IF json_typeof(j -> 'byteLength') IS DISTINCT FROM 'number' THEN
    RETURN 'blob_ref.byteLength must be a non-negative safe integer (§5.9.1)';
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
    RETURN 'blob_ref.byteLength must be a non-negative safe integer (§5.9.1)';
  END IF;
  IF 'mediaType' = ANY (keys) AND json_typeof(j -> 'mediaType') <> 'string' THEN
    RETURN 'blob_ref.mediaType must be a string when present (§5.9.1)';
  END IF;
  IF 'name' = ANY (keys) AND json_typeof(j -> 'name') <> 'string' THEN
    RETURN 'blob_ref.name must be a string when present (§5.9.1)';
  END IF;
  RETURN NULL;
END;
$$;
REVOKE ALL ON FUNCTION sync_codec_check_json(text,text) FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
GRANT EXECUTE ON FUNCTION sync_codec_check_json(text,text) TO sync_reader;
COMMENT ON FUNCTION sync_codec_check_json(text,text) IS 'internal: sync_decode_row''s check of a json or blob_ref value (NULL when valid, else the reason), without exceptions.';
