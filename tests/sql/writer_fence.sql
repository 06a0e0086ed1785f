-- pgTAP: the writer fence and head-only appends, as a DBA sees them from
-- psql. Each commit allocates its seq first, as every writer must (the
-- upstream server's statement shape: allocate and insert in one statement).
-- Run: pg_prove -d "$DATABASE_URL" tests/sql/*.sql (on a migrated database
-- with CREATE EXTENSION pgtap); each file runs in a rolled-back transaction.
BEGIN;
SELECT plan(16);

SELECT has_trigger('sync_commits', 'sync_commits_writer_fence', 'sync_commits has the writer fence trigger');
SELECT trigger_is('sync_commits', 'sync_commits_writer_fence', 'syncular_writer_fence',
  'the trigger calls syncular_writer_fence()');

-- append(partition, client commit, writer_version): allocate + insert.
PREPARE append(text, text, bigint) AS
  WITH allocated AS (
    INSERT INTO sync_partitions AS p (partition, max_commit_seq) VALUES ($1, 1)
    ON CONFLICT (partition) DO UPDATE SET max_commit_seq = p.max_commit_seq + 1
    RETURNING max_commit_seq)
  INSERT INTO sync_commits SELECT $1, max_commit_seq, 'c', $2, 'a', 1, $3 FROM allocated;

SELECT lives_ok($$EXECUTE append('p', 'c1', NULL)$$, 'no fence row: a NULL writer_version is accepted');

INSERT INTO sync_writer_fence VALUES ('p', 7);

SELECT throws_ok($$EXECUTE append('p', 'c2', NULL)$$,
  'P0001', 'sync.storage.writer_fence_rejected',
  'fence 7: a NULL writer_version (an old binary) is rejected');
SELECT throws_ok($$EXECUTE append('p', 'c2', 6)$$,
  'P0001', 'sync.storage.writer_fence_rejected',
  'fence 7: writer_version 6 is rejected');
SELECT lives_ok($$EXECUTE append('p', 'c2', 7)$$, 'fence 7: writer_version 7 is accepted');
SELECT lives_ok($$EXECUTE append('p', 'c3', 8)$$, 'fence 7: writer_version 8 is accepted');
SELECT lives_ok($$EXECUTE append('q', 'c1', NULL)$$, 'another partition without a fence row is unaffected');
SELECT results_eq(
  $$SELECT partition, commit_seq FROM sync_commits ORDER BY 1, 2$$,
  $$VALUES ('p'::text, 1::bigint), ('p', 2), ('p', 3), ('q', 1)$$,
  'only the accepted commits are stored, at consecutive seqs');

-- Head-only: a commit only at the seq its transaction allocated. (This file
-- is one transaction, so p's head 3 counts as allocated here: a seq below it,
-- above it, or without any partition row is refused.)
SELECT throws_ok($$INSERT INTO sync_commits VALUES ('p', 2, 'c', 'back', 'a', 1, 8)$$,
  'P0001', 'sync.storage.commit_not_at_head', 'a seq below the head is refused (back-dating)');
SELECT throws_ok($$INSERT INTO sync_commits VALUES ('p', 1000, 'c', 'far', 'a', 1, 8)$$,
  'P0001', 'sync.storage.commit_not_at_head', 'a seq above the head is refused (far future)');
SELECT throws_ok($$INSERT INTO sync_commits VALUES ('nowhere', 1, 'c', 'x', 'a', 1, 8)$$,
  'P0001', 'sync.storage.commit_not_at_head', 'a partition without a row has no head');
SELECT throws_ok($$INSERT INTO sync_changes VALUES ('p', 99, 0, 'todos', 'r', 1, 1, '{}', NULL)$$,
  'P0001', 'sync.storage.change_without_commit', 'a change without its commit is refused');
SELECT throws_ok($$UPDATE sync_partitions SET max_commit_seq = max_commit_seq + 5 WHERE partition = 'p'$$,
  '23514', 'sync.storage.partition_seq_rejected', 'the head moves by one allocation at a time');
SELECT throws_ok($$UPDATE sync_partitions SET max_commit_seq = 1 WHERE partition = 'p'$$,
  '23514', 'sync.storage.partition_seq_rejected', 'the head never moves back');
SELECT results_eq($$SELECT max_commit_seq, horizon_seq FROM sync_partitions WHERE partition = 'p'$$,
  $$VALUES (3::bigint, 0::bigint)$$, 'the refused statements changed nothing');

SELECT * FROM finish();
ROLLBACK;
