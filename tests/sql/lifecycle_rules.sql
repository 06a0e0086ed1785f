-- pgTAP: the lifecycle rules hold for calls out of order, and ill-formed
-- arguments are refused. After every refused call the row (or the marker)
-- is unchanged. Runs in a rolled-back transaction.
BEGIN;
SELECT plan(31);

-- now_ms arguments must be within 5 minutes of the database clock: the
-- times below are offsets from two minutes before this transaction began.
CREATE FUNCTION pg_temp.t(offset_ms bigint) RETURNS bigint LANGUAGE sql STABLE
  AS $$ SELECT floor(extract(epoch FROM transaction_timestamp()) * 1000)::bigint - 120000 + offset_ms $$;

-- The stored schema: activation checks against its tables.
INSERT INTO sync_schema_meta VALUES (1, 2, '{"todos": [{"name": "id", "type": "text", "nullable": false}]}');
-- p1's head at 10 (a restored log, triggers off for the bulk load).
SELECT sync_declare_checkpoint('p1', 'proj', 2, pg_temp.t(1000));
SET LOCAL session_replication_role = replica;
UPDATE sync_partitions SET max_commit_seq = 10 WHERE partition = 'p1';
SET LOCAL session_replication_role = origin;
CREATE TEMP VIEW proj AS
  SELECT state, schema_version, watermark, owner_epoch, observed_rows, updated_at_ms
    FROM sync_backfill_checkpoints WHERE partition = 'p1' AND name = 'proj';
CREATE TEMP TABLE snap AS SELECT * FROM proj;

-- A declared row has no owner: nobody advances or activates it.
SELECT is(sync_advance_checkpoint('p1', 'proj', 0, 3, 3), false, 'advance of a never-claimed row (epoch 0) returns false');
SELECT is(sync_activate_checkpoint('p1', 'proj', 0, 0, ARRAY['todos']), 'stale', 'activate of a never-claimed row (epoch 0) is stale');
SELECT set_eq('SELECT * FROM proj', 'SELECT * FROM snap', '... and the declared row is unchanged');

-- Claim never changes schema_version.
SELECT throws_ok($$SELECT sync_claim_checkpoint('p1', 'proj', 3)$$, 'P0001', 'sync.storage.checkpoint_not_declared',
  'a claim at another version is refused');
SELECT ok((SELECT count(*) FROM sync_serve_gate('p1', 2), jsonb_array_elements(pending)) = 1,
  '... so the checkpoint stays pending for the running version');
SELECT set_eq('SELECT * FROM proj', 'SELECT * FROM snap', '... and the row is unchanged');

SELECT is((SELECT owner_epoch FROM sync_claim_checkpoint('p1', 'proj', 2, pg_temp.t(2000))), 1::bigint, 'claim at the declared version: epoch 1');
SELECT is(sync_advance_checkpoint('p1', 'proj', 1, 5, 5, pg_temp.t(3000)), true, 'the owner advances to 5');
DELETE FROM snap; INSERT INTO snap SELECT * FROM proj;

-- Advance: owner only, never down, never past the head.
SELECT is(sync_advance_checkpoint('p1', 'proj', 2, 6, 6), false, 'advance with a future epoch returns false');
SELECT is(sync_advance_checkpoint('p1', 'proj', 0, 6, 6), false, 'advance with epoch 0 returns false');
SELECT throws_ok($$SELECT sync_advance_checkpoint('p1', 'proj', 1, 4, 4)$$, '22023', NULL,
  'a watermark below the stored one is refused');
SELECT throws_ok($$SELECT sync_advance_checkpoint('p1', 'proj', 1, 11, 11)$$, '22023', NULL,
  'a watermark past the partition head is refused');
SELECT set_eq('SELECT * FROM proj', 'SELECT * FROM snap', '... and the row is unchanged');

-- Activate exactly at the stored watermark, by the owner.
SELECT is(sync_activate_checkpoint('p1', 'proj', 1, 3, ARRAY['todos']), 'stale', 'activation below the stored watermark is stale');
SELECT is(sync_activate_checkpoint('p1', 'proj', 1, 7, ARRAY['todos']), 'stale', 'activation above the stored watermark is stale');
SELECT is(sync_activate_checkpoint('p1', 'proj', 2, 5, ARRAY['todos']), 'stale', 'activation by a non-owner is stale');
SELECT set_eq('SELECT * FROM proj', 'SELECT * FROM snap', '... and the row is unchanged');
SELECT is(sync_activate_checkpoint('p1', 'proj', 1, 5, ARRAY['todos'], pg_temp.t(4000)), 'activated', 'the owner activates at the stored watermark');
DELETE FROM snap; INSERT INTO snap SELECT * FROM proj;

-- Activated is final.
SELECT is(sync_advance_checkpoint('p1', 'proj', 1, 9, 9), false, 'advance after activation returns false');
SELECT is(sync_activate_checkpoint('p1', 'proj', 1, 5, ARRAY['todos']), 'stale', 'a second activation is stale');
SELECT throws_ok($$SELECT sync_claim_checkpoint('p1', 'proj', 2)$$, 'P0001', 'sync.storage.checkpoint_not_declared',
  'an activated row cannot be claimed');
SELECT set_eq('SELECT * FROM proj', 'SELECT * FROM snap', '... and the activated row is unchanged');

-- The marker: versions up to 2^31-1, layouts of the right shape.
SELECT sync_begin_schema_change();
SELECT lives_ok($$SELECT sync_set_schema_version(2, '{"todos": [{"name": "id", "type": "string", "nullable": false}]}')$$,
  'a well-formed marker is stored');
SELECT throws_ok($$SELECT sync_set_schema_version(3000000000)$$, '22023', NULL, 'a version above 2^31-1 is refused');
SELECT throws_ok($$SELECT sync_set_schema_version(3, '{"todos": 5}')$$, '22023', NULL, 'a table layout that is not an array is refused');
SELECT throws_ok($$SELECT sync_set_schema_version(3, '{"todos": [{"name": "id"}]}')$$, '22023', NULL, 'a column without type and nullable is refused');
SELECT throws_ok($$SELECT sync_set_schema_version(3, '{"todos": [{"name": "", "type": "string", "nullable": true}]}')$$, '22023', NULL, 'an empty column name is refused');
SELECT results_eq('SELECT schema_version FROM sync_schema_meta', 'VALUES (2::bigint)', '... and the marker is unchanged');

-- Row ids are keys; row versions are not negative.
SELECT throws_ok($$SELECT sync_append_commit('p1', 'c', 'k1', 'a', 0, 2, '{todos}', ARRAY[''], '{1}', '{NULL}', '{"{}"}', '{NULL}')$$,
  '22023', NULL, 'an empty row id is refused');
SELECT throws_ok($$SELECT sync_append_commit('p1', 'c', 'k1', 'a', 0, 2, '{todos}', ARRAY[repeat('x', 513)], '{1}', '{NULL}', '{"{}"}', '{NULL}')$$,
  '22023', NULL, 'a row id over 512 characters is refused');
SELECT throws_ok($$SELECT sync_append_commit('p1', 'c', 'k1', 'a', 0, 2, '{todos}', '{r}', '{1}', '{-1}', '{"{}"}', '{NULL}')$$,
  '22023', NULL, 'a negative row version is refused');

SELECT * FROM finish();
ROLLBACK;
