-- BackfillBatchEnd is the commit seq that closes the next batch: the commit
-- holding the batch_size-th source change above the watermark,
-- or the last one when fewer remain, the watermark itself when none do. A
-- batch never splits a commit, because the watermark is a commit seq.
-- name: BackfillBatchEnd :one
SELECT coalesce(max(b.commit_seq), @watermark)::bigint AS batch_end
  FROM (SELECT ch.commit_seq FROM sync_changes ch
         WHERE ch.partition = @partition AND ch.tbl = ANY(@sources::text[]) AND ch.commit_seq > @watermark
         ORDER BY ch.commit_seq, ch.idx
         LIMIT sqlc.arg(batch_size)::int) AS b;

-- name: SourceChanges :many
SELECT * FROM sync_changes
 WHERE partition = @partition AND tbl = ANY(@sources::text[])
   AND commit_seq > @after_seq AND commit_seq <= @through_seq
 ORDER BY commit_seq, idx;

-- name: BarrierStatus :many
SELECT * FROM sync_barrier_status
 WHERE (sqlc.narg('partition')::text IS NULL OR partition = sqlc.narg('partition')::text)
 ORDER BY partition, checkpoint;
