-- pgTAP: the schema marker, the push append, the registry, pruning and
-- segment expiry.
BEGIN;
SELECT plan(24);

-- The marker.
SELECT throws_ok($$SELECT sync_set_schema_version(1)$$, '55000', NULL,
  'the marker cannot be written without the migration lock');
SELECT sync_begin_schema_change();
SELECT lives_ok($$SELECT sync_set_schema_version(2, '{"todos":[]}')$$, 'after the lock, the marker is written');
SELECT results_eq($$SELECT schema_version, layouts FROM sync_schema_meta$$,
  $$VALUES (2::bigint, '{"todos":[]}'::text)$$, 'marker and layouts stored');
SELECT throws_ok($$SELECT sync_set_schema_version(1)$$, '55000',
  'stored schema version 2 is newer than the configured schema (1) — refusing to run an older server against a migrated database', 'the marker never goes down');
SELECT throws_ok($$SELECT sync_set_schema_version(2, '{"todos":[{"name":"x","type":"string","nullable":true}]}')$$, '55000', NULL,
  'same version, other layouts: refused');
SELECT lives_ok($$SELECT sync_set_schema_version(2, '{"todos": []}')$$, 'same version, same layouts: a no-op');
SELECT throws_ok($$SELECT sync_set_schema_version(3, '[1]')$$, '22023', NULL, 'layouts must be a JSON object');

-- The push append.
SELECT is(sync_append_commit('p1', 'c1', 'cc1', 'u1', 100, 2,
    ARRAY['todos', 'todos'], ARRAY['r1', 'r2'], ARRAY[1, 2]::smallint[], ARRAY[1, NULL]::bigint[],
    ARRAY['{"owner": "u1"}', '{"owner": ["u1", "u2"]}']::jsonb[], ARRAY[NULL, '\x01']::bytea[]),
  '{"status": "applied", "commitSeq": 1, "replayed": false}'::jsonb, 'append returns the applied result');
SELECT results_eq($$SELECT commit_seq, idx, tbl, row_id, op, row_version FROM sync_changes ORDER BY idx$$,
  $$VALUES (1::bigint, 0, 'todos'::text, 'r1'::text, 1::smallint, 1::bigint), (1, 1, 'todos', 'r2', 2::smallint, NULL)$$,
  'changes stored in order, idx from 0');
SELECT results_eq($$SELECT var, value FROM sync_change_scopes ORDER BY value$$,
  $$VALUES ('owner'::text, 'u1'::text), ('owner', 'u2')$$, 'change scopes stored once each');
SELECT is((SELECT writer_version FROM sync_commits), 2::bigint, 'the commit carries its writer version');
SELECT is(sync_append_commit('p1', 'c1', 'cc1', 'u1', 100, 2, ARRAY['todos'], ARRAY['r9'], ARRAY[1]::smallint[],
    ARRAY[1]::bigint[], ARRAY['{}']::jsonb[], ARRAY[NULL]::bytea[]),
  '{"status": "applied", "commitSeq": 1, "replayed": true}'::jsonb, 'a replay returns the stored result');
SELECT is((SELECT count(*) FROM sync_changes), 2::bigint, '... and appends nothing');
SELECT throws_ok($$SELECT sync_append_commit('p1', 'c1', 'cc2', 'u1', 100, 2, ARRAY['todos'], ARRAY['r1', 'r2'],
    ARRAY[1]::smallint[], ARRAY[1]::bigint[], ARRAY['{}']::jsonb[], ARRAY[NULL]::bytea[])$$,
  '22023', NULL, 'change arrays of different lengths are refused');
INSERT INTO sync_writer_fence VALUES ('p1', 3);
SELECT throws_ok($$SELECT sync_append_commit('p1', 'c1', 'cc3', 'u1', 100, 2, '{}', '{}', '{}', '{}', '{}', '{}')$$,
  'P0001', 'sync.storage.writer_fence_rejected', 'the writer fence holds for appends');
SELECT is((SELECT max_commit_seq FROM sync_partitions WHERE partition = 'p1'), 1::bigint, 'a refused append allocates no seq');

-- Registry.
SELECT is((SELECT log_epoch FROM sync_touch_partition('p1', 'e1')), 'e1', 'touch registers the first epoch');
SELECT is((SELECT log_epoch FROM sync_touch_partition('p1', 'e9')), 'e1', 'touch keeps an existing epoch');
INSERT INTO sync_clients VALUES ('p1', 'c1', 'u1', 1, 1, '[]', 0);
SELECT results_eq($$SELECT log_epoch, epoch_required FROM sync_rotate_log_epoch('p1', 'e2')$$,
  $$VALUES ('e2'::text, true)$$, 'rotation stores the new epoch and requires it');
SELECT is((SELECT count(*) FROM sync_clients WHERE partition = 'p1'), 0::bigint, 'rotation deletes the partition''s clients');

-- Pruning and segments.
SELECT is(sync_prune_log('p1', 1), 1::bigint, 'prune returns the new horizon');
SELECT is((SELECT count(*) FROM sync_changes WHERE partition = 'p1'), 0::bigint, 'pruned changes are gone');
SELECT sync_declare_checkpoint('p1', 'proj', 3);
SELECT is(sync_segment_expired('p1', 2), true, 'a segment older than a checkpoint is expired');
SELECT is(sync_segment_expired('p1', 3), false, 'a segment at the checkpoint version is not');

SELECT * FROM finish();
ROLLBACK;
