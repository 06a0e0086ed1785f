-- One change's payload decoded with the layout of the version that wrote
-- it (its commit's writer_version, through sync_layout_for): what a DBA
-- reads at psql. NULL for a delete (no payload); refuses a change that is
-- not there, a table its layouts do not have, and a payload that does not
-- decode (sync_decode_row's 22023).
CREATE OR REPLACE FUNCTION sync_decode_change(partition text, commit_seq bigint, idx integer)
RETURNS jsonb
LANGUAGE plpgsql
STABLE
PARALLEL SAFE
SET search_path = pg_catalog, @extschema@, pg_temp
AS $$
DECLARE
  ch record;
  cols jsonb;
BEGIN
  SELECT c.tbl, c.payload, k.writer_version INTO ch
    FROM sync_changes c LEFT JOIN sync_commits k ON k.partition = c.partition AND k.commit_seq = c.commit_seq
   WHERE c.partition = $1 AND c.commit_seq = $2 AND c.idx = $3;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'sync_decode_change: no change (%, %, %)', $1, $2, $3 USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF ch.payload IS NULL THEN
    RETURN NULL;
  END IF;
  cols := sync_layout_for(ch.writer_version, ch.tbl);
  IF cols IS NULL THEN
    RAISE EXCEPTION 'sync_decode_change: no recorded layout of table % for writer_version %', quote_ident(ch.tbl), coalesce(ch.writer_version::text, 'NULL')
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  RETURN sync_decode_row(ch.payload, cols);
END;
$$;
REVOKE ALL ON FUNCTION sync_decode_change(text,bigint,integer) FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
GRANT EXECUTE ON FUNCTION sync_decode_change(text,bigint,integer) TO sync_reader;
COMMENT ON FUNCTION sync_decode_change(text,bigint,integer) IS 'One change''s payload decoded (sync_decode_row) with the layout of its commit''s writer_version (sync_layout_for); NULL for a delete.';
-- Example:
--   SELECT c.commit_seq, c.idx, sync_decode_change(c.partition, c.commit_seq, c.idx)
--     FROM sync_changes c WHERE c.partition = 'p1' AND c.tbl = 'todos' ORDER BY c.commit_seq DESC LIMIT 10;
