-- Insert the `declared` row and raise the fence, in the caller's transaction:
-- sync_install_checkpoints for one declaration, so the rules live in one
-- body (argument checks, never lowering a fence, never re-declaring a row,
-- and writing the partition row, which is what makes the fence hold under
-- REPEATABLE READ and SERIALIZABLE: a writer whose snapshot predates this
-- transaction fails its seq allocation with a serialization failure instead
-- of appending under a fence it cannot see). Shared by
-- sync_declare_checkpoint and a DBA's schema bump, so the marker, the fence
-- and the declaration commit together.
CREATE OR REPLACE FUNCTION sync_install_checkpoint(
  partition text, name text, schema_version integer, now_ms bigint DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, @extschema@, pg_temp
AS $$
BEGIN
  PERFORM sync_install_checkpoints(ARRAY[$1], ARRAY[$2], $3, $4);
END;
$$;
REVOKE ALL ON FUNCTION sync_install_checkpoint(text,text,integer,bigint) FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
GRANT EXECUTE ON FUNCTION sync_install_checkpoint(text,text,integer,bigint) TO sync_admin;
COMMENT ON FUNCTION sync_install_checkpoint(text,text,integer,bigint) IS 'Insert one declared checkpoint and raise its fence in the caller''s transaction (sync_install_checkpoints for one pair), e.g. in a DBA''s schema bump.';
-- Example:
--   SELECT sync_install_checkpoint('p1', 'todos_by_owner', 2);
