-- The serve gate in one round trip: the stored schema version (0 without a
-- marker), the partition's log epoch (NULL when unregistered) and every
-- pending checkpoint (sync_pending_checkpoints) of the running schema
-- version, in any partition, ordered by (partition, name). It lists every
-- pending checkpoint (10^5 of them mid-migration at 10^5 partitions), so it
-- is for DBAs and diagnostics (gosync gate, Store.ServeGate); request paths
-- use sync_serve_check, which applies the refusal rule at the same cost
-- whatever is pending.
--
-- A single-SELECT SQL function that Postgres inlines into the calling query
-- (one cached plan for a prepared read, and the partial index serves it).
CREATE OR REPLACE FUNCTION sync_serve_gate(partition text, running_schema_version integer)
RETURNS TABLE (stored_schema_version bigint, log_epoch text, pending jsonb)
LANGUAGE sql
STABLE
ROWS 1
AS $$
  SELECT
    coalesce((SELECT m.schema_version FROM sync_schema_meta m WHERE m.id = 1), 0),
    (SELECT r.log_epoch FROM sync_partition_registry r WHERE r.partition = $1),
    coalesce((SELECT jsonb_agg(jsonb_build_object('partition', c.partition, 'name', c.name)
                               ORDER BY c.partition, c.name)
                FROM sync_pending_checkpoints c
               WHERE c.schema_version = $2),
             '[]'::jsonb)
   WHERE sync_assert_key('partition', $1)
     AND sync_assert_nonnegative('running_schema_version', $2)
$$;
REVOKE ALL ON FUNCTION sync_serve_gate(text,integer) FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
GRANT EXECUTE ON FUNCTION sync_serve_gate(text,integer) TO sync_reader;
COMMENT ON FUNCTION sync_serve_gate(text,integer) IS 'The serve gate''s raw inputs for DBAs: stored schema version, log epoch and every pending checkpoint of the running version (not for request paths: use sync_serve_check).';
-- Example:
--   SELECT * FROM sync_serve_gate('p1', 2);
