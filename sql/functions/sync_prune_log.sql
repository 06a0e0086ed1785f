-- Prune a partition's log through through_seq: its commits, changes and
-- change scopes go, and horizon_seq rises to through_seq (never falls) in the
-- same transaction, under the partition lock. From then on a coverage check
-- at a watermark below the horizon is `unverifiable`, never `clean`.
-- Returns the new horizon.
CREATE OR REPLACE FUNCTION sync_prune_log(partition text, through_seq bigint)
RETURNS bigint
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, @extschema@, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  locked sync_partitions;
BEGIN
  PERFORM sync_assert_key('partition', $1);
  PERFORM sync_assert_nonnegative('through_seq', $2);
  SELECT * INTO locked FROM sync_lock_partition($1);
  IF $2 > locked.max_commit_seq THEN
    RAISE EXCEPTION 'invalid argument: through_seq % is above the partition''s last commit %', $2, locked.max_commit_seq
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  DELETE FROM sync_change_scopes s WHERE s.partition = $1 AND s.commit_seq <= $2;
  DELETE FROM sync_changes ch WHERE ch.partition = $1 AND ch.commit_seq <= $2;
  DELETE FROM sync_commits c WHERE c.partition = $1 AND c.commit_seq <= $2;
  UPDATE sync_partitions p SET horizon_seq = GREATEST(p.horizon_seq, $2)
   WHERE p.partition = $1
  RETURNING p.horizon_seq INTO locked.horizon_seq;
  RETURN locked.horizon_seq;
END;
$$;
REVOKE ALL ON FUNCTION sync_prune_log(text,bigint) FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
GRANT EXECUTE ON FUNCTION sync_prune_log(text,bigint) TO sync_admin;
COMMENT ON FUNCTION sync_prune_log(text,bigint) IS 'Prune a partition''s log through through_seq (commits, changes, change scopes) and raise horizon_seq to it, under the partition lock. Returns the new horizon.';
-- Example:
--   SELECT sync_touch_partition('p1');
--   SELECT sync_prune_log('p1', 0);  -- the new horizon
