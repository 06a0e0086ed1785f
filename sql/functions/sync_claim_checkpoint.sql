-- Claim a checkpoint for a backfill worker: owner_epoch + 1, `declared`
-- becomes `backfilling`, schema_version is re-stamped. The increment is
-- evaluated under the UPDATE's own row lock, so two claimers never see the
-- same epoch; every older owner's CAS fails from then on.
CREATE OR REPLACE FUNCTION sync_claim_checkpoint(
  partition text, name text, schema_version integer, now_ms bigint DEFAULT NULL)
RETURNS SETOF sync_backfill_checkpoints
LANGUAGE plpgsql
ROWS 1
AS $$
#variable_conflict use_column
DECLARE
  claimed sync_backfill_checkpoints;
BEGIN
  PERFORM sync_assert_key('partition', $1);
  PERFORM sync_assert_key('name', $2);
  PERFORM sync_assert_nonnegative('schema_version', $3, 1);
  UPDATE sync_backfill_checkpoints c
     SET owner_epoch = c.owner_epoch + 1,
         state = CASE WHEN c.state = 'declared' THEN 'backfilling' ELSE c.state END,
         schema_version = $3,
         updated_at_ms = coalesce($4, sync_now_ms())
   WHERE c.partition = $1 AND c.name = $2 AND c.state <> 'activated'
  RETURNING c.* INTO claimed;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'sync.storage.checkpoint_not_declared'
      USING DETAIL = format('no claimable checkpoint %L in partition %L (missing or already activated)', $2, $1);
  END IF;
  RETURN NEXT claimed;
END;
$$;
