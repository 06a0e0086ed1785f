-- pgTAP: the head rule (a commit lands at seq N only in the transaction that
-- raised max_commit_seq to N), the row triggers' independence from helper
-- functions, and the op codes. Run: pg_prove -d "$DATABASE_URL"
-- tests/sql/*.sql (on a migrated database with CREATE EXTENSION pgtap); the
-- file runs in one rolled-back transaction, as the owner, switching to a
-- sync_writer role where a lower role is meant. Each lives_ok/throws_ok runs
-- in a subtransaction of its own.
BEGIN;
SELECT plan(20);

CREATE ROLE head_rule_writer IN ROLE sync_writer;

-- p and q: head 2 with only commit 1 (seq 2 allocated by a transaction that
-- appended nothing), q with a fence row; full: head 1 with its commit.
-- Seeded as a restore would be, triggers off. (Rows written earlier in this
-- one transaction count as "this transaction's": the rules that tell another
-- transaction's rows from this one's are proved in tests/redteam_head_test.go
-- with real sessions; here, what a touch changes.)
SET LOCAL session_replication_role = replica;
INSERT INTO sync_partitions VALUES ('p', 2, 0), ('q', 2, 0), ('full', 1, 0);
INSERT INTO sync_commits VALUES ('p', 1, 'c', 'c1', 'a', 0, 1), ('q', 1, 'c', 'c1', 'a', 0, 1),
                                ('full', 1, 'c', 'c1', 'a', 0, 1);
INSERT INTO sync_writer_fence VALUES ('q', 1);
SET LOCAL session_replication_role = origin;

-- A lower role may allocate, never touch.
SET LOCAL ROLE head_rule_writer;
SELECT throws_ok($$UPDATE sync_partitions SET max_commit_seq = max_commit_seq WHERE partition = 'p'$$,
  '23514', 'sync.storage.partition_seq_rejected',
  'a writer''s UPDATE that leaves the head as it is (a touch) is refused');
SELECT throws_ok($$INSERT INTO sync_partitions AS s (partition, max_commit_seq) VALUES ('p', 0)
  ON CONFLICT (partition) DO UPDATE SET max_commit_seq = s.max_commit_seq$$,
  '23514', 'sync.storage.partition_seq_rejected',
  'a writer''s upsert that sets the head to itself is refused');
SELECT throws_ok($$UPDATE sync_partitions SET partition = partition WHERE partition = 'full'$$,
  '42501', NULL, 'a writer cannot write the partition column at all');
SELECT lives_ok($$WITH a AS (UPDATE sync_partitions SET max_commit_seq = max_commit_seq + 1 WHERE partition = 'full' RETURNING max_commit_seq)
  INSERT INTO sync_commits SELECT 'full', max_commit_seq, 'c', 'c2', 'a', 0, 1 FROM a$$,
  'a writer''s allocation (+1) and its commit pass');
SELECT lives_ok($$SELECT FROM sync_lock_partition('p')$$,
  'the partition lock (INSERT ... DO NOTHING, then FOR UPDATE) is no touch');
SELECT lives_ok($$WITH a AS (INSERT INTO sync_partitions AS s (partition, max_commit_seq) VALUES ('new', 1)
  ON CONFLICT (partition) DO UPDATE SET max_commit_seq = s.max_commit_seq + 1 RETURNING max_commit_seq)
  INSERT INTO sync_commits SELECT 'new', max_commit_seq, 'c', 'c1', 'a', 0, 1 FROM a$$,
  'the upstream upsert allocation creates a partition at 1 and commits there');
RESET ROLE;

-- The owner's touch over a head that has its commit needs no mark: a
-- commit at that seq is a duplicate, the next allocation is the
-- transaction's own.
SELECT lives_ok($$SELECT sync_prune_log('full', 1)$$, 'a horizon raise over a head with its commit passes');
SELECT lives_ok($$SELECT sync_prune_log('full', 1);
  SELECT sync_append_commit('full', 'c', 'c3', 'a', 0, 1, '{t}', '{r}', '{1}', '{1}', '{"{}"}', '{NULL}')$$,
  'a prune, then a push in the same transaction: the push allocates and commits');

-- Over a head without its commit (p, q: seq 2), the owner's touch marks the
-- (sub)transaction by rewriting the fence row; without one (00025) the
-- horizon rises to the head, so nothing can be appended at or below it.
SELECT throws_ok($$SELECT sync_prune_log('p', 1); INSERT INTO sync_commits VALUES ('p', 2, 'c', 'late', 'a', 0, 1)$$,
  'P0001', 'sync.storage.commit_not_at_head',
  'a horizon raise over an empty head of a partition without a fence row raises the horizon to the head: a commit there is refused');
SELECT throws_ok($$SELECT sync_prune_log('q', 1); INSERT INTO sync_commits VALUES ('q', 2, 'c', 'late', 'a', 0, 1)$$,
  'P0001', 'sync.storage.commit_not_at_head',
  'a horizon raise, then a commit at the empty head: refused');
SELECT throws_ok($$SELECT sync_install_checkpoint('q', 'x', 1); INSERT INTO sync_commits VALUES ('q', 2, 'c', 'late', 'a', 0, 1)$$,
  'P0001', 'sync.storage.commit_not_at_head',
  'a re-declare (a touch), then a commit at the empty head: refused');
SELECT throws_ok($$SELECT sync_install_checkpoint('p', 'x', 1); INSERT INTO sync_commits VALUES ('p', 2, 'c', 'late', 'a', 0, 1)$$,
  'P0001', 'sync.storage.commit_not_at_head',
  'a first declare (fence row created), then a commit at the empty head: refused');
SELECT throws_ok($$SELECT sync_install_checkpoint('q', 'x', 2);
  SELECT sync_append_commit('q', 'c', 'c9', 'a', 0, 2, '{t}', '{r}', '{1}', '{1}', '{"{}"}', '{NULL}')$$,
  'P0001', 'sync.storage.commit_not_at_head',
  'a fence raise, then a push in the same (sub)transaction: refused (push in a transaction of its own)');
SELECT lives_ok($$SELECT sync_install_checkpoint('q', 'x', 2)$$, 'the fence raise alone passes');
SELECT results_eq($$SELECT max_commit_seq, horizon_seq FROM sync_partitions WHERE partition IN ('p', 'q') ORDER BY partition$$,
  $$VALUES (2::bigint, 0::bigint), (2, 0)$$, 'the refused attempts left the heads and horizons as they were');

-- The row triggers call no function of their schema: with
-- sync_xid_is_current gone, every rule holds and a push works.
DROP FUNCTION sync_xid_is_current(xid);
SELECT lives_ok($$SELECT sync_append_commit('full', 'c', 'c4', 'a', 0, 1, '{t}', '{r}', '{2}', '{NULL}', '{"{}"}', '{NULL}')$$,
  'without sync_xid_is_current a push still works');
SELECT throws_ok($$INSERT INTO sync_changes VALUES ('full', 1000, 0, 't', 'x', 1, 1, '{}', NULL)$$,
  'P0001', 'sync.storage.change_without_commit', 'without it a change without its commit is still refused');
SELECT throws_ok($$INSERT INTO sync_commits VALUES ('full', 1, 'c', 'late', 'a', 0, 1)$$,
  'P0001', 'sync.storage.commit_not_at_head', 'without it a back-dated commit is still refused');

-- Ops: 1 (upsert) and 2 (delete) only.
SELECT throws_ok($$WITH a AS (UPDATE sync_partitions SET max_commit_seq = max_commit_seq + 1 WHERE partition = 'full' RETURNING max_commit_seq),
  c AS (INSERT INTO sync_commits SELECT 'full', max_commit_seq, 'c', 'c5', 'a', 0, 1 FROM a RETURNING commit_seq)
  INSERT INTO sync_changes SELECT 'full', commit_seq, 0, 't', 'r', 3, 1, '{}', NULL FROM c$$,
  'P0001', 'sync.storage.change_op_rejected', 'a change with op 3 is refused');
SELECT throws_ok($$SELECT sync_append_commit('full', 'c', 'c6', 'a', 0, 1, '{t}', '{r}', '{0}', '{1}', '{"{}"}', '{NULL}')$$,
  '22023', 'invalid argument: every op must be 1 (upsert) or 2 (delete)', 'sync_append_commit refuses op 0 as an argument');

SELECT * FROM finish();
ROLLBACK;
