-- name: GetWriterFence :one
SELECT * FROM sync_writer_fence WHERE partition = @partition;
