-- Claim the next checkpoint of a projection that no live worker owns, for a
-- fleet of backfill workers (several processes may call it at once):
-- a `declared` checkpoint, or a `backfilling` one whose owner has not
-- advanced it for lease_ms (a crashed worker: the new claim's epoch fences
-- the old owner out if it was only slow). Candidates come from the pending
-- index in partition order; each is locked by partition equality with
-- FOR UPDATE SKIP LOCKED, so two callers never claim the same checkpoint and
-- never wait for each other, and the claim itself is sync_claim_checkpoint.
-- Returns the claimed row, or no row when nothing is claimable now.
CREATE OR REPLACE FUNCTION sync_claim_next_checkpoint(
  name text, schema_version integer, lease_ms bigint, now_ms bigint DEFAULT NULL)
RETURNS SETOF sync_backfill_checkpoints
LANGUAGE plpgsql
ROWS 1
AS $$
#variable_conflict use_column
DECLARE
  p_name ALIAS FOR $1;
  p_version ALIAS FOR $2;
  stamp bigint := coalesce($4, sync_now_ms());
  candidate text;
BEGIN
  PERFORM sync_assert_key('name', p_name);
  PERFORM sync_assert_nonnegative('schema_version', p_version, 1);
  PERFORM sync_assert_nonnegative('lease_ms', $3);
  FOR candidate IN
    SELECT c.partition FROM sync_backfill_checkpoints c
     WHERE c.schema_version = p_version AND c.name = p_name AND c.state <> 'activated'
       AND (c.state = 'declared' OR c.updated_at_ms <= stamp - $3)
     ORDER BY c.partition
  LOOP
    -- Re-checked on the row's latest version once locked: a concurrent
    -- claim that committed meanwhile makes it fail.
    PERFORM 1 FROM sync_backfill_checkpoints c
     WHERE c.partition = candidate AND c.name = p_name AND c.schema_version = p_version
       AND c.state <> 'activated' AND (c.state = 'declared' OR c.updated_at_ms <= stamp - $3)
       FOR UPDATE SKIP LOCKED;
    IF FOUND THEN
      RETURN QUERY SELECT * FROM sync_claim_checkpoint(candidate, p_name, p_version, stamp);
      RETURN;
    END IF;
  END LOOP;
END;
$$;
