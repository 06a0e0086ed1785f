package gosync

import (
	"context"

	"github.com/gosync/gosync/db"
)

// CheckpointState is the lifecycle state of a backfill checkpoint.
type CheckpointState string

// The states, in lifecycle order: declared (by a bump or a DBA), backfilling
// (claimed by an owner), activated (final; the gate opens).
const (
	StateDeclared    CheckpointState = "declared"
	StateBackfilling CheckpointState = "backfilling"
	StateActivated   CheckpointState = "activated"
)

// CheckpointRef names a checkpoint: a projection being backfilled in a partition.
type CheckpointRef struct {
	Partition string `json:"partition"`
	Name      string `json:"name"`
}

// Checkpoint is one row of sync_backfill_checkpoints.
type Checkpoint struct {
	Partition     string
	Name          string
	SchemaVersion int64
	State         CheckpointState
	Watermark     int64 // the commit seq the projection is known to cover
	OwnerEpoch    int64 // bumped by every claim; the CAS token of advance/activate
	ObservedRows  int64
	UpdatedAtMs   int64
}

func checkpointFrom(r db.SyncBackfillCheckpoint) Checkpoint {
	return Checkpoint{
		Partition: r.Partition, Name: r.Name, SchemaVersion: int64(r.SchemaVersion),
		State: CheckpointState(r.State), Watermark: r.Watermark, OwnerEpoch: r.OwnerEpoch,
		ObservedRows: r.ObservedRows, UpdatedAtMs: r.UpdatedAtMs,
	}
}

// ActivationResult is what sync_activate_checkpoint answers.
type ActivationResult string

// The answers of an activation.
const (
	// ActivationActivated: the projection covers every source change; the gate opens.
	ActivationActivated ActivationResult = "activated"
	// ActivationStale: source changes above the watermark (run more
	// batches), or the CAS lost (another owner claimed, or it is already active).
	ActivationStale ActivationResult = "stale"
	// ActivationUnverifiable: the log is pruned past the watermark; coverage cannot be proven.
	ActivationUnverifiable ActivationResult = "unverifiable"
)

// Coverage is what sync_source_changes_above answers.
type Coverage string

// The answers of the coverage check: no source change above the seq
// (clean), some (changed), or the log is pruned past it (unverifiable).
const (
	CoverageClean        Coverage = "clean"
	CoverageChanged      Coverage = "changed"
	CoverageUnverifiable Coverage = "unverifiable"
)

// DeclareCheckpoint inserts a `declared` checkpoint (an existing row is left
// as it is) and raises the partition's writer fence to at least
// schemaVersion, in one transaction.
func (s *Store) DeclareCheckpoint(ctx context.Context, partition, name string, schemaVersion int64) (Checkpoint, error) {
	v, err := int32Arg("schema_version", schemaVersion)
	if err != nil {
		return Checkpoint{}, err
	}
	r, err := s.q.DeclareCheckpoint(ctx, s.conn, db.DeclareCheckpointParams{Partition: partition, Name: name, SchemaVersion: v})
	if err != nil {
		return Checkpoint{}, MapError(err)
	}
	return checkpointFrom(r), nil
}

// RemoveCheckpoint undoes a mistaken declare: it removes a checkpoint that
// is not activated and returns it (ErrCheckpointActivated for an activated
// one, ErrCheckpointNotDeclared for a missing one). The partition's writer
// fence is never lowered. sync_admin only (sync_remove_checkpoint).
func (s *Store) RemoveCheckpoint(ctx context.Context, partition, name string) (Checkpoint, error) {
	r, err := s.q.RemoveCheckpoint(ctx, s.conn, db.RemoveCheckpointParams{Partition: partition, Name: name})
	if err != nil {
		return Checkpoint{}, MapError(err)
	}
	return checkpointFrom(r), nil
}

// ClaimCheckpoint makes the caller the checkpoint's only owner: the returned
// OwnerEpoch is the token every later advance and activate must present.
func (s *Store) ClaimCheckpoint(ctx context.Context, partition, name string, schemaVersion int64) (Checkpoint, error) {
	v, err := int32Arg("schema_version", schemaVersion)
	if err != nil {
		return Checkpoint{}, err
	}
	return s.claimCheckpoint(ctx, s.conn, partition, name, v)
}

// CheckpointAdvance is an owner's progress report for AdvanceCheckpoint.
type CheckpointAdvance struct {
	Partition, Name string
	OwnerEpoch      int64 // the epoch the owner's claim returned
	Watermark       int64 // the commit seq now covered: never below the stored one nor past the head
	ObservedRows    int64 // source changes applied so far, by every owner
}

// AdvanceCheckpoint records progress if a.OwnerEpoch is still the current
// owner's; false means another worker claimed since (stop, write nothing
// more). Call it on WithTx(tx) so the projection batch and its watermark
// commit together.
func (s *Store) AdvanceCheckpoint(ctx context.Context, a CheckpointAdvance) (bool, error) {
	ok, err := s.q.AdvanceCheckpoint(ctx, s.conn, db.AdvanceCheckpointParams{
		Partition: a.Partition, Name: a.Name, OwnerEpoch: a.OwnerEpoch, Watermark: a.Watermark, ObservedRows: a.ObservedRows,
	})
	return ok, MapError(err)
}

// CheckpointActivation is an owner's request to ActivateCheckpoint.
type CheckpointActivation struct {
	Partition, Name string
	OwnerEpoch      int64    // the epoch the owner's claim returned
	Watermark       int64    // exactly the stored watermark (advance first), else stale
	Sources         []string // the source tables whose changes the projection reads: none above Watermark may exist
}

// ActivateCheckpoint activates the checkpoint if no change of the source
// tables exists above the watermark, under the partition lock pushes take.
func (s *Store) ActivateCheckpoint(ctx context.Context, a CheckpointActivation) (ActivationResult, error) {
	return s.activateCheckpoint(ctx, s.conn, a)
}

// SourceCoverageSeq is the highest commit seq of a change to the source
// tables (0 when none): the watermark a backfill must reach.
func (s *Store) SourceCoverageSeq(ctx context.Context, partition string, sources []string) (int64, error) {
	return s.sourceCoverageSeq(ctx, s.conn, partition, sources)
}

// SourceChangesAbove runs the coverage check of activation on its own.
func (s *Store) SourceChangesAbove(ctx context.Context, partition string, sources []string, seq int64) (Coverage, error) {
	if sources == nil {
		sources = []string{}
	}
	r, err := s.q.SourceChangesAbove(ctx, s.conn, db.SourceChangesAboveParams{Partition: partition, Sources: sources, Seq: seq})
	return Coverage(r), MapError(err)
}

// Checkpoint reads one checkpoint; ErrCheckpointNotDeclared when absent.
func (s *Store) Checkpoint(ctx context.Context, partition, name string) (Checkpoint, error) {
	return s.checkpoint(ctx, s.conn, partition, name)
}

// Checkpoints lists the checkpoints of one partition, or of all partitions
// when partition is "", ordered by (partition, name).
func (s *Store) Checkpoints(ctx context.Context, partition string) ([]Checkpoint, error) {
	rows, err := s.q.Checkpoints(ctx, s.conn, optional(partition))
	if err != nil {
		return nil, MapError(err)
	}
	out := make([]Checkpoint, len(rows))
	for i, r := range rows {
		out[i] = checkpointFrom(r)
	}
	return out, nil
}
