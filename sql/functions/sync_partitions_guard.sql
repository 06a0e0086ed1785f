-- The sequence rules of sync_partitions, for every role: max_commit_seq only
-- moves up by one (an allocation) or stays, the horizon never falls and
-- never passes the head, a partition is never renamed, and a new row starts
-- at seq 0 or 1 with horizon 0. A writer may UPDATE max_commit_seq (the
-- upstream allocation statement), so without this it could jump the head
-- far ahead (a backfill chasing an endless empty range) or move it back
-- under existing commits.
--
-- A write that leaves max_commit_seq as it is (a "touch") is not an
-- allocation, but it makes the row version this transaction's, which is
-- what the fence reads as "allocated here": a seq left without a commit (a
-- hole at the head) would be filled late, at or below an activated
-- watermark and below clients' cursors. So a touch is the owner's alone
-- (a fence raise in sync_install_checkpoints, a horizon raise in
-- sync_prune_log: SECURITY DEFINER, they run as the owner); any other role
-- is refused. Members of the owner, superusers included, count as the
-- owner: they could switch the trigger off anyway. When the owner touches a
-- head that has no commit, the partition's fence row is rewritten in the
-- same (sub)transaction, and the fence refuses a commit whose partition row
-- and fence row versions come from one (sub)transaction (ROLLBACK TO a
-- savepoint undoes both). A head that has its commit (or is at or below
-- the horizon) cannot be filled: no mark is needed. Without a fence row (a
-- prune of an undeclared partition over a seq allocated and left without a
-- commit) there is nothing to mark with: the touch stands when the
-- session's login cannot append commits (itself or through any role it may
-- become); otherwise a horizon raise takes the horizon to the head (nothing
-- at or below it can be appended; more history reads as pruned, never
-- less), and any other touch is refused.
--
-- Upstream's prune raises the horizon with an upsert (INSERT ... VALUES
-- (partition, 0, horizon) ON CONFLICT (partition) DO UPDATE SET
-- horizon_seq = ...): the BEFORE INSERT trigger sees the proposed row
-- (horizon above its head 0) before the conflict. For the owner, when the
-- partition row exists, the insert can only end in the conflict: the row is
-- locked FOR KEY SHARE (nobody deletes it or changes its key before this
-- transaction ends) and the DO UPDATE is checked by the update trigger.
--
-- A new partition's name is a key like every other name (non-empty, at most
-- 512 characters): the writer's INSERT grant would otherwise store any text,
-- and a row no function can name blocks every declaration for every
-- partition (sync_install_all_partitions) until the owner deletes it.
--
-- The triggers fire it only through their WHEN conditions, so a legal
-- allocation pays no function call.
CREATE OR REPLACE FUNCTION sync_partitions_guard()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, @extschema@, pg_temp
AS $$
DECLARE
  is_owner boolean;
