-- The first statement of a schema-bump transaction. EXCLUSIVE conflicts with
-- the ROW SHARE of every writer's partition lock (SELECT ... FOR UPDATE) and
-- the ROW EXCLUSIVE of its seq allocation, so writers (old binaries
-- included) wait at their first statement while plain reads go on. Taken
-- first, before anything else, so the lock order stays acyclic: a writer
-- already inside finishes while the bump waits.
CREATE OR REPLACE FUNCTION sync_begin_schema_change()
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
  LOCK TABLE sync_partitions IN EXCLUSIVE MODE;
END;
$$;
