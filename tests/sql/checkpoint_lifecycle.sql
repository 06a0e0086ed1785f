-- pgTAP: declare, claim, advance, activate — the checkpoint lifecycle as a
-- DBA calls it from psql. Runs in a rolled-back transaction.
BEGIN;
SELECT plan(36);

-- now_ms arguments must be within 5 minutes of the database clock: the
-- times below are offsets from two minutes before this transaction began.
CREATE FUNCTION pg_temp.t(offset_ms bigint) RETURNS bigint LANGUAGE sql STABLE
  AS $$ SELECT floor(extract(epoch FROM transaction_timestamp()) * 1000)::bigint - 120000 + offset_ms $$;
-- The stored schema: activation checks against its tables.
INSERT INTO sync_schema_meta VALUES (1, 2, '{"todos": [], "other_table": []}');

-- Declare.
SELECT results_eq(
  $$SELECT partition, name, schema_version, state, watermark, owner_epoch, observed_rows, updated_at_ms
      FROM sync_declare_checkpoint('p1', 'todos_by_owner', 2, pg_temp.t(1000))$$,
  $$VALUES ('p1'::text, 'todos_by_owner'::text, 2, 'declared'::text, 0::bigint, 0::bigint, 0::bigint, pg_temp.t(1000))$$,
  'declare returns the declared row');
SELECT is((SELECT required_writer_version FROM sync_writer_fence WHERE partition = 'p1'), 2,
  'declare raises the fence to the checkpoint version');
SELECT ok((SELECT updated_at_ms FROM sync_declare_checkpoint('p1', 'clock', 2)) > 1600000000000,
  'now_ms defaults to the database clock');
SELECT ok((SELECT updated_at_ms FROM sync_declare_checkpoint('p1', 'clock_null', 2, NULL)) > 1600000000000,
  'a NULL now_ms also means the database clock');
SELECT results_eq(
  $$SELECT schema_version, state, updated_at_ms FROM sync_declare_checkpoint('p1', 'todos_by_owner', 5, pg_temp.t(2000))$$,
  $$VALUES (2, 'declared'::text, pg_temp.t(1000))$$,
  'an existing checkpoint is never re-declared');
SELECT is((SELECT required_writer_version FROM sync_writer_fence WHERE partition = 'p1'), 5,
  're-declaring at a higher version still raises the fence');
SELECT lives_ok($$SELECT sync_declare_checkpoint('p1', 'old', 1)$$, 'declaring at a lower version works');
SELECT is((SELECT required_writer_version FROM sync_writer_fence WHERE partition = 'p1'), 5,
  'the fence never goes down');

-- Claim.
SELECT results_eq(
  $$SELECT owner_epoch, state, schema_version, updated_at_ms FROM sync_claim_checkpoint('p1', 'todos_by_owner', 2, pg_temp.t(3000))$$,
  $$VALUES (1::bigint, 'backfilling'::text, 2, pg_temp.t(3000))$$,
  'claim: epoch 1, declared becomes backfilling, at the declared version');
SELECT results_eq(
  $$SELECT owner_epoch, state FROM sync_claim_checkpoint('p1', 'todos_by_owner', 2)$$,
  $$VALUES (2::bigint, 'backfilling'::text)$$,
  'a second claim takes epoch 2 and stays backfilling');
SELECT throws_ok($$SELECT sync_claim_checkpoint('p1', 'missing', 2)$$,
  'P0001', 'sync.storage.checkpoint_not_declared', 'claiming a missing checkpoint fails');

-- The log a DBA restored: p1's head at 12, a todos change at 12 (a bulk
-- load with the triggers off, as pg_restore writes it).
SET LOCAL session_replication_role = replica;
UPDATE sync_partitions SET max_commit_seq = 12 WHERE partition = 'p1';
INSERT INTO sync_changes VALUES ('p1', 12, 0, 'todos', 'r1', 1, 1, '{}', NULL);
SET LOCAL session_replication_role = origin;

-- Advance.
SELECT is(sync_advance_checkpoint('p1', 'todos_by_owner', 1, 10, 10), false,
  'advance with an old epoch returns false');
SELECT is((SELECT watermark FROM sync_backfill_checkpoints WHERE name = 'todos_by_owner'), 0::bigint,
  '... and changes nothing');
SELECT is(sync_advance_checkpoint('p1', 'todos_by_owner', 2, 10, 7, pg_temp.t(4000)), true,
  'advance with the current epoch returns true');
SELECT results_eq(
  $$SELECT watermark, observed_rows, updated_at_ms FROM sync_backfill_checkpoints WHERE name = 'todos_by_owner'$$,
  $$VALUES (10::bigint, 7::bigint, pg_temp.t(4000))$$,
  '... and stores watermark, observed rows and time');
SELECT is(sync_advance_checkpoint('p1', 'missing', 0, 1, 1), false, 'advance of a missing checkpoint returns false');

-- Activate: the fence, the coverage check, the CAS.
SELECT is(sync_activate_checkpoint('p1', 'todos_by_owner', 2, 10, ARRAY['todos']), 'stale',
  'a source change above the watermark makes activation stale');
