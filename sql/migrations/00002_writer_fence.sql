-- The writer fence trigger. The function body is a verbatim copy of
-- sql/functions/syncular_writer_fence.sql as of this migration; a test proves
-- the migrated database runs exactly the canonical body.

-- +goose Up
-- +goose StatementBegin
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
-- +goose StatementEnd

CREATE TRIGGER sync_commits_writer_fence
BEFORE INSERT ON sync_commits
FOR EACH ROW EXECUTE FUNCTION syncular_writer_fence();

-- +goose Down
DROP TRIGGER sync_commits_writer_fence ON sync_commits;
DROP FUNCTION syncular_writer_fence();