BEGIN
  IF TG_OP OPERATOR(pg_catalog.=) 'INSERT'
     AND (NEW.partition OPERATOR(pg_catalog.=) '' OR pg_catalog.length(NEW.partition) OPERATOR(pg_catalog.>) 512) THEN
    RAISE EXCEPTION 'invalid argument: partition must be a non-empty string of at most 512 characters (got % characters)',
      pg_catalog.length(NEW.partition)
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- The owner: of the table, or of this trigger's function (whom the
  -- SECURITY DEFINER functions of the same migration run as).
  SELECT pg_catalog.pg_has_role(CURRENT_USER, c.relowner, 'USAGE')
         OR pg_catalog.pg_has_role(CURRENT_USER, f.proowner, 'USAGE')
    INTO is_owner
    FROM pg_catalog.pg_trigger t
    JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) t.tgrelid
    JOIN pg_catalog.pg_proc f ON f.oid OPERATOR(pg_catalog.=) t.tgfoid
   WHERE t.tgrelid OPERATOR(pg_catalog.=) TG_RELID AND t.tgname OPERATOR(pg_catalog.=) TG_NAME;
  IF TG_OP OPERATOR(pg_catalog.=) 'INSERT' AND is_owner
     AND EXISTS (SELECT 1 FROM sync_partitions p WHERE p.partition OPERATOR(pg_catalog.=) NEW.partition FOR KEY SHARE) THEN
    RETURN NEW;
  END IF;
  IF TG_OP OPERATOR(pg_catalog.=) 'UPDATE'
     AND NEW.partition OPERATOR(pg_catalog.=) OLD.partition
     AND NEW.max_commit_seq OPERATOR(pg_catalog.=) OLD.max_commit_seq
     AND NEW.horizon_seq OPERATOR(pg_catalog.>=) OLD.horizon_seq
     AND NEW.horizon_seq OPERATOR(pg_catalog.<=) NEW.max_commit_seq THEN
    IF NOT is_owner THEN
      RAISE EXCEPTION 'sync.storage.partition_seq_rejected'
        USING ERRCODE = 'check_violation',
              DETAIL = pg_catalog.format('partition %L: an update that leaves max_commit_seq at %s allocates nothing (a touch); only the owner''s functions write the row without allocating (a fence or horizon raise), and %s is not the owner',
                                         NEW.partition, NEW.max_commit_seq, CURRENT_USER),
              HINT = 'Allocate a seq with max_commit_seq = max_commit_seq + 1; lock the row with SELECT ... FOR UPDATE (sync_lock_partition).';
    END IF;
    IF NEW.max_commit_seq OPERATOR(pg_catalog.>) NEW.horizon_seq
       AND NOT EXISTS (SELECT 1 FROM sync_commits c
                        WHERE c.partition OPERATOR(pg_catalog.=) NEW.partition
                          AND c.commit_seq OPERATOR(pg_catalog.=) NEW.max_commit_seq) THEN
      UPDATE sync_writer_fence f SET required_writer_version = f.required_writer_version
       WHERE f.partition OPERATOR(pg_catalog.=) NEW.partition;
      -- No fence row to mark with. Safe as it is when nobody in this
      -- session can append (the login, and every role it may SET ROLE to,
      -- lacks INSERT on sync_commits): an operator in sync_admin alone
      -- prunes a partition a writer left with an empty head. Otherwise a
      -- horizon raise takes the horizon to the head (nothing at or below it
      -- can be appended), and any other touch is refused.
      IF NOT FOUND AND NOT EXISTS (
           SELECT 1 FROM pg_catalog.pg_roles r
            WHERE pg_catalog.pg_has_role(SESSION_USER, r.oid, 'MEMBER')
              AND pg_catalog.has_table_privilege(r.oid, pg_catalog.quote_ident(TG_TABLE_SCHEMA) OPERATOR(pg_catalog.||) '.sync_commits', 'INSERT')) THEN
        NULL;
      ELSIF NOT FOUND AND NEW.horizon_seq OPERATOR(pg_catalog.>) OLD.horizon_seq THEN
        NEW.horizon_seq := NEW.max_commit_seq;
      ELSIF NOT FOUND THEN
        RAISE EXCEPTION 'sync.storage.partition_seq_rejected'
          USING ERRCODE = 'check_violation',
                DETAIL = pg_catalog.format('partition %L: its head %s has no commit (a seq allocated by a transaction that committed none), and a write of the partition row that allocates nothing would let this transaction fill it; the partition has no fence row to mark that with',
                                           NEW.partition, NEW.max_commit_seq),
                HINT = 'Push to the partition first (the next commit moves the head past the empty seq), or raise the horizon (prune).';
      END IF;
    END IF;
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'sync.storage.partition_seq_rejected'
    USING ERRCODE = 'check_violation',
          DETAIL = pg_catalog.format('partition %L: max_commit_seq %s -> %s, horizon_seq %s -> %s (%s); allocations add 1, the horizon only rises through sync_prune_log',
                          NEW.partition,
                          CASE WHEN TG_OP OPERATOR(pg_catalog.=) 'UPDATE' THEN OLD.max_commit_seq::pg_catalog.text ELSE 'new' END, NEW.max_commit_seq,
                          CASE WHEN TG_OP OPERATOR(pg_catalog.=) 'UPDATE' THEN OLD.horizon_seq::pg_catalog.text ELSE 'new' END, NEW.horizon_seq,
                          TG_OP);
END;
$$;
REVOKE ALL ON FUNCTION sync_partitions_guard() FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
COMMENT ON FUNCTION sync_partitions_guard() IS 'internal: BEFORE INSERT/UPDATE trigger of sync_partitions (through WHEN): max_commit_seq moves by one allocation, the horizon never falls nor passes the head, touches are the owner''s (sync.storage.partition_seq_rejected).';
