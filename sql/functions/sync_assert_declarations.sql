-- Argument check shared by the gate functions: a server's declarations are
-- declared_names (a projection declared for every partition) and the
-- parallel arrays declared_partitions / declared_partition_names (one
-- declaration per (partition, name) pair). All three must be arrays without
-- NULLs, the last two of the same length: a NULL could silently declare
-- nothing or everything (NOT IN over a NULL is never true), so it is refused
-- as invalid_parameter_value before anything is read or written. Returns
-- true, so SQL-language functions can check in WHERE.
CREATE OR REPLACE FUNCTION sync_assert_declarations(
  declared_names text[], declared_partitions text[], declared_partition_names text[])
RETURNS boolean
LANGUAGE plpgsql
IMMUTABLE
SET search_path = pg_catalog, @extschema@, pg_temp
AS $$
BEGIN
  IF $1 IS NULL OR $2 IS NULL OR $3 IS NULL OR cardinality($2) <> cardinality($3)
     OR array_position($1, NULL) IS NOT NULL OR array_position($2, NULL) IS NOT NULL
     OR array_position($3, NULL) IS NOT NULL THEN
    RAISE EXCEPTION 'invalid argument: declared_names, declared_partitions and declared_partition_names must be arrays without NULLs, the last two of the same length'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  RETURN true;
END;
$$;
REVOKE ALL ON FUNCTION sync_assert_declarations(text[],text[],text[]) FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
GRANT EXECUTE ON FUNCTION sync_assert_declarations(text[],text[],text[]) TO sync_reader;
COMMENT ON FUNCTION sync_assert_declarations(text[],text[],text[]) IS 'internal: argument check of the gate functions: the three declaration arrays have no NULLs and the pair arrays one length, else 22023.';
