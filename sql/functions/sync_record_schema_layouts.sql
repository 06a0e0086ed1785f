-- Record the layouts of a version the marker held before migration 00024
-- started recording them (sync_schema_layouts keeps what the marker held
-- since), so the log it wrote can be decoded: e.g. an adopted upstream
-- database bumped v1 -> v2 before gosync came, whose v1 layouts are known
-- from the application's history. A version at or above the marker's is
-- the marker's to record (its trigger does); a recorded version keeps its
-- layouts (the same text again is a no-op). layouts must be a JSON object,
-- table name -> columns, as the marker holds it.
CREATE OR REPLACE FUNCTION sync_record_schema_layouts(schema_version bigint, layouts text)
RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, @extschema@, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  recorded text;
  doc jsonb;
BEGIN
  IF $1 IS NULL OR $1 < 1 OR $1 >= coalesce((SELECT m.schema_version FROM sync_schema_meta m WHERE m.id = 1), 1) THEN
    RAISE EXCEPTION 'sync_record_schema_layouts: schema_version % must be at least 1 and below the marker''s version (%)', $1,
      coalesce((SELECT m.schema_version::text FROM sync_schema_meta m WHERE m.id = 1), 'none')
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  BEGIN
    doc := $2::jsonb;
  EXCEPTION WHEN invalid_text_representation THEN
    doc := NULL;
  END;
  IF jsonb_typeof(doc) IS DISTINCT FROM 'object' THEN
    RAISE EXCEPTION 'sync_record_schema_layouts: layouts must be a JSON object of table -> columns'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  SELECT l.layouts INTO recorded FROM sync_schema_layouts l WHERE l.schema_version = $1 FOR UPDATE;
  IF FOUND THEN
    IF recorded IS DISTINCT FROM $2 THEN
      RAISE EXCEPTION 'sync_record_schema_layouts: the layouts of version % are recorded already, and differ', $1
        USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN;
  END IF;
  INSERT INTO sync_schema_layouts AS l (schema_version, layouts, tables) VALUES ($1, $2, doc)
  ON CONFLICT (schema_version) DO NOTHING;
END;
$$;
REVOKE ALL ON FUNCTION sync_record_schema_layouts(bigint,text) FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
GRANT EXECUTE ON FUNCTION sync_record_schema_layouts(bigint,text) TO sync_admin;
COMMENT ON FUNCTION sync_record_schema_layouts(bigint,text) IS 'Record the layouts of a version below the marker''s that was never recorded (before migration 00024), so its log decodes; a recorded version keeps its layouts.';
-- Example:
--   SELECT sync_record_schema_layouts(1, '{"todos": [{"name": "id", "type": "string", "nullable": false}]}')
--    WHERE (SELECT schema_version FROM sync_schema_meta) > 1;
