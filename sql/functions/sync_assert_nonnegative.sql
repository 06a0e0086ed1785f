-- Argument check shared by the barrier functions: epochs, watermarks, row
-- counts and sequence numbers are never NULL and never below min_value.
CREATE OR REPLACE FUNCTION sync_assert_nonnegative(label text, value bigint, min_value bigint DEFAULT 0)
RETURNS boolean
LANGUAGE plpgsql
IMMUTABLE
AS $$
BEGIN
  IF value IS NULL OR value < min_value THEN
    RAISE EXCEPTION 'invalid argument: % must be at least %, got %', label, min_value, coalesce(value::text, 'NULL')
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  RETURN true;
END;
$$;
