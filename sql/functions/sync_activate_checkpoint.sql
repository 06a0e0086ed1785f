-- Activate a checkpoint: under the partition row lock that pushes take,
-- require the fence (an activation old writers could still decay would be a
-- lie), run the coverage check, then CAS state to `activated` on owner_epoch.
-- Returns `activated`, `stale` (changes above the watermark, or the CAS
-- lost: another owner claimed, or it is already active) or `unverifiable`
-- (the log is pruned past the watermark). An activation notifies channel
-- sync_checkpoint_activated with {"partition": ..., "name": ...}, delivered
-- when it commits, so servers waiting behind a closed gate need not poll.
CREATE OR REPLACE FUNCTION sync_activate_checkpoint(
  partition text, name text, owner_epoch bigint, watermark bigint,
  sources text[], now_ms bigint DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
  required integer;
  version integer;
  coverage text;
  changed bigint;
BEGIN
  PERFORM sync_assert_key('partition', $1);
  PERFORM sync_assert_key('name', $2);
  PERFORM sync_assert_nonnegative('owner_epoch', $3);
  PERFORM sync_assert_nonnegative('watermark', $4);
  PERFORM sync_assert_sources($5);
  PERFORM sync_lock_partition($1);
  SELECT c.schema_version INTO version
    FROM sync_backfill_checkpoints c WHERE c.partition = $1 AND c.name = $2;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'sync.storage.checkpoint_not_declared'
      USING DETAIL = format('no checkpoint %L in partition %L', $2, $1);
  END IF;
  SELECT f.required_writer_version INTO required
    FROM sync_writer_fence f WHERE f.partition = $1;
  IF required IS NULL OR required < version THEN
    RAISE EXCEPTION 'sync.storage.checkpoint_fence_missing'
      USING DETAIL = format('partition %L: checkpoint %L needs a writer fence >= %s, found %s',
                            $1, $2, version, coalesce(required::text, 'none'));
  END IF;
  coverage := sync_source_changes_above($1, $5, $4);
  IF coverage <> 'clean' THEN
    RETURN CASE coverage WHEN 'changed' THEN 'stale' ELSE 'unverifiable' END;
  END IF;
  WITH updated AS (
    UPDATE sync_backfill_checkpoints c
       SET state = 'activated', watermark = $4, updated_at_ms = coalesce($6, sync_now_ms())
     WHERE c.partition = $1 AND c.name = $2 AND c.owner_epoch = $3 AND c.state <> 'activated'
    RETURNING 1
  )
  SELECT count(*) INTO changed FROM updated;
  IF changed <> 1 THEN
    RETURN 'stale';
  END IF;
  PERFORM pg_notify('sync_checkpoint_activated', jsonb_build_object('partition', $1, 'name', $2)::text);
  RETURN 'activated';
END;
$$;
