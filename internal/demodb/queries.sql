-- Demo and tests only (package internal/demodb): gosync itself never runs
-- these, and they are not part of the public db package.

-- DemoOldWriterCommit is the statement an upstream server's push runs
-- (commit_seq allocated from sync_partitions, the commit inserted with its
-- writer_version, one statement): the demo's "old writer" and the tests that
-- play one run it to show the writer fence refusing a stale version. gosync
-- appends commits with sync_push / sync_append_commit, never with this.
-- name: DemoOldWriterCommit :one
WITH allocated AS (
  INSERT INTO sync_partitions AS p (partition, max_commit_seq)
  VALUES (@partition, 1)
  ON CONFLICT (partition) DO UPDATE
    SET max_commit_seq = p.max_commit_seq + 1
  RETURNING max_commit_seq
)
INSERT INTO sync_commits (
  partition, commit_seq, client_id, client_commit_id, actor_id,
  created_at_ms, writer_version)
SELECT @partition, allocated.max_commit_seq, @client_id, @client_commit_id,
       @actor_id, @created_at_ms, sqlc.narg('writer_version')::bigint
  FROM allocated
RETURNING *;
