-- pgTAP: the barrier status at scale — lag 0 once activated, the summary.
BEGIN;
SELECT plan(4);

-- now_ms arguments must be within 5 minutes of the database clock: the
-- times below are offsets from two minutes before this transaction began.
CREATE FUNCTION pg_temp.t(offset_ms bigint) RETURNS bigint LANGUAGE sql STABLE
  AS $$ SELECT floor(extract(epoch FROM transaction_timestamp()) * 1000)::bigint - 120000 + offset_ms $$;
-- The stored schema: activation checks against its tables.
INSERT INTO sync_schema_meta VALUES (1, 2, '{"todos": []}');

-- Restored logs (triggers off for the bulk load, as pg_restore writes it).
SET LOCAL session_replication_role = replica;
INSERT INTO sync_partitions VALUES ('p1', 50, 0), ('p2', 80, 0), ('p3', 10, 0);
SET LOCAL session_replication_role = origin;
SELECT sync_install_checkpoints(ARRAY['p1', 'p2', 'p3'], ARRAY['proj', 'proj', 'proj'], 2, pg_temp.t(1000));
SELECT sync_claim_checkpoint('p1', 'proj', 2, pg_temp.t(2000));
SELECT sync_advance_checkpoint('p1', 'proj', 1, 20, 0, pg_temp.t(3000));
SELECT sync_claim_checkpoint('p3', 'proj', 2, pg_temp.t(2000));
SELECT sync_advance_checkpoint('p3', 'proj', 1, 10, 0, pg_temp.t(3500));
SELECT sync_activate_checkpoint('p3', 'proj', 1, 10, ARRAY['todos'], pg_temp.t(4000));
SET LOCAL session_replication_role = replica;
UPDATE sync_partitions SET max_commit_seq = 99 WHERE partition = 'p3';
SET LOCAL session_replication_role = origin;

SELECT results_eq($$SELECT partition, state, lag FROM sync_barrier_status ORDER BY partition$$,
  $$VALUES ('p1'::text, 'backfilling'::text, 30::bigint), ('p2', 'declared', 80), ('p3', 'activated', 0)$$,
  'lag trails the log while backfilling, reads 0 once activated (even as the log grows)');
SELECT results_eq(
  $$SELECT schema_version, checkpoint, state, partitions, max_lag, slowest_partition, oldest_update, newest_update
      FROM sync_barrier_summary ORDER BY state$$,
  $$VALUES (2, 'proj'::text, 'activated'::text, 1::bigint, 0::bigint, 'p3'::text, to_timestamp(pg_temp.t(4000) / 1000.0)::timestamptz, to_timestamp(pg_temp.t(4000) / 1000.0)::timestamptz),
           (2, 'proj', 'backfilling', 1, 30, 'p1', to_timestamp(pg_temp.t(3000) / 1000.0), to_timestamp(pg_temp.t(3000) / 1000.0)),
           (2, 'proj', 'declared', 1, 80, 'p2', to_timestamp(pg_temp.t(1000) / 1000.0), to_timestamp(pg_temp.t(1000) / 1000.0))$$,
  'the summary: one row per version, projection and state, with the slowest partition');
SELECT sync_install_checkpoints(ARRAY['p4', 'p5'], ARRAY['proj', 'proj'], 2, pg_temp.t(500));
SELECT results_eq($$SELECT partitions, max_lag, slowest_partition, oldest_update FROM sync_barrier_summary WHERE state = 'declared'$$,
  $$VALUES (3::bigint, 80::bigint, 'p2'::text, to_timestamp(pg_temp.t(500) / 1000.0)::timestamptz)$$, 'counts, slowest lag and oldest update aggregate');
SELECT is(has_table_privilege('sync_reader', 'sync_barrier_summary', 'SELECT'), true, 'readers read the summary');

SELECT * FROM finish();
ROLLBACK;
