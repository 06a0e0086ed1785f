-- pgTAP: the lifecycle's bounds (issue 17): now_ms within 5 minutes of the
-- database clock, the fleet lease, activation sources of the stored schema,
-- epochs never reused after a removal, advances over pruned history, a
-- checkpoint named '', stamps out of range in the status views. Runs in a
-- rolled-back transaction.
BEGIN;
SELECT plan(23);

INSERT INTO sync_schema_meta VALUES (1, 2, '{"todos": [], "lists": []}');
SELECT sync_declare_checkpoint('p1', 'proj', 2);
CREATE TEMP TABLE snap AS SELECT * FROM sync_backfill_checkpoints;
CREATE TEMP VIEW changed AS
  (SELECT * FROM sync_backfill_checkpoints EXCEPT SELECT * FROM snap)
  UNION ALL (SELECT * FROM snap EXCEPT SELECT * FROM sync_backfill_checkpoints);

-- now_ms: 5 minutes either side of the database clock; NULL is the clock.
SELECT throws_ok($$SELECT sync_declare_checkpoint('p2', 'proj', 2, sync_now_ms() + 301000)$$, '22023', NULL,
  'declare: a stamp 5 minutes ahead is refused');
SELECT throws_ok($$SELECT sync_install_checkpoints('{p2}', '{proj}', 2, 9223372036854775807)$$, '22023', NULL,
  'install: a stamp near 2^63 is refused');
SELECT throws_ok($$SELECT sync_claim_checkpoint('p1', 'proj', 2, -1)$$, '22023', NULL, 'claim: a negative stamp is refused');
SELECT throws_ok($$SELECT sync_claim_next_checkpoint('proj', 2, 60000, sync_now_ms() - 301000)$$, '22023', NULL,
  'claim next: a stamp 5 minutes behind is refused');
SELECT throws_ok($$SELECT sync_advance_checkpoint('p1', 'proj', 1, 0, 0, 0)$$, '22023', NULL, 'advance: a stamp of 0 is refused');
SELECT throws_ok($$SELECT sync_activate_checkpoint('p1', 'proj', 1, 0, '{todos}', 1)$$, '22023',
  NULL, 'activate: a stamp of 1 is refused');
SELECT throws_like($$SELECT sync_assert_now_ms('now_ms', 5)$$, 'invalid argument: now_ms 5 is more than 300000 ms (5 minutes) from the database clock %',
  'the refusal names the argument and the bound');
SELECT is_empty('SELECT * FROM changed', '... and no refused call changed a checkpoint');
SELECT is(sync_assert_now_ms('now_ms', sync_now_ms() + 299000) > 0, true, 'a stamp within the bound is accepted');

-- The fleet lease: 1 second to 1 day.
SELECT throws_ok($$SELECT sync_claim_next_checkpoint('proj', 2, 0)$$, '22023',
  'invalid argument: lease_ms must be between 1000 (1 second) and 86400000 (1 day), got 0', 'a lease of 0 is refused');
SELECT throws_ok($$SELECT sync_claim_next_checkpoint('proj', 2, 86400001)$$, '22023', NULL, 'a lease above a day is refused');

-- Activation sources: tables of the stored schema, at least one.
SELECT sync_claim_checkpoint('p1', 'proj', 2);
DELETE FROM snap; INSERT INTO snap SELECT * FROM sync_backfill_checkpoints;
SELECT throws_ok($$SELECT sync_activate_checkpoint('p1', 'proj', 1, 0, '{}')$$, '22023',
  'invalid argument: sources must name at least one table of the stored schema (known tables: lists, todos)',
  'an empty source list is refused, naming the known tables');
SELECT throws_ok($$SELECT sync_activate_checkpoint('p1', 'proj', 1, 0, '{todo}')$$, '22023',
  'invalid argument: sources must name tables of the stored schema; ''todo'' is not one (known tables: lists, todos)',
  'a typo is refused, naming the known tables');
SELECT is_empty('SELECT * FROM changed', '... and changes nothing');
UPDATE sync_schema_meta SET layouts = 'not json';
SELECT throws_like($$SELECT sync_activate_checkpoint('p1', 'proj', 1, 0, '{todos}')$$,
  '%(known tables: none)', 'an unreadable marker knows no tables');
UPDATE sync_schema_meta SET layouts = '{"todos": [], "lists": []}';

-- Advances never jump over pruned history (READ COMMITTED).
SET LOCAL session_replication_role = replica;
UPDATE sync_partitions SET max_commit_seq = 20, horizon_seq = 5 WHERE partition = 'p1';
SET LOCAL session_replication_role = origin;
SELECT throws_ok($$SELECT sync_advance_checkpoint('p1', 'proj', 1, 10, 0)$$, 'P0001', 'sync.storage.log_pruned',
  'an advance from below the horizon is refused');
SELECT is(sync_advance_checkpoint('p1', 'proj', 1, 0, 0), true, '... a no-op advance (a batch taking its row) is not');
SELECT is_empty($$SELECT * FROM sync_backfill_checkpoints WHERE partition = 'p1' AND watermark <> 0$$, '... and the watermark stays');

-- Epochs: a removed checkpoint's epoch stays dead after a new declare.
SELECT sync_claim_checkpoint('p1', 'proj', 2); -- epoch 2
SELECT sync_remove_checkpoint('p1', 'proj');
SELECT is((SELECT owner_epoch FROM sync_declare_checkpoint('p1', 'proj', 2)), 2::bigint,
  're-declared: the epoch starts at the floor');
SELECT is((SELECT owner_epoch FROM sync_claim_checkpoint('p1', 'proj', 2)), 3::bigint, '... and the next claim is above it');
SELECT is(sync_advance_checkpoint('p1', 'proj', 2, 0, 0), false, 'the removed owner''s epoch 2 is stale');

-- A checkpoint named '' (adopted rows skip the key check) is seen.
INSERT INTO sync_backfill_checkpoints VALUES ('p7', '', 2, 'declared', 0, 0, 0, 0);
SELECT results_eq($$SELECT * FROM sync_first_undeclared_checkpoint(2, '{proj}')$$,
  $$VALUES ('p7'::text, ''::text)$$, 'a pending checkpoint named '''' is not declared');

-- Stored stamps out of range (adopted) do not break the status views.
UPDATE sync_backfill_checkpoints SET updated_at_ms = 9223372036854775807 WHERE partition = 'p7';
SELECT lives_ok('SELECT * FROM sync_barrier_summary', 'the summary reads a stamp near 2^63');

SELECT * FROM finish();
-- The floor is a sequence, which a rollback does not undo: put it back for
-- the files that run after this one in the same database.
SELECT setval('sync_checkpoint_epoch_floor', 0);
ROLLBACK;
