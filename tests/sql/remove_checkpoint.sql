-- pgTAP: sync_remove_checkpoint undoes a mistaken declare as a DBA calls it
-- from psql. Runs in a rolled-back transaction.
BEGIN;
SELECT plan(9);

-- now_ms arguments must be within 5 minutes of the database clock: the
-- times below are offsets from two minutes before this transaction began.
CREATE FUNCTION pg_temp.t(offset_ms bigint) RETURNS bigint LANGUAGE sql STABLE
  AS $$ SELECT floor(extract(epoch FROM transaction_timestamp()) * 1000)::bigint - 120000 + offset_ms $$;
-- The stored schema: activation checks against its tables.
INSERT INTO sync_schema_meta VALUES (1, 2, '{"todos": []}');

SELECT sync_declare_checkpoint('p1', 'typo', 2, pg_temp.t(1000));
SELECT results_eq(
  $$SELECT partition, name, schema_version, state FROM sync_remove_checkpoint('p1', 'typo')$$,
  $$VALUES ('p1'::text, 'typo'::text, 2, 'declared'::text)$$,
  'remove returns the removed row');
SELECT is((SELECT count(*) FROM sync_backfill_checkpoints WHERE name = 'typo'), 0::bigint, 'the row is gone');
SELECT is((SELECT required_writer_version FROM sync_writer_fence WHERE partition = 'p1'), 2,
  'the fence is not lowered');
SELECT throws_ok($$SELECT sync_remove_checkpoint('p1', 'typo')$$,
  'P0001', 'sync.storage.checkpoint_not_declared', 'removing a missing checkpoint fails');

SELECT sync_declare_checkpoint('p1', 'claimed', 2);
SELECT sync_claim_checkpoint('p1', 'claimed', 2);
SELECT is((SELECT state FROM sync_remove_checkpoint('p1', 'claimed')), 'backfilling', 'a backfilling checkpoint is removed');
SELECT is(sync_advance_checkpoint('p1', 'claimed', 1, 0, 0), false, 'its owner''s next advance fails');

SELECT sync_declare_checkpoint('p1', 'done', 2);
SELECT sync_claim_checkpoint('p1', 'done', 2);
-- Its epoch is above the removed 'claimed' row's (the floor), not 1.
SELECT sync_activate_checkpoint('p1', 'done',
  (SELECT owner_epoch FROM sync_backfill_checkpoints WHERE partition = 'p1' AND name = 'done'), 0, ARRAY['todos']);
SELECT throws_ok($$SELECT sync_remove_checkpoint('p1', 'done')$$,
  'P0001', 'sync.storage.checkpoint_activated', 'an activated checkpoint is refused');
SELECT is((SELECT state FROM sync_backfill_checkpoints WHERE name = 'done'), 'activated', 'and stays');

SELECT ok(has_function_privilege('sync_admin', 'sync_remove_checkpoint(text, text)', 'EXECUTE')
  AND NOT has_function_privilege('sync_backfill', 'sync_remove_checkpoint(text, text)', 'EXECUTE')
  AND NOT has_function_privilege('sync_writer', 'sync_remove_checkpoint(text, text)', 'EXECUTE')
  AND NOT has_function_privilege('sync_reader', 'sync_remove_checkpoint(text, text)', 'EXECUTE')
  AND NOT has_function_privilege('public', 'sync_remove_checkpoint(text, text)', 'EXECUTE'),
  'sync_admin only');

SELECT * FROM finish();
-- The epoch floor is a sequence, which a rollback does not undo: put it
-- back for the files that run after this one in the same database.
SELECT setval('sync_checkpoint_epoch_floor', 0);
ROLLBACK;
