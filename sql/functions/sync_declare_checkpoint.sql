-- Declare a backfill checkpoint: the row becomes visible and the fence that
-- protects it is raised in one transaction, so old writers are rejected for
-- the whole backfill. Returns the stored row (an existing row unchanged).
CREATE OR REPLACE FUNCTION sync_declare_checkpoint(
  partition text, name text, schema_version integer, now_ms bigint DEFAULT NULL)
RETURNS SETOF sync_backfill_checkpoints
LANGUAGE plpgsql
ROWS 1
SECURITY DEFINER
SET search_path = pg_catalog, @extschema@, pg_temp
AS $$
#variable_conflict use_column
BEGIN
  PERFORM sync_install_checkpoint($1, $2, $3, $4);
  RETURN QUERY
    SELECT c.* FROM sync_backfill_checkpoints c WHERE c.partition = $1 AND c.name = $2;
END;
$$;
REVOKE ALL ON FUNCTION sync_declare_checkpoint(text,text,integer,bigint) FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
GRANT EXECUTE ON FUNCTION sync_declare_checkpoint(text,text,integer,bigint) TO sync_admin;
COMMENT ON FUNCTION sync_declare_checkpoint(text,text,integer,bigint) IS 'Declare a backfill checkpoint and raise its partition''s writer fence in one transaction (never re-declares, never lowers a fence). Returns the stored row.';
-- Example:
--   SELECT * FROM sync_declare_checkpoint('p1', 'todos_by_owner', 2);  -- the declared row; fence >= 2
