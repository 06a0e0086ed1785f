-- name: SourceChanges :many
SELECT * FROM sync_changes
 WHERE partition = @partition AND tbl = ANY(@sources::text[])
   AND commit_seq > @after_seq AND commit_seq <= @through_seq
 ORDER BY commit_seq, idx;

-- name: BarrierStatus :many
SELECT * FROM sync_barrier_status
 WHERE (sqlc.narg('partition')::text IS NULL OR partition = sqlc.narg('partition')::text)
 ORDER BY partition, checkpoint;
