-- The AFTER INSERT trigger of sync_partitions (a partition's first row, a
-- rare path): a projection declared for every partition
-- (sync_all_partition_checkpoints, written by sync_install_all_partitions)
-- holds for partitions created later too. The new partition gets the
-- fence of the highest declared version (never lowered) and each declared
-- checkpoint, in the creating transaction, before anything is appended.
--
-- The checkpoints are inserted `activated` at watermark 0: a partition
-- created now has no history, so its projection is complete, and every
-- later commit comes from a writer at or above the fence, which maintains
-- the projection. Declaring them instead would close the gate on the new
-- partition until a fleet backfilled nothing (and sync_push, whose gate
-- refuses a pending checkpoint in its own partition, could never create
-- one). If the partition does have commits of another transaction (a
-- restore, a row the owner deleted and re-created), they are history no
-- projection covers: then the checkpoints are `declared`, for a backfill.
--
-- Commits inserted before this trigger ran, in this partition, below the
-- fence are refused (writer_fence_rejected): the upstream server allocates
-- and commits in one statement (INSERT INTO sync_partitions ... ON CONFLICT
-- DO UPDATE in a CTE, then INSERT INTO sync_commits), so its commit passed
-- the fence trigger before this AFTER trigger raised the fence.
--
-- The row is read FOR SHARE: a REPEATABLE READ or SERIALIZABLE creator
-- whose snapshot predates the declaration (it waited on the bump's
-- migration lock) fails with 40001 instead of reading "no declarations".
-- SECURITY DEFINER (a row lock needs UPDATE; the fence and the checkpoints
-- are written for a writer that may not write them) with a pinned path.
CREATE OR REPLACE FUNCTION sync_partition_created()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, @extschema@, pg_temp
AS $$
DECLARE
  declared sync_all_partition_checkpoints;
  required integer;
  below sync_commits;
  history boolean;
BEGIN
  SELECT a.* INTO declared FROM sync_all_partition_checkpoints a WHERE a.id = 1 FOR SHARE;
  IF NOT FOUND OR cardinality(declared.names) = 0 THEN
    RETURN NULL;
  END IF;
  -- In a block of its own, so a subtransaction: the head rule reads a fence
  -- row written by the same (sub)transaction as the partition row as an
  -- owner's touch (syncular_writer_fence: p.xmin = f.xmin), and this is the
  -- creator's own allocation, which must stay pushable.
  BEGIN
    INSERT INTO sync_writer_fence AS f (partition, required_writer_version)
    SELECT NEW.partition, max(v.v) FROM unnest(declared.schema_versions) AS v(v)
    ON CONFLICT (partition) DO UPDATE
      SET required_writer_version = EXCLUDED.required_writer_version
      WHERE f.required_writer_version < EXCLUDED.required_writer_version;
  EXCEPTION WHEN OTHERS THEN
    RAISE;
  END;
  SELECT f.required_writer_version INTO required FROM sync_writer_fence f WHERE f.partition = NEW.partition;
  SELECT c.* INTO below FROM sync_commits c
   WHERE c.partition = NEW.partition AND (c.writer_version IS NULL OR c.writer_version < required)
   ORDER BY c.commit_seq LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'sync.storage.writer_fence_rejected'
      USING DETAIL = format('partition %L requires writer_version >= %s; the commit offered %s',
                            NEW.partition, required, coalesce(below.writer_version::text, 'NULL')),
            HINT = 'Upgrade the writer to the schema version the fence requires.';
  END IF;
  history := EXISTS (SELECT 1 FROM sync_commits c
                      WHERE c.partition = NEW.partition AND NOT sync_xid_is_current(c.xmin));
  INSERT INTO sync_backfill_checkpoints AS c (
    partition, name, schema_version, state, watermark, owner_epoch, observed_rows, updated_at_ms)
  SELECT NEW.partition, d.n, d.v, CASE WHEN history THEN 'declared' ELSE 'activated' END, 0, 0, 0, sync_now_ms()
    FROM unnest(declared.names, declared.schema_versions) AS d(n, v)
  ON CONFLICT (partition, name) DO NOTHING;
  RETURN NULL;
END;
$$;
REVOKE ALL ON FUNCTION sync_partition_created() FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
COMMENT ON FUNCTION sync_partition_created() IS 'internal: AFTER INSERT trigger of sync_partitions: a new partition gets the fence and the checkpoints declared for every partition (sync_all_partition_checkpoints).';
