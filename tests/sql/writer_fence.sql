-- pgTAP: the writer fence, as a DBA sees it from psql.
-- Run: pg_prove -d "$DATABASE_URL" tests/sql/*.sql (on a migrated database
-- with CREATE EXTENSION pgtap); each file runs in a rolled-back transaction.
BEGIN;
SELECT plan(9);

SELECT has_trigger('sync_commits', 'sync_commits_writer_fence', 'sync_commits has the writer fence trigger');
SELECT trigger_is('sync_commits', 'sync_commits_writer_fence', 'syncular_writer_fence',
  'the trigger calls syncular_writer_fence()');

SELECT lives_ok(
  $$INSERT INTO sync_commits VALUES ('p', 1, 'c', 'c1', 'a', 1, NULL)$$,
  'no fence row: a NULL writer_version is accepted');

INSERT INTO sync_writer_fence VALUES ('p', 7);

SELECT throws_ok(
  $$INSERT INTO sync_commits VALUES ('p', 2, 'c', 'c2', 'a', 1, NULL)$$,
  'P0001', 'sync.storage.writer_fence_rejected',
  'fence 7: a NULL writer_version (an old binary) is rejected');
SELECT throws_ok(
  $$INSERT INTO sync_commits VALUES ('p', 2, 'c', 'c2', 'a', 1, 6)$$,
  'P0001', 'sync.storage.writer_fence_rejected',
  'fence 7: writer_version 6 is rejected');
SELECT lives_ok(
  $$INSERT INTO sync_commits VALUES ('p', 2, 'c', 'c2', 'a', 1, 7)$$,
  'fence 7: writer_version 7 is accepted');
SELECT lives_ok(
  $$INSERT INTO sync_commits VALUES ('p', 3, 'c', 'c3', 'a', 1, 8)$$,
  'fence 7: writer_version 8 is accepted');
SELECT lives_ok(
  $$INSERT INTO sync_commits VALUES ('q', 1, 'c', 'c1', 'a', 1, NULL)$$,
  'another partition without a fence row is unaffected');
SELECT results_eq(
  $$SELECT partition, commit_seq FROM sync_commits ORDER BY 1, 2$$,
  $$VALUES ('p'::text, 1::bigint), ('p', 2), ('p', 3), ('q', 1)$$,
  'only the accepted commits are stored');

SELECT * FROM finish();
ROLLBACK;