SELECT is(sync_advance_checkpoint('p1', 'todos_by_owner', 2, 12, 8), true, 'advance to the head');
SELECT is(sync_activate_checkpoint('p1', 'todos_by_owner', 2, 12, ARRAY['other_table']), 'activated',
  'changes to other tables do not count');
SELECT results_eq(
  $$SELECT state, watermark FROM sync_backfill_checkpoints WHERE name = 'todos_by_owner'$$,
  $$VALUES ('activated'::text, 12::bigint)$$,
  'activation stores the state and the watermark');
SELECT is(sync_activate_checkpoint('p1', 'todos_by_owner', 2, 12, ARRAY['todos']), 'stale',
  'activating an activated checkpoint loses the CAS');
SELECT throws_ok($$SELECT sync_claim_checkpoint('p1', 'todos_by_owner', 2)$$,
  'P0001', 'sync.storage.checkpoint_not_declared', 'an activated checkpoint cannot be claimed');

SELECT sync_claim_checkpoint('p1', 'old', 1);
SELECT is(sync_activate_checkpoint('p1', 'old', 0, 0, ARRAY['todos']), 'stale', 'activation with a stale epoch is stale');
SELECT throws_ok($$SELECT sync_activate_checkpoint('p1', 'old', 1, 0, '{}')$$, '22023',
  'invalid argument: sources must name at least one table of the stored schema (known tables: other_table, todos)',
  'an empty source list is refused, naming the known tables');

SELECT throws_ok($$SELECT sync_activate_checkpoint('p1', 'missing', 1, 0, ARRAY['todos'])$$,
  'P0001', 'sync.storage.checkpoint_not_declared', 'activating a missing checkpoint fails');

INSERT INTO sync_backfill_checkpoints VALUES ('p9', 'bare', 3, 'backfilling', 0, 1, 0, 0);
SELECT throws_ok($$SELECT sync_activate_checkpoint('p9', 'bare', 1, 0, ARRAY['todos'])$$,
  'P0001', 'sync.storage.checkpoint_fence_missing', 'no fence row: activation fails');
INSERT INTO sync_writer_fence VALUES ('p9', 2);
SELECT throws_ok($$SELECT sync_activate_checkpoint('p9', 'bare', 1, 0, ARRAY['todos'])$$,
  'P0001', 'sync.storage.checkpoint_fence_missing', 'a fence below the checkpoint version: activation fails');
SELECT is((SELECT state FROM sync_backfill_checkpoints WHERE partition = 'p9'), 'backfilling',
  '... and the checkpoint is unchanged');
UPDATE sync_writer_fence SET required_writer_version = 3 WHERE partition = 'p9';
SELECT is(sync_activate_checkpoint('p9', 'bare', 1, 0, ARRAY['todos']), 'activated', 'a fence at the version allows activation');
SELECT ok(EXISTS (SELECT 1 FROM sync_partitions WHERE partition = 'p9'),
  'activation creates the missing partition row it locks');

-- Unverifiable: pruned past the watermark.
SELECT sync_declare_checkpoint('p5', 'pruned', 1);
SELECT sync_claim_checkpoint('p5', 'pruned', 1);
SELECT sync_declare_checkpoint('p5', 'at_horizon', 1);
SELECT sync_claim_checkpoint('p5', 'at_horizon', 1);
SET LOCAL session_replication_role = replica;
UPDATE sync_partitions SET max_commit_seq = 30 WHERE partition = 'p5';
SET LOCAL session_replication_role = origin;
SELECT is(sync_advance_checkpoint('p5', 'pruned', 1, 20, 0), true, 'advance to 20, then the log is pruned through 25');
SELECT sync_advance_checkpoint('p5', 'at_horizon', 1, 25, 0);
SET LOCAL session_replication_role = replica;
UPDATE sync_partitions SET horizon_seq = 25 WHERE partition = 'p5';
SET LOCAL session_replication_role = origin;
SELECT is(sync_activate_checkpoint('p5', 'pruned', 1, 20, ARRAY['todos']), 'unverifiable',
  'horizon above the watermark and no change visible: unverifiable');
SELECT is((SELECT state FROM sync_backfill_checkpoints WHERE partition = 'p5' AND name = 'pruned'), 'backfilling',
  '... and the checkpoint is unchanged');
SELECT throws_ok($$SELECT sync_advance_checkpoint('p5', 'pruned', 1, 25, 0)$$, 'P0001', 'sync.storage.log_pruned',
  'advancing over pruned history is refused: no batch read it');
SELECT is(sync_activate_checkpoint('p5', 'at_horizon', 1, 25, ARRAY['todos']), 'activated',
  'a watermark at the horizon is provable');

-- The schema-change lock.
SELECT sync_begin_schema_change();
SELECT ok(EXISTS (SELECT 1 FROM pg_locks WHERE relation = 'sync_partitions'::regclass
                   AND mode = 'ExclusiveLock' AND pid = pg_backend_pid() AND granted),
  'sync_begin_schema_change holds EXCLUSIVE on sync_partitions');

SELECT * FROM finish();
ROLLBACK;
