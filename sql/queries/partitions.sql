-- Partitions: the registry (sync_touch_partition, sync_rotate_log_epoch),
-- pruning (sync_prune_log) and the cursor.

-- name: TouchPartition :one
SELECT * FROM sync_touch_partition(@partition, sqlc.narg('log_epoch')::text, sqlc.narg('now_ms')::bigint);

-- name: RotateLogEpoch :one
SELECT * FROM sync_rotate_log_epoch(@partition, sqlc.narg('log_epoch')::text, sqlc.narg('now_ms')::bigint);

-- name: PruneLog :one
SELECT sync_prune_log(@partition, @through_seq)::bigint AS horizon_seq;

-- name: PartitionKnown :one
SELECT (EXISTS (SELECT 1 FROM sync_partitions p WHERE p.partition = @partition)
     OR EXISTS (SELECT 1 FROM sync_partition_registry r WHERE r.partition = @partition)
     OR EXISTS (SELECT 1 FROM sync_backfill_checkpoints c WHERE c.partition = @partition)
     OR EXISTS (SELECT 1 FROM sync_writer_fence f WHERE f.partition = @partition))::boolean AS known;

-- name: CurrentCursor :one
SELECT coalesce((SELECT max_commit_seq FROM sync_partitions WHERE partition = @partition), 0)::bigint AS cursor;
