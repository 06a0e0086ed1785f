-- The first statement of a schema-bump transaction. EXCLUSIVE conflicts with
-- the ROW SHARE of every writer's partition lock (SELECT ... FOR UPDATE) and
-- the ROW EXCLUSIVE of its seq allocation, so writers (old binaries
-- included) wait at their first statement while plain reads go on. Taken
-- first, before anything else, so the lock order stays acyclic: a writer
-- already inside finishes while the bump waits.
--
-- The wait is bounded: a session without lock_timeout gets 5s for the rest
-- of the bump's transaction (a waiting LOCK queues every writer behind it,
-- and a prepared transaction holding a partition lock never ends by
-- itself). When the wait times out the error (55P03, as a lock timeout)
-- names who holds a conflicting lock (sync_schema_change_blockers: pid or
-- prepared transaction gid, and role) and what ends it.
CREATE OR REPLACE FUNCTION sync_begin_schema_change()
RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, @extschema@, pg_temp
AS $$
DECLARE
  holders text;
  prepared text;
BEGIN
  IF current_setting('lock_timeout') = '0' THEN
    PERFORM set_config('lock_timeout', '5s', true);
  END IF;
  BEGIN
    LOCK TABLE sync_partitions IN EXCLUSIVE MODE;
  EXCEPTION WHEN lock_not_available THEN
    SELECT string_agg(CASE WHEN b.pid IS NULL
                           THEN format('prepared transaction %L (owner %s, %s)', b.prepared_gid, b.role, b.lock_modes)
                           ELSE format('pid %s (role %s, %s)', b.pid, coalesce(b.role, 'unknown'), b.lock_modes) END, '; '),
           string_agg(format('ROLLBACK PREPARED %L', b.prepared_gid), '; ') FILTER (WHERE b.pid IS NULL)
      INTO holders, prepared
      FROM sync_schema_change_blockers() b;
    RAISE EXCEPTION 'sync_begin_schema_change: the migration lock (EXCLUSIVE on sync_partitions) was not granted within lock_timeout %: held by %',
      current_setting('lock_timeout'), coalesce(holders, 'nobody any more (retry)')
      USING ERRCODE = 'lock_not_available',
            HINT = CASE WHEN prepared IS NOT NULL
                        THEN format('A prepared transaction keeps its locks across restarts until it is ended: %s (or COMMIT PREPARED), run by its owner or a superuser. ', prepared)
                        ELSE '' END
                   || 'A session: let its transaction end, or pg_terminate_backend(pid); then retry the bump.';
  END;
END;
$$;
REVOKE ALL ON FUNCTION sync_begin_schema_change() FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
GRANT EXECUTE ON FUNCTION sync_begin_schema_change() TO sync_admin;
COMMENT ON FUNCTION sync_begin_schema_change() IS 'First statement of a schema-bump transaction: the migration lock (EXCLUSIVE on sync_partitions), writers wait, reads go on. Bounded wait (5s without lock_timeout); a timeout (55P03) names the holders.';
-- Example:
--   BEGIN;
--   SELECT sync_begin_schema_change();  -- writers wait from here to COMMIT
--   SELECT sync_set_schema_version(2, '{"todos": [{"name": "id", "type": "string", "nullable": false}]}');
--   SELECT sync_install_checkpoints(ARRAY['p1'], ARRAY['todos_by_owner'], 2);
--   COMMIT;
