-- Undo a mistaken declare: remove a checkpoint that is not activated (a
-- wrong name or partition), so the gate stops waiting for it. Returns the
-- removed row. The partition's writer fence is NOT lowered: a fence only
-- rises, and writers it already shut out stay out (a fence that should not
-- exist is the DBA's to delete by hand, knowing which writers return). An
-- activated checkpoint is refused (sync.storage.checkpoint_activated: the
-- gate has served on it); a missing one is
-- sync.storage.checkpoint_not_declared. A worker still filling a removed
-- checkpoint loses its next advance (the CAS finds no row).
--
-- The removed row's owner_epoch is remembered: sync_checkpoint_epoch_floor
-- is raised to it (sequences are not rolled back, so a removal that rolls
-- back only leaves the floor higher, which is harmless), and every later
-- claim and declare starts above the floor, so the old owner's epoch never
-- becomes valid again on a re-declared row. Removals serialize on a SHARE
-- ROW EXCLUSIVE lock of sync_schema_meta (no push or gate writes the
-- marker; declares take ROW EXCLUSIVE before reading the floor), so the
-- read-then-raise of the floor never lowers it and no declare reads it
-- before it is raised.
CREATE OR REPLACE FUNCTION sync_remove_checkpoint(partition text, name text)
RETURNS SETOF sync_backfill_checkpoints
LANGUAGE plpgsql
ROWS 1
SECURITY DEFINER
SET search_path = pg_catalog, @extschema@, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  removed sync_backfill_checkpoints;
BEGIN
  PERFORM sync_assert_key('partition', $1);
  PERFORM sync_assert_key('name', $2);
  LOCK TABLE sync_schema_meta IN SHARE ROW EXCLUSIVE MODE;
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
  IF removed.owner_epoch > (SELECT s.last_value FROM sync_checkpoint_epoch_floor s) THEN
    PERFORM setval('sync_checkpoint_epoch_floor', removed.owner_epoch);
  END IF;
  RETURN NEXT removed;
END;
$$;
REVOKE ALL ON FUNCTION sync_remove_checkpoint(text,text) FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
GRANT EXECUTE ON FUNCTION sync_remove_checkpoint(text,text) TO sync_admin;
COMMENT ON FUNCTION sync_remove_checkpoint(text,text) IS 'Undo a mistaken declare: remove a checkpoint that is not activated and return it; the fence stays. sync.storage.checkpoint_activated or checkpoint_not_declared otherwise.';
-- Example:
--   SELECT * FROM sync_declare_checkpoint('p1', 'todos_by_owner', 2);
--   SELECT * FROM sync_remove_checkpoint('p1', 'todos_by_owner');  -- the removed row
