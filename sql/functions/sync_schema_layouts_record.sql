-- The AFTER INSERT OR UPDATE trigger of sync_schema_meta: every marker
-- write, gosync's (sync_set_schema_version) or the upstream server's own
-- upsert, records its layouts under its version in sync_schema_layouts.
-- A bump re-encodes the current rows but never the log, so a change must be
-- decoded with the layouts of the version that wrote it (its commit's
-- writer_version), which the marker alone forgets at the next bump. A
-- rewrite at the same version (the marker rules allow only the same
-- layouts, or their translation to the codec's vocabulary) replaces the
-- record: the last written layouts of a version are its layouts.
-- tables is the layouts parsed once, NULL when they are not JSON (the
-- marker write is never refused here). SECURITY DEFINER: whoever may write the marker records the layouts, and
-- nobody is granted a write of sync_schema_layouts itself.
CREATE OR REPLACE FUNCTION sync_schema_layouts_record()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, @extschema@, pg_temp
AS $$
DECLARE
  parsed jsonb;
BEGIN
  BEGIN
    parsed := NEW.layouts::jsonb;
  EXCEPTION WHEN invalid_text_representation THEN
    parsed := NULL;  -- the marker rules treat such a marker as disagreeing; it is no layout
  END;
  INSERT INTO @extschema@.sync_schema_layouts AS l (schema_version, layouts, tables)
  VALUES (NEW.schema_version, NEW.layouts, parsed)
  ON CONFLICT (schema_version) DO UPDATE SET layouts = EXCLUDED.layouts, tables = EXCLUDED.tables
   WHERE l.layouts IS DISTINCT FROM EXCLUDED.layouts;
  RETURN NULL;
END;
$$;
REVOKE ALL ON FUNCTION sync_schema_layouts_record() FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
COMMENT ON FUNCTION sync_schema_layouts_record() IS 'internal: trigger of sync_schema_meta: records each marker write''s layouts under its version in sync_schema_layouts.';
