-- Schema v2: todos get an owner, and the todos_by_owner projection must be
-- backfilled before any server serves it. Everything below commits together:
-- nobody sees the v2 marker without the fence that keeps v1 writers out.

-- +goose Up
SELECT sync_begin_schema_change();

ALTER TABLE todos ADD COLUMN owner_id text;

SELECT sync_set_schema_version(2,
  '{"todos":[{"name":"id","type":"string","nullable":false},{"name":"title","type":"string","nullable":false},{"name":"owner_id","type":"string","nullable":true}]}');

-- Declare the projection's checkpoint in every partition, now and later, and
-- raise each partition's writer fence to 2, in one set-based call
-- (sync_install_all_partitions; 10^5 partitions cost a few statements). A
-- partition created after this commits gets the fence and the checkpoint
-- too, activated: it has no history to backfill.
SELECT sync_install_all_partitions(ARRAY['todos_by_owner'], 2);

-- +goose Down
DO $$ BEGIN RAISE EXCEPTION 'schema bumps are one-way: restore from a backup instead'; END $$;
