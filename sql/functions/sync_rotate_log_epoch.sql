-- Rotate a partition's log epoch: clients must re-bootstrap. In one
-- transaction the new epoch is stored with epoch_required set and the
-- partition's client cursors are deleted, so no client resumes a cursor of
-- the old log. Returns the registry row.
CREATE OR REPLACE FUNCTION sync_rotate_log_epoch(partition text, log_epoch text DEFAULT NULL, now_ms bigint DEFAULT NULL)
RETURNS SETOF sync_partition_registry
LANGUAGE plpgsql
ROWS 1
SECURITY DEFINER
SET search_path = pg_catalog, @extschema@, pg_temp
AS $$
#variable_conflict use_column
BEGIN
  PERFORM sync_assert_key('partition', $1);
  IF $2 IS NOT NULL THEN
    PERFORM sync_assert_key('log_epoch', $2);
  END IF;
  DELETE FROM sync_clients c WHERE c.partition = $1;
  RETURN QUERY
    INSERT INTO sync_partition_registry AS r (partition, log_epoch, epoch_required, last_authenticated_at_ms)
    VALUES ($1, coalesce($2, gen_random_uuid()::text), true, sync_assert_now_ms('now_ms', $3))
    ON CONFLICT (partition) DO UPDATE
      SET log_epoch = EXCLUDED.log_epoch, epoch_required = true,
          last_authenticated_at_ms = EXCLUDED.last_authenticated_at_ms
    RETURNING r.*;
END;
$$;
REVOKE ALL ON FUNCTION sync_rotate_log_epoch(text,text,bigint) FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
GRANT EXECUTE ON FUNCTION sync_rotate_log_epoch(text,text,bigint) TO sync_admin;
COMMENT ON FUNCTION sync_rotate_log_epoch(text,text,bigint) IS 'Give a partition a new log epoch (epoch_required) and delete its client cursors, so clients re-bootstrap. Returns the registry row.';
-- Example:
--   SELECT log_epoch, epoch_required FROM sync_rotate_log_epoch('p1');  -- a new UUID | t
