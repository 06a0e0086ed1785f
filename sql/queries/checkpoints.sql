-- name: DeclareCheckpoint :one
SELECT * FROM sync_declare_checkpoint(@partition, @name, @schema_version, sqlc.narg('now_ms')::bigint);

-- name: ClaimCheckpoint :one
SELECT * FROM sync_claim_checkpoint(@partition, @name, @schema_version, sqlc.narg('now_ms')::bigint);

-- name: AdvanceCheckpoint :one
SELECT sync_advance_checkpoint(@partition, @name, @owner_epoch, @watermark, @observed_rows, sqlc.narg('now_ms')::bigint)::boolean AS advanced;

-- name: ActivateCheckpoint :one
SELECT sync_activate_checkpoint(@partition, @name, @owner_epoch, @watermark, @sources::text[], sqlc.narg('now_ms')::bigint)::text AS result;

-- name: SourceCoverageSeq :one
SELECT sync_source_coverage_seq(@partition, @sources::text[])::bigint AS seq;

-- name: SourceChangesAbove :one
SELECT sync_source_changes_above(@partition, @sources::text[], @seq)::text AS result;

-- name: GetCheckpoint :one
SELECT * FROM sync_backfill_checkpoints WHERE partition = @partition AND name = @name;

-- name: ListCheckpoints :many
SELECT * FROM sync_backfill_checkpoints
 WHERE (sqlc.narg('partition')::text IS NULL OR partition = sqlc.narg('partition')::text)
 ORDER BY partition, name;

-- name: ClaimNextCheckpoint :many
SELECT * FROM sync_claim_next_checkpoint(@name, @schema_version, @lease_ms, sqlc.narg('now_ms')::bigint);

-- name: CheckpointCounts :one
SELECT count(*)::bigint AS total,
       count(*) FILTER (WHERE state = 'activated')::bigint AS activated
  FROM sync_backfill_checkpoints
 WHERE name = @name AND schema_version = @schema_version;

-- name: RemoveCheckpoint :one
SELECT * FROM sync_remove_checkpoint(@partition, @name);
