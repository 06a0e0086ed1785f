-- A change (or change scope) is written only under a commit appended by the
-- same transaction: the AFTER INSERT row trigger of sync_changes and
-- sync_change_scopes (AFTER: it runs when the whole statement is done, so
-- one statement that appends a commit and its changes in sibling CTEs
-- passes, whichever CTE ran first). Without it a writer could attach a change to an old
-- commit (below an activated checkpoint's watermark: the projection silently
-- misses it) or to a seq that does not exist yet (a backfill would chase it
-- forever). The commit itself can only be appended at the head
-- (syncular_writer_fence), so together: the log only grows at its head.
-- A change's op is upstream's 1 (upsert) or 2 (delete): a reader has no
-- meaning for any other, so none is stored.
--
-- A row trigger with one primary-key probe: the upstream server inserts one
-- change per statement, and a row trigger reads only NEW.partition's rows
-- (what a distributed table allows). Like the fence it pins no search_path
-- (a GUC save and restore per row): tables are qualified with the schema the
-- migration wrote in (@extschema@), functions and operators with
-- pg_catalog. It calls no function of its own schema (whoever can replace
-- one, the schema's owner, would switch the rule off): the "is this xid
-- mine" test is sync_xid_is_current's body, written out (see
-- syncular_writer_fence.sql). It runs as the inserting role, which reads
-- sync_commits.
CREATE OR REPLACE FUNCTION sync_changes_follow_commit()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
  IF NOT coalesce((SELECT CASE
                     WHEN c.xmin::pg_catalog.text::bigint OPERATOR(pg_catalog.<) 3 THEN false
                     WHEN (c.xmin::pg_catalog.text::bigint
                           OPERATOR(pg_catalog.-) (pg_catalog.pg_current_xact_id()::pg_catalog.text::bigint OPERATOR(pg_catalog.&) 4294967295)
                           OPERATOR(pg_catalog.+) 4294967296) OPERATOR(pg_catalog.%) 4294967296
                          OPERATOR(pg_catalog.>=) 2147483648 THEN false
                     ELSE pg_catalog.pg_xact_status((
                            pg_catalog.pg_current_xact_id()::pg_catalog.text::bigint OPERATOR(pg_catalog.+)
                            (c.xmin::pg_catalog.text::bigint
                             OPERATOR(pg_catalog.-) (pg_catalog.pg_current_xact_id()::pg_catalog.text::bigint OPERATOR(pg_catalog.&) 4294967295)
                             OPERATOR(pg_catalog.+) 4294967296) OPERATOR(pg_catalog.%) 4294967296
                          )::pg_catalog.text::pg_catalog.xid8) OPERATOR(pg_catalog.=) 'in progress'
                   END
                     FROM @extschema@.sync_commits c
                    WHERE c.partition OPERATOR(pg_catalog.=) NEW.partition
                      AND c.commit_seq OPERATOR(pg_catalog.=) NEW.commit_seq), false) THEN
    RAISE EXCEPTION 'sync.storage.change_without_commit'
      USING DETAIL = pg_catalog.format('%s: partition %L has no commit %s appended by this transaction',
                                       TG_TABLE_NAME, NEW.partition, NEW.commit_seq),
            HINT = 'Insert changes in the transaction that appends their commit (sync_append_commit does both).';
  END IF;
  -- NEW.op exists on sync_changes only; the inner IF is planned only there.
  IF TG_TABLE_NAME OPERATOR(pg_catalog.=) 'sync_changes' THEN
    IF NEW.op OPERATOR(pg_catalog.<>) 1 AND NEW.op OPERATOR(pg_catalog.<>) 2 THEN
      RAISE EXCEPTION 'sync.storage.change_op_rejected'
        USING DETAIL = pg_catalog.format('sync_changes: partition %L commit %s change %s has op %s; a change is 1 (upsert) or 2 (delete)',
                                         NEW.partition, NEW.commit_seq, NEW.idx, NEW.op);
    END IF;
  END IF;
  RETURN NULL;
END;
$$;
REVOKE ALL ON FUNCTION sync_changes_follow_commit() FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
COMMENT ON FUNCTION sync_changes_follow_commit() IS 'internal: AFTER INSERT trigger of sync_changes and sync_change_scopes: a change belongs to a commit this transaction appended, and its op is 1 or 2 (sync.storage.change_without_commit, change_op_rejected).';
