package gosync

import (
	"context"
	"fmt"
	"time"

	"github.com/gosync/gosync/db"
)

// BarrierStatus is one row of the sync_barrier_status view.
type BarrierStatus struct {
	Partition     string          `json:"partition"`
	Checkpoint    string          `json:"checkpoint"`
	State         CheckpointState `json:"state"`
	SchemaVersion int64           `json:"schema_version"`
	FenceVersion  *int64          `json:"fence_version"` // nil: no fence row
	OwnerEpoch    int64           `json:"owner_epoch"`
	Watermark     int64           `json:"watermark"`
	CoverageSeq   int64           `json:"coverage_seq"`
	Lag           int64           `json:"lag"`
	HorizonSeq    int64           `json:"horizon_seq"`
	ObservedRows  int64           `json:"observed_rows"`
	UpdatedAt     time.Time       `json:"updated_at"`
}

// StatusFilter picks rows of sync_barrier_status; the zero value is every row.
type StatusFilter struct {
	Partition string          // "" for every partition
	State     CheckpointState // "" for every state
	Limit     int             // 0 for no limit
}

// BarrierStatus reads the rows of sync_barrier_status that f picks,
// ordered by (partition, checkpoint).
func (s *Store) BarrierStatus(ctx context.Context, f StatusFilter) ([]BarrierStatus, error) {
	switch f.State {
	case "", StateDeclared, StateBackfilling, StateActivated:
	default:
		return nil, fmt.Errorf("%w: state %q is not declared, backfilling or activated", ErrInvalidArgument, f.State)
	}
	if f.Limit < 0 {
		return nil, fmt.Errorf("%w: limit %d is negative", ErrInvalidArgument, f.Limit)
	}
	arg := db.BarrierStatusParams{Partition: optional(f.Partition), State: optional(string(f.State))}
	if f.Limit > 0 {
		limit := int64(f.Limit)
		arg.RowLimit = &limit
	}
	rows, err := s.q.BarrierStatus(ctx, s.conn, arg)
	if err != nil {
		return nil, MapError(err)
	}
	out := make([]BarrierStatus, len(rows))
	for i, r := range rows {
		out[i] = BarrierStatus{Partition: r.Partition, Checkpoint: r.Checkpoint, State: CheckpointState(r.State),
			SchemaVersion: int64(r.SchemaVersion), OwnerEpoch: r.OwnerEpoch, Watermark: r.Watermark,
			CoverageSeq: r.CoverageSeq, Lag: r.Lag, HorizonSeq: r.HorizonSeq, ObservedRows: r.ObservedRows,
			UpdatedAt: r.UpdatedAt}
		if r.FenceVersion != nil {
			v := int64(*r.FenceVersion)
			out[i].FenceVersion = &v
		}
	}
	return out, nil
}

// BarrierSummary is one row of sync_barrier_summary: the checkpoints of one
// projection at one schema version in one state, across partitions.
type BarrierSummary struct {
	SchemaVersion    int64           `json:"schema_version"`
	Checkpoint       string          `json:"checkpoint"`
	State            CheckpointState `json:"state"`
	Partitions       int64           `json:"partitions"`
	MaxLag           int64           `json:"max_lag"`
	SlowestPartition string          `json:"slowest_partition"` // the partition with MaxLag
	OldestUpdate     time.Time       `json:"oldest_update"`
	NewestUpdate     time.Time       `json:"newest_update"`
}

// BarrierSummary reads sync_barrier_summary, newest schema version first.
func (s *Store) BarrierSummary(ctx context.Context) ([]BarrierSummary, error) {
	rows, err := s.q.BarrierSummary(ctx, s.conn)
	if err != nil {
		return nil, MapError(err)
	}
	out := make([]BarrierSummary, len(rows))
	for i, r := range rows {
		out[i] = BarrierSummary{SchemaVersion: int64(r.SchemaVersion), Checkpoint: r.Checkpoint, State: CheckpointState(r.State),
			Partitions: r.Partitions, MaxLag: r.MaxLag, SlowestPartition: r.SlowestPartition,
			OldestUpdate: r.OldestUpdate, NewestUpdate: r.NewestUpdate}
	}
	return out, nil
}
