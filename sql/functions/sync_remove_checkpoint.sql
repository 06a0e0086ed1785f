-- Undo a mistaken declare: remove a checkpoint that is not activated (a
-- wrong name or partition), so the gate stops waiting for it. Returns the
-- removed row. The partition's writer fence is NOT lowered: a fence only
-- rises, and writers it already shut out stay out (a fence that should not
-- exist is the DBA's to delete by hand, knowing which writers return). An
-- activated checkpoint is refused (sync.storage.checkpoint_activated: the
-- gate has served on it); a missing one is
-- sync.storage.checkpoint_not_declared. A worker still filling a removed
-- checkpoint loses its next advance (the CAS finds no row).
CREATE OR REPLACE FUNCTION sync_remove_checkpoint(partition text, name text)
RETURNS SETOF sync_backfill_checkpoints
LANGUAGE plpgsql
ROWS 1
AS $$
#variable_conflict use_column
DECLARE
  removed sync_backfill_checkpoints;
BEGIN
  PERFORM sync_assert_key('partition', $1);
  PERFORM sync_assert_key('name', $2);
  DELETE FROM sync_backfill_checkpoints c
   WHERE c.partition = $1 AND c.name = $2 AND c.state <> 'activated'
  RETURNING c.* INTO removed;
  IF NOT FOUND THEN
    IF EXISTS (SELECT FROM sync_backfill_checkpoints c WHERE c.partition = $1 AND c.name = $2) THEN
      RAISE EXCEPTION 'sync.storage.checkpoint_activated'
        USING DETAIL = format('checkpoint %L in partition %L is activated: it cannot be removed', $2, $1);
    END IF;
    RAISE EXCEPTION 'sync.storage.checkpoint_not_declared'
      USING DETAIL = format('no checkpoint %L in partition %L', $2, $1);
  END IF;
  RETURN NEXT removed;
END;
$$;
