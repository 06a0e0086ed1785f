-- A logged payload of table tbl decoded with the layout of the version
-- that wrote it: a bump re-encodes the current rows but never the log, so
-- each change keeps the layout of its commit's writer_version.
--   * writer_version given: sync_layout_for's layout (that version's, else
--     the greatest recorded below it, else the oldest), or a refusal.
--   * writer_version NULL (an upstream server before 0.23 stamps none and
--     nothing records when it wrote): the newest recorded layout of tbl
--     under which the payload decodes, newest first. Upstream bumps only
--     append nullable columns, so a payload decodes under its own layout
--     and, but for contrived bytes, under no other: a shorter layout leaves
--     trailing bytes or a padding bit, a longer one runs out of input.
-- NULL for a NULL payload (a delete); 22023 when no recorded layout of tbl
-- decodes it (the newest one's refusal).
CREATE OR REPLACE FUNCTION sync_decode_logged(tbl text, writer_version bigint, payload bytea)
RETURNS jsonb
LANGUAGE plpgsql
STABLE
PARALLEL SAFE
SET search_path = pg_catalog, @extschema@, pg_temp
AS $$
DECLARE
  cols jsonb;
  decoded jsonb;
  newest jsonb;
BEGIN
  IF payload IS NULL THEN
    RETURN NULL;
  END IF;
  IF writer_version IS NOT NULL THEN
    cols := sync_layout_for(writer_version, tbl);
    IF cols IS NULL THEN
      RAISE EXCEPTION 'sync_decode_logged: no recorded layout of table % for writer_version %', quote_ident(tbl), writer_version
        USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN sync_decode_row(payload, cols);
  END IF;
  FOR cols IN SELECT l.tables -> tbl FROM sync_schema_layouts l WHERE l.tables ? tbl ORDER BY l.schema_version DESC LOOP
    decoded := sync_decode_row(payload, cols, false);
    IF decoded IS NOT NULL THEN
      RETURN decoded;
    END IF;
    newest := coalesce(newest, cols);
  END LOOP;
  IF newest IS NULL THEN
    RAISE EXCEPTION 'sync_decode_logged: no recorded layout of table %', quote_ident(tbl)
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  RETURN sync_decode_row(payload, newest);  -- raises the newest layout's refusal
END;
$$;
REVOKE ALL ON FUNCTION sync_decode_logged(text,bigint,bytea) FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
GRANT EXECUTE ON FUNCTION sync_decode_logged(text,bigint,bytea) TO sync_reader;
COMMENT ON FUNCTION sync_decode_logged(text,bigint,bytea) IS 'A logged payload of tbl decoded (sync_decode_row) with its writer_version''s layout (sync_layout_for); for a NULL writer_version, the newest recorded layout under which it decodes. NULL for a delete.';
-- Example:
--   SELECT c.commit_seq, c.idx, sync_decode_logged(c.tbl, k.writer_version, c.payload)
--     FROM sync_changes c JOIN sync_commits k USING (partition, commit_seq)
--    WHERE c.partition = 'p1' AND c.tbl = 'todos' ORDER BY c.commit_seq DESC LIMIT 10;
