-- The highest commit_seq of any change to the source tables in the
-- partition, 0 when none: the watermark a backfill must reach.
CREATE OR REPLACE FUNCTION sync_source_coverage_seq(partition text, sources text[])
RETURNS bigint
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, @extschema@, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  seq bigint;
BEGIN
  PERFORM sync_assert_key('partition', $1);
  PERFORM sync_assert_sources($2);
  SELECT max(ch.commit_seq) INTO seq
    FROM sync_changes ch
   WHERE ch.partition = $1 AND ch.tbl = ANY ($2);
  RETURN coalesce(seq, 0);
END;
$$;
REVOKE ALL ON FUNCTION sync_source_coverage_seq(text,text[]) FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
GRANT EXECUTE ON FUNCTION sync_source_coverage_seq(text,text[]) TO sync_reader;
COMMENT ON FUNCTION sync_source_coverage_seq(text,text[]) IS 'The highest commit_seq of any change to the source tables in the partition, 0 when none: the watermark a backfill must reach.';
-- Example:
--   SELECT sync_source_coverage_seq('p1', ARRAY['todos']);  -- 0
