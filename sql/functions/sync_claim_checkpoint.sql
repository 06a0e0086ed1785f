-- Claim a checkpoint for a backfill worker: owner_epoch + 1, `declared`
-- becomes `backfilling`. The increment is evaluated under the UPDATE's own
-- row lock, so two claimers never see the same epoch; every older owner's CAS
-- fails from then on. An epoch is never reused for a (partition, name): the
-- new one is above sync_checkpoint_epoch_floor too, which
-- sync_remove_checkpoint raises to every removed row's epoch (a re-declared
-- row starts again at 0; its old owner's epoch must stay dead).
--
-- schema_version must be the declared one and is never re-stamped: a claim
-- at another version would drop the row from the running version's pending
-- list and open the gate over a projection nobody filled.
CREATE OR REPLACE FUNCTION sync_claim_checkpoint(
  partition text, name text, schema_version integer, now_ms bigint DEFAULT NULL)
RETURNS SETOF sync_backfill_checkpoints
LANGUAGE plpgsql
ROWS 1
SECURITY DEFINER
SET search_path = pg_catalog, @extschema@, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  claimed sync_backfill_checkpoints;
  declared_version integer;
  stamp bigint;
  floor_epoch bigint;
BEGIN
  PERFORM sync_assert_key('partition', $1);
  PERFORM sync_assert_key('name', $2);
  PERFORM sync_assert_nonnegative('schema_version', $3, 1);
  stamp := sync_assert_now_ms('now_ms', $4);
  SELECT s.last_value INTO floor_epoch FROM sync_checkpoint_epoch_floor s;
  UPDATE sync_backfill_checkpoints c
     SET owner_epoch = GREATEST(c.owner_epoch, floor_epoch) + 1,
         state = 'backfilling',
         updated_at_ms = stamp
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
REVOKE ALL ON FUNCTION sync_claim_checkpoint(text,text,integer,bigint) FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
GRANT EXECUTE ON FUNCTION sync_claim_checkpoint(text,text,integer,bigint) TO sync_admin, sync_backfill;
COMMENT ON FUNCTION sync_claim_checkpoint(text,text,integer,bigint) IS 'Claim a declared (or backfilling) checkpoint for a backfill worker: a new owner_epoch, state backfilling. sync.storage.checkpoint_not_declared when missing, activated or at another version.';
-- Example:
--   SELECT * FROM sync_declare_checkpoint('p1', 'todos_by_owner', 2);
--   SELECT * FROM sync_claim_checkpoint('p1', 'todos_by_owner', 2);  -- owner_epoch 1, backfilling
