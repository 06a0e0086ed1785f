-- Argument check of an activation's source tables: a non-empty list of
-- tables of the stored schema (the keys of sync_schema_meta's layouts). An
-- empty list, or a name the schema does not have (a typo, `todo` for
-- `todos`), would make the coverage check look at no changes and answer
-- `activated`, permanently, over changes nobody read. Refused as 22023,
-- naming the known tables, before anything is written. Returns true.
CREATE OR REPLACE FUNCTION sync_assert_source_tables(sources text[])
RETURNS boolean
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, @extschema@, pg_temp
AS $$
DECLARE
  stored text;
  layouts jsonb;
  known text[] := '{}';
  unknown text;
BEGIN
  PERFORM sync_assert_sources($1);
  SELECT m.layouts INTO stored FROM sync_schema_meta m WHERE m.id = 1;
  BEGIN
    layouts := coalesce(nullif(stored, ''), '{}')::jsonb;
  EXCEPTION WHEN invalid_text_representation THEN
    layouts := '{}'; -- an unreadable marker knows no tables
  END;
  IF jsonb_typeof(layouts) = 'object' THEN
    SELECT coalesce(array_agg(k ORDER BY k), '{}') INTO known FROM jsonb_object_keys(layouts) k;
  END IF;
  IF cardinality($1) = 0 THEN
    RAISE EXCEPTION 'invalid argument: sources must name at least one table of the stored schema (known tables: %)',
      coalesce(nullif(array_to_string(known, ', '), ''), 'none')
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  SELECT s INTO unknown FROM unnest($1) s WHERE s <> ALL (known) LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'invalid argument: sources must name tables of the stored schema; % is not one (known tables: %)',
      format('%L', unknown), coalesce(nullif(array_to_string(known, ', '), ''), 'none')
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  RETURN true;
END;
$$;
REVOKE ALL ON FUNCTION sync_assert_source_tables(text[]) FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
GRANT EXECUTE ON FUNCTION sync_assert_source_tables(text[]) TO sync_reader;
COMMENT ON FUNCTION sync_assert_source_tables(text[]) IS 'internal: argument check of an activation''s sources: at least one table, each a table of the stored schema (sync_schema_meta layouts), else 22023.';
