-- Argument check shared by the barrier functions: a partition, checkpoint or
-- source table name must be a non-empty string of at most 512 characters.
-- Raised as invalid_parameter_value before anything is written, so bad input
-- changes nothing. Returns true, so SQL-language functions can check in WHERE.
CREATE OR REPLACE FUNCTION sync_assert_key(label text, value text)
RETURNS boolean
LANGUAGE plpgsql
IMMUTABLE
SET search_path = pg_catalog, @extschema@, pg_temp
AS $$
BEGIN
  IF value IS NULL OR value = '' THEN
    RAISE EXCEPTION 'invalid argument: % must be a non-empty string', label
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF length(value) > 512 THEN
    RAISE EXCEPTION 'invalid argument: % is % characters long; the limit is 512', label, length(value)
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  RETURN true;
END;
$$;
REVOKE ALL ON FUNCTION sync_assert_key(text,text) FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
GRANT EXECUTE ON FUNCTION sync_assert_key(text,text) TO sync_reader;
COMMENT ON FUNCTION sync_assert_key(text,text) IS 'internal: argument check: a partition, checkpoint or table name is a non-empty string of at most 512 characters, else 22023.';
