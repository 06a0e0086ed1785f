-- Insert the `declared` row and raise the fence, in the caller's transaction.
-- Shared by sync_declare_checkpoint and the schema bump, so the marker, the
-- fence and the declaration commit together. Never lowers a fence and never
-- re-declares an existing row.
--
-- The partition row is written first (a no-op UPDATE, or created), which is
-- what makes the fence hold under REPEATABLE READ and SERIALIZABLE: a writer
-- whose snapshot predates this transaction fails its seq allocation with a
-- serialization failure instead of appending under a fence it cannot see,
-- and a writer holding the partition lock finishes before the fence rises.
CREATE OR REPLACE FUNCTION sync_install_checkpoint(
  partition text, name text, schema_version integer, now_ms bigint DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
  p_partition ALIAS FOR $1;
  p_name ALIAS FOR $2;
  p_version ALIAS FOR $3;
BEGIN
  PERFORM sync_assert_key('partition', p_partition);
  PERFORM sync_assert_key('name', p_name);
  PERFORM sync_assert_nonnegative('schema_version', p_version, 1);
  INSERT INTO sync_partitions AS p (partition) VALUES (p_partition)
  ON CONFLICT (partition) DO UPDATE SET max_commit_seq = p.max_commit_seq;
  INSERT INTO sync_backfill_checkpoints AS c (
    partition, name, schema_version, state, watermark,
    owner_epoch, observed_rows, updated_at_ms)
  VALUES (p_partition, p_name, p_version, 'declared', 0, 0, 0, coalesce($4, sync_now_ms()))
  ON CONFLICT (partition, name) DO NOTHING;
  INSERT INTO sync_writer_fence AS f (partition, required_writer_version)
  VALUES (p_partition, p_version)
  ON CONFLICT (partition) DO UPDATE
    SET required_writer_version = GREATEST(f.required_writer_version, EXCLUDED.required_writer_version);
END;
$$;
