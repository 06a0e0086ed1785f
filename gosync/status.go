package gosync

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// BarrierStatus is one row of the sync_barrier_status view.
type BarrierStatus struct {
	Partition     string    `json:"partition"`
	Checkpoint    string    `json:"checkpoint"`
	State         string    `json:"state"`
	SchemaVersion int64     `json:"schema_version"`
	FenceVersion  *int64    `json:"fence_version"` // nil: no fence row
	OwnerEpoch    int64     `json:"owner_epoch"`
	Watermark     int64     `json:"watermark"`
	CoverageSeq   int64     `json:"coverage_seq"`
	Lag           int64     `json:"lag"`
	HorizonSeq    int64     `json:"horizon_seq"`
	ObservedRows  int64     `json:"observed_rows"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// BarrierStatus reads sync_barrier_status, for one partition or all ("").
func (s *Store) BarrierStatus(ctx context.Context, partition string) ([]BarrierStatus, error) {
	rows, err := s.q.BarrierStatus(ctx, s.conn, pgtype.Text{String: partition, Valid: partition != ""})
	if err != nil {
		return nil, MapError(err)
	}
	out := make([]BarrierStatus, len(rows))
	for i, r := range rows {
		out[i] = BarrierStatus{Partition: r.Partition, Checkpoint: r.Checkpoint, State: r.State,
			SchemaVersion: int64(r.SchemaVersion), OwnerEpoch: r.OwnerEpoch, Watermark: r.Watermark,
			CoverageSeq: r.CoverageSeq, Lag: r.Lag, HorizonSeq: r.HorizonSeq, ObservedRows: r.ObservedRows,
			UpdatedAt: r.UpdatedAt.Time}
		if r.FenceVersion.Valid {
			v := int64(r.FenceVersion.Int32)
			out[i].FenceVersion = &v
		}
	}
	return out, nil
}
