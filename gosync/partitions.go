package gosync

import (
	"context"

	"github.com/gosync/gosync/db"
)

// Registration is a partition's registry row.
type Registration struct {
	Partition             string
	LogEpoch              string
	EpochRequired         bool
	LastAuthenticatedAtMs int64
}

func registrationFrom(r db.SyncPartitionRegistry) Registration {
	return Registration{Partition: r.Partition, LogEpoch: r.LogEpoch, EpochRequired: r.EpochRequired, LastAuthenticatedAtMs: r.LastAuthenticatedAtMs}
}

// TouchPartition registers a partition with its first log epoch (a fresh
// UUID), or stamps an existing one's last authentication.
func (s *Store) TouchPartition(ctx context.Context, partition string) (Registration, error) {
	r, err := s.q.TouchPartition(ctx, s.conn, db.TouchPartitionParams{Partition: partition})
	return registrationFrom(r), MapError(err)
}

// RotateLogEpoch gives a partition a new log epoch: epoch_required is set
// and its client cursors are deleted, in one transaction.
func (s *Store) RotateLogEpoch(ctx context.Context, partition string) (Registration, error) {
	r, err := s.q.RotateLogEpoch(ctx, s.conn, db.RotateLogEpochParams{Partition: partition})
	return registrationFrom(r), MapError(err)
}

// PruneLog deletes a partition's commits, changes and change scopes through
// throughSeq and raises horizon_seq to it, in one transaction; it returns the
// horizon.
func (s *Store) PruneLog(ctx context.Context, partition string, throughSeq int64) (int64, error) {
	h, err := s.q.PruneLog(ctx, s.conn, db.PruneLogParams{Partition: partition, ThroughSeq: throughSeq})
	return h, MapError(err)
}

// PartitionKnown reports whether the partition has a log, a registration, a
// checkpoint or a fence.
func (s *Store) PartitionKnown(ctx context.Context, partition string) (bool, error) {
	known, err := s.q.PartitionKnown(ctx, s.conn, partition)
	return known, MapError(err)
}
