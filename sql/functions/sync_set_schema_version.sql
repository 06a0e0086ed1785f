-- Write the schema marker inside a schema-bump transaction (after
-- sync_begin_schema_change(), which it requires, so no observer ever sees the
-- bumped marker without the fence installed in the same transaction). The
-- arguments and the marker rules (the version never goes down; at the same
-- version the layouts must match, column by column) are
-- sync_check_schema_version's, the one implementation a server's start-up
-- check calls too: a DBA at psql gets the same refusal, in the same words.
-- The check reads the marker under the migration lock: the lock is verified
-- held, and nothing here takes it, so it was taken before the read.
CREATE OR REPLACE FUNCTION sync_set_schema_version(schema_version bigint, layouts text DEFAULT '{}')
RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, @extschema@, pg_temp
AS $$
#variable_conflict use_column
BEGIN
  PERFORM sync_check_schema_version($1, $2);
  IF NOT EXISTS (SELECT 1 FROM pg_locks l
                  WHERE l.locktype = 'relation' AND l.relation = 'sync_partitions'::regclass
                    AND l.pid = pg_backend_pid() AND l.mode = 'ExclusiveLock' AND l.granted) THEN
    RAISE EXCEPTION 'sync_set_schema_version must run after sync_begin_schema_change() in the same transaction'
      USING ERRCODE = 'object_not_in_prerequisite_state',
            HINT = 'Start the schema-bump transaction with SELECT sync_begin_schema_change();';
  END IF;
  INSERT INTO sync_schema_meta AS m (id, schema_version, layouts) VALUES (1, $1, $2)
  ON CONFLICT (id) DO UPDATE SET schema_version = EXCLUDED.schema_version, layouts = EXCLUDED.layouts;
END;
$$;
REVOKE ALL ON FUNCTION sync_set_schema_version(bigint,text) FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
GRANT EXECUTE ON FUNCTION sync_set_schema_version(bigint,text) TO sync_admin;
COMMENT ON FUNCTION sync_set_schema_version(bigint,text) IS 'Write the schema marker inside a schema bump (after sync_begin_schema_change): never down; same layouts at the same version (the rules of sync_check_schema_version).';
-- Example:
--   BEGIN;
--   SELECT sync_begin_schema_change();
--   SELECT sync_set_schema_version(2, '{"todos": [{"name": "id", "type": "string", "nullable": false}]}');
--   COMMIT;
