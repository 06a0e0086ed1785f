-- A change (or change scope) is written only under a commit appended by the
-- same transaction: the AFTER INSERT row trigger of sync_changes and
-- sync_change_scopes (AFTER: it runs when the whole statement is done, so
-- one statement that appends a commit and its changes in sibling CTEs
-- passes, whichever CTE ran first). Without it a writer could attach a change to an old
-- commit (below an activated checkpoint's watermark: the projection silently
-- misses it) or to a seq that does not exist yet (a backfill would chase it
-- forever). The commit itself can only be appended at the head
-- (syncular_writer_fence), so together: the log only grows at its head.
--
-- A row trigger with one primary-key probe: the upstream server inserts one
-- change per statement, and a row trigger reads only NEW.partition's rows
-- (what a distributed table allows). Like the fence it pins no search_path
-- (a GUC save and restore per row): tables are qualified with the schema the
-- migration wrote in (@extschema@), functions and operators with
-- pg_catalog. It runs as the inserting role, which reads sync_commits.
CREATE OR REPLACE FUNCTION sync_changes_follow_commit()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
  IF NOT coalesce((SELECT @extschema@.sync_xid_is_current(c.xmin)
                     FROM @extschema@.sync_commits c
                    WHERE c.partition OPERATOR(pg_catalog.=) NEW.partition
                      AND c.commit_seq OPERATOR(pg_catalog.=) NEW.commit_seq), false) THEN
    RAISE EXCEPTION 'sync.storage.change_without_commit'
      USING DETAIL = pg_catalog.format('%s: partition %L has no commit %s appended by this transaction',
                                       TG_TABLE_NAME, NEW.partition, NEW.commit_seq),
            HINT = 'Insert changes in the transaction that appends their commit (sync_append_commit does both).';
  END IF;
  RETURN NULL;
END;
$$;
