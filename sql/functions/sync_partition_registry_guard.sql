-- The registry's clock rule for every writer: last_authenticated_at_ms is
-- not negative and not more than 5 minutes (300000 ms) ahead of the database
-- clock, like every now_ms argument (sync_assert_now_ms). A writer may UPDATE
-- the column directly (upstream's registry upsert does), so the bound of
-- sync_touch_partition alone would be skipped by a raw statement. A stamp in
-- the past is accepted: an upstream server may run on a fixed clock.
--
-- Its trigger fires it only through its WHEN condition (written with
-- pg_catalog functions, so nothing on a path can change it): a legal stamp
-- pays no function call.
CREATE OR REPLACE FUNCTION sync_partition_registry_guard()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, @extschema@, pg_temp
AS $$
BEGIN
  RAISE EXCEPTION 'invalid argument: last_authenticated_at_ms % is negative or more than 300000 ms (5 minutes) ahead of the database clock %',
    NEW.last_authenticated_at_ms, (extract(epoch FROM clock_timestamp()) * 1000)::bigint
    USING ERRCODE = 'invalid_parameter_value';
END;
$$;
REVOKE ALL ON FUNCTION sync_partition_registry_guard() FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
COMMENT ON FUNCTION sync_partition_registry_guard() IS 'internal: BEFORE INSERT OR UPDATE trigger of sync_partition_registry (fires only through its WHEN): refuses a last_authenticated_at_ms that is negative or more than 5 minutes ahead of the database clock (22023).';
