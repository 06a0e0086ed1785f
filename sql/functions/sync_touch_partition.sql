-- Register a partition on first use with its first log epoch (a fresh UUID
-- unless one is given) and stamp its last authentication; an existing
-- partition keeps its epoch. now_ms is bounded like every clock argument
-- (sync_assert_now_ms): a stamp years ahead would read as a live session
-- forever. Returns the registry row.
CREATE OR REPLACE FUNCTION sync_touch_partition(partition text, log_epoch text DEFAULT NULL, now_ms bigint DEFAULT NULL)
RETURNS SETOF sync_partition_registry
LANGUAGE plpgsql
ROWS 1
SET search_path = pg_catalog, @extschema@, pg_temp
AS $$
#variable_conflict use_column
BEGIN
  PERFORM sync_assert_key('partition', $1);
  IF $2 IS NOT NULL THEN
    PERFORM sync_assert_key('log_epoch', $2);
  END IF;
  RETURN QUERY
    INSERT INTO sync_partition_registry AS r (partition, log_epoch, epoch_required, last_authenticated_at_ms)
    VALUES ($1, coalesce($2, gen_random_uuid()::text), false, sync_assert_now_ms('now_ms', $3))
    ON CONFLICT (partition) DO UPDATE SET last_authenticated_at_ms = EXCLUDED.last_authenticated_at_ms
    RETURNING r.*;
END;
$$;
REVOKE ALL ON FUNCTION sync_touch_partition(text,text,bigint) FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
GRANT EXECUTE ON FUNCTION sync_touch_partition(text,text,bigint) TO sync_writer;
COMMENT ON FUNCTION sync_touch_partition(text,text,bigint) IS 'Register a partition on first use with its first log epoch (a fresh UUID unless given) and stamp its last authentication. Returns the registry row.';
-- Example:
--   SELECT * FROM sync_touch_partition('p1');
