-- Schema v2: todos get an owner, and the todos_by_owner projection must be
-- backfilled before any server serves it. Everything below commits together:
-- nobody sees the v2 marker without the fence that keeps v1 writers out.

-- +goose Up
SELECT sync_begin_schema_change();

ALTER TABLE todos ADD COLUMN owner_id text;

SELECT sync_set_schema_version(2,
  '{"todos":[{"name":"id","type":"text","nullable":false},{"name":"title","type":"text","nullable":false},{"name":"owner_id","type":"text","nullable":true}]}');

-- Declare the projection's checkpoint in every partition that has a log, and
-- raise each partition's writer fence to 2, in one set-based call
-- (sync_install_checkpoints does both; 10^5 partitions cost a few statements).
SELECT sync_install_checkpoints(coalesce(array_agg(partition), '{}'),
                                coalesce(array_agg('todos_by_owner'::text), '{}'), 2)
  FROM sync_partitions;

-- +goose Down
DO $$ BEGIN RAISE EXCEPTION 'schema bumps are one-way: restore from a backup instead'; END $$;
