-- Activate a checkpoint: under the partition row lock that pushes take,
-- require the fence (an activation old writers could still decay would be a
-- lie), check the caller still owns the `backfilling` row at exactly the
-- stored watermark, run the coverage check, then set `activated` (final).
-- Returns `activated`, `stale` (changes above the watermark; or the caller
-- is not the owner, the row is not backfilling, or the watermark is not the
-- stored one: nothing changes) or `unverifiable` (the log is pruned past the
-- watermark). An activation notifies channel sync_checkpoint_activated with
-- {"partition": ..., "name": ...}, delivered when it commits, so servers
-- waiting behind a closed gate need not poll.
--
-- The sources must be tables of the stored schema, at least one
-- (sync_assert_source_tables): over no table, or a misspelled one, the
-- coverage check reads nothing and would certify anything.
CREATE OR REPLACE FUNCTION sync_activate_checkpoint(
  partition text, name text, owner_epoch bigint, watermark bigint,
  sources text[], now_ms bigint DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, @extschema@, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  required integer;
  current sync_backfill_checkpoints;
  coverage text;
  stamp bigint;
BEGIN
  PERFORM sync_assert_key('partition', $1);
  PERFORM sync_assert_key('name', $2);
  PERFORM sync_assert_nonnegative('owner_epoch', $3);
  PERFORM sync_assert_nonnegative('watermark', $4);
  PERFORM sync_assert_source_tables($5);
  stamp := sync_assert_now_ms('now_ms', $6);
  PERFORM sync_lock_partition($1);
  SELECT c.* INTO current
    FROM sync_backfill_checkpoints c WHERE c.partition = $1 AND c.name = $2 FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'sync.storage.checkpoint_not_declared'
      USING DETAIL = format('no checkpoint %L in partition %L', $2, $1);
  END IF;
  SELECT f.required_writer_version INTO required
    FROM sync_writer_fence f WHERE f.partition = $1;
  IF required IS NULL OR required < current.schema_version THEN
    RAISE EXCEPTION 'sync.storage.checkpoint_fence_missing'
      USING DETAIL = format('partition %L: checkpoint %L needs a writer fence >= %s, found %s',
                            $1, $2, current.schema_version, coalesce(required::text, 'none'));
  END IF;
  IF current.state <> 'backfilling' OR current.owner_epoch <> $3 OR current.watermark <> $4 THEN
    RETURN 'stale';
  END IF;
  coverage := sync_source_changes_above($1, $5, $4);
  IF coverage <> 'clean' THEN
    RETURN CASE coverage WHEN 'changed' THEN 'stale' ELSE 'unverifiable' END;
  END IF;
  UPDATE sync_backfill_checkpoints c
     SET state = 'activated', updated_at_ms = stamp
   WHERE c.partition = $1 AND c.name = $2;
  PERFORM pg_notify('sync_checkpoint_activated', jsonb_build_object('partition', $1, 'name', $2)::text);
  RETURN 'activated';
END;
$$;
REVOKE ALL ON FUNCTION sync_activate_checkpoint(text,text,bigint,bigint,text[],bigint) FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
GRANT EXECUTE ON FUNCTION sync_activate_checkpoint(text,text,bigint,bigint,text[],bigint) TO sync_admin, sync_backfill;
COMMENT ON FUNCTION sync_activate_checkpoint(text,text,bigint,bigint,text[],bigint) IS 'Activate a backfilling checkpoint under the partition lock: fence, owner, exact watermark, coverage check. Returns activated (final), stale or unverifiable; notifies sync_checkpoint_activated.';
-- Example:
--   BEGIN;
--   SELECT sync_begin_schema_change();
--   SELECT sync_set_schema_version(2, '{"todos": [{"name": "id", "type": "string", "nullable": false}]}');
--   SELECT sync_install_checkpoint('p1', 'todos_by_owner', 2);
--   COMMIT;
--   SELECT owner_epoch FROM sync_claim_checkpoint('p1', 'todos_by_owner', 2);  -- 1
--   SELECT sync_activate_checkpoint('p1', 'todos_by_owner', 1, 0, ARRAY['todos']);  -- activated
