-- Claim a checkpoint for a backfill worker: owner_epoch + 1, `declared`
-- becomes `backfilling`. The increment is evaluated under the UPDATE's own
-- row lock, so two claimers never see the same epoch; every older owner's CAS
-- fails from then on.
--
-- schema_version must be the declared one and is never re-stamped: a claim
-- at another version would drop the row from the running version's pending
-- list and open the gate over a projection nobody filled.
CREATE OR REPLACE FUNCTION sync_claim_checkpoint(
  partition text, name text, schema_version integer, now_ms bigint DEFAULT NULL)
RETURNS SETOF sync_backfill_checkpoints
LANGUAGE plpgsql
ROWS 1
AS $$
#variable_conflict use_column
DECLARE
  claimed sync_backfill_checkpoints;
  declared_version integer;
BEGIN
  PERFORM sync_assert_key('partition', $1);
  PERFORM sync_assert_key('name', $2);
  PERFORM sync_assert_nonnegative('schema_version', $3, 1);
  UPDATE sync_backfill_checkpoints c
     SET owner_epoch = c.owner_epoch + 1,
         state = 'backfilling',
         updated_at_ms = coalesce($4, sync_now_ms())
   WHERE c.partition = $1 AND c.name = $2 AND c.state <> 'activated' AND c.schema_version = $3
  RETURNING c.* INTO claimed;
  IF NOT FOUND THEN
    SELECT c.schema_version INTO declared_version
      FROM sync_backfill_checkpoints c
     WHERE c.partition = $1 AND c.name = $2 AND c.state <> 'activated';
    IF FOUND THEN
      RAISE EXCEPTION 'sync.storage.checkpoint_not_declared'
        USING DETAIL = format('checkpoint %L in partition %L is declared at schema version %s, not %s',
                              $2, $1, declared_version, $3);
    END IF;
    RAISE EXCEPTION 'sync.storage.checkpoint_not_declared'
      USING DETAIL = format('no claimable checkpoint %L in partition %L (missing or already activated)', $2, $1);
  END IF;
  RETURN NEXT claimed;
END;
$$;
