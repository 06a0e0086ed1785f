package gosync

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/gosync/gosync/db"
)

// The checkpoint queries at one level: each wrapper runs one generated query
// on conn (the Store's pool or connection, or a batch's transaction) and
// returns gosync's types with the error mapped (MapError). The public
// checkpoint methods and the backfill loop (backfill.go, fleet.go) both call
// these, so a step of the loop behaves as its public method does, and
// neither touches s.q or a raw database error.

func (s *Store) claimCheckpoint(ctx context.Context, conn db.DBTX, partition, name string, version int32) (Checkpoint, error) {
	r, err := s.q.ClaimCheckpoint(ctx, conn, db.ClaimCheckpointParams{Partition: partition, Name: name, SchemaVersion: version})
	if err != nil {
		return Checkpoint{}, MapError(err)
	}
	return checkpointFrom(r), nil
}

// claimNextCheckpoint claims a checkpoint of the projection no live worker
// owns; false when none is claimable now.
func (s *Store) claimNextCheckpoint(ctx context.Context, conn db.DBTX, name string, version int32, leaseMs int64) (Checkpoint, bool, error) {
	r, err := s.q.ClaimNextCheckpoint(ctx, conn, db.ClaimNextCheckpointParams{Name: name, SchemaVersion: version, LeaseMs: leaseMs})
	if errors.Is(err, pgx.ErrNoRows) {
		return Checkpoint{}, false, nil
	}
	if err != nil {
		return Checkpoint{}, false, MapError(err)
	}
	return checkpointFrom(r), true, nil
}

func (s *Store) checkpoint(ctx context.Context, conn db.DBTX, partition, name string) (Checkpoint, error) {
	r, err := s.q.Checkpoint(ctx, conn, db.CheckpointParams{Partition: partition, Name: name})
	if errors.Is(err, pgx.ErrNoRows) {
		return Checkpoint{}, fmt.Errorf("%w: no checkpoint %q in partition %q", ErrCheckpointNotDeclared, name, partition)
	}
	if err != nil {
		return Checkpoint{}, MapError(err)
	}
	return checkpointFrom(r), nil
}

// checkpointCounts counts the projection's checkpoints at version in every
// partition: all, and the activated ones.
func (s *Store) checkpointCounts(ctx context.Context, conn db.DBTX, name string, version int32) (total, activated int64, err error) {
	r, err := s.q.CheckpointCounts(ctx, conn, db.CheckpointCountsParams{Name: name, SchemaVersion: version})
	if err != nil {
		return 0, 0, MapError(err)
	}
	return r.Total, r.Activated, nil
}

func (s *Store) activateCheckpoint(ctx context.Context, conn db.DBTX, a CheckpointActivation) (ActivationResult, error) {
	sources := a.Sources
	if sources == nil {
		sources = []string{} // an empty list is a valid, clean list; NULL is refused
	}
	r, err := s.q.ActivateCheckpoint(ctx, conn, db.ActivateCheckpointParams{
		Partition: a.Partition, Name: a.Name, OwnerEpoch: a.OwnerEpoch, Watermark: a.Watermark, Sources: sources,
	})
	if err != nil {
		return "", MapError(err)
	}
	return ActivationResult(r), nil
}

func (s *Store) sourceCoverageSeq(ctx context.Context, conn db.DBTX, partition string, sources []string) (int64, error) {
	if sources == nil {
		sources = []string{}
	}
	seq, err := s.q.SourceCoverageSeq(ctx, conn, db.SourceCoverageSeqParams{Partition: partition, Sources: sources})
	return seq, MapError(err)
}

// assertSourceTables refuses sources that are not tables of the stored
// schema (ErrUnknownSources).
func (s *Store) assertSourceTables(ctx context.Context, conn db.DBTX, sources []string) error {
	if sources == nil {
		sources = []string{}
	}
	return MapError(s.q.AssertSourceTables(ctx, conn, sources))
}

// sourceChanges reads the partition's changes of the sources with
// after < commit_seq <= through, in log order.
func (s *Store) sourceChanges(ctx context.Context, conn db.DBTX, partition string, sources []string, after, through int64) ([]SourceChange, error) {
	rows, err := s.q.SourceChanges(ctx, conn, db.SourceChangesParams{
		Partition: partition, Sources: sources, AfterSeq: after, ThroughSeq: through,
	})
	if err != nil {
		return nil, MapError(err)
	}
	changes := make([]SourceChange, len(rows))
	for i, r := range rows {
		if changes[i], err = sourceChange(r); err != nil {
			return nil, err
		}
	}
	return changes, nil
}

// currentCursor is the partition's max_commit_seq (0 without a log).
func (s *Store) currentCursor(ctx context.Context, conn db.DBTX, partition string) (int64, error) {
	seq, err := s.q.CurrentCursor(ctx, conn, partition)
	return seq, MapError(err)
}

// ownBatch locks the checkpoint row for the batch transaction tx if epoch
// still owns it (ErrLostOwnership otherwise) and returns the partition's
// horizon and tx's id, in one round trip.
func (s *Store) ownBatch(ctx context.Context, tx pgx.Tx, b Backfill, epoch, watermark, observed int64) (horizon int64, xid string, err error) {
	r, err := s.q.OwnBatch(ctx, tx, db.OwnBatchParams{Partition: b.Partition, Name: b.Name, OwnerEpoch: epoch,
		Watermark: watermark, ObservedRows: observed})
	if err != nil {
		return 0, "", MapError(err)
	}
	if !r.Owned {
		return 0, "", ErrLostOwnership
	}
	return r.HorizonSeq, r.Xid, nil
}

// advanceBatch is a batch's closing advance, in the transaction ownBatch
// opened (xid) or not at all: an apply that ended it (COMMIT, ROLLBACK)
// is ErrBatchTransactionEnded, and nothing advances.
func (s *Store) advanceBatch(ctx context.Context, tx pgx.Tx, b Backfill, xid string, epoch, watermark, observed int64) error {
	advanced, err := s.q.AdvanceBatch(ctx, tx, db.AdvanceBatchParams{Partition: b.Partition, Name: b.Name, OwnerEpoch: epoch,
		Watermark: watermark, ObservedRows: observed, Xid: xid})
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%w (partition %q, checkpoint %q: the watermark stays at its stored value)", ErrBatchTransactionEnded, b.Partition, b.Name)
	}
	if err != nil {
		return MapError(err)
	}
	if !advanced {
		return ErrLostOwnership // rolls the batch back: nothing more is written
	}
	return nil
}
