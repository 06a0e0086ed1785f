-- A segment minted at schema version segment_schema_version is expired
-- (`sync.segment_expired`, the client re-pulls) when the partition has a
-- backfill checkpoint of a newer schema version: the segment predates the
-- projection and is not a complete window once it is checkpointed.
CREATE OR REPLACE FUNCTION sync_segment_expired(partition text, segment_schema_version bigint)
RETURNS boolean
LANGUAGE sql
STABLE
SET search_path = pg_catalog, @extschema@, pg_temp
AS $$
  SELECT EXISTS (SELECT 1 FROM sync_backfill_checkpoints c
                  WHERE c.partition = $1 AND c.schema_version > $2)
   WHERE sync_assert_key('partition', $1)
     AND sync_assert_nonnegative('segment_schema_version', $2)
$$;
REVOKE ALL ON FUNCTION sync_segment_expired(text,bigint) FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
GRANT EXECUTE ON FUNCTION sync_segment_expired(text,bigint) TO sync_reader;
COMMENT ON FUNCTION sync_segment_expired(text,bigint) IS 'True when a segment minted at segment_schema_version is expired (sync.segment_expired): the partition has a checkpoint of a newer schema version.';
-- Example:
--   SELECT sync_segment_expired('p1', 1);  -- f
