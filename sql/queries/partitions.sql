-- name: EnsurePartition :exec
INSERT INTO sync_partitions (partition) VALUES (@partition)
ON CONFLICT (partition) DO NOTHING;

-- name: GetPartition :one
SELECT * FROM sync_partitions WHERE partition = @partition;

-- LockPartition takes the partition row lock every push takes: writers of one
-- partition serialize on it, and activation takes it to exclude pushes.
-- name: LockPartition :one
SELECT * FROM sync_partitions WHERE partition = @partition FOR UPDATE;

-- name: LockPartitionForWrite :one
SELECT * FROM sync_lock_partition(@partition);
