-- Advance a checkpoint's watermark: a compare-and-set on owner_epoch under
-- the row lock, true iff the caller still owns the row and it moved. Run it
-- in the transaction that writes the projection batch, so the batch and the
-- watermark commit together (false: roll the batch back).
--
-- Only the current owner of a `backfilling` row advances (a `declared` row
-- has no owner; an `activated` one is final): anyone else gets false and
-- changes nothing. The watermark never goes down and never passes the
-- partition's head (a watermark over seqs not yet written would let their
-- commits slip under it unseen); both are caller bugs, raised as 22023.
--
-- A batch never certifies history it did not read: moving the watermark up
-- from W while the partition is pruned above W is
-- sync.storage.log_pruned. In READ COMMITTED the horizon is read here, after
-- the batch read the log, so a sync_prune_log that committed between the
-- batch's own horizon check and its read (which then found the pruned
-- changes gone) is seen and the batch rolls back. The one legitimate jump
-- over pruned history is a fill from the application's current rows (gosync
-- Backfill.Initial): one REPEATABLE READ or SERIALIZABLE snapshot, advanced
-- to exactly the head that snapshot sees.
CREATE OR REPLACE FUNCTION sync_advance_checkpoint(
  partition text, name text, owner_epoch bigint, watermark bigint,
  observed_rows bigint, now_ms bigint DEFAULT NULL)
RETURNS boolean
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, @extschema@, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  current sync_backfill_checkpoints;
  head bigint;
  horizon bigint;
  stamp bigint;
BEGIN
  PERFORM sync_assert_key('partition', $1);
  PERFORM sync_assert_key('name', $2);
  PERFORM sync_assert_nonnegative('owner_epoch', $3);
  PERFORM sync_assert_nonnegative('watermark', $4);
  PERFORM sync_assert_nonnegative('observed_rows', $5);
  stamp := sync_assert_now_ms('now_ms', $6);
  -- The row lock makes the epoch, state and watermark checks and the write
  -- one step against a concurrent claim.
  SELECT c.* INTO current FROM sync_backfill_checkpoints c
   WHERE c.partition = $1 AND c.name = $2 FOR UPDATE;
  IF NOT FOUND OR current.state <> 'backfilling' OR current.owner_epoch <> $3 THEN
    RETURN false;
  END IF;
  IF $4 < current.watermark THEN
    RAISE EXCEPTION 'invalid argument: watermark % is below the stored watermark %; it never goes down', $4, current.watermark
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  SELECT p.max_commit_seq, p.horizon_seq INTO head, horizon FROM sync_partitions p WHERE p.partition = $1;
  IF $4 > coalesce(head, 0) THEN
    RAISE EXCEPTION 'invalid argument: watermark % is above the partition''s last commit %', $4, coalesce(head, 0)
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF $4 > current.watermark AND coalesce(horizon, 0) > current.watermark
     AND (current_setting('transaction_isolation') = 'read committed' OR $4 <> head) THEN
    RAISE EXCEPTION 'sync.storage.log_pruned'
      USING DETAIL = format('partition %L is pruned through %s, above the stored watermark %s of checkpoint %L: the changes in (%s, %s] are gone, so the batch cannot have read them (fill from current rows in one REPEATABLE READ snapshot, up to its head)',
                            $1, horizon, current.watermark, $2, current.watermark, horizon);
  END IF;
  UPDATE sync_backfill_checkpoints c
     SET watermark = $4, observed_rows = $5, updated_at_ms = stamp
   WHERE c.partition = $1 AND c.name = $2;
  RETURN true;
END;
$$;
REVOKE ALL ON FUNCTION sync_advance_checkpoint(text,text,bigint,bigint,bigint,bigint) FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
GRANT EXECUTE ON FUNCTION sync_advance_checkpoint(text,text,bigint,bigint,bigint,bigint) TO sync_admin, sync_backfill;
COMMENT ON FUNCTION sync_advance_checkpoint(text,text,bigint,bigint,bigint,bigint) IS 'The owner''s compare-and-set of a backfilling checkpoint''s watermark (never down, never past the head, never over pruned history), in the projection batch''s transaction. True iff it moved.';
-- Example:
--   SELECT * FROM sync_declare_checkpoint('p1', 'todos_by_owner', 2);
--   SELECT owner_epoch FROM sync_claim_checkpoint('p1', 'todos_by_owner', 2);  -- 1
--   -- in the projection batch's transaction: the owner's CAS, t or f
--   SELECT sync_advance_checkpoint('p1', 'todos_by_owner', 1, 0, 5000);
