-- Advance a checkpoint's watermark: a compare-and-set on owner_epoch, true
-- iff exactly one row changed, decided from the rows the UPDATE returns
-- (never a driver's row count). Run it in the transaction that writes the
-- projection batch, so the batch and the watermark commit together.
CREATE OR REPLACE FUNCTION sync_advance_checkpoint(
  partition text, name text, owner_epoch bigint, watermark bigint,
  observed_rows bigint, now_ms bigint DEFAULT NULL)
RETURNS boolean
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
  changed bigint;
BEGIN
  PERFORM sync_assert_key('partition', $1);
  PERFORM sync_assert_key('name', $2);
  PERFORM sync_assert_nonnegative('owner_epoch', $3);
  PERFORM sync_assert_nonnegative('watermark', $4);
  PERFORM sync_assert_nonnegative('observed_rows', $5);
  WITH updated AS (
    UPDATE sync_backfill_checkpoints c
       SET watermark = $4, observed_rows = $5, updated_at_ms = coalesce($6, sync_now_ms())
     WHERE c.partition = $1 AND c.name = $2 AND c.owner_epoch = $3
    RETURNING 1
  )
  SELECT count(*) INTO changed FROM updated;
  RETURN changed = 1;
END;
$$;
