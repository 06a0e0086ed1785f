-- Argument check shared by the barrier functions: epochs, watermarks, row
-- counts and sequence numbers are never NULL and never below min_value.
CREATE OR REPLACE FUNCTION sync_assert_nonnegative(label text, value bigint, min_value bigint DEFAULT 0)
RETURNS boolean
LANGUAGE plpgsql
IMMUTABLE
SET search_path = pg_catalog, @extschema@, pg_temp
AS $$
BEGIN
  IF value IS NULL OR value < min_value THEN
    RAISE EXCEPTION 'invalid argument: % must be at least %, got %', label, min_value, coalesce(value::text, 'NULL')
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  RETURN true;
END;
$$;
REVOKE ALL ON FUNCTION sync_assert_nonnegative(text,bigint,bigint) FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
GRANT EXECUTE ON FUNCTION sync_assert_nonnegative(text,bigint,bigint) TO sync_reader;
COMMENT ON FUNCTION sync_assert_nonnegative(text,bigint,bigint) IS 'internal: argument check: an epoch, watermark, count or seq is not NULL and not below min_value, else 22023.';
