-- Who holds a lock the schema bump's migration lock (EXCLUSIVE on
-- sync_partitions) conflicts with: one row per session or prepared
-- transaction other than the caller's. pid is NULL for a prepared
-- transaction (pg_locks shows its locks with pid NULL; it is found through
-- the lock on its own transaction id, of the same virtualtransaction),
-- which keeps them across restarts until ROLLBACK PREPARED or COMMIT
-- PREPARED by its owner or a superuser; prepared_gid is its gid.
-- role is the session's login or the prepared transaction's owner,
-- lock_modes its conflicting modes, since its transaction start or
-- preparation time (NULL when the caller may not see it).
-- sync_begin_schema_change names them when its wait times out; gosync's
-- bump reports them as a *LockBusyError.
CREATE OR REPLACE FUNCTION sync_schema_change_blockers(
  OUT pid integer, OUT prepared_gid text, OUT role text, OUT lock_modes text, OUT since timestamptz)
RETURNS SETOF record
LANGUAGE sql
STABLE
SET search_path = pg_catalog, @extschema@, pg_temp
AS $$
  SELECT l.pid, x.gid::text, coalesce(x.owner, r.rolname)::text,
         string_agg(l.mode, ',' ORDER BY l.mode), min(coalesce(x.prepared, a.xact_start))
    FROM pg_locks l
    LEFT JOIN pg_locks t ON l.pid IS NULL AND t.pid IS NULL AND t.locktype = 'transactionid'
                        AND t.virtualtransaction = l.virtualtransaction
    LEFT JOIN pg_prepared_xacts x ON x.transaction = t.transactionid
    LEFT JOIN pg_stat_activity a ON a.pid = l.pid
    LEFT JOIN pg_roles r ON r.oid = a.usesysid
   WHERE l.locktype = 'relation' AND l.relation = 'sync_partitions'::regclass
     AND l.database = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database())
     AND l.granted AND l.mode <> 'AccessShareLock'
     AND l.pid IS DISTINCT FROM pg_backend_pid()
   GROUP BY l.pid, l.virtualtransaction, x.gid, x.owner, r.rolname
   ORDER BY x.gid NULLS LAST, l.pid
$$;
REVOKE ALL ON FUNCTION sync_schema_change_blockers() FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
GRANT EXECUTE ON FUNCTION sync_schema_change_blockers() TO sync_reader;
COMMENT ON FUNCTION sync_schema_change_blockers() IS 'Who holds a lock the migration lock conflicts with: one row per session (pid) or prepared transaction (prepared_gid), with role, lock_modes and since.';
-- Example:
--   SELECT * FROM sync_schema_change_blockers();
