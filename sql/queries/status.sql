-- The DBA status views (sync_barrier_status, sync_barrier_summary).

-- BarrierStatus: the rows, filtered; LIMIT NULL is no limit.
-- name: BarrierStatus :many
SELECT * FROM sync_barrier_status
 WHERE (sqlc.narg('partition')::text IS NULL OR partition = sqlc.narg('partition')::text)
   AND (sqlc.narg('state')::text IS NULL OR state = sqlc.narg('state')::text)
 ORDER BY partition, checkpoint
 LIMIT sqlc.narg('row_limit')::bigint;

-- name: BarrierSummary :many
SELECT * FROM sync_barrier_summary ORDER BY schema_version DESC, checkpoint, state;
