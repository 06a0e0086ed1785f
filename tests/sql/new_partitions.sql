-- pgTAP: declarations for every partition hold for partitions created later
-- (sync_install_all_partitions, the sync_partitions_created trigger), the
-- marker lock of a push outside READ COMMITTED (sync_lock_schema_marker) and
-- the bump's bounded, named lock wait (sync_begin_schema_change,
-- sync_schema_change_blockers).
BEGIN;
SELECT plan(28);

-- now_ms arguments must be within 5 minutes of the database clock: the
-- times below are offsets from two minutes before this transaction began.
CREATE FUNCTION pg_temp.t(offset_ms bigint) RETURNS bigint LANGUAGE sql STABLE
  AS $$ SELECT floor(extract(epoch FROM transaction_timestamp()) * 1000)::bigint - 120000 + offset_ms $$;

SELECT is((SELECT count(*) FROM sync_all_partition_checkpoints), 1::bigint, 'the declarations row always exists ...');
SELECT is((SELECT cardinality(names) FROM sync_all_partition_checkpoints), 0, '... and declares nothing at first');
SELECT lives_ok($$INSERT INTO sync_partitions VALUES ('before', 0, 0)$$, 'a partition before any declaration ...');
SELECT is((SELECT count(*) FROM sync_writer_fence WHERE partition = 'before'), 0::bigint, '... gets no fence');

CREATE TEMP TABLE before AS
  SELECT (SELECT string_agg(format('%s', c), ',' ORDER BY partition, name) FROM sync_backfill_checkpoints c)
      || (SELECT string_agg(format('%s', f), ',' ORDER BY partition) FROM sync_writer_fence f)
      || (SELECT string_agg(format('%s', a), ',') FROM sync_all_partition_checkpoints a) AS state;
SELECT throws_ok($$SELECT sync_install_all_partitions('{proj}', 2)$$, '55000',
  'sync_install_all_partitions must run after sync_begin_schema_change() in the same transaction', 'needs the migration lock');
SELECT throws_ok($$SELECT sync_install_all_partitions(NULL, 2)$$, '22023', NULL, 'NULL names');
SELECT throws_ok($$SELECT sync_install_all_partitions('{proj, ""}', 2)$$, '22023',
  'invalid argument: name must be a non-empty string', 'an empty name');
SELECT throws_ok($$SELECT sync_install_all_partitions('{proj}', 0)$$, '22023', NULL, 'version below 1');
SELECT is((SELECT (SELECT string_agg(format('%s', c), ',' ORDER BY partition, name) FROM sync_backfill_checkpoints c)
               || (SELECT string_agg(format('%s', f), ',' ORDER BY partition) FROM sync_writer_fence f)
               || (SELECT string_agg(format('%s', a), ',') FROM sync_all_partition_checkpoints a)),
          (SELECT state FROM before), 'refused installs change nothing');

SELECT lives_ok($$SELECT sync_begin_schema_change()$$, 'the migration lock');
SELECT is(sync_install_all_partitions('{proj, other}', 2, pg_temp.t(1000)), 2, 'every existing partition: one row per name');
SELECT results_eq($$SELECT names, schema_versions, updated_at_ms FROM sync_all_partition_checkpoints$$,
  $$VALUES ('{other,proj}'::text[], '{2,2}'::integer[], pg_temp.t(1000))$$, 'the declaration is recorded');
SELECT results_eq($$SELECT partition, name, state FROM sync_backfill_checkpoints ORDER BY 1, 2$$,
  $$VALUES ('before'::text, 'other'::text, 'declared'::text), ('before', 'proj', 'declared')$$,
  'an existing partition gets them declared, for a backfill');
SELECT is(sync_install_all_partitions('{proj}', 1, pg_temp.t(2000)), 0, 'a lower version of a known name ...');
SELECT is((SELECT schema_versions FROM sync_all_partition_checkpoints), '{2,2}'::integer[], '... does not lower it');
SELECT is(sync_install_all_partitions('{third}', 3, pg_temp.t(3000)), 1, 'a later version adds its name');

SELECT lives_ok($$INSERT INTO sync_partitions VALUES ('later', 0, 0)$$, 'a partition created later ...');
SELECT is((SELECT required_writer_version FROM sync_writer_fence WHERE partition = 'later'), 3, '... is fenced at the highest declared version ...');
SELECT results_eq($$SELECT name, schema_version, state, watermark FROM sync_backfill_checkpoints WHERE partition = 'later' ORDER BY 1$$,
  $$VALUES ('other'::text, 2, 'activated'::text, 0::bigint), ('proj', 2, 'activated', 0), ('third', 3, 'activated', 0)$$,
  '... and gets every declared checkpoint, activated at 0 (no history)');
SELECT lives_ok($$SELECT sync_set_schema_version(3)$$, 'the marker at 3');
SELECT is((SELECT refusal FROM sync_serve_check('later', 3, NULL, '{third}')), NULL, 'the gate of a server declaring it everywhere serves the new partition');
SELECT throws_ok($$WITH a AS (INSERT INTO sync_partitions AS p VALUES ('one-statement', 1, 0)
                              ON CONFLICT (partition) DO UPDATE SET max_commit_seq = p.max_commit_seq + 1 RETURNING max_commit_seq)
                   INSERT INTO sync_commits SELECT 'one-statement', a.max_commit_seq, 'c', 'x', 'a', 0, 2 FROM a$$,
  'P0001', 'sync.storage.writer_fence_rejected', 'an allocation and commit in one statement, below the new fence');
SELECT is((SELECT count(*) FROM sync_partitions WHERE partition = 'one-statement'), 0::bigint, '... leaves no partition');
SELECT lives_ok($$WITH a AS (INSERT INTO sync_partitions AS p VALUES ('one-statement', 1, 0)
                              ON CONFLICT (partition) DO UPDATE SET max_commit_seq = p.max_commit_seq + 1 RETURNING max_commit_seq)
                   INSERT INTO sync_commits SELECT 'one-statement', a.max_commit_seq, 'c', 'x', 'a', 0, 3 FROM a$$,
  'the same at the fence is accepted');

SELECT is(sync_lock_schema_marker(), 3::bigint, 'sync_lock_schema_marker: the marker''s version');
SELECT is((SELECT count(*) FROM sync_schema_change_blockers()), 0::bigint, 'the caller''s own locks block nothing');
SELECT lives_ok($$SET LOCAL lock_timeout = 0; SELECT sync_begin_schema_change()$$, 'a bump without lock_timeout ...');
SELECT is(current_setting('lock_timeout'), '5s', '... waits at most 5s');

SELECT * FROM finish();
ROLLBACK;
