-- pgTAP: the DBA's view of the barrier, the roles and the audit.
BEGIN;
SELECT plan(15);

-- now_ms arguments must be within 5 minutes of the database clock: the
-- times below are offsets from two minutes before this transaction began.
CREATE FUNCTION pg_temp.t(offset_ms bigint) RETURNS bigint LANGUAGE sql STABLE
  AS $$ SELECT floor(extract(epoch FROM transaction_timestamp()) * 1000)::bigint - 120000 + offset_ms $$;

SELECT sync_declare_checkpoint('p1', 'proj', 2, pg_temp.t(1000));
SELECT sync_claim_checkpoint('p1', 'proj', 2, pg_temp.t(2000));
-- p1's head at 50: a restored log (triggers off for the bulk load).
SET LOCAL session_replication_role = replica;
UPDATE sync_partitions SET max_commit_seq = 50 WHERE partition = 'p1';
SET LOCAL session_replication_role = origin;
SELECT sync_advance_checkpoint('p1', 'proj', 1, 20, 17, pg_temp.t(3000));
SELECT results_eq(
  $$SELECT partition, checkpoint, state, schema_version, fence_version, owner_epoch, watermark,
           coverage_seq, lag, horizon_seq, observed_rows, updated_at
      FROM sync_barrier_status$$,
  $$VALUES ('p1'::text, 'proj'::text, 'backfilling'::text, 2, 2, 1::bigint, 20::bigint,
            50::bigint, 30::bigint, 0::bigint, 17::bigint, to_timestamp(pg_temp.t(3000) / 1000.0)::timestamptz)$$,
  'sync_barrier_status: one row per checkpoint with fence, epoch, watermark, coverage and lag');

SELECT has_role('sync_reader', 'the sync_reader role exists');
SELECT has_role('sync_writer', 'the sync_writer role exists');
SELECT has_role('sync_backfill', 'the sync_backfill role exists');
SELECT has_role('sync_admin', 'the sync_admin role exists');
SELECT is_member_of('sync_reader', ARRAY['sync_writer', 'sync_backfill', 'sync_admin'], 'every sync role can read');
SELECT is(has_function_privilege('public', 'sync_declare_checkpoint(text, text, integer, bigint)', 'EXECUTE'), false,
  'PUBLIC cannot declare checkpoints');
SELECT is(has_table_privilege('sync_writer', 'sync_writer_fence', 'UPDATE'), false, 'writers cannot update the fence');
SELECT is(has_table_privilege('sync_writer', 'sync_commits', 'INSERT'), true, 'writers append commits');
SELECT is(has_table_privilege('sync_writer', 'sync_commits', 'DELETE'), false, 'writers cannot delete commits');
SELECT is(has_column_privilege('sync_writer', 'sync_partitions', 'horizon_seq', 'UPDATE'), false,
  'writers cannot move the horizon');
SELECT is(has_column_privilege('sync_writer', 'sync_partition_registry', 'log_epoch', 'UPDATE'), false,
  'writers cannot rotate the epoch');
SELECT is(has_column_privilege('sync_writer', 'sync_partitions', 'max_commit_seq', 'UPDATE'), true,
  'writers allocate seqs (the guard keeps it to +1)');
SELECT is_definer('sync_activate_checkpoint', 'activation runs as the owner (SECURITY DEFINER)');
SELECT is_empty($$SELECT * FROM sync_security_audit() WHERE NOT ok$$, 'the security audit is healthy');

SELECT * FROM finish();
ROLLBACK;
