package gosync

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/gosync/gosync/internal/db"
)

// CheckpointRef names a checkpoint: a projection being backfilled in a partition.
type CheckpointRef struct {
	Partition string `json:"partition"`
	Name      string `json:"name"`
}

// ServeGate is what sync_serve_gate reads in one round trip.
type ServeGate struct {
	StoredSchemaVersion int64  // 0 when no schema marker exists
	LogEpoch            string // "" when the partition is unregistered
	Registered          bool   // whether the partition has a log epoch
	// Pending lists every checkpoint of the running schema version that is
	// not activated, in any partition, ordered by (partition, name).
	Pending []CheckpointRef
}

// ServeGate reads sync_serve_gate for partition at the running schema
// version (srv.SchemaVersion; the same Server that ServeCheck, Push and
// ReadAuthoritative take): for DBAs and diagnostics, it lists every pending checkpoint (10^5
// of them mid-migration at 10^5 partitions). Request paths use ServeCheck,
// which applies the refusal rule in the database at the same cost whatever
// is pending.
func (s *Store) ServeGate(ctx context.Context, partition string, srv Server) (ServeGate, error) {
	v, err := int32Arg("running_schema_version", srv.SchemaVersion)
	if err != nil {
		return ServeGate{}, err
	}
	r, err := s.q.ServeGate(ctx, s.conn, db.ServeGateParams{Partition: partition, RunningSchemaVersion: v})
	if err != nil {
		return ServeGate{}, MapError(err)
	}
	g := ServeGate{StoredSchemaVersion: r.StoredSchemaVersion, LogEpoch: r.LogEpoch, Registered: r.Registered}
	if err := json.Unmarshal(r.Pending, &g.Pending); err != nil {
		return ServeGate{}, fmt.Errorf("gosync: serve gate pending list: %w", err)
	}
	return g, nil
}

// SegmentExpired runs sync_segment_expired: it returns ErrSegmentExpired
// when a segment minted at schema version mintedAt predates a backfill
// checkpoint of the partition (the client must re-pull for a fresh
// descriptor), nil when the segment may be served.
func (s *Store) SegmentExpired(ctx context.Context, partition string, mintedAt int64) error {
	expired, err := s.q.SegmentExpired(ctx, s.conn, db.SegmentExpiredParams{Partition: partition, SegmentSchemaVersion: mintedAt})
	if err != nil {
		return MapError(err)
	}
	if expired {
		return fmt.Errorf("%w: segment predates the partition backfill checkpoint — re-pull", ErrSegmentExpired)
	}
	return nil
}
