-- The columns of table tbl in the layouts a commit of writer_version was
-- written under, as sync_decode_row takes them: the recorded layouts of
-- that version, else of the greatest recorded version below it, else (a
-- writer_version below every record) of the oldest recorded. NULL for a
-- NULL writer_version (a commit of an upstream server before 0.23: no
-- single layout is known, see sync_decode_logged) and when those layouts
-- have no such table. Records start with migration 00024 (seeded from the
-- marker then) or sync_record_schema_layouts.
CREATE OR REPLACE FUNCTION sync_layout_for(writer_version bigint, tbl text)
RETURNS jsonb
LANGUAGE sql
STABLE
PARALLEL SAFE
SET search_path = pg_catalog, @extschema@, pg_temp
AS $$
  SELECT l.tables -> $2
    FROM sync_schema_layouts l
   WHERE $1 IS NOT NULL
   ORDER BY l.schema_version <= $1 DESC,
            CASE WHEN l.schema_version <= $1 THEN -l.schema_version ELSE l.schema_version END
   LIMIT 1
$$;
REVOKE ALL ON FUNCTION sync_layout_for(bigint,text) FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
GRANT EXECUTE ON FUNCTION sync_layout_for(bigint,text) TO sync_reader;
COMMENT ON FUNCTION sync_layout_for(bigint,text) IS 'The columns of tbl in the recorded layouts of writer_version (else the greatest recorded below it, else the oldest); NULL for a NULL writer_version.';
-- Example:
--   SELECT k.commit_seq, sync_layout_for(k.writer_version, 'todos') FROM sync_commits k WHERE k.partition = 'p1' ORDER BY k.commit_seq DESC LIMIT 1;
