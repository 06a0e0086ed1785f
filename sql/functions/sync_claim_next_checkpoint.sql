-- Claim the next checkpoint of a projection that no live worker owns, for a
-- fleet of backfill workers (several processes may call it at once):
-- a `declared` checkpoint, or a `backfilling` one whose owner has not
-- advanced it for lease_ms (a crashed worker: the new claim's epoch fences
-- the old owner out if it was only slow). Candidates come from the pending
-- index in partition order; each is locked by partition equality with
-- FOR UPDATE SKIP LOCKED, so two callers never claim the same checkpoint and
-- never wait for each other, and the claim itself is sync_claim_checkpoint.
-- Returns the claimed row, or no row when nothing is claimable now.
--
-- The lease is measured on the database clock (a caller's now_ms only
-- stamps the claim, within sync_assert_now_ms's 5 minutes) and is 1 second
-- to 1 day: a lease of 0 would take every claim not locked mid-batch, and a
-- fleet of such workers livelocks. A stored stamp more than 5 minutes ahead
-- of the database clock (adopted data; no bounded caller writes one) has no
-- live owner.
CREATE OR REPLACE FUNCTION sync_claim_next_checkpoint(
  name text, schema_version integer, lease_ms bigint, now_ms bigint DEFAULT NULL)
RETURNS SETOF sync_backfill_checkpoints
LANGUAGE plpgsql
ROWS 1
SECURITY DEFINER
SET search_path = pg_catalog, @extschema@, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  p_name ALIAS FOR $1;
  p_version ALIAS FOR $2;
  stamp bigint;
  db_now bigint := sync_now_ms();
  candidate text;
BEGIN
  PERFORM sync_assert_key('name', p_name);
  PERFORM sync_assert_nonnegative('schema_version', p_version, 1);
  IF $3 IS NULL OR $3 < 1000 OR $3 > 86400000 THEN
    RAISE EXCEPTION 'invalid argument: lease_ms must be between 1000 (1 second) and 86400000 (1 day), got %', coalesce($3::text, 'NULL')
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  stamp := sync_assert_now_ms('now_ms', $4);
  FOR candidate IN
    SELECT c.partition FROM sync_backfill_checkpoints c
     WHERE c.schema_version = p_version AND c.name = p_name AND c.state <> 'activated'
       AND (c.state = 'declared' OR c.updated_at_ms <= db_now - $3 OR c.updated_at_ms > db_now + 300000)
     ORDER BY c.partition
  LOOP
    -- Re-checked on the row's latest version once locked: a concurrent
    -- claim that committed meanwhile makes it fail.
    PERFORM 1 FROM sync_backfill_checkpoints c
     WHERE c.partition = candidate AND c.name = p_name AND c.schema_version = p_version
       AND c.state <> 'activated'
       AND (c.state = 'declared' OR c.updated_at_ms <= db_now - $3 OR c.updated_at_ms > db_now + 300000)
       FOR UPDATE SKIP LOCKED;
    IF FOUND THEN
      RETURN QUERY SELECT * FROM sync_claim_checkpoint(candidate, p_name, p_version, stamp);
      RETURN;
    END IF;
  END LOOP;
END;
$$;
REVOKE ALL ON FUNCTION sync_claim_next_checkpoint(text,integer,bigint,bigint) FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
GRANT EXECUTE ON FUNCTION sync_claim_next_checkpoint(text,integer,bigint,bigint) TO sync_admin, sync_backfill;
COMMENT ON FUNCTION sync_claim_next_checkpoint(text,integer,bigint,bigint) IS 'A fleet worker''s claim: the next checkpoint of a projection that no live worker owns (declared, or its lease_ms expired), with SKIP LOCKED; no row when none is claimable.';
-- Example:
--   SELECT * FROM sync_declare_checkpoint('p1', 'todos_by_owner', 2);
--   SELECT partition, owner_epoch FROM sync_claim_next_checkpoint('todos_by_owner', 2, 60000);  -- p1 | 1
