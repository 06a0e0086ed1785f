-- BarrierStatus reads the view sync_barrier_status (one row per checkpoint,
-- with its fence, lag and horizon), filtered by partition and state when
-- they are not nil, at most row_limit rows (nil: no limit).
-- name: BarrierStatus :many
SELECT * FROM sync_barrier_status
 WHERE (sqlc.narg('partition')::text IS NULL OR partition = sqlc.narg('partition')::text)
   AND (sqlc.narg('state')::text IS NULL OR state = sqlc.narg('state')::text)
 ORDER BY partition, checkpoint
 LIMIT sqlc.narg('row_limit')::bigint;

-- BarrierSummary reads the view sync_barrier_summary: per schema version,
-- checkpoint and state, the partitions, the largest lag and the slowest.
-- name: BarrierSummary :many
SELECT * FROM sync_barrier_summary ORDER BY schema_version DESC, checkpoint, state;
