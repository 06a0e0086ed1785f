-- Lock the schema marker row FOR SHARE and return its version (0 when
-- there is none): sync_push calls it outside READ COMMITTED, after the
-- partition lock. A REPEATABLE READ or SERIALIZABLE snapshot taken before a
-- schema bump committed (the push waited behind the bump's migration lock)
-- still shows the old marker, and the gate would serve it; locking the row
-- the bump updated fails with 40001 instead. READ COMMITTED pushes read the
-- marker in a statement that starts after the lock and do not call this.
--
-- It takes ROW SHARE on sync_partitions first, so whoever holds the marker
-- row also holds a lock the bump's first statement waits on — and that
-- sync_schema_change_blockers names — never one the bump would meet later.
-- SECURITY DEFINER (a row lock needs UPDATE, which writers do not have).
CREATE OR REPLACE FUNCTION sync_lock_schema_marker()
RETURNS bigint
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, @extschema@, pg_temp
AS $$
DECLARE
  version bigint;
BEGIN
  LOCK TABLE sync_partitions IN ROW SHARE MODE;
  SELECT m.schema_version INTO version FROM sync_schema_meta m WHERE m.id = 1 FOR SHARE;
  RETURN coalesce(version, 0);
END;
$$;
REVOKE ALL ON FUNCTION sync_lock_schema_marker() FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
GRANT EXECUTE ON FUNCTION sync_lock_schema_marker() TO sync_writer;
COMMENT ON FUNCTION sync_lock_schema_marker() IS 'internal: sync_push''s FOR SHARE lock of the schema marker outside READ COMMITTED, so a snapshot older than a bump fails with 40001. Returns the stored version.';
