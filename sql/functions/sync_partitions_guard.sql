-- The sequence rules of sync_partitions, for every role: max_commit_seq only
-- moves up by one (an allocation) or stays (a lock or a fence raise), the
-- horizon never falls and never passes the head, a partition is never
-- renamed, and a new row starts at seq 0 or 1 with horizon 0. A writer may
-- UPDATE max_commit_seq (the upstream allocation statement), so without this
-- it could jump the head far ahead (a backfill chasing an endless empty
-- range) or move it back under existing commits.
--
-- The triggers fire it only through their WHEN conditions, so a legal
-- allocation pays no function call.
CREATE OR REPLACE FUNCTION sync_partitions_guard()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
  RAISE EXCEPTION 'sync.storage.partition_seq_rejected'
    USING ERRCODE = 'check_violation',
          DETAIL = format('partition %L: max_commit_seq %s -> %s, horizon_seq %s -> %s (%s); allocations add 1, the horizon only rises through sync_prune_log',
                          NEW.partition,
                          CASE WHEN TG_OP = 'UPDATE' THEN OLD.max_commit_seq::text ELSE 'new' END, NEW.max_commit_seq,
                          CASE WHEN TG_OP = 'UPDATE' THEN OLD.horizon_seq::text ELSE 'new' END, NEW.horizon_seq,
                          TG_OP);
END;
$$;
