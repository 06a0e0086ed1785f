-- TouchPartition is sync_touch_partition: it registers a partition with its
-- first log epoch (a fresh UUID when log_epoch is nil), or stamps an
-- existing one's last authentication, and returns the registry row.
-- name: TouchPartition :one
SELECT * FROM sync_touch_partition(@partition, sqlc.narg('log_epoch')::text, sqlc.narg('now_ms')::bigint);

-- RotateLogEpoch is sync_rotate_log_epoch: a new log epoch with
-- epoch_required set, and the partition's client cursors deleted.
-- name: RotateLogEpoch :one
SELECT * FROM sync_rotate_log_epoch(@partition, sqlc.narg('log_epoch')::text, sqlc.narg('now_ms')::bigint);

-- PruneLog is sync_prune_log: it deletes the partition's log through
-- through_seq, raises horizon_seq to it and returns the horizon.
-- name: PruneLog :one
SELECT sync_prune_log(@partition, @through_seq)::bigint AS horizon_seq;

-- PartitionKnown reports whether the partition has a log, a registration, a
-- checkpoint or a fence.
-- name: PartitionKnown :one
SELECT (EXISTS (SELECT 1 FROM sync_partitions p WHERE p.partition = @partition)
     OR EXISTS (SELECT 1 FROM sync_partition_registry r WHERE r.partition = @partition)
     OR EXISTS (SELECT 1 FROM sync_backfill_checkpoints c WHERE c.partition = @partition)
     OR EXISTS (SELECT 1 FROM sync_writer_fence f WHERE f.partition = @partition))::boolean AS known;

-- CurrentCursor is the partition's max_commit_seq, 0 without a log.
-- name: CurrentCursor :one
SELECT coalesce((SELECT max_commit_seq FROM sync_partitions WHERE partition = @partition), 0)::bigint AS cursor;
