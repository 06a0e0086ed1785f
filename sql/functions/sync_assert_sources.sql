-- Argument check for source table lists: the array itself is required (an
-- empty array is a valid, empty list), each element is a key.
CREATE OR REPLACE FUNCTION sync_assert_sources(sources text[])
RETURNS boolean
LANGUAGE plpgsql
IMMUTABLE
SET search_path = pg_catalog, @extschema@, pg_temp
AS $$
DECLARE
  source text;
BEGIN
  IF sources IS NULL THEN
    RAISE EXCEPTION 'invalid argument: sources must be an array of table names, not NULL'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  FOREACH source IN ARRAY sources LOOP
    PERFORM sync_assert_key('source table', source);
  END LOOP;
  RETURN true;
END;
$$;
REVOKE ALL ON FUNCTION sync_assert_sources(text[]) FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
GRANT EXECUTE ON FUNCTION sync_assert_sources(text[]) TO sync_reader;
COMMENT ON FUNCTION sync_assert_sources(text[]) IS 'internal: argument check of a source table list: a non-NULL array of keys (empty is allowed), else 22023.';
