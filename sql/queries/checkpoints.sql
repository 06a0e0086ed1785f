-- DeclareCheckpoint is sync_declare_checkpoint: it inserts a `declared`
-- checkpoint (an existing row is returned unchanged) and raises the
-- partition's writer fence to schema_version, in one transaction.
-- name: DeclareCheckpoint :one
SELECT * FROM sync_declare_checkpoint(@partition, @name, @schema_version, sqlc.narg('now_ms')::bigint);

-- ClaimCheckpoint is sync_claim_checkpoint: it makes the caller the only
-- owner (owner_epoch + 1, `declared` becomes `backfilling`) and returns the
-- row; its OwnerEpoch is the token of every later advance and activation.
-- name: ClaimCheckpoint :one
SELECT * FROM sync_claim_checkpoint(@partition, @name, @schema_version, sqlc.narg('now_ms')::bigint);

-- AdvanceCheckpoint is sync_advance_checkpoint: a compare-and-set on
-- owner_epoch that moves the watermark; false when the caller no longer
-- owns the row. Run it in the transaction that writes the batch.
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
-- OwnBatch opened (xid): an apply that ended it (COMMIT, ROLLBACK, ROLLBACK
-- AND CHAIN) leaves another transaction, or none, and this returns no row
-- (pgx.ErrNoRows) instead of advancing outside the batch.
-- name: AdvanceBatch :one
SELECT sync_advance_checkpoint(@partition, @name, @owner_epoch, @watermark, @observed_rows, NULL)::boolean AS advanced
 WHERE pg_current_xact_id_if_assigned()::text = @xid::text;

-- ActivateCheckpoint is sync_activate_checkpoint: under the partition lock,
-- `activated` when no change of the sources exists above the watermark,
-- `stale` (changes above it, or the CAS lost) or `unverifiable` (the log is
-- pruned past it).
-- name: ActivateCheckpoint :one
SELECT sync_activate_checkpoint(@partition, @name, @owner_epoch, @watermark, @sources::text[], sqlc.narg('now_ms')::bigint)::text AS result;

-- RemoveCheckpoint is sync_remove_checkpoint: it removes a checkpoint that
-- is not activated and returns it; the writer fence is not lowered.
-- name: RemoveCheckpoint :one
SELECT * FROM sync_remove_checkpoint(@partition, @name);

-- ClaimNextCheckpoint is sync_claim_next_checkpoint: it claims a checkpoint
-- of the projection that no live worker owns (declared, or idle for
-- lease_ms), for a fleet of workers; pgx.ErrNoRows when none is claimable.
-- name: ClaimNextCheckpoint :one
SELECT * FROM sync_claim_next_checkpoint(@name, @schema_version, @lease_ms, sqlc.narg('now_ms')::bigint);

-- Checkpoint reads one checkpoint row; pgx.ErrNoRows when there is none.
-- name: Checkpoint :one
SELECT * FROM sync_backfill_checkpoints WHERE partition = @partition AND name = @name;

-- Checkpoints lists the checkpoints of one partition, or of all when
-- partition is nil, ordered by (partition, name).
-- name: Checkpoints :many
SELECT * FROM sync_backfill_checkpoints
 WHERE (sqlc.narg('partition')::text IS NULL OR partition = sqlc.narg('partition')::text)
 ORDER BY partition, name;

-- CheckpointCounts counts a projection's checkpoints at a schema version,
-- in every partition: all of them, and the activated ones.
-- name: CheckpointCounts :one
SELECT count(*)::bigint AS total,
       count(*) FILTER (WHERE state = 'activated')::bigint AS activated
  FROM sync_backfill_checkpoints
 WHERE name = @name AND schema_version = @schema_version;
