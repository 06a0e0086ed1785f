-- name: SourceChanges :many
SELECT * FROM sync_changes
 WHERE partition = @partition AND tbl = ANY(@sources::text[])
   AND commit_seq > @after_seq AND commit_seq <= @through_seq
 ORDER BY commit_seq, idx;

-- BarrierStatus: the rows, filtered; LIMIT NULL is no limit.
-- name: BarrierStatus :many
SELECT * FROM sync_barrier_status
 WHERE (sqlc.narg('partition')::text IS NULL OR partition = sqlc.narg('partition')::text)
   AND (sqlc.narg('state')::text IS NULL OR state = sqlc.narg('state')::text)
 ORDER BY partition, checkpoint
 LIMIT sqlc.narg('row_limit')::bigint;

-- name: BarrierSummary :many
SELECT * FROM sync_barrier_summary ORDER BY schema_version DESC, checkpoint, state;

-- OwnBatch opens a backfill batch in one round trip: the no-op CAS at the
-- current watermark that takes the checkpoint row as its owner, and the
-- partition's horizon (changes at or below it are pruned).
-- name: OwnBatch :one
SELECT sync_advance_checkpoint(@partition, @name, @owner_epoch, @watermark, @observed_rows, NULL)::boolean AS owned,
       coalesce((SELECT p.horizon_seq FROM sync_partitions p WHERE p.partition = @partition), 0)::bigint AS horizon_seq;
