-- Schema v1 of the example application: the todos table and the marker.
-- Apply after gosync's own migrations, with a version table of its own:
--   goose -dir examples/app-migration/migrations -table app_goose_db_version postgres "$DATABASE_URL" up

-- +goose Up
-- The migration lock first, before anything reads or writes: writers wait at
-- their first statement, plain reads go on (goose runs the file in one
-- transaction, so the lock is held until it commits).
SELECT sync_begin_schema_change();

CREATE TABLE todos (
  id text PRIMARY KEY,
  title text NOT NULL
);

SELECT sync_set_schema_version(1,
  '{"todos":[{"name":"id","type":"string","nullable":false},{"name":"title","type":"string","nullable":false}]}');

-- +goose Down
-- Schema bumps are one-way: the marker never goes down, because commits
-- written at a version cannot be read back by an older server.
DO $$ BEGIN RAISE EXCEPTION 'schema bumps are one-way: restore from a backup instead'; END $$;
