-- pgTAP: set-based installs (sync_install_checkpoints), and the single
-- install (sync_install_checkpoint), which is the same body for one pair.
BEGIN;
SELECT plan(23);

-- now_ms arguments must be within 5 minutes of the database clock: the
-- times below are offsets from two minutes before this transaction began.
CREATE FUNCTION pg_temp.t(offset_ms bigint) RETURNS bigint LANGUAGE sql STABLE
  AS $$ SELECT floor(extract(epoch FROM transaction_timestamp()) * 1000)::bigint - 120000 + offset_ms $$;

SELECT lives_ok($$SELECT sync_declare_checkpoint('p1', 'a', 3, pg_temp.t(5))$$, 'an existing declaration at version 3');
SELECT is(sync_install_checkpoints(ARRAY['p1', 'p1', 'p2', 'p3', 'p3'], ARRAY['a', 'b', 'a', 'a', 'a'], 2, pg_temp.t(1000)), 3,
  'returns how many were newly declared (existing rows and repeats are not)');
SELECT results_eq($$SELECT partition, name, schema_version, state, updated_at_ms FROM sync_backfill_checkpoints ORDER BY 1, 2$$,
  $$VALUES ('p1'::text, 'a'::text, 3, 'declared'::text, pg_temp.t(5)), ('p1', 'b', 2, 'declared', pg_temp.t(1000)), ('p2', 'a', 2, 'declared', pg_temp.t(1000)), ('p3', 'a', 2, 'declared', pg_temp.t(1000))$$,
  'new rows declared; an existing row is never re-declared');
SELECT results_eq($$SELECT partition, required_writer_version FROM sync_writer_fence ORDER BY 1$$,
  $$VALUES ('p1'::text, 3), ('p2', 2), ('p3', 2)$$, 'fences raised, never lowered (p1 stays at 3)');
SELECT results_eq($$SELECT partition FROM sync_partitions ORDER BY 1$$,
  $$VALUES ('p1'::text), ('p2'), ('p3')$$, 'every affected partition has its sync_partitions row');
SELECT is(sync_install_checkpoints(ARRAY['p2'], ARRAY['c'], 4), 1, 'a later version raises ...');
SELECT is((SELECT required_writer_version FROM sync_writer_fence WHERE partition = 'p2'), 4, '... the fence');
SELECT is(sync_install_checkpoints('{}', '{}', 4), 0, 'nothing to install: 0');

CREATE TEMP TABLE before AS
  SELECT (SELECT string_agg(format('%s', c), ',' ORDER BY partition, name) FROM sync_backfill_checkpoints c)
      || (SELECT string_agg(format('%s', f), ',' ORDER BY partition) FROM sync_writer_fence f)
      || (SELECT string_agg(format('%s', p), ',' ORDER BY partition) FROM sync_partitions p) AS state;
SELECT throws_ok($$SELECT sync_install_checkpoints(ARRAY['p4', 'p5'], ARRAY['a'], 2)$$, '22023', NULL, 'arrays of different lengths');
SELECT throws_ok($$SELECT sync_install_checkpoints(NULL, '{}', 2)$$, '22023', NULL, 'NULL partitions');
SELECT throws_ok($$SELECT sync_install_checkpoints(ARRAY['p4', ''], ARRAY['a', 'a'], 2)$$, '22023',
  'invalid argument: partition must be a non-empty string', 'an empty partition anywhere in the list');
SELECT throws_ok($$SELECT sync_install_checkpoints(ARRAY['p4'], ARRAY[repeat('x', 513)], 2)$$, '22023',
  'invalid argument: name is 513 characters long; the limit is 512', 'a name over 512 characters');
SELECT throws_ok($$SELECT sync_install_checkpoints(ARRAY['p4'], ARRAY['a'], 0)$$, '22023', NULL, 'version below 1');
SELECT is((SELECT (SELECT string_agg(format('%s', c), ',' ORDER BY partition, name) FROM sync_backfill_checkpoints c)
      || (SELECT string_agg(format('%s', f), ',' ORDER BY partition) FROM sync_writer_fence f)
      || (SELECT string_agg(format('%s', p), ',' ORDER BY partition) FROM sync_partitions p)),
  (SELECT state FROM before), 'refused calls changed nothing');

-- The single install: the same rules through the same body.
SELECT throws_ok($$SELECT sync_install_checkpoint(NULL, 'a', 2)$$, '22023',
  'invalid argument: partition must be a non-empty string', 'single: NULL partition');
SELECT throws_ok($$SELECT sync_install_checkpoint('p4', '', 2)$$, '22023',
  'invalid argument: name must be a non-empty string', 'single: empty name');
SELECT throws_ok($$SELECT sync_install_checkpoint('p4', 'a', 0)$$, '22023', NULL, 'single: version below 1');
SELECT is((SELECT (SELECT string_agg(format('%s', c), ',' ORDER BY partition, name) FROM sync_backfill_checkpoints c)
      || (SELECT string_agg(format('%s', f), ',' ORDER BY partition) FROM sync_writer_fence f)
      || (SELECT string_agg(format('%s', p), ',' ORDER BY partition) FROM sync_partitions p)),
  (SELECT state FROM before), 'single: refused calls changed nothing');
SELECT lives_ok($$SELECT sync_install_checkpoint('p2', 'c', 1, pg_temp.t(7))$$, 'single: a lower version ...');
SELECT results_eq($$SELECT schema_version FROM sync_backfill_checkpoints WHERE partition = 'p2' AND name = 'c'$$,
  $$VALUES (4)$$, '... never re-declares an existing row ...');
SELECT is((SELECT required_writer_version FROM sync_writer_fence WHERE partition = 'p2'), 4, '... nor lowers the fence');
SELECT lives_ok($$SELECT sync_install_checkpoint('p9', 'd', 5)$$, 'single: a new partition ...');
SELECT results_eq($$SELECT (SELECT count(*) FROM sync_partitions WHERE partition = 'p9'),
                           (SELECT schema_version FROM sync_backfill_checkpoints WHERE partition = 'p9' AND name = 'd'),
                           (SELECT required_writer_version FROM sync_writer_fence WHERE partition = 'p9')$$,
  $$VALUES (1::bigint, 5, 5)$$, '... gets its sync_partitions row, its checkpoint and its fence');

SELECT * FROM finish();
ROLLBACK;
