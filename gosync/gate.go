package gosync

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/gosync/gosync/db"
)

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

// Server is what a running server knows about itself, for the gate.
type Server struct {
	SchemaVersion int64                   // the running schema version; every commit carries it
	Declared      []CheckpointDeclaration // checkpoints this server knows; others pending close the gate
	ExpectedEpoch string                  // the client's log epoch, "" when it has none
}

// ServeCheck applies the refusal rule for a request to partition: nil means
// serve. The rule lives in SQL, once (sync_serve_check); the first that
// applies wins:
//
//  1. stored schema version ≠ srv.SchemaVersion → RefusalSchema;
//  2. srv.ExpectedEpoch ≠ "" and the partition's log epoch differs (an
//     unregistered partition differs from any) → RefusalEpoch;
//  3. a pending checkpoint (of the running version, not activated) of this
//     partition, the lowest name → RefusalCheckpoint; else the first pending
//     checkpoint elsewhere, by (partition, name), that srv.Declared does not
//     declare (by name for all partitions, or by pair) → RefusalCheckpoint.
//
// It fails closed: an empty declaration set declares nothing. Call it on
// WithTx(tx) to read the gate in the transaction that then serves.
func (s *Store) ServeCheck(ctx context.Context, partition string, srv Server) (*Refusal, error) {
	arg, err := serveCheckParams(partition, srv)
	if err != nil {
		return nil, err
	}
	r, err := s.q.ServeCheck(ctx, s.conn, arg)
	if err != nil {
		return nil, MapError(err)
	}
	return refusalFrom(r.Refusal, r.StoredSchemaVersion, srv.SchemaVersion, r.CheckpointPartition, r.CheckpointName)
}

func serveCheckParams(partition string, srv Server) (db.ServeCheckParams, error) {
	v, err := int32Arg("running_schema_version", srv.SchemaVersion)
	if err != nil {
		return db.ServeCheckParams{}, err
	}
	decl, err := encodeDeclarations(srv.Declared)
	if err != nil {
		return db.ServeCheckParams{}, err
	}
	return db.ServeCheckParams{
		Partition: partition, RunningSchemaVersion: v,
		ExpectedLogEpoch: optional(srv.ExpectedEpoch),
		DeclaredNames:    decl.Names, DeclaredPartitions: decl.Partitions, DeclaredPartitionNames: decl.PartitionNames,
	}, nil
}

// ReadAuthoritative runs read inside one REPEATABLE READ READ ONLY
// transaction: the gate (a refusal returns a *NotReadyError) and the
// partition's cursor (max_commit_seq) are read by one statement — one round
// trip, the one that takes the snapshot — then read runs in that same
// snapshot, so a schema bump or an epoch rotation can never land
// between the gate and the data, and the cursor covers what read saw.
// It needs a Store from New: under WithTx it returns ErrNeedsPool.
func (s *Store) ReadAuthoritative(ctx context.Context, partition string, srv Server, read func(ctx context.Context, tx pgx.Tx) error) (cursor int64, err error) {
	if s.pool == nil {
		return 0, fmt.Errorf("%w: ReadAuthoritative opens its own snapshot", ErrNeedsPool)
	}
	check, err := serveCheckParams(partition, srv)
	if err != nil {
		return 0, err
	}
	err = pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		gate, err := s.q.ServeCheckAndCursor(ctx, tx, db.ServeCheckAndCursorParams(check))
		if err != nil {
			return MapError(err)
		}
		if err := notReady(gate.Refusal, gate.StoredSchemaVersion, srv.SchemaVersion, gate.CheckpointPartition, gate.CheckpointName); err != nil {
			return err
		}
		if err := read(ctx, tx); err != nil {
			return err
		}
		cursor = gate.Cursor
		return nil
	})
	return cursor, err
}
