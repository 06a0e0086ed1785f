-- The database clock in epoch milliseconds: the default of every now_ms
-- argument (NULL included, so generated Go code can pass "no value").
CREATE OR REPLACE FUNCTION sync_now_ms()
RETURNS bigint
LANGUAGE sql
STABLE
SET search_path = pg_catalog, @extschema@, pg_temp
AS $$
  SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint
$$;
REVOKE ALL ON FUNCTION sync_now_ms() FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
GRANT EXECUTE ON FUNCTION sync_now_ms() TO sync_reader;
COMMENT ON FUNCTION sync_now_ms() IS 'internal: the database clock in epoch milliseconds, the default of every now_ms argument.';
