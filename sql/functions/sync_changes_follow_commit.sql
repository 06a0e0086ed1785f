-- A change (or change scope) is written only under a commit appended by the
-- same transaction: the statement-level AFTER INSERT trigger of sync_changes
-- and sync_change_scopes. Without it a writer could attach a change to an
-- old commit (below an activated checkpoint's watermark: the projection
-- silently misses it) or to a seq that does not exist yet (a backfill would
-- chase it forever). The commit itself can only be appended at the head
-- (syncular_writer_fence), so together: the log only grows at its head.
--
-- Statement-level with a transition table: one check per INSERT statement,
-- not one function call per change row.
CREATE OR REPLACE FUNCTION sync_changes_follow_commit()
RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
  orphan record;
BEGIN
  SELECT a.partition, a.commit_seq INTO orphan
    FROM (SELECT DISTINCT n.partition, n.commit_seq FROM added n) a
    LEFT JOIN sync_commits c ON c.partition = a.partition AND c.commit_seq = a.commit_seq
   WHERE c.partition IS NULL OR NOT sync_xid_is_current(c.xmin)
   LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'sync.storage.change_without_commit'
      USING DETAIL = format('%s: partition %L has no commit %s appended by this transaction',
                            TG_TABLE_NAME, orphan.partition, orphan.commit_seq),
            HINT = 'Insert changes in the transaction that appends their commit (sync_append_commit does both).';
  END IF;
  RETURN NULL;
END;
$$;
