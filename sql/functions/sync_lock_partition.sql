-- The partition row lock every push takes (SELECT ... FOR UPDATE on
-- sync_partitions, inserting the row first when missing). Activation takes
-- the same lock, so no push can commit a source change between its coverage
-- check and its CAS.
CREATE OR REPLACE FUNCTION sync_lock_partition(partition text)
RETURNS SETOF sync_partitions
LANGUAGE plpgsql
ROWS 1
SET search_path = pg_catalog, @extschema@, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  p_partition ALIAS FOR $1;
BEGIN
  PERFORM sync_assert_key('partition', p_partition);
  INSERT INTO sync_partitions AS p (partition) VALUES (p_partition)
  ON CONFLICT (partition) DO NOTHING;
  RETURN QUERY
    SELECT p.* FROM sync_partitions p WHERE p.partition = p_partition FOR UPDATE;
END;
$$;
REVOKE ALL ON FUNCTION sync_lock_partition(text) FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
GRANT EXECUTE ON FUNCTION sync_lock_partition(text) TO sync_writer;
COMMENT ON FUNCTION sync_lock_partition(text) IS 'internal: the partition row lock (SELECT ... FOR UPDATE on sync_partitions, inserting the row when missing) that pushes and activations take.';
