-- What an upstream @syncular/server 0.23 adds to tests/testdata/upstream_0_22.sql
-- when it starts (written for the adoption tests from the upstream DDL): the
-- writer_version column, the tables and index 0.23 declares, and its own
-- fence function and trigger (its body raises without a DETAIL).
ALTER TABLE sync_commits ADD COLUMN IF NOT EXISTS writer_version BIGINT;
CREATE INDEX IF NOT EXISTS sync_row_scopes_by_row ON sync_row_scopes(partition, tbl, row_id);
CREATE TABLE IF NOT EXISTS sync_tombstones(
  partition TEXT NOT NULL, tbl TEXT NOT NULL, row_id TEXT NOT NULL,
  commit_seq BIGINT NOT NULL,
  PRIMARY KEY(partition, tbl, row_id)
);
CREATE TABLE IF NOT EXISTS sync_backfill_checkpoints(
  partition TEXT NOT NULL, name TEXT NOT NULL,
  schema_version INTEGER NOT NULL,
  state TEXT NOT NULL CHECK(state IN ('declared','backfilling','activated')),
  watermark BIGINT NOT NULL DEFAULT 0,
  owner_epoch BIGINT NOT NULL DEFAULT 0,
  observed_rows BIGINT NOT NULL DEFAULT 0,
  updated_at_ms BIGINT NOT NULL,
  PRIMARY KEY(partition, name)
);
CREATE TABLE IF NOT EXISTS sync_writer_fence(
  partition TEXT PRIMARY KEY,
  required_writer_version INTEGER NOT NULL
);
CREATE OR REPLACE FUNCTION syncular_writer_fence() RETURNS trigger AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM sync_writer_fence
              WHERE partition = NEW.partition
                AND (NEW.writer_version IS NULL OR NEW.writer_version < required_writer_version)) THEN
    RAISE EXCEPTION 'sync.storage.writer_fence_rejected';
  END IF;
  RETURN NEW;
END;
$$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS sync_commits_writer_fence ON sync_commits;
CREATE TRIGGER sync_commits_writer_fence BEFORE INSERT ON sync_commits
  FOR EACH ROW EXECUTE FUNCTION syncular_writer_fence();
INSERT INTO sync_writer_fence VALUES ('p1', 1);
