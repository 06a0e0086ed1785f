-- Deleted history is pruned history, whoever deletes (sync_prune_log,
-- upstream's prune, a DBA's DELETE): the statement-level AFTER DELETE
-- trigger of sync_commits, sync_changes and sync_change_scopes raises each
-- partition's horizon_seq to the highest seq the statement deleted (never
-- lowers it), in the deleting transaction. So a coverage check or a
-- watermark advance below a deleted seq reads `unverifiable` /
-- `log_pruned`, never `clean`. Only the owner can delete log rows (no sync
-- role has DELETE), and the horizon write is the owner's touch that
-- sync_partitions_guard checks as any other. A TRUNCATE deletes without
-- row triggers: its BEFORE TRUNCATE trigger raises every horizon to its
-- head first. One grouped pass over the deleted rows (a transition table);
-- nothing on a request path.
CREATE OR REPLACE FUNCTION sync_log_deleted()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, @extschema@, pg_temp
AS $$
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    UPDATE sync_partitions p SET horizon_seq = p.max_commit_seq WHERE p.horizon_seq < p.max_commit_seq;
    RETURN NULL;
  END IF;
  UPDATE sync_partitions p SET horizon_seq = d.seq
    FROM (SELECT g.partition, max(g.commit_seq) AS seq FROM deleted_rows g GROUP BY g.partition) d
   WHERE p.partition = d.partition AND p.horizon_seq < d.seq;
  RETURN NULL;
END;
$$;
REVOKE ALL ON FUNCTION sync_log_deleted() FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
COMMENT ON FUNCTION sync_log_deleted() IS 'internal: AFTER DELETE (statement) and BEFORE TRUNCATE trigger of sync_commits, sync_changes, sync_change_scopes: the horizon rises to every deleted seq (to the head for a TRUNCATE).';
