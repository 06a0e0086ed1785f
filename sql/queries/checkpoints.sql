-- Backfill checkpoints: the lifecycle (sync_declare/claim/advance/activate/
-- remove_checkpoint, sync_claim_next_checkpoint) and reads of the table.

-- name: DeclareCheckpoint :one
SELECT * FROM sync_declare_checkpoint(@partition, @name, @schema_version, sqlc.narg('now_ms')::bigint);

-- name: ClaimCheckpoint :one
SELECT * FROM sync_claim_checkpoint(@partition, @name, @schema_version, sqlc.narg('now_ms')::bigint);

-- name: AdvanceCheckpoint :one
SELECT sync_advance_checkpoint(@partition, @name, @owner_epoch, @watermark, @observed_rows, sqlc.narg('now_ms')::bigint)::boolean AS advanced;

-- OwnBatch opens a backfill batch in one round trip: the no-op CAS at the
-- current watermark that takes the checkpoint row as its owner, the
-- partition's horizon (changes at or below it are pruned) and the batch
-- transaction's id, which AdvanceBatch requires.
-- name: OwnBatch :one
SELECT sync_advance_checkpoint(@partition, @name, @owner_epoch, @watermark, @observed_rows, NULL)::boolean AS owned,
       coalesce((SELECT p.horizon_seq FROM sync_partitions p WHERE p.partition = @partition), 0)::bigint AS horizon_seq,
       pg_current_xact_id()::text AS xid;

-- AdvanceBatch is a batch's closing advance, only in the transaction
-- OwnBatch opened: an apply that ended it (COMMIT, ROLLBACK, ROLLBACK AND
-- CHAIN) leaves another transaction, or none, and this returns no row
-- instead of advancing outside the batch.
-- name: AdvanceBatch :many
SELECT sync_advance_checkpoint(@partition, @name, @owner_epoch, @watermark, @observed_rows, NULL)::boolean AS advanced
 WHERE pg_current_xact_id_if_assigned()::text = @xid::text;

-- name: ActivateCheckpoint :one
SELECT sync_activate_checkpoint(@partition, @name, @owner_epoch, @watermark, @sources::text[], sqlc.narg('now_ms')::bigint)::text AS result;

-- name: RemoveCheckpoint :one
SELECT * FROM sync_remove_checkpoint(@partition, @name);

-- name: ClaimNextCheckpoint :many
SELECT * FROM sync_claim_next_checkpoint(@name, @schema_version, @lease_ms, sqlc.narg('now_ms')::bigint);

-- name: Checkpoint :one
SELECT * FROM sync_backfill_checkpoints WHERE partition = @partition AND name = @name;

-- name: Checkpoints :many
SELECT * FROM sync_backfill_checkpoints
 WHERE (sqlc.narg('partition')::text IS NULL OR partition = sqlc.narg('partition')::text)
 ORDER BY partition, name;

-- name: CheckpointCounts :one
SELECT count(*)::bigint AS total,
       count(*) FILTER (WHERE state = 'activated')::bigint AS activated
  FROM sync_backfill_checkpoints
 WHERE name = @name AND schema_version = @schema_version;
