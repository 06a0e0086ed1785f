-- Writer fence (RFC 0007): rejects a commit whose writer_version is NULL or
-- below the partition's required_writer_version. It lives in the database so
-- it holds for every writer: a Go service, an old TypeScript binary, a DBA's
-- raw INSERT. A partition with no fence row behaves exactly as before.
CREATE OR REPLACE FUNCTION syncular_writer_fence()
RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
  required integer;
BEGIN
  SELECT f.required_writer_version INTO required
    FROM sync_writer_fence f
   WHERE f.partition = NEW.partition;
  IF FOUND AND (NEW.writer_version IS NULL OR NEW.writer_version < required) THEN
    RAISE EXCEPTION 'sync.storage.writer_fence_rejected'
      USING DETAIL = format(
        'partition %L requires writer_version >= %s; the commit offered %s',
        NEW.partition, required, coalesce(NEW.writer_version::text, 'NULL')),
      HINT = 'Upgrade the writer to the schema version the fence requires.';
  END IF;
  RETURN NEW;
END;
$$;
