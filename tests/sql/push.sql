-- pgTAP: a push in one call (sync_push).
BEGIN;
SELECT plan(7);

SELECT results_eq($$SELECT refusal, stored_schema_version, result FROM sync_push('p1', 2, NULL, '{}', '{}', '{}',
    'c1', 'cc1', 'u1', 100, ARRAY['todos'], ARRAY['r1'], ARRAY[1]::smallint[], ARRAY[1]::bigint[], ARRAY['{}']::jsonb[], ARRAY[NULL]::bytea[])$$,
  $$VALUES ('schema'::text, 0::bigint, NULL::jsonb)$$, 'no marker: a schema refusal, no result');
SELECT is((SELECT count(*) FROM sync_partitions), 0::bigint, 'a refused push leaves no partition row behind');

INSERT INTO sync_schema_meta VALUES (1, 2, '{}');
SELECT results_eq($$SELECT refusal, result FROM sync_push('p1', 2, NULL, '{}', '{}', '{}',
    'c1', 'cc1', 'u1', 100, ARRAY['todos'], ARRAY['r1'], ARRAY[1]::smallint[], ARRAY[1]::bigint[], ARRAY['{}']::jsonb[], ARRAY[NULL]::bytea[])$$,
  $$VALUES (NULL::text, '{"status": "applied", "commitSeq": 1, "replayed": false}'::jsonb)$$, 'open: appended');
SELECT is((SELECT writer_version FROM sync_commits), 2::bigint, 'stamped with the running schema version');
SELECT results_eq($$SELECT result FROM sync_push('p1', 2, NULL, '{}', '{}', '{}',
    'c1', 'cc1', 'u1', 100, '{}', '{}', '{}', '{}', '{}', '{}')$$,
  $$VALUES ('{"status": "applied", "commitSeq": 1, "replayed": true}'::jsonb)$$, 'a replay returns the stored result');

SELECT sync_declare_checkpoint('p1', 'proj', 2);
SELECT results_eq($$SELECT refusal, checkpoint_partition, checkpoint_name, result FROM sync_push('p1', 2, NULL, '{proj}', '{}', '{}',
    'c1', 'cc2', 'u1', 100, '{}', '{}', '{}', '{}', '{}', '{}')$$,
  $$VALUES ('checkpoint'::text, 'p1'::text, 'proj'::text, NULL::jsonb)$$, 'own partition backfilling: a checkpoint refusal');
SELECT is((SELECT count(*) FROM sync_commits), 1::bigint, '... and nothing appended');

SELECT * FROM finish();
ROLLBACK;
