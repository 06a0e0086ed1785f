-- AppendCommit allocates the next commit_seq of the partition (creating the
-- partition row on first use) and inserts the commit in one statement. The
-- writer fence trigger checks writer_version on the insert.
-- name: AppendCommit :one
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
