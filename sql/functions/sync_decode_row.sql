-- Decode an upstream row codec payload (a change's payload, a current row's
-- _sync_payload) against its layout's columns, as gosync.DecodeRow does:
-- the null bitmap (ceil(n/8) bytes, LSB first, padding bits 0), then the
-- non-null values in column order. columns is a layout's column list,
-- [{"name","type","nullable"}] in the codec's vocabulary (the value of one
-- table in sync_schema_meta.layouts). The decoder is sync_codec_decode.
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
CREATE OR REPLACE FUNCTION sync_decode_row(payload bytea, columns jsonb)
RETURNS jsonb
LANGUAGE plpgsql
IMMUTABLE
PARALLEL SAFE
SET search_path = pg_catalog, @extschema@, pg_temp
AS $$
DECLARE
  d record;
BEGIN
  d := sync_codec_decode(payload, columns);
  IF d.error IS NOT NULL THEN
    RAISE EXCEPTION 'sync_decode_row: %', d.error USING ERRCODE = 'invalid_parameter_value';
  END IF;
  RETURN d.value;
END;
$$;
REVOKE ALL ON FUNCTION sync_decode_row(bytea,jsonb) FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
GRANT EXECUTE ON FUNCTION sync_decode_row(bytea,jsonb) TO sync_reader;
COMMENT ON FUNCTION sync_decode_row(bytea,jsonb) IS 'Decode a row codec payload against a layout''s columns ([{"name","type","nullable"}]) into a jsonb object; NULL columns are absent, bytes are "\x<hex>", NaN/Infinity/-0 are strings; refuses what upstream''s decoder refuses (22023, naming the column and byte).';
-- Example:
--   SELECT sync_decode_row('\x0203000000742d31'::bytea,
--     '[{"name": "id", "type": "string", "nullable": false}, {"name": "n", "type": "integer", "nullable": true}]');
--   -- {"id": "t-1"}  (bitmap 0x02: n is NULL)
