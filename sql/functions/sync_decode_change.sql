-- One logged change decoded with the layout of the version that wrote it
-- (sync_decode_logged with its commit's writer_version): what a DBA reads
-- at psql. NULL for a delete; 22023 for a change that is not there.
CREATE OR REPLACE FUNCTION sync_decode_change(partition text, commit_seq bigint, idx integer)
RETURNS jsonb
LANGUAGE plpgsql
STABLE
PARALLEL SAFE
SET search_path = pg_catalog, @extschema@, pg_temp
AS $$
DECLARE
  ch record;
BEGIN
  SELECT c.tbl, c.payload, k.writer_version INTO ch
    FROM sync_changes c LEFT JOIN sync_commits k ON k.partition = c.partition AND k.commit_seq = c.commit_seq
   WHERE c.partition = $1 AND c.commit_seq = $2 AND c.idx = $3;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'sync_decode_change: no change (%, %, %)', $1, $2, $3 USING ERRCODE = 'invalid_parameter_value';
  END IF;
  RETURN sync_decode_logged(ch.tbl, ch.writer_version, ch.payload);
END;
$$;
REVOKE ALL ON FUNCTION sync_decode_change(text,bigint,integer) FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
GRANT EXECUTE ON FUNCTION sync_decode_change(text,bigint,integer) TO sync_reader;
COMMENT ON FUNCTION sync_decode_change(text,bigint,integer) IS 'One logged change decoded with the layout of its commit''s writer_version (sync_decode_logged); NULL for a delete.';
-- Example:
--   SELECT c.commit_seq, c.idx, sync_decode_change(c.partition, c.commit_seq, c.idx)
--     FROM sync_changes c WHERE c.partition = 'p1' ORDER BY c.commit_seq DESC LIMIT 10;
