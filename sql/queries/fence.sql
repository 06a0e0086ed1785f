-- name: GetWriterFence :one
SELECT * FROM sync_writer_fence WHERE partition = @partition;

-- name: ListWriterFences :many
SELECT * FROM sync_writer_fence ORDER BY partition;
