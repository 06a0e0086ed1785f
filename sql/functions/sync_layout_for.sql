-- The columns of table tbl in the layouts a commit of writer_version was
-- written under, as sync_decode_row takes them: the recorded layouts of the
-- greatest version at or below writer_version; for a writer_version below
-- every record, and for NULL (a commit of an upstream server before 0.23,
-- which stamps no version; nothing records when it wrote), the oldest
-- recorded layouts. Records start with migration 00024 (seeded from the
-- marker then): a log written under older layouts than the first record
-- has no layout to decode it with: it is decoded under the oldest record,
-- where sync_decode_row usually refuses it (an appended column's bytes are
-- missing). NULL when those layouts have no such table.
CREATE OR REPLACE FUNCTION sync_layout_for(writer_version bigint, tbl text)
RETURNS jsonb
LANGUAGE sql
STABLE
PARALLEL SAFE
SET search_path = pg_catalog, @extschema@, pg_temp
AS $$
  SELECT l.layouts::jsonb -> $2
    FROM sync_schema_layouts l
   ORDER BY (l.schema_version <= $1) IS TRUE DESC,
            CASE WHEN l.schema_version <= $1 THEN -l.schema_version ELSE l.schema_version END
   LIMIT 1
$$;
REVOKE ALL ON FUNCTION sync_layout_for(bigint,text) FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
GRANT EXECUTE ON FUNCTION sync_layout_for(bigint,text) TO sync_reader;
COMMENT ON FUNCTION sync_layout_for(bigint,text) IS 'The columns of tbl in the layouts of writer_version: the greatest recorded version at or below it, else (NULL, or below every record) the oldest recorded.';
-- Example:
--   SELECT sync_layout_for(k.writer_version, 'todos') FROM sync_commits k WHERE k.partition = 'p1' AND k.commit_seq = 7;
